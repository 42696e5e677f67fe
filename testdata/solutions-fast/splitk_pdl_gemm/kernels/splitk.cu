#include "splitk.cuh"

#include <cstdint>

namespace {
constexpr int kBM = 64, kBN = 64, kBK = 16, kTM = 4, kTN = 4, kThreads = 256;

// Programmatic dependent launch (sm_90): the primary lets its dependents be
// scheduled early; a dependent waits, before it reads what the primary
// wrote, until every prerequisite grid has completed and its writes are
// visible. On older targets both are no-ops (and the host launches without
// the attribute, so ordinary stream order applies).
__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_prerequisites() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Block (x, y, z): the 64x64 tile (y, x) of partial z = A[:, Kz] * B[Kz, :],
// Kz = [z * k_per_split, (z + 1) * k_per_split), fp32 FMA, 4x4 per thread.
__global__ __launch_bounds__(kThreads) void sgemm_splitk_partial(const float* __restrict__ a,
                                                                 const float* __restrict__ b,
                                                                 float* __restrict__ partials, int m, int n, int k,
                                                                 int k_per_split) {
  __shared__ float as[kBK][kBM + 4];
  __shared__ float bs[kBK][kBN];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int k_begin = blockIdx.z * k_per_split;
  const int k_end = k_begin + k_per_split < k ? k_begin + k_per_split : k;
  float acc[kTM][kTN] = {};
  for (int k0 = k_begin; k0 < k_end; k0 += kBK) {
    for (int i = threadIdx.x; i < kBM * kBK; i += kThreads) {
      const int r = i / kBK, cc = i % kBK, gr = row0 + r, gc = k0 + cc;
      as[cc][r] = (gr < m && gc < k_end) ? a[static_cast<size_t>(gr) * k + gc] : 0.0f;
    }
    for (int i = threadIdx.x; i < kBK * kBN; i += kThreads) {
      const int r = i / kBN, cc = i % kBN, gr = k0 + r, gc = col0 + cc;
      bs[r][cc] = (gr < k_end && gc < n) ? b[static_cast<size_t>(gr) * n + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float av[kTM], bv[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) av[i] = as[kk][ty * kTM + i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) bv[j] = bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
  allow_dependents();
  float* out = partials + static_cast<size_t>(blockIdx.z) * m * n;
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int r = row0 + ty * kTM + i;
    if (r >= m) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int cc = col0 + tx + 16 * j;
      if (cc < n) out[static_cast<size_t>(r) * n + cc] = acc[i][j];
    }
  }
}

// C = sum over z of partials[z], in fp32, in order z = 0, 1, ...: float4 over
// the first 4 * (total / 4) elements, the rest one by one.
__global__ void splitk_sum(const float* __restrict__ partials, float* __restrict__ c, int64_t total, int splits) {
  wait_for_prerequisites();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t total4 = total / 4;
  const float4* p4 = reinterpret_cast<const float4*>(partials);
  float4* c4 = reinterpret_cast<float4*>(c);
  for (int64_t i = first; i < total4; i += stride) {
    float4 s = p4[i];
    for (int z = 1; z < splits; ++z) {
      const float4 v = p4[static_cast<int64_t>(z) * total4 + i];
      s.x += v.x;
      s.y += v.y;
      s.z += v.z;
      s.w += v.w;
    }
    c4[i] = s;
  }
  for (int64_t i = 4 * total4 + first; i < total; i += stride) {
    float s = partials[i];
    for (int z = 1; z < splits; ++z) s += partials[static_cast<int64_t>(z) * total + i];
    c[i] = s;
  }
}

// PDL only where the epilogue was compiled for sm_90 or later (its wait is
// in the code) and the device is one.
bool epilogue_supports_pdl() {
  cudaFuncAttributes fa{};
  if (cudaFuncGetAttributes(&fa, splitk_sum) != cudaSuccess) return false;
  return fa.ptxVersion >= 90 && fa.binaryVersion >= 90;
}
}  // namespace

cudaError_t launch_splitk_gemm(const float* a, const float* b, float* c, float* partials, int m, int n, int k,
                               int splits, cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;
  if (splits < 1) splits = 1;
  const int k_per_split = ((k + splits - 1) / splits + kBK - 1) / kBK * kBK;
  dim3 grid((n + kBN - 1) / kBN, (m + kBM - 1) / kBM, splits);
  sgemm_splitk_partial<<<grid, kThreads, 0, stream>>>(a, b, partials, m, n, k, k_per_split);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  // The partials and C are 16-byte aligned when they come from the harness
  // (scratch: 256 bytes; outputs: the caching allocator), as float4 needs;
  // the partial slices are too when M * N is a multiple of 4.
  const int64_t total = static_cast<int64_t>(m) * n;
  if (total % 4 != 0 || reinterpret_cast<uintptr_t>(partials) % 16 != 0 || reinterpret_cast<uintptr_t>(c) % 16 != 0)
    return cudaErrorMisalignedAddress;
  int64_t blocks = (total / 4 + kThreads - 1) / kThreads;
  if (blocks > 8192) blocks = 8192;
  if (blocks < 1) blocks = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(blocks));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = epilogue_supports_pdl() ? 1 : 0;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, splitk_sum, static_cast<const float*>(partials), c, total, splits);
}
