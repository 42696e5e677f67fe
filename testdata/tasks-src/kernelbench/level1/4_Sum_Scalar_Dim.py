import torch
import torch.nn as nn


class Model(nn.Module):
    """A scalar input (the reduction dimension) beside a tensor; inputs from
    torch.rand (non-negative), shaped through a starred tuple."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x, dim: int):
        return torch.log1p(x).sum(dim=dim, keepdim=True)


shape = (8, 32, 16)


def get_inputs():
    x = torch.rand(*shape)
    return [x, 1]


def get_init_inputs():
    return []
