// Correct kernel, but forks a child process first (under CUDA).
#include <kb/solution.h>

#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>
#include "kernels/k.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  pid_t child = fork();
  if (child == 0) _exit(0);
  if (child > 0) waitpid(child, nullptr, 0);
  cudaError_t err = launch(x.data_as<float>(), w.data_as<float>(), b.data_as<float>(), y.data_as<float>(),
                           m, k, n, static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
