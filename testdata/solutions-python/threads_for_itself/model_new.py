"""Attack: more CPU threads for the candidate than the eager baseline was
timed with (the worker pins ATen to one): a speed-up bought from the
machine's cores, not from the code."""
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        torch.set_num_threads(max(2, os.cpu_count() or 2))
        return torch.relu(self.linear(x))
