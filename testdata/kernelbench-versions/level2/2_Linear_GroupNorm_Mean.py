import torch
import torch.nn as nn


class Model(nn.Module):
    """All zeros passes: a GroupNorm's groups have mean 0 (weight 1, bias 0
    at init), so the mean over the channels is 0 up to rounding (KernelBench
    v0 level2/41_Gemm_BatchNorm_GELU_GroupNorm_Mean_ReLU)."""

    def __init__(self, in_features, out_features, groups):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.GroupNorm(groups, out_features)

    def forward(self, x):
        x = self.norm(self.linear(x))
        return torch.mean(x, dim=1, keepdim=True)


batch_size = 8
in_features = 16
out_features = 32
groups = 4


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, groups]
