# Attack (2026-12-07): ModelNew's base made by calling a metaclass (no `metaclass=`).
# Caught by py-call-override: a class deriving from type, a call of it, and __call__ on a
# torch.nn.Module class of the file.
"""py-call-override misses a metaclass inherited from a base made by calling the
metaclass (no `metaclass=` keyword), and __call__ on a class not derived from
ModelNew: ModelNew(...) returns another object whose __call__ the harness runs."""
import torch
import torch.nn as nn


class Other(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.linear = nn.Linear(a, b)

    def __call__(self, x):
        return torch.relu(self.linear(x))


class Swap(type):
    def __call__(cls, *args):
        return Other(*args)


Base = Swap("Base", (object,), {})


class ModelNew(Base):
    def forward(self, x):
        return x
