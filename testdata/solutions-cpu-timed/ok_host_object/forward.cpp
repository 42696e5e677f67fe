// Legitimate: a host object made in the init hook (here a packed W^T on the
// heap, standing in for a CUDA graph or a cuBLASLt plan) kept through the
// sanctioned ctx.set_host_object and read back in every forward, with no
// global variable. Must be ok in kbcheck verify and kbprof --device cpu.
#include <cstdlib>
#include <kb/solution.h>

struct PackedWeight {
  int64_t n = 0, k = 0;
  float* wt = nullptr;  // [k, n]
};

static void destroyPacked(void* p) {
  auto* w = static_cast<PackedWeight*>(p);
  std::free(w->wt);
  delete w;
}

KB_INIT(ctx) {
  kb::Tensor w = ctx.param("linear.weight");
  if (ctx.failed()) return;
  auto* packed = new PackedWeight;
  packed->n = w.size(0);
  packed->k = w.size(1);
  packed->wt = static_cast<float*>(std::malloc(sizeof(float) * packed->n * packed->k));
  for (int64_t j = 0; j < packed->n; ++j)
    for (int64_t p = 0; p < packed->k; ++p) packed->wt[p * packed->n + j] = w.data_as<float>()[j * packed->k + p];
  ctx.set_host_object("wt", packed, destroyPacked);
}

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor b = ctx.param("linear.bias");
  auto* packed = ctx.host_object<PackedWeight>("wt");
  if (ctx.failed() || !packed) return;
  const int64_t m = x.size(0), k = packed->k, n = packed->n;
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = b.data_as<float>()[j];
      for (int64_t p = 0; p < k; ++p) acc += x.data_as<float>()[i * k + p] * packed->wt[p * n + j];
      y.data_as<float>()[i * n + j] = acc > 0 ? acc : 0;
    }
}
