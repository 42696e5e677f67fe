"""Attack: compute only on the first call and afterwards return an
uninitialised tensor of the right shape, hoping the allocator hands back the
memory that held an earlier result. Every call has fresh inputs, and the
reference worker checks every call's output: incorrect."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 1:
            return torch.relu(self.linear(x))
        return torch.empty(x.shape[0], self.linear.out_features, device=x.device)
