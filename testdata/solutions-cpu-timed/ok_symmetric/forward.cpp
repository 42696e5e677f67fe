// Legitimate: uses what get_inputs builds in. symmetric_matmul's A is
// symmetric (A = (X + X^T) / 2), so C = A @ B = A^T @ B, and reading A by
// columns (A[k][i] for A[i][k]) walks memory in order. Correct only while
// every call's A is symmetric: timed calls run the task's own get_inputs
// (input_method "scripted"), so it must be ok in kbcheck verify and kbprof.
#include <kb/solution.h>

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  if (ctx.failed()) return;
  const int64_t n = a.size(0), m = b.size(1);
  kb::Tensor c = ctx.output(0, {n, m});
  if (ctx.failed()) return;
  const float* A = a.data_as<float>();
  const float* B = b.data_as<float>();
  float* C = c.data_as<float>();
  for (int64_t i = 0; i < n * m; ++i) C[i] = 0.0f;
  for (int64_t k = 0; k < n; ++k)
    for (int64_t i = 0; i < n; ++i) {
      const float aki = A[k * n + i];  // = A[i][k]
      for (int64_t j = 0; j < m; ++j) C[i * m + j] += aki * B[k * m + j];
    }
}
