"""A KernelBench-format solution of testdata/tasks/linear_relu: y = relu(x W^T + b).

Torch operations only (allowed under --policy kernelbench). Its parameters
take the reference's values: the same names (linear.weight, linear.bias),
and the same seed before construction."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.addmm(self.linear.bias, x, self.linear.weight.t()).clamp_min_(0)
