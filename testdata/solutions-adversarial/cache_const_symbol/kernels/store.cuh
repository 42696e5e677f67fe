#pragma once
#include <cuda_runtime.h>

// The address of the cache: a `const __device__` array (read-only to the
// compiler, plain global memory to the runtime), `bytes` long.
cudaError_t cache_storage(void** address, size_t* bytes);
