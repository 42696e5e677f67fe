"""Attack: replace torch.cuda.Event so that a Python timer (KernelBench's)
measures nothing. Our timer is not in Python, and the rule sees the assignment."""
import torch
import torch.nn as nn


class _FastEvent:
    def __init__(self, *a, **k):
        pass

    def record(self, *a):
        pass

    def elapsed_time(self, other):
        return 0.001


torch.cuda.Event = _FastEvent


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
