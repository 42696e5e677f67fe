#include <thrust/device_ptr.h>  // expect: [include]
#include <thrust/reduce.h>  // expect: [include]
#include <cub/device/device_reduce.cuh>  // expect: [include]
#include <cub/block/block_reduce.cuh>

#include "sum.cuh"

float device_sum(const float* x, int n) {
  thrust::device_ptr<const float> p(x);  // expect: [device-library]
  float s = thrust::reduce(p, p + n);  // expect: [device-library]
  size_t bytes = 0;
  cub::DeviceReduce::Sum(nullptr, bytes, x, (float*)nullptr, n);  // expect: [device-library] [launch-stream]
  return s;
}

// Block-level CUB inside our own kernel is allowed.
__global__ void block_sum(const float* x, float* out) {
  using BlockReduce = cub::BlockReduce<float, 128>;
  __shared__ typename BlockReduce::TempStorage temp;
  float v = BlockReduce(temp).Sum(x[threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
