"""A load_inline extension whose C++ includes a host file (/etc/passwd): the
trusted build stage compiles the candidate's strings, so what its compiler
reads must stay within the toolchain's, torch's and Python's headers, and the
file's text must never reach the diagnostics (docs/solution-format.md)."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
#include "/etc/passwd"
torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    return torch::relu(torch::addmm(b, x, w.t()));
}
"""

ext = load_inline(name="host_include", cpp_sources=cpp_source, functions=["linear_relu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_relu(x, self.linear.weight, self.linear.bias)
