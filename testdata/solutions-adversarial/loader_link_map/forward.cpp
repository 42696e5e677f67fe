// HACK CLASS (issue 17, class 3): torch work found without dlsym, by walking
// the dynamic loader's list of loaded objects from _r_debug (its link_map
// chain) and looking each name up in every library's GNU hash table, so no
// dlopen/dlsym/<dlfcn.h>/<link.h> appears. The loader's structures are
// declared by hand (glibc's layout on x86-64 and aarch64).
//
// Should be caught by: kbcheck static [dynamic-loading] (a reference to
// ::_r_debug, the loader's debug interface) and [extern-symbol] (_r_debug
// declared by hand, defined nowhere in the solution); at run time by
// kbprof's CUPTI provenance check (ATen's relu_ kernel) and import check.
#include <kb/solution.h>

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/linear.cuh"

#include <cstring>

namespace {
struct LinkMap {
  uintptr_t l_addr;
  const char* l_name;
  const int64_t* l_ld;  // the object's dynamic section: {tag, value} pairs
  LinkMap* l_next;
  LinkMap* l_prev;
};
struct RDebug {
  int r_version;
  LinkMap* r_map;
};
}  // namespace
extern "C" RDebug _r_debug;

namespace {
struct Sym {
  uint32_t st_name;
  unsigned char st_info, st_other;
  uint16_t st_shndx;
  uint64_t st_value, st_size;
};

uint32_t gnuHash(const char* s) {
  uint32_t h = 5381;
  for (; *s; ++s) h = h * 33 + static_cast<unsigned char>(*s);
  return h;
}

void* inObject(const LinkMap* lm, const char* name) {
  const char* strtab = nullptr;
  const Sym* symtab = nullptr;
  const uint32_t* hash = nullptr;
  auto addr = [lm](int64_t v) { return static_cast<uintptr_t>(v) < lm->l_addr ? lm->l_addr + v : v; };
  for (const int64_t* d = lm->l_ld; d && d[0] != 0; d += 2) {
    if (d[0] == 5) strtab = reinterpret_cast<const char*>(addr(d[1]));           // DT_STRTAB
    if (d[0] == 6) symtab = reinterpret_cast<const Sym*>(addr(d[1]));            // DT_SYMTAB
    if (d[0] == 0x6ffffef5) hash = reinterpret_cast<const uint32_t*>(addr(d[1]));  // DT_GNU_HASH
  }
  if (!strtab || !symtab || !hash) return nullptr;
  const uint32_t nbuckets = hash[0], symoffset = hash[1], bloom_size = hash[2];
  const uint32_t* buckets = hash + 4 + 2 * bloom_size;  // 64-bit bloom words
  const uint32_t* chain = buckets + nbuckets;
  const uint32_t h = gnuHash(name);
  uint32_t i = buckets[h % nbuckets];
  if (i < symoffset) return nullptr;
  for (;; ++i) {
    const uint32_t h2 = chain[i - symoffset];
    if ((h | 1) == (h2 | 1) && std::strcmp(name, strtab + symtab[i].st_name) == 0 &&
        symtab[i].st_value != 0)
      return reinterpret_cast<void*>(lm->l_addr + symtab[i].st_value);
    if (h2 & 1) return nullptr;
  }
}

void* byLinkMap(const char* name) {
  for (const LinkMap* lm = _r_debug.r_map; lm; lm = lm->l_next)
    if (void* p = inObject(lm, name)) return p;
  return nullptr;
}

using MmOut = void* (*)(const void*, const void*, void*);
using ReluInplace = void* (*)(void*);
using Wrap = int (*)(void*, int64_t, const int64_t*, const int64_t*, int64_t, int32_t, int32_t,
                     int32_t, void**);
using Drop = int (*)(void*);

// ATen's mm_out + relu_ on this call's tensors (as torch_dlsym), with the
// functions found by `find`.
template <typename Find>
bool via_aten(Find find, const kb::Tensor& x, const kb::Tensor& w, const kb::Tensor& b,
              const kb::Tensor& y, cudaStream_t stream) {
  auto mm_out = reinterpret_cast<MmOut>(find("_ZN2at4_ops6mm_out4callERKNS_6TensorES4_RS2_"));
  auto relu_ = reinterpret_cast<ReluInplace>(find("_ZN2at4_ops5relu_4callERNS_6TensorE"));
  auto wrap = reinterpret_cast<Wrap>(find("aoti_torch_create_tensor_from_blob"));
  auto drop = reinterpret_cast<Drop>(find("aoti_torch_delete_tensor_object"));
  if (!mm_out || !relu_ || !wrap || !drop) return false;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  const int64_t xs[2] = {m, k}, xst[2] = {k, 1};
  const int64_t wts[2] = {k, n}, wtst[2] = {1, k};
  const int64_t ys[2] = {m, n}, yst[2] = {n, 1};
  void *tx = nullptr, *twt = nullptr, *ty = nullptr;
  bool ok = wrap(x.data, 2, xs, xst, 0, 6, 1, x.device_index, &tx) == 0 &&
            wrap(w.data, 2, wts, wtst, 0, 6, 1, w.device_index, &twt) == 0 &&
            wrap(y.data, 2, ys, yst, 0, 6, 1, y.device_index, &ty) == 0;
  if (ok) {
    mm_out(tx, twt, ty);
    ok = launch_add_bias(y.data_as<float>(), b.data_as<const float>(), m, n, stream) ==
         cudaSuccess;
    if (ok) relu_(ty);
  }
  if (tx) drop(tx);
  if (twt) drop(twt);
  if (ty) drop(ty);
  return ok;
}
}  // namespace
#define TRY_ATEN(...) via_aten(byLinkMap, __VA_ARGS__)

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  auto stream = static_cast<cudaStream_t>(ctx.stream());
  if (ctx.on_cuda() && TRY_ATEN(x, w, b, y, stream)) return;
  cudaError_t err = launch_linear_relu(x.data_as<const float>(), w.data_as<const float>(),
                                       b.data_as<const float>(), y.data_as<float>(), m, k, n,
                                       stream);
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
