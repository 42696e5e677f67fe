#include <fcntl.h>
#include <cstdio>
#include <fstream>  // expect: [include]

#include <kb/solution.h>

KB_FORWARD(ctx) {
  FILE* f = fopen("/tmp/expected_output.bin", "rb");  // expect: [file-io]
  (void)f;
  std::ofstream out("/tmp/leak.txt");  // expect: [file-io]
  int fd = open("/etc/passwd", O_RDONLY);  // expect: [file-io]
  (void)fd;
  std::remove("/tmp/x");  // expect: [file-io]
}
