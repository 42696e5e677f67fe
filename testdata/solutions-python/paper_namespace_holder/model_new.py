"""A review by attack (2026-12-07), under paper: torch functions kept in a
module-level types.SimpleNamespace and called through it (`NS.gemm(...)`).
The name NS was known to hold torch compute, but only a call of NS itself,
or NS handed on, was judged: `ok`. Now a call through an attribute chain
rooted at such a name is py-torch-compute (unless it is a shape, view or
allocation method)."""
import types
import torch
import torch.nn as nn

NS = types.SimpleNamespace(gemm=torch.addmm, act=torch.relu)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return NS.act(NS.gemm(self.linear.bias, x, self.linear.weight.t()))
