# Attack (2026-12-07, paper): a list of torch modules iterated in forward. Caught by
# py-torch-compute (a holder of torch compute handed on in forward: iterated).
"""paper: torch.nn modules built in __init__ and run in forward by iterating a
container (for m in self.seq: x = m(x)); the rule only sees self.NAME(...)."""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.seq = [self.linear, nn.ReLU()]

    def forward(self, x):
        for m in self.seq:
            x = m(x)
        return x
