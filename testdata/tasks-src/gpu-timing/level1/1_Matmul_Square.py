import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B, square fp32 matrices."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


N = 4096


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
