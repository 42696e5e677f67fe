// Process- and thread-wide settings the harness runs under, exit and fork
// hooks, and ends of the process that no banned name reached before a
// review by attack (2026-12-07): the floating-point environment (fenv,
// MXCSR), CPU affinity and scheduling, namespaces, pthread signal masks and
// scheduling, on_exit, err().
#include <cfenv>
#include <cstdlib>
#include <err.h>
#include <mutex>
#include <sched.h>
#include <sys/personality.h>
#include <xmmintrin.h>

#include <kb/solution.h>

namespace {
void bye(int, void*) {}
}  // namespace

KB_FORWARD(ctx) {
  std::fesetround(FE_UPWARD);  // expect: [process]
  fenv_t env;
  std::fegetenv(&env);
  std::fesetenv(&env);  // expect: [process]
  _mm_setcsr(_mm_getcsr() | 0x8040);  // expect: [process]
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_setaffinity(0, sizeof set, &set);  // expect: [process]
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // expect: [process]
  unshare(CLONE_FILES);  // expect: [process]
  personality(0x0040000);  // expect: [process]
  sched_param sp{};
  pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);  // expect: [process]
  pthread_atfork(nullptr, nullptr, nullptr);  // expect: [process]
  on_exit(bye, nullptr);  // expect: [process]
  if (ctx.failed()) err(1, "failed");  // expect: [process]

  // Fine: reading the rounding mode.
  if (std::fegetround() != FE_TONEAREST) ctx.fail("rounding");
}
