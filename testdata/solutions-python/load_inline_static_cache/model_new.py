"""A result kept across calls in the C++ of a load_inline extension: the
first call's output is stored in a static tensor and returned again while
the shapes match (a cache keyed by shape). The Python is clean; the Clang
rules on the C++ string refuse the static (mutable-global). Without the
rules, every call's fresh inputs make the cached output wrong."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor linear_relu_cached(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    static torch::Tensor cached;
    if (cached.defined() && cached.size(0) == x.size(0) && cached.size(1) == w.size(0)) return cached;
    cached = torch::relu(torch::addmm(b, x, w.t()));
    return cached;
}
"""

ext = load_inline(
    name="linear_relu_static_cache",
    cpp_sources=cpp_source,
    functions=["linear_relu_cached"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_relu_cached(x.contiguous(), self.linear.weight, self.linear.bias)
