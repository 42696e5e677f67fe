import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Closed-over float bounds: torch.jit.script fails, torch.jit.trace
    captures it."""

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.1)

    def forward(self, x):
        y = x @ self.weight.t()
        return F.hardtanh(y, min_val=hardtanh_min, max_val=hardtanh_max)


batch_size = 32
in_features = 40
out_features = 24
hardtanh_min = -0.5
hardtanh_max = 0.75


def get_inputs():
    return [torch.randn(batch_size, in_features) * 2.0 + 1.0]


def get_init_inputs():
    return [in_features, out_features]
