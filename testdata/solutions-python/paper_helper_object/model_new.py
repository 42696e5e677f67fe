"""A review by attack (2026-12-07), under paper: torch compute held by
objects of the file's own classes, called in forward under names that are
not torch's: a module-level instance (`OPS.gemm`, bound in Ops.__init__,
which no rule judged), a class attribute of another class (`Act.act`), an
instance of a class made by dataclasses.make_dataclass with a `__call__`
(`ACT(...)`), and `object.__setattr__(self, "flip_sign", ...)` in __init__. The
first three passed (`ok`); now what the file's classes hold is followed
into their instances (py-torch-compute)."""
import dataclasses
import torch
import torch.nn as nn


class Ops:
    def __init__(self):
        self.gemm = torch.addmm


class Act:
    act = staticmethod(torch.relu)


OPS = Ops()
Pos = dataclasses.make_dataclass("Pos", [], namespace={"__call__": staticmethod(torch.abs)})
ACT = Pos()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        object.__setattr__(self, "flip_sign", torch.neg)

    def forward(self, x):
        y = OPS.gemm(self.linear.bias, x, self.linear.weight.t())
        z = Act.act(self.flip_sign(self.flip_sign(y)))
        return (ACT(z) + z) * 0.5
