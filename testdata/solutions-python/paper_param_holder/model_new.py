"""A review by attack (2026-12-07), under paper: a torch module handed
through a parameter, where no rule followed it: `Holder(nn.Linear(...))`
keeps it as self.m and `Holder.run` calls it; `self.setup(...)` binds it in
a method that is not __init__; `make(lin)` returns a closure calling it.
Each call site's `self.X(...)` was a warning at most, and the solution
`ok`. Now a parameter handed torch compute at any call of its function is
followed (into self.X, and into closures): py-torch-compute."""
import torch
import torch.nn as nn


class Holder:
    def __init__(self, m):
        self.m = m

    def run(self, x):
        return self.m(x)


def make(lin):
    def run(x):
        return lin(x)
    return run


class Box:
    pass


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.h = Holder(self.linear)
        self.setup(nn.ReLU())
        self.box = Box()
        self.box.go = make(self.linear)

    def setup(self, act):
        self.post = act

    def forward(self, x):
        return self.post(self.h.run(x)) if x.shape[0] % 2 else self.post(self.box.go(x))
