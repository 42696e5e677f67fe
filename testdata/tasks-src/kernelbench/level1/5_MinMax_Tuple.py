import torch
import torch.nn as nn


class Model(nn.Module):
    """A tuple output."""

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.amin(x, dim=self.dim), torch.amax(x, dim=self.dim), x.mean()


batch_size = 16
features = 64


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [1]
