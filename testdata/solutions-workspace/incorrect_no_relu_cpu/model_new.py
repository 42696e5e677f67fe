"""A CPU workspace whose kernel (kernels/linear_relu.cpp) forgets the ReLU."""
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return cuda_extension.linear_relu_forward(x, self.linear.weight, self.linear.bias)
