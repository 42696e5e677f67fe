"""A load_inline whose C++ does not compile, inside a try/except that falls
back to torch ops: KernelBench's harness runs the fallback, and so do we. The
build stage marks the failed extension (build report: the step's
`fallback`), the worker's load_inline raises "Error building extension" as
torch's does, and the solution's own except clause decides. It is then judged
on what it computes: torch ops, allowed under the kernelbench policy."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    return torch::relu(torch::addmm(b, x, w.t())) + undefined_name;
}
"""

try:
    ext = load_inline(
        name="linear_relu_broken",
        cpp_sources=cpp_source,
        functions=["linear_relu"],
        verbose=False,
    )
except RuntimeError:
    ext = None


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        if ext is not None:
            return ext.linear_relu(x.contiguous(), self.linear.weight, self.linear.bias)
        return torch.relu(self.linear(x))
