#pragma once
#include <cuda_runtime.h>

#include <cstdint>

// Init: colsum[k] = sum_n w[n, k] for w contiguous [n, k]; c[0] = sum(bias) -
// sum(sub) (sub may be null); all in fp64.
cudaError_t launch_fold_weights(const float* w, int64_t n, int64_t k, const float* bias, const float* sub,
                                double* colsum, double* c, cudaStream_t stream);

// u[r] = (float)((sum_k x[r, k] * colsum[k] + c[0]) / n_out); g = gelu(u) (erf
// form, fp32); out[r, k] = g + x[r, k]. x, out contiguous [m, k].
cudaError_t launch_mean_gelu_residual(const float* x, const double* colsum, const double* c, int64_t n_out,
                                      float* out, int64_t m, int64_t k, cudaStream_t stream);
