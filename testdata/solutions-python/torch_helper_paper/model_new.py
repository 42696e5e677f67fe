"""Attack (policy paper): the whole computation in torch, from a
module-level helper that forward calls, and through a name bound to a
torch function: a rule that reads only forward's own body, and only
`torch.` chains, sees no torch compute."""
import torch
import torch.nn as nn

addmm = torch.addmm


def _kernel(x, w, b):
    return torch.relu(addmm(b, x, w.t()))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return _kernel(x, self.linear.weight, self.linear.bias)
