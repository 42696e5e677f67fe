"""Under --policy paper (the CUDA Agent workspace's rules): forward runs
torch.nn modules that __init__ made (`self.proj(x)`, `self.act(...)`),
torch compute behind a call of `self.<name>` that the rules only warned
about. What __init__ bound the name to says what the call runs."""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.proj(x))
