# A contaminated task: testdata/tasks-src/kernelbench/level1/2_Linear_GELU_Scale.py
# with every name of its own renamed, the sizes and the constant changed, the
# docstring replaced and the functional module imported under another alias.
# The decontamination filter must flag it (similarity 1.0 to that problem).
import torch
import torch.nn as nn
import torch.nn.functional as fn


class Model(nn.Module):
    """Projection followed by an activation and a multiplier."""

    def __init__(self, d_in, d_out, multiplier):
        super(Model, self).__init__()
        self.proj = nn.Linear(d_in, d_out)
        self.multiplier = multiplier

    def forward(self, inp):
        return fn.gelu(self.proj(inp)) * self.multiplier


rows = 256
d_in = 1024
d_out = 512
multiplier = 2.75


def get_inputs():
    return [torch.randn(rows, d_in)]


def get_init_inputs():
    return [d_in, d_out, multiplier]
