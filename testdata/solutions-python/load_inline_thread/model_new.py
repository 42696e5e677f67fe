"""Work deferred to a host thread from the C++ of a load_inline extension:
the ReLU runs on a detached std::thread after the call returns, and the
string also asks the kernel for its process id with a raw system call.
The Python is clean; the Clang rules on the C++ string refuse the thread's
header, the thread and the syscall."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <thread>
#include <unistd.h>

torch::Tensor linear_relu_later(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    auto y = torch::addmm(b, x, w.t());
    float* p = y.data_ptr<float>();
    int64_t n = y.numel();
    std::thread([p, n] {
        for (int64_t i = 0; i < n; ++i) p[i] = p[i] > 0.f ? p[i] : 0.f;
    }).detach();
    (void)syscall(39);
    return y;
}
"""

ext = load_inline(
    name="linear_relu_thread",
    cpp_sources=[cpp_source],
    functions=["linear_relu_later"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_relu_later(x.contiguous(), self.linear.weight, self.linear.bias)
