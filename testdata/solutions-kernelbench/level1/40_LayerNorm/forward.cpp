// KernelBench level1/40_LayerNorm: nn.LayerNorm((64, 256, 256)) on x [16, 64,
// 256, 256] fp32: 16 rows of 4M elements, y = (x - mean) / sqrt(var + 1e-5)
// * ln.weight + ln.bias (biased variance, eps the module default).
// Technique: eager torch gives each row one block (16 blocks on 132 SMs); here
// each row is split into 16K-element chunks (4096 blocks): kernel 1 writes
// per-chunk partial sums, kernel 2 has every block fold its row's partials
// (a few hundred, from L2) into mean and rstd and normalise its chunk with
// 128-bit loads. Exact: sums and the variance in fp64 (sum and sum of squares
// in double lose nothing for 4M fp32 values), rstd rounded once to fp32, then
// (x - mean) * rstd * w + b in fp32 as torch's kernel does.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/layernorm.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("ln.weight");
  kb::Tensor b = ctx.param("ln.bias");
  if (ctx.failed()) return;
  if (!x.is_contiguous() || !w.is_contiguous() || !b.is_contiguous() || x.dtype != KB_FLOAT32 ||
      w.ndim > x.ndim) {
    ctx.fail("expected contiguous float32 x and LayerNorm parameters");
    return;
  }
  const int64_t cols = w.numel();
  if (cols <= 0 || x.numel() % cols != 0 || b.numel() != cols) {
    ctx.fail("normalized shape does not divide the input");
    return;
  }
  const int64_t rows = x.numel() / cols;
  kb::Tensor y = ctx.output(0, x.ndim, x.sizes);
  if (ctx.failed()) return;
  const int64_t chunks = layernorm_chunks(cols);
  void* partials = ctx.scratch(layernorm_scratch_bytes(rows, chunks));
  if (ctx.failed()) return;
  cudaError_t err = launch_layernorm(x.data_as<const float>(), w.data_as<const float>(), b.data_as<const float>(),
                                     y.data_as<float>(), rows, cols, chunks, 1e-5, partials,
                                     static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
