import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear, GELU, scale."""

    def __init__(self, in_features, out_features, scale):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return F.gelu(self.linear(x)) * self.scale


batch_size = 4096
in_features = 4096
out_features = 4096
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
