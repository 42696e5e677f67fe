import torch
import torch.nn as nn


class Model(nn.Module):
    """A softmax over 8192 elements: every output is below 1e-2, so an
    all-zeros output passes at the paper contract's atol = 1e-2, while the
    strict contract's 1e-4 tells it apart (KernelBench v0 level1/23_Softmax)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 2
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
