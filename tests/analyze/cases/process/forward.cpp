#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include <kb/solution.h>

#define RUN(cmd) std::system(cmd)
using std::system;

KB_FORWARD(ctx) {
  RUN("nvidia-smi");  // expect: [process]
  system("ls");  // expect: [process]
  int (*launcher)(const char*) = &::system;  // expect: [process]
  launcher("true");
  FILE* f = popen("id", "r");  // expect: [process]
  (void)f;
  if (fork() == 0) _exit(0);  // expect: [process]
  execl("/bin/sh", "sh", nullptr);  // expect: [process]
}
