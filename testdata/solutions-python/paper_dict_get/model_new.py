# Attack (2026-12-07, paper): torch functions from a module-level dict by .get().
# Caught by py-torch-compute (a call's result called; a module-level holder read through .get).
"""paper: a torch compute function fetched from a module-level dict by .get()
(the call's func is a Call, not a Subscript), and a submodule by get_submodule."""
import torch
import torch.nn as nn

OPS = {"mm": torch.addmm, "act": torch.relu}


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = OPS.get("mm")(self.linear.bias, x, self.linear.weight.t())
        return OPS.get("act")(y)
