// KernelBench level3/2_ShallowWideMLP: x [128, 16384] through Linear(16384,
// 32768), ReLU, Linear(32768, 32768), ReLU, Linear(32768, 16384)
// (nn.Sequential "network": Linear layers at indices 0, 2, 4).
// Technique: each nn.Linear (+ ReLU) is ONE cuBLASLt matmul on the harness's
// handle and stream whose epilogue adds the bias and applies the ReLU
// (CUBLASLT_EPILOGUE_RELU_BIAS; the last layer CUBLASLT_EPILOGUE_BIAS), so no
// pass over the activations follows a GEMM (eager: addmm then relu per layer).
// Hidden activations ping-pong between two ctx.scratch() buffers; one 32 MiB
// workspace. Exact: CUBLAS_COMPUTE_32F (full fp32: no TF32, no fast modes),
// the bias added to the fp32 accumulator, ReLU a select.
#include <kb/solution.h>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "kernels/mlp_lt.h"

namespace {
constexpr int kLayers = 3;  // nn.Linear layers of the network
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);  // [M, K0]
  if (ctx.failed()) return;
  if (x.ndim != 2 || !x.is_contiguous() || x.dtype != KB_FLOAT32) {
    ctx.fail("expected a contiguous float32 x [M, K]");
    return;
  }
  const int64_t m = x.size(0);
  kb::Tensor w[kLayers], b[kLayers];
  int64_t widest = 0;  // widest hidden activation
  for (int i = 0; i < kLayers; ++i) {
    char name[48];
    std::snprintf(name, sizeof name, "network.%d.weight", 2 * i);  // Linear, ReLU, Linear, ...
    w[i] = ctx.param(name);
    std::snprintf(name, sizeof name, "network.%d.bias", 2 * i);
    b[i] = ctx.param(name);
    if (ctx.failed()) return;
    const int64_t k_in = i == 0 ? x.size(1) : w[i - 1].size(0);
    if (w[i].ndim != 2 || !w[i].is_contiguous() || !b[i].is_contiguous() || w[i].size(1) != k_in ||
        b[i].numel() != w[i].size(0)) {
      ctx.fail("unexpected layer shapes");
      return;
    }
    if (i + 1 < kLayers && w[i].size(0) > widest) widest = w[i].size(0);
  }
  kb::Tensor y = ctx.output(0, {m, w[kLayers - 1].size(0)});
  // Two ping-pong buffers for the hidden activations, one workspace.
  float* act[2] = {static_cast<float*>(ctx.scratch(sizeof(float) * static_cast<size_t>(m * widest))),
                   static_cast<float*>(ctx.scratch(sizeof(float) * static_cast<size_t>(m * widest)))};
  void* workspace = ctx.scratch(kWorkspaceBytes);
  if (ctx.failed()) return;
  auto lt = static_cast<cublasLtHandle_t>(ctx.cublaslt());
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  const float* in = x.data_as<const float>();
  for (int i = 0; i < kLayers; ++i) {
    const bool last = i + 1 == kLayers;
    float* out = last ? y.data_as<float>() : act[i % 2];
    const char* err = mlp::linear(lt, stream, in, w[i].data_as<const float>(), b[i].data_as<const float>(), out, m,
                                  w[i].size(1), w[i].size(0), !last, workspace, kWorkspaceBytes);
    if (err) {
      ctx.fail(err);
      return;
    }
    in = out;
  }
}
