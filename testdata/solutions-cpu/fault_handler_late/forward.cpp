// Code after the call returned, through a fault the solution arranges in the
// harness's memory (a review by attack, 2026-12-08): forward writes nothing,
// installs a SIGSEGV handler and takes away the access to the page that
// holds its input (harness heap). The harness touches that page once the
// call has returned (the input's digest, other objects on the page); the
// handler then gives the page back and computes the output, after the call,
// before the harness sends it: with no timing in verify this gains nothing,
// but it is candidate code outside its call, as a timed call's work outside
// kbprof's clock would be. The worker holds every signal but SIGSYS outside
// candidate calls, so the harness's fault ends the worker (the kernel's
// default action for a held fault) and the handler never runs: crash.
#include <kb/solution.h>
#include <signal.h>
#include <sys/mman.h>
#include <cstdint>

namespace {
const float *gX, *gW, *gB;
float* gY;
int64_t gm, gk, gn;
void* page;
long page_size = 4096;

void late(int) {
  mprotect(page, page_size, PROT_READ | PROT_WRITE);
  for (int64_t i = 0; i < gm; ++i)
    for (int64_t j = 0; j < gn; ++j) {
      float acc = gB[j];
      for (int64_t p = 0; p < gk; ++p) acc += gX[i * gk + p] * gW[j * gk + p];
      gY[i * gn + j] = acc > 0.0f ? acc : 0.0f;
    }
}
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  gm = x.size(0), gk = x.size(1), gn = w.size(0);
  kb::Tensor y = ctx.output(0, {gm, gn});
  if (ctx.failed()) return;
  gX = x.data_as<float>();
  gW = w.data_as<float>();
  gB = b.data_as<float>();
  gY = y.data_as<float>();
  struct sigaction sa {};
  sa.sa_handler = late;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
  page = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(gX) & ~uintptr_t(page_size - 1));
  mprotect(page, page_size, PROT_NONE);
}
