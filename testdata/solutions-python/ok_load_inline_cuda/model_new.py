"""An honest load_inline CUDA solution, KernelBench's usual shape: torch's
GEMM (allowed under kernelbench) and a ReLU kernel of its own, launched on
torch's current stream (the call's stream inside the harness). The Clang
rules on its strings find nothing. On a CPU task device the build refuses
its cuda_sources (compile_error); on the GPU it ends ok."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(float* __restrict__ y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(y[i], 0.f);
}

torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    auto y = torch::addmm(b, x, w.t());
    int64_t n = y.numel();
    if (n == 0) return y;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    relu_kernel<<<(n + 255) / 256, 256, 0, stream>>>(y.data_ptr<float>(), n);
    return y;
}
"""

cpp_source = "torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

ext = load_inline(
    name="linear_relu_cuda",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["linear_relu"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_relu(x.contiguous(), self.linear.weight, self.linear.bias)
