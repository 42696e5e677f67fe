#include <cstdlib>

#include <kb/solution.h>

extern char** environ;  // expect: [extern-symbol]

KB_FORWARD(ctx) {
  const char* home = std::getenv("KB_EXPECTED_OUTPUT");  // expect: [environment]
  setenv("CUDA_LAUNCH_BLOCKING", "1", 1);  // expect: [environment]
  char** e = environ;  // expect: [environment]
  (void)home;
  (void)e;
}
