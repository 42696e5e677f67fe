// A fat binary registered at run time through the CUDA runtime's private
// entry point: its kernels are code no rule saw.
#include <cuda_runtime.h>
#include <crt/host_runtime.h>

void register_blob() {
  void** h = __cudaRegisterFatBinary(nullptr);  // expect: [dynamic-loading]
  (void)h;
}
