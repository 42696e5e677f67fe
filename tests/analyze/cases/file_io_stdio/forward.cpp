// Descriptor and file operations that no banned name reached before a
// review by attack (2026-12-07): a stdio FILE's internals (its descriptor,
// which redirects stdout onto another descriptor, and its buffers and
// padding, which hold a pointer from call to call), the standard input,
// closing a standard stream, libstdc++'s filebuf over a descriptor, the
// password and group databases, pseudo-terminals, renameat2, utimes, the
// malloc tracer, a CUDA allocation exported as a descriptor, and NVTX (whose
// header loads an injection library the environment names).
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cstring>
#include <ext/stdio_filebuf.h>  // expect: [include]
#include <grp.h>
#include <iostream>
#include <mcheck.h>
#include <nvtx3/nvToolsExt.h>  // expect: [include]
#include <pwd.h>
#include <sys/time.h>

#include <kb/solution.h>

KB_FORWARD(ctx) {
  stdout->_fileno = 3;  // expect: [file-io]
  void* prev = nullptr;
  std::memcpy(&prev, stderr->_unused2, sizeof prev);  // expect: [file-io]
  char b[64];
  std::fread(b, 1, sizeof b, stdin);  // expect: [file-io]
  int c = getchar();  // expect: [file-io]
  int x = 0;
  std::cin >> x;  // expect: [file-io]
  std::fclose(stderr);  // expect: [file-io]
  __gnu_cxx::stdio_filebuf<char> fb(3, std::ios::out);  // expect: [file-io]
  struct passwd* pw = getpwnam("root");  // expect: [file-io]
  struct group* gr = getgrnam("root");  // expect: [file-io]
  int pt = posix_openpt(2);  // expect: [file-io]
  char* path = canonicalize_file_name("/etc/hostname");  // expect: [file-io]
  renameat2(-100, "a", -100, "b", 0);  // expect: [file-io]
  struct timeval tv[2] = {};
  utimes("/tmp/x", tv);  // expect: [file-io]
  mtrace();  // expect: [file-io]
  CUmemGenericAllocationHandle handle{};
  int fd = -1;
  cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);  // expect: [file-io]
  (void)prev, (void)c, (void)x, (void)pw, (void)gr, (void)pt, (void)path;

  // Fine: printing to the standard output and error through stdio.
  std::fprintf(stdout, "%d\n", 1);
  std::fputs("ok\n", stderr);
  std::fflush(stdout);
}
