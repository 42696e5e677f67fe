import torch
import torch.nn as nn


class Model(nn.Module):
    """y = leaky_relu(2 * (x @ w), 0.1), the GEMM of KernelBench
    level2/12_Gemm_Multiply_LeakyReLU at K = 8192, with the weight
    an input drawn like nn.Linear's (uniform +-1/sqrt(K)) so that the
    bundle stays small. fp32: under the strict contract (1e-4) a TF32
    or FP16 GEMM fails (~1.7e-3 error) where fp32 and 3xTF32 pass
    (~3e-6); under the paper's 1e-2 TF32 passes."""

    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        return torch.nn.functional.leaky_relu(torch.matmul(x, w) * 2.0, 0.1)


def get_inputs():
    k = 8192
    return [torch.randn(256, k), (torch.rand(k, 512) * 2 - 1) / k ** 0.5]


def get_init_inputs():
    return []
