# Attack (2026-12-07, paper): torch functions bound as class attributes and called as
# self._gemm(...). Caught by py-torch-compute (what a class body holds is tracked as __init__'s is).
"""paper: torch compute functions bound as class attributes (class body is not
a function, so not judged), called as self.<name>(...) in forward: only a warning."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    _gemm = torch.addmm
    _act = torch.relu

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self._act(self._gemm(self.linear.bias, x, self.linear.weight.t()))
