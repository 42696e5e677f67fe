#include "analyze/prelude.h"

#include <string>

namespace kb::analyze {
namespace {

// Clang's CUDA wrapper defines __SM_32_INTRINSICS_H__ so that CUDA's
// sm_32_intrinsics.h is never read, and implements only __ldg of its
// functions. nvcc declares the other cache-hint loads and stores for every
// type below (CUDA 13's sm_32_intrinsics.h); without them a kernel using
// __ldcs/__stcs on float4 does not parse (issue 17). Declarations are
// enough: the checker never generates code.
constexpr const char* kCacheHints = R"(
#if defined(__CUDA__)
#define KB_PRELUDE_CACHE_HINTS_(T)                                                          \
  __device__ T __ldcg(const T*); __device__ T __ldca(const T*); __device__ T __ldcs(const T*); \
  __device__ T __ldlu(const T*); __device__ T __ldcv(const T*);                                \
  __device__ void __stwb(T*, T); __device__ void __stcg(T*, T); __device__ void __stcs(T*, T); \
  __device__ void __stwt(T*, T);
KB_PRELUDE_CACHE_HINTS_(long) KB_PRELUDE_CACHE_HINTS_(unsigned long)
KB_PRELUDE_CACHE_HINTS_(char) KB_PRELUDE_CACHE_HINTS_(signed char) KB_PRELUDE_CACHE_HINTS_(short)
KB_PRELUDE_CACHE_HINTS_(int) KB_PRELUDE_CACHE_HINTS_(long long) KB_PRELUDE_CACHE_HINTS_(char2)
KB_PRELUDE_CACHE_HINTS_(char4) KB_PRELUDE_CACHE_HINTS_(short2) KB_PRELUDE_CACHE_HINTS_(short4)
KB_PRELUDE_CACHE_HINTS_(int2) KB_PRELUDE_CACHE_HINTS_(int4) KB_PRELUDE_CACHE_HINTS_(longlong2)
KB_PRELUDE_CACHE_HINTS_(unsigned char) KB_PRELUDE_CACHE_HINTS_(unsigned short)
KB_PRELUDE_CACHE_HINTS_(unsigned int) KB_PRELUDE_CACHE_HINTS_(unsigned long long)
KB_PRELUDE_CACHE_HINTS_(uchar2) KB_PRELUDE_CACHE_HINTS_(uchar4) KB_PRELUDE_CACHE_HINTS_(ushort2)
KB_PRELUDE_CACHE_HINTS_(ushort4) KB_PRELUDE_CACHE_HINTS_(uint2) KB_PRELUDE_CACHE_HINTS_(uint4)
KB_PRELUDE_CACHE_HINTS_(ulonglong2) KB_PRELUDE_CACHE_HINTS_(float) KB_PRELUDE_CACHE_HINTS_(double)
KB_PRELUDE_CACHE_HINTS_(float2) KB_PRELUDE_CACHE_HINTS_(float4) KB_PRELUDE_CACHE_HINTS_(double2)
#undef KB_PRELUDE_CACHE_HINTS_

// Clang's texture intrinsics implement the texture fetches of CUDA's
// headers but not the surface ones (surf2Dwrite, surf1Dread, ...): their
// ops have no __tex_fetch_v4 specialisation, and the primary template is
// only declared. Defining it (a declaration of the fetch, never generated)
// lets every surface function parse with its real signature.
namespace {
namespace __cuda_tex {
template <class __op> struct __tex_fetch_v4 {
  template <class __T, class... __Args> __device__ static __T __run(cudaTextureObject_t, __Args...);
};
}  // namespace __cuda_tex
}  // namespace
// nvcc's cuda_runtime.h brings the surface object functions in; Clang's
// wrapper does not.
#include <surface_indirect_functions.h>
#endif
)";

}  // namespace

const char* cudaPrelude() {
  static const std::string text = std::string(R"(
// cooperative_groups enables cluster groups only for nvcc and NVRTC; Clang
// has the same intrinsics (sm_90), so let it see them too.
#define _CG_CLUSTER_INTRINSICS_AVAILABLE 1
#include <cuda_runtime.h>
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#include <cooperative_groups.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <cfloat>
#include <climits>
#include <algorithm>
#include <array>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>
#include <kb/solution.h>
)") + kCacheHints;
  return text.c_str();
}

const char* cxxPrelude() {
  return R"(
#include <cuda_runtime.h>
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <cfloat>
#include <climits>
#include <algorithm>
#include <array>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>
#include <kb/solution.h>
)";
}

}  // namespace kb::analyze
