"""Attack: run the work on a side stream so that a timer on the current
stream sees only the launch."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.side = torch.cuda.Stream() if torch.cuda.is_available() else None

    def forward(self, x):
        if self.side is None:
            return torch.relu(self.linear(x))
        with torch.cuda.stream(self.side):
            return torch.relu(self.linear(x))
