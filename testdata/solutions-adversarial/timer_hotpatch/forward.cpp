// HACK CLASS: interposing the timer by patching libcudart in memory
// (DESIGN.md §5 "interposing timer or CUDA symbols"; GPU MODE's timer
// patching), the variant that RTLD_LOCAL does not stop.
//
// Task matmul_2048; the GEMM itself is honest. Defining a stand-in
// cudaEventElapsedTime does nothing when the library is loaded RTLD_LOCAL
// (see timer_interpose). But this library links the same libcudart.so.13 the
// harness uses, so &cudaEventElapsedTime is the harness's own function. The
// forward makes its code page writable (mprotect, declared by hand since
// <sys/mman.h> is refused) and overwrites the function's entry with
//     mov dword ptr [rdi], 0x3a83126f   ; *ms = 0.001f
//     xor eax, eax                      ; return cudaSuccess
//     ret
// From the first call on, every CUDA-event timing in the process reads
// 1 microsecond. x86-64 only; elsewhere it is just a GEMM.
//
// Should be caught by: kbcheck static [device-control] (a reference to
// cudaEventElapsedTime), [memory-protect] (mprotect) and [extern-symbol]
// (mprotect declared by hand); at
// run time by kbprof cross-checking the event time of each call against the
// CUPTI device time of the kernels it launched and the host wall time around
// it (event time far below the device time -> hack_detected). kbcheck verify
// passes it (the output is right and verify does not time).
#include <kb/solution.h>

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/gemm_tiled.cuh"

extern "C" int mprotect(void* addr, size_t len, int prot) noexcept;

namespace {
constexpr unsigned char kStub[] = {0xC7, 0x07, 0x6F, 0x12, 0x83, 0x3A,  // mov [rdi], 0.001f
                                   0x31, 0xC0,                          // xor eax, eax
                                   0xC3};                               // ret
constexpr int kRead = 1, kWrite = 2, kExec = 4;

void patch_timer() {
#if defined(__x86_64__)
  auto* fn = reinterpret_cast<unsigned char*>(&cudaEventElapsedTime);
  if (std::memcmp(fn, kStub, sizeof kStub) == 0) return;  // already done
  auto page = reinterpret_cast<uintptr_t>(fn) & ~uintptr_t{4095};
  if (mprotect(reinterpret_cast<void*>(page), 8192, kRead | kWrite | kExec) != 0) return;
  std::memcpy(fn, kStub, sizeof kStub);
  mprotect(reinterpret_cast<void*>(page), 8192, kRead | kExec);
#endif
}
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  if (ctx.failed()) return;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  kb::Tensor c = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  if (ctx.on_cuda()) patch_timer();
  cudaError_t err = launch_sgemm_tiled(a.data_as<const float>(), b.data_as<const float>(),
                                       c.data_as<float>(), static_cast<int>(m),
                                       static_cast<int>(n), static_cast<int>(k),
                                       static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
