#include <future>  // expect: [include]
#include <thread>  // expect: [include]

#include <kb/solution.h>

static void work(float* p) { p[0] = 1.f; }

KB_FORWARD(ctx) {
  float* p = ctx.output(0, {1}).data_as<float>();
  std::thread t(work, p);  // expect: [host-thread]
  t.detach();
  auto f = std::async(std::launch::async, work, p);  // expect: [host-thread]
#pragma omp parallel for  // expect: [host-thread]
  for (int i = 0; i < 4; ++i) p[0] += 1.f;
  (void)f;
}
