"""A review by attack (2026-12-07), under paper: a plain object made in
__init__ and filled there with a torch module and a torch function
(`self.box.go = self.linear`, `self.box.post = torch.relu`), called in
forward through it. No rule followed `self.box.go(...)`: it was `ok`. Now a
call through an attribute chain whose root (`self.box`) holds torch compute
is py-torch-compute, unless it is a shape, view or allocation method
(`self.linear.weight.t()`)."""
import torch
import torch.nn as nn


class Box:
    pass


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.box = Box()
        self.box.go = self.linear
        self.box.post = torch.relu

    def forward(self, x):
        return self.box.post(self.box.go(x.contiguous()))
