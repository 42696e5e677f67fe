from typing import List

import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B for a symmetric A (KernelBench level1/13's kind of
    input). get_inputs builds the symmetry, so its inputs come from
    its own program (a "scripted" generator), on the device for timed
    calls: every call's A is new and still symmetric."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs() -> List[torch.Tensor]:
    A = torch.randn(64, 64)
    A = (A + A.T) / 2
    B = torch.randn(64, 48)
    return [A, B]


def get_init_inputs():
    return []
