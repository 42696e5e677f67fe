import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x * sigmoid(x) over 32M fp32 elements: memory bound, about
    60 microseconds at an H200's bandwidth."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.silu(x)


def get_inputs():
    return [torch.randn(8192, 4096)]


def get_init_inputs():
    return []
