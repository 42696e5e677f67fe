// SiLU written in inline PTX: 128-bit non-coherent loads
// (ld.global.nc.v4.f32), exp(-v) as ex2.approx.ftz.f32 of -v*log2(e), the
// reciprocal of 1 + exp(-v) as rcp.approx refined by one Newton step in
// fma.rn.f32, and a 128-bit store.
//
// Accuracy: ex2.approx has a relative error of ~2^-22.5; the rounding of
// -v*log2(e) adds |v*log2 e| * 2^-24 * ln 2 (< 2^-22 for |v| < 8, and the
// inputs are N(0, 1)); one Newton step takes rcp.approx (~1 ulp) to within
// ~1 ulp of the correctly rounded reciprocal. So y is within a few 1e-7
// relative of silu(x): far inside atol = rtol = 1e-4. Large negative v make
// exp(-v) = inf, r = 0, y = -0 (the exact value is below 1e-30 in
// magnitude); ftz only matters for |v| < 1.2e-38.
#include "silu_ptx.cuh"

namespace {
__device__ __forceinline__ float silu_ptx(float v) {
  float y;
  asm("{\n\t"
      ".reg .f32 t, e, d, r, err;\n\t"
      "mul.rn.f32 t, %1, 0fBFB8AA3B;\n\t"  // t = -v * log2(e)
      "ex2.approx.ftz.f32 e, t;\n\t"       // e = exp(-v)
      "add.rn.f32 d, e, 0f3F800000;\n\t"   // d = 1 + e
      "rcp.approx.ftz.f32 r, d;\n\t"       // r ~ 1/d
      "fma.rn.f32 err, d, r, 0fBF800000;\n\t"  // err = d*r - 1
      "neg.f32 err, err;\n\t"
      "fma.rn.f32 r, r, err, r;\n\t"       // r += r*(1 - d*r)
      "mul.rn.f32 %0, %1, r;\n\t"          // y = v / (1 + exp(-v))
      "}"
      : "=f"(y)
      : "f"(v));
  return y;
}

__global__ void silu_ptx_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += stride) {
    float a, b, c, d;
    asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(a), "=f"(b), "=f"(c), "=f"(d)
                 : "l"(x + i));
    a = silu_ptx(a);
    b = silu_ptx(b);
    c = silu_ptx(c);
    d = silu_ptx(d);
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};"
                 :
                 : "l"(y + i), "f"(a), "f"(b), "f"(c), "f"(d)
                 : "memory");
  }
}

__global__ void silu_ptx_tail(const float* __restrict__ x, float* __restrict__ y, int64_t begin,
                              int64_t n) {
  const int64_t i = begin + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = silu_ptx(x[i]);
}
}  // namespace

cudaError_t launch_silu_ptx(const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  int device = 0, sms = 132;
  if (cudaGetDevice(&device) == cudaSuccess)
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const int threads = 256;
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(y) % 16 == 0;
  const int64_t n4 = aligned ? n / 4 : 0;
  if (n4 > 0) {
    int64_t blocks = (n4 + threads - 1) / threads;
    if (blocks > static_cast<int64_t>(sms) * 8) blocks = static_cast<int64_t>(sms) * 8;
    silu_ptx_vec4<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
  }
  const int64_t done = n4 * 4;
  if (done < n) {
    const int64_t blocks = (n - done + threads - 1) / threads;
    silu_ptx_tail<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(x, y, done, n);
  }
  return cudaGetLastError();
}
