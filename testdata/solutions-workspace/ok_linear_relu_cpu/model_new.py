"""A CUDA Agent workspace (the paper's agent_workdir layout) on the CPU,
y = relu(x·Wᵀ + b): the kernel is kernels/linear_relu.cpp, bound in
kernels/linear_relu_binding.cpp and binding.cpp into the module
cuda_extension, which the trusted build stage compiles and the worker's import
finds (docs/solution-format.md). The non-ASCII text here is on purpose: the
worker reads model_new.py as UTF-8 whatever its locale."""
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return cuda_extension.linear_relu_forward(x, self.linear.weight, self.linear.bias)
