// The device heap (malloc/free/new in device code, a review by attack of
// 2026-12-07): its blocks outlive the kernel, and a block freed by one call
// comes back to the next with its contents, a cache no rule saw. Host-side
// malloc and placement new are fine.
#include <cuda_runtime.h>

#include <cstdlib>
#include <new>

struct Cell {
  float v;
};

__device__ float keep(float x) {
  float* p = static_cast<float*>(malloc(sizeof(float)));  // expect: [raw-alloc]
  float old = p[0];
  p[0] = x;
  free(p);  // expect: [raw-alloc]
  return old;
}

__host__ __device__ float both(float x) {
  Cell* c = new Cell{x};  // expect: [raw-alloc]
  float v = c->v;
  delete c;  // expect: [raw-alloc]
  return v;
}

__global__ void kernel(float* y) {
  alignas(Cell) char buf[sizeof(Cell)];
  Cell* c = new (buf) Cell{1.f};
  y[0] = keep(c->v) + both(1.f);
}

void launch_heap(float* y, cudaStream_t s) {
  float* h = static_cast<float*>(std::malloc(16));
  std::free(h);
  kernel<<<1, 1, 0, s>>>(y);
}
