// Legit (issue 17, class 5): what CUDA 13 and nvcc accept that Clang 19
// alone does not: __ldcs/__stcs on float4 (streaming cache hints), surface
// writes; and inline PTX (ld.global.nc, cp.async, mma.sync TF32) and
// cooperative groups (this_thread_block, tiled_partition, cg::reduce).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include "k.cuh"

namespace cg = cooperative_groups;

__global__ void scale4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n4) return;
  float4 v = __ldcs(x + i);
  v.x *= 2.0f;
  v.y *= 2.0f;
  v.z *= 2.0f;
  v.w *= 2.0f;
  __stcs(y + i, v);
}

__device__ __forceinline__ float load_nc(const float* p) {
  float v;
  asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

// One warp: a 16x8 tile of C += A(16x8) * B(8x8), TF32 tensor cores.
__global__ void tf32_tile(const float* a, const float* b, float* c) {
  __shared__ __align__(16) float sa[16 * 8];
  const unsigned lane = threadIdx.x;
  for (unsigned i = lane; i < 16 * 8 / 4; i += 32) {
    unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(sa + 4 * i));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(a + 4 * i));
  }
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncwarp();
  const unsigned g = lane / 4, t = lane % 4;
  unsigned a0, a1, a2, a3, b0, b1;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a0) : "f"(sa[g * 8 + t]));
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a1) : "f"(sa[(g + 8) * 8 + t]));
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a2) : "f"(sa[g * 8 + t + 4]));
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a3) : "f"(sa[(g + 8) * 8 + t + 4]));
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(b0) : "f"(load_nc(b + t * 8 + g)));
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(b1) : "f"(load_nc(b + (t + 4) * 8 + g)));
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  c[g * 8 + 2 * t] = d0;
  c[g * 8 + 2 * t + 1] = d1;
  c[(g + 8) * 8 + 2 * t] = d2;
  c[(g + 8) * 8 + 2 * t + 1] = d3;
}

__global__ void row_sum(const float* x, float* y, int cols) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  float acc = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) acc += row[j];
  float total = cg::reduce(warp, acc, cg::plus<float>());
  __shared__ float partial[32];
  if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = total;
  block.sync();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (unsigned w = 0; w < warp.meta_group_size(); ++w) s += partial[w];
    y[blockIdx.x] = s;
  }
}

__global__ void surface_copy(cudaSurfaceObject_t dst, const float* x, int w, int h) {
  int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y;
  if (i < w && j < h) surf2Dwrite(x[j * w + i], dst, i * static_cast<int>(sizeof(float)), j);
}

cudaError_t launch_scale4(const float* x, float* y, int64_t n, cudaStream_t stream) {
  const int64_t n4 = n / 4;
  scale4<<<static_cast<unsigned>((n4 + 255) / 256), 256, 0, stream>>>(
      reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
  return cudaGetLastError();
}

cudaError_t launch_tf32_tile(const float* a, const float* b, float* c, cudaStream_t stream) {
  tf32_tile<<<1, 32, 0, stream>>>(a, b, c);
  return cudaGetLastError();
}

cudaError_t launch_row_sum(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  row_sum<<<rows, 256, 0, stream>>>(x, y, cols);
  return cudaGetLastError();
}

cudaError_t launch_surface_copy(cudaSurfaceObject_t dst, const float* x, int w, int h, cudaStream_t stream) {
  surface_copy<<<dim3((w + 127) / 128, h), 128, 0, stream>>>(dst, x, w, h);
  return cudaGetLastError();
}
