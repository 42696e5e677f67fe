// File and descriptor access through libc calls that are not open/read/
// write by name (a review by attack, 2026-12-07): printing to a descriptor
// (the result channel is fd 3), temporary files and directories, the mount
// table reader, shell-style word expansion (it lists directories).
#include <cstdio>
#include <cstdlib>
#include <mntent.h>
#include <wordexp.h>

#include <kb/solution.h>

KB_FORWARD(ctx) {
  dprintf(3, "KBW1");  // expect: [file-io]
  char tmpl[] = "/tmp/xXXXXXX";
  mkdtemp(tmpl);  // expect: [file-io]
  int fd = mkostemp(tmpl, 0);  // expect: [file-io]
  FILE* m = setmntent("/etc/hostname", "r");  // expect: [file-io]
  wordexp_t we;
  wordexp("/etc/host*", &we, 0);  // expect: [file-io]
  (void)fd;
  (void)m;
  (void)ctx;
}
