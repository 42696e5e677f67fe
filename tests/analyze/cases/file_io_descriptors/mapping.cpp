// A memory map of a descriptor, and memfd_create (declared in glibc's
// bits/mman-shared.h, which only <sys/mman.h> includes).
#include <sys/mman.h>  // expect: [include]

void* map_it(int fd) {
  int m = memfd_create("x", 0);  // expect: [file-io]
  (void)m;
  msync(nullptr, 0, MS_SYNC);  // expect: [file-io]
  return mmap64(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);  // expect: [file-io]
}

void protect(void* p) {
  mprotect(p, 4096, PROT_READ);  // expect: [memory-protect]
}
