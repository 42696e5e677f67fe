#pragma once
#include <cuda_runtime.h>
#include <cstdint>

#include "fingerprint.cuh"

constexpr int kEntries = 4;
constexpr uint32_t kMagic = 0x4B424341u;
constexpr int64_t kHeaderFloats = 64;  // the header's room at the start of the cache

// The cache's header, at the start of the cache buffer; entries follow at
// float offset kHeaderFloats, m*n floats each.
struct CacheHeader {
  uint32_t magic;
  uint32_t next;
  uint32_t valid[kEntries];
  float key[kEntries][kFingerprint];
};
static_assert(sizeof(CacheHeader) <= kHeaderFloats * sizeof(float), "header fits");

// Per call: `call` holds 16 ints of working space (the hit slot, the key).
// Everything is decided on the device: no read-back, no host branch, the same
// three kernels (probe, GEMM-or-replay, store) with the same grids every call.
cudaError_t launch_cached_gemm(const float* a, const float* b, float* c, int m, int n, int k,
                               float* cache, int* call, cudaStream_t stream);
