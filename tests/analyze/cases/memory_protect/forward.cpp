// memory-protect: making a loaded library's code writable to patch it (here
// libcudart's cudaEventElapsedTime, the harness's timer). <sys/mman.h> is
// refused by the include rule, so the declarations are written by hand
// (extern-symbol flags those), and the calls are flagged wherever they are
// reached: directly, through a function pointer, through a `using` alias.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <cuda_runtime.h>

#include <kb/solution.h>

extern "C" int mprotect(void* addr, size_t len, int prot) noexcept;  // expect: [extern-symbol]
extern "C" int pkey_mprotect(void* addr, size_t len, int prot, int pkey) noexcept;  // expect: [extern-symbol]

namespace patch {
using ::mprotect;
}

static void* page_of(void* p) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095});
}

KB_FORWARD(ctx) {
  void* timer = reinterpret_cast<void*>(&cudaEventElapsedTime);  // expect: [device-control]
  mprotect(page_of(timer), 4096, 7);  // expect: [memory-protect]
  auto again = &pkey_mprotect;  // expect: [memory-protect]
  again(page_of(timer), 4096, 7, 0);
  patch::mprotect(page_of(timer), 4096, 5);  // expect: [memory-protect]
  (void)ctx;
}
