import torch
import torch.nn as nn


class Model(nn.Module):
    """Two outputs and a scalar input: (x * scale, x.sum(dim=1))."""

    def __init__(self):
        super().__init__()

    def forward(self, x, scale: float):
        return x * scale, x.sum(dim=1)


def get_inputs():
    return [torch.rand(8, 16), 2.5]


def get_init_inputs():
    return []
