"""Under --policy paper (the CUDA Agent workspace's rules): forward falls
back to torch compute instead of the solution's own kernels."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.relu(x @ self.linear.weight.t() + self.linear.bias)
