#include <unistd.h>

#include <kb/solution.h>

static long host_getpid() {
  long r;
  asm volatile("mov $39, %%rax; syscall" : "=a"(r));  // expect: [raw-syscall]
  return r;
}

KB_FORWARD(ctx) {
  syscall(39);  // expect: [raw-syscall]
  host_getpid();
}

__asm__(".globl cudaEventElapsedTime_shadow\ncudaEventElapsedTime_shadow: ret");  // expect: [raw-syscall]
