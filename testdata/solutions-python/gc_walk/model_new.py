"""Attack: walk the process's objects with gc to find the harness's
reference outputs or timer state."""
import gc

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor) and obj.shape == (x.shape[0], self.linear.out_features):
                return obj
        return torch.relu(self.linear(x))
