// The cost of the Python adapter's settings watch (lib/pymodel/adapter.cpp:
// a global RecordFunction callback that reads torch's precision and
// algorithm settings at every operation): a 4-element CPU add timed
// without and with such a callback. Printed, not asserted. Build and run:
//   T=$(/opt/kb-venv/bin/python -c 'import torch,os;print(os.path.dirname(torch.__file__))')
//   g++ -O2 -std=c++20 scripts/bench/record_function_cost.cpp -I$T/include \
//     -I$T/include/torch/csrc/api/include -L$T/lib -ltorch_cpu -lc10 -Wl,-rpath,$T/lib -o /tmp/rf && /tmp/rf
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <ATen/Parallel.h>
#include <chrono>
#include <cstdio>
static std::unique_ptr<at::ObserverContext> cb(const at::RecordFunction&) {
  at::Context& c = at::globalContext();
  volatile long long s = c.allowTF32CuBLAS() + c.allowTF32CuDNN() + c.benchmarkCuDNN() + c.deterministicCuDNN() +
      c.userEnabledCuDNN() + c.deterministicAlgorithms() + (long long)c.float32MatmulPrecision() +
      (long long)c.allowFP16ReductionCuBLAS() + (long long)c.allowBF16ReductionCuBLAS();
  (void)s;
  return nullptr;
}
double run(int n) {
  at::Tensor a = at::ones({4}), b = at::ones({4});
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) a = at::add(a, b);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
}
int main() {
  at::set_num_threads(1);
  run(20000);
  double base = run(200000);
  at::addGlobalCallback(at::RecordFunctionCallback(cb).needsInputs(false));
  run(20000);
  double with = run(200000);
  std::printf("per op: %.3f us without, %.3f us with the callback (+%.3f us)\n", base, with, with - base);
}
