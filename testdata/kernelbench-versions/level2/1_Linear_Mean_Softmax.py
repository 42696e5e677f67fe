import torch
import torch.nn as nn


class Model(nn.Module):
    """Input-independent: the mean keeps one element per row, and a softmax
    over a dimension of size 1 is 1 whatever it was (KernelBench v0
    level2/66_Matmul_Dropout_Mean_Softmax)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        x = torch.mean(x, dim=1, keepdim=True)
        return torch.softmax(x, dim=1)


batch_size = 8
in_features = 16
out_features = 32


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
