"""A KernelBench-format solution of testdata/tasks/linear_relu that relies on
the harness computing as the reference does: full float32, TF32 off for
cuBLAS and cuDNN (docs/solution-format.md, "The settings the harness sets").
It only reads the settings; with TF32 left on (LibTorch's default for cuDNN)
its constructor fails, so the run time alone must judge it `ok`."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        if torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32:
            raise RuntimeError("the harness left TF32 on: torch ops here would not compute as the reference")
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.addmm(self.linear.bias, x, self.linear.weight.t()).clamp_min_(0)
