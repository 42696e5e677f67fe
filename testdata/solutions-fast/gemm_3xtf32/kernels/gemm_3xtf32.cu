// fp32-accurate GEMM on TF32 tensor cores ("3xTF32"; Ootomo & Yokota 2022,
// CUTLASS's 3xTF32). Simple rather than fast: a 64x64 block tile, K in
// slices of 16 through shared memory, four warps of 32x32, each warp a 2x4
// grid of mma.sync.aligned.m16n8k8 tiles.
//
// The split: every fp32 operand x = big + small, big = tf32(x) (cvt.rna:
// 11 significant bits, |x - big| <= 2^-11 |x|), small = tf32(x - big)
// (x - big is exact in fp32; its tf32 rounding errs by <= 2^-22 |x|).
// a*b = big_a big_b + big_a small_b + small_a big_b + small_a small_b; the
// last term (<= 2^-22 |ab|) is dropped, so each product is within about
// 3 * 2^-22 |ab| of exact, i.e. a random error of ~1e-7 |ab| that grows like
// sqrt(K): ~5e-6 for K = 2048 and N(0, 1) data, below fp32's own rounding.
//
// The accumulation is what decides the accuracy. A tensor core sums the
// products of one m16n8k8 instruction and its C operand with truncation
// (round toward zero) and limited alignment (Fasi et al. 2021 for A100);
// carried across 256 k-steps in the C operand, that bias grows linearly:
// an emulation of K = 2048 (RZ on every accumulation) gave an rms error of
// 8.6e-4 and 4.5% of the outputs outside atol = rtol = 1e-4. So here every
// instruction starts from C = 0: the big product of each k-step comes out of
// the tensor core on its own (8 terms of magnitude ~sqrt(8), truncation error
// ~2^-23 of that) and is added to an fp32 accumulator with an ordinary
// round-to-nearest FADD; the two small products (2^-11 smaller) share a
// second fp32 accumulator, added at the end. 256 round-to-nearest additions
// per output instead of 2048: the emulation gave an rms error of 1.4e-5
// against exact (an fp32 CPU BLAS: 1.2e-5; a sequential fp32 loop: 3.7e-5)
// and 0 of 65536 outputs outside atol = rtol = 1e-4 of an fp32 reference
// (1xTF32: 78% outside). Non-finite inputs take the big part only (their
// residual is not finite): inf and NaN propagate as in a 1xTF32 product.
#include "gemm_3xtf32.cuh"

#include <cstdint>

namespace {
constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 128, kPad = 8;

__device__ __forceinline__ uint32_t to_tf32(float x) {
  uint32_t t;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(t) : "f"(x));
  return t & 0xFFFFE000u;  // the tf32 value as an fp32 bit pattern
}

__device__ __forceinline__ void split(float x, uint32_t& big, uint32_t& small) {
  big = to_tf32(x);
  const float residual = x - __uint_as_float(big);
  small = isfinite(residual) ? to_tf32(residual) : 0u;
}

// d = A(16x8, tf32) * B(8x8, tf32), from C = 0.
__device__ __forceinline__ void mma_from_zero(float (&d)[4], const uint32_t (&a)[4],
                                              const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
}

// d += A * B (the small products only: their truncation error is 2^-11 smaller).
__device__ __forceinline__ void mma_accumulate(float (&d)[4], const uint32_t (&a)[4],
                                               const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__global__ __launch_bounds__(kThreads) void gemm_3xtf32(const float* __restrict__ a,
                                                        const float* __restrict__ b,
                                                        float* __restrict__ c, int m, int n,
                                                        int k) {
  __shared__ float as[kBK][kBM + kPad];  // as[kk][row]: A's tile, transposed
  __shared__ float bs[kBK][kBN + kPad];  // bs[kk][col]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t4 = lane % 4;  // mma fragment coordinates
  const int wm = warp / 2, wn = warp % 2;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;

  float acc[2][4][4] = {};    // big * big, round-to-nearest sums
  float acc_s[2][4][4] = {};  // the small products

  for (int k0 = 0; k0 < k; k0 += kBK) {
    for (int i = threadIdx.x; i < kBM * kBK; i += kThreads) {
      const int r = i / kBK, kk = i % kBK, gr = row0 + r, gk = k0 + kk;
      as[kk][r] = (gr < m && gk < k) ? a[static_cast<size_t>(gr) * k + gk] : 0.0f;
    }
    for (int i = threadIdx.x; i < kBK * kBN; i += kThreads) {
      const int r = i / kBN, cc = i % kBN, gk = k0 + r, gc = col0 + cc;
      bs[r][cc] = (gk < k && gc < n) ? b[static_cast<size_t>(gk) * n + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < kBK; ks += 8) {
      uint32_t a_big[2][4], a_small[2][4], b_big[4][2], b_small[4][2];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        const int rb = wm * 32 + mi * 16;
        split(as[ks + t4][rb + g], a_big[mi][0], a_small[mi][0]);
        split(as[ks + t4][rb + g + 8], a_big[mi][1], a_small[mi][1]);
        split(as[ks + t4 + 4][rb + g], a_big[mi][2], a_small[mi][2]);
        split(as[ks + t4 + 4][rb + g + 8], a_big[mi][3], a_small[mi][3]);
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const int cb = wn * 32 + ni * 8;
        split(bs[ks + t4][cb + g], b_big[ni][0], b_small[ni][0]);
        split(bs[ks + t4 + 4][cb + g], b_big[ni][1], b_small[ni][1]);
      }
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          float big[4], small[4];
          mma_from_zero(big, a_big[mi], b_big[ni]);
          mma_from_zero(small, a_small[mi], b_big[ni]);
          mma_accumulate(small, a_big[mi], b_small[ni]);
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            acc[mi][ni][q] = __fadd_rn(acc[mi][ni][q], big[q]);
            acc_s[mi][ni][q] = __fadd_rn(acc_s[mi][ni][q], small[q]);
          }
        }
    }
    __syncthreads();
  }
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int r = row0 + wm * 32 + mi * 16 + g + (q >> 1) * 8;
        const int cc = col0 + wn * 32 + ni * 8 + t4 * 2 + (q & 1);
        if (r < m && cc < n)
          c[static_cast<size_t>(r) * n + cc] = __fadd_rn(acc[mi][ni][q], acc_s[mi][ni][q]);
      }
}
}  // namespace

cudaError_t launch_gemm_3xtf32(const float* a, const float* b, float* c, int m, int n, int k,
                               cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;
  dim3 grid((n + kBN - 1) / kBN, (m + kBM - 1) / kBM);
  gemm_3xtf32<<<grid, kThreads, 0, stream>>>(a, b, c, m, n, k);
  return cudaGetLastError();
}
