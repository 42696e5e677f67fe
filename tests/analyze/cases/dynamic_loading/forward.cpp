#include <cuda_runtime.h>
#include <dlfcn.h>  // expect: [include]
#include <link.h>  // expect: [include]

#include <kb/solution.h>

KB_FORWARD(ctx) {
  void* lib = dlopen("libtorch_cuda.so", RTLD_NOW);  // expect: [dynamic-loading]
  void* fn = dlsym(lib, "_ZN2at6native4reluERKNS_6TensorE");  // expect: [dynamic-loading]
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPoint("cuMemcpy", &entry, cudaEnableDefault, &q);  // expect: [dynamic-loading]
  dl_iterate_phdr(nullptr, nullptr);  // expect: [dynamic-loading]
  (void)fn;
}
