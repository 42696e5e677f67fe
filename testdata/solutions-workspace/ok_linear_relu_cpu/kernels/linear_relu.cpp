// y = relu(x @ w^T + b) on the host: the workspace's own kernel, no torch.
#include <cstdint>

extern "C" void linear_relu_launcher(float* y, const float* x, const float* w, const float* b, int64_t m,
                                     int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = b[j];
      for (int64_t p = 0; p < k; ++p) acc += x[i * k + p] * w[j * k + p];
      y[i * n + j] = acc > 0.f ? acc : 0.f;
    }
}
