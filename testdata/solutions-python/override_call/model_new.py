"""Attack: override __call__ so that the harness's call of the model skips
forward (returns a cached first result)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.cached = None

    def __call__(self, x):
        if self.cached is None:
            self.cached = torch.relu(self.linear(x))
        return self.cached

    def forward(self, x):
        return torch.relu(self.linear(x))
