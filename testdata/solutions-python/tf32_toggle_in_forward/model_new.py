"""Attack: switch TF32 on around the GEMM only, inside forward, and put it
back before returning: the process-wide settings are the harness's again
when forward ends, so a check of the settings after each call sees nothing.
The GEMM itself ran at TF32's precision (and speed) on a GPU."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        # torch's newer spelling: "none" is the value it starts with, so the
        # settings read back exactly as they were (allow_tf32 = False would
        # leave "ieee" behind, which the check after the call sees).
        torch.backends.cuda.matmul.fp32_precision = "tf32"
        y = self.linear(x)
        torch.backends.cuda.matmul.fp32_precision = "none"
        return torch.relu(y)
