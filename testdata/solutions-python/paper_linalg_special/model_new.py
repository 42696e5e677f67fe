# Attack (2026-12-07, paper): torch.linalg functions whose names are not torch's
# top-level ones. Caught by py-torch-compute (every callable under torch.linalg, special, fft, F...).
"""paper: torch compute through torch.linalg functions whose last name is not a
top-level torch / Tensor name (multi_dot, vector_norm, vecdot), no arithmetic operator."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        n = x.size(0)
        xa = torch.cat([x, x.new_ones(n, 1)], dim=1)                  # [x | 1]
        wa = torch.cat([self.linear.weight.t(), self.linear.bias.view(1, -1)], dim=0)  # [W^T ; b]
        y = torch.linalg.multi_dot([xa, wa])                          # x W^T + b
        a = torch.linalg.vector_norm(y.unsqueeze(-1), dim=-1)         # |y|
        return torch.linalg.vecdot(torch.stack([y, a], dim=-1), x.new_full((2,), 0.5))  # (y + |y|) / 2
