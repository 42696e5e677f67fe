// State kept in globals the solution does not define (issue 35, class 7):
// libc's getopt state, program_invocation_short_name, stdout, timezone,
// signgam, and iostream's per-stream storage (iword, pword, xalloc,
// register_callback). Writing one carries a value from call to call as well
// as a global of the solution's own would; reading one is fine (but
// program_invocation_name is the environment rule's: it points into argv).
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <unistd.h>

#include <kb/solution.h>

namespace {
void callback(std::ios_base::event, std::ios_base&, int) {}
void take(int& x) { x = 0; }
}  // namespace

KB_FORWARD(ctx) {
  const float* in = ctx.input(0).data_as<float>();
  optind = 7;  // expect: [mutable-global]
  opterr += 1;  // expect: [mutable-global]
  optarg = const_cast<char*>("x");  // expect: [mutable-global]
  program_invocation_short_name = nullptr;  // expect: [environment] [mutable-global]
  ++daylight;  // expect: [mutable-global]
  timezone = static_cast<long>(in[0]);  // expect: [mutable-global]
  stdout = stderr;  // expect: [mutable-global]
  int* p = &signgam;  // expect: [mutable-global]
  take(optopt);  // expect: [mutable-global]
  int& r = optind;  // expect: [mutable-global]
  tzname[0] = nullptr;  // expect: [mutable-global]
  (void)p;
  (void)r;
  static const int slot = std::ios_base::xalloc();  // expect: [mutable-global]
  std::cout.iword(slot) = 5;  // expect: [mutable-global]
  std::cerr.pword(slot) = nullptr;  // expect: [mutable-global]
  std::clog.register_callback(callback, slot);  // expect: [mutable-global]

  // Reads, and errno (a macro over a function), are fine.
  int seen = optind + opterr;
  const char* name = tzname[0];
  std::fprintf(stdout, "%d %s %ld\n", seen, name, timezone);
  errno = 0;
  std::cout << seen << '\n';
}
