// A thread no thread API names: a sigevent with SIGEV_THREAD makes libc
// start a thread that runs the notification function when an aio request
// completes, a timer fires or a message arrives (issue 35, class 6-static;
// testdata/solutions-adversarial/baseline_aio). Judged by what the code
// stores: the SIGEV_THREAD constant and any notification function
// (a function taking a union sigval), however it reaches the sigevent.
#include <aio.h>
#include <csignal>
#include <cstring>
#include <ctime>

#include <kb/solution.h>

namespace {
void on_done(sigval) {}

struct Spin {
  aiocb request = {};
};
}  // namespace

KB_INIT(ctx) {
  auto* s = new Spin;
  s->request.aio_sigevent.sigev_notify = SIGEV_THREAD;  // expect: [host-thread]
  s->request.aio_sigevent.sigev_notify_function = on_done;  // expect: [host-thread]
  aio_read(&s->request);  // expect: [file-io]

  sigevent ev = {};
  ev.sigev_notify = 2;  // the value of SIGEV_THREAD, spelt as a number
  void (*fn)(sigval) = [](sigval) {};  // expect: [host-thread]
  std::memcpy(&ev.sigev_notify_function, &fn, sizeof fn);  // expect: [host-thread]
  timer_t timer;
  timer_create(CLOCK_MONOTONIC, &ev, &timer);  // expect: [process]

  sigevent designated{};
  designated.sigev_value.sival_ptr = s;  // fine: a value, not a thread
  designated.sigev_signo = SIGUSR1;
  (void)designated;
  on_done(sigval{});  // fine: called here, on this thread
  sigqueue(0, SIGUSR1, sigval{});  // expect: [process]
}

KB_FORWARD(ctx) { (void)ctx; }
