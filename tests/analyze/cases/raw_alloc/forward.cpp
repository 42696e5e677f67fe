#include <cuda_runtime.h>

#include <kb/solution.h>

KB_FORWARD(ctx) {
  float* p = nullptr;
  cudaMalloc(&p, 1024);  // expect: [raw-alloc]
  cudaMallocManaged(&p, 1024);  // expect: [raw-alloc]
  cudaFree(p);  // expect: [raw-alloc]
}
