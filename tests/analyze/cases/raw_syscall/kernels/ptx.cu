// Inline PTX in device code is allowed.
__device__ float ld_nc(const float* p) {
  float v;
  asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

__global__ void copy(const float* x, float* y) { y[threadIdx.x] = ld_nc(x + threadIdx.x); }

// Inline PTX in a lambda inside device code is device code too.
__device__ unsigned lane() {
  auto read_lane = [] {
    unsigned id;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
    return id;
  };
  return read_lane();
}
