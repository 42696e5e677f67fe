// The GPU load: blocks that do nothing but hold their SM's thread slots
// until clock64() has advanced by `cycles`. Two 1024-thread blocks per SM
// fill an H200 SM's 2048 thread slots, so whatever else is launched waits.
#include "spin.cuh"

namespace {
__global__ void __launch_bounds__(1024) busy(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
}  // namespace

cudaError_t launch_spin(long long cycles, int blocks, cudaStream_t stream) {
  busy<<<blocks, 1024, 0, stream>>>(cycles);
  return cudaGetLastError();
}
