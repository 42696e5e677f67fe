"""KernelBench's usual shape: a C++ extension built with load_inline, here a
CPU one (cpp_sources only), so that the CPU CI covers the path. The build
stage reads the literal arguments and builds the extension itself; inside the
worker, load_inline answers with that build (docs/solution-format.md)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    auto y = torch::addmm(b, x, w.t());
    auto* p = y.data_ptr<float>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = p[i] > 0.f ? p[i] : 0.f;
    return y;
}
"""

linear_relu = load_inline(
    name="linear_relu_cpu",
    cpp_sources=cpp_source,
    functions=["linear_relu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return linear_relu.linear_relu(x.contiguous(), self.linear.weight, self.linear.bias)
