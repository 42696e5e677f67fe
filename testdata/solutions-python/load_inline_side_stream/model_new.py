"""KernelBench's non_default_stream_kernel, in its usual load_inline shape:
the ReLU kernel is launched on a stream the CUDA string creates, which the
call's stream does not order, so the timer ends before the work does. The
Python is clean; only the Clang rules on the CUDA string see it
(stream-create, docs/rules/README.md "Torch extensions")."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
__global__ void relu_kernel(float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] > 0.f ? y[i] : 0.f;
}

torch::Tensor relu_side(torch::Tensor y) {
    cudaStream_t side;
    cudaStreamCreate(&side);
    int64_t n = y.numel();
    relu_kernel<<<(n + 255) / 256, 256, 0, side>>>(y.data_ptr<float>(), n);
    return y;
}
"""

cpp_source = "torch::Tensor relu_side(torch::Tensor y);"

ext = load_inline(
    name="relu_side_stream",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["relu_side"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.relu_side(self.linear(x).contiguous())
