// The callers' frames reached without __builtin_frame_address (a review by
// attack, 2026-12-07): setjmp and getcontext save the registers, the stack
// pointer among them; pthread_getattr_np gives the stack's bounds. And code
// registered at run time through the CUDA runtime's private entry points
// (__cudaRegisterFatBinary, declared by crt/host_runtime.h): kernels/register.cu.
#include <csetjmp>
#include <mutex>
#include <ucontext.h>

#include <kb/solution.h>

KB_FORWARD(ctx) {
  ucontext_t uc;
  getcontext(&uc);  // expect: [dynamic-loading]
  std::jmp_buf jb;
  if (setjmp(jb) != 0) return;  // expect: [dynamic-loading]
  void* buf[5];
  if (__builtin_setjmp(buf) != 0) return;  // expect: [dynamic-loading]
  pthread_attr_t a;
  pthread_getattr_np(pthread_self(), &a);  // expect: [dynamic-loading]
  void* lo = nullptr;
  size_t n = 0;
  pthread_attr_getstack(&a, &lo, &n);  // expect: [dynamic-loading]
}
