// Tries to list the folder its working folder is in (every worker's, where
// a sibling's result channel holds the seeds' outputs) and its build cache;
// fails loudly if it can (verify/private_dirs.h).
#include <kb/solution.h>
#include <dirent.h>
#include <dlfcn.h>
#include <string>
// Host-side y = relu(x @ W^T + b) over the harness's CPU tensors.
static bool linear_relu(const kb::Context& ctx, kb::Tensor& y) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return false;
  if (!x.is_contiguous() || !w.is_contiguous()) {
    ctx.fail("expected contiguous x and W");
    return false;
  }
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  y = ctx.output(0, {m, n});
  if (ctx.failed()) return false;
  const float* X = x.data_as<float>();
  const float* W = w.data_as<float>();
  const float* B = b.data_as<float>();
  float* Y = y.data_as<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = B[j];
      for (int64_t p = 0; p < k; ++p) acc += X[i * k + p] * W[j * k + p];
      Y[i * n + j] = acc > 0.0f ? acc : 0.0f;
    }
  return true;
}

// Any entry of `dir` that is not "." or "..": seen means readable.
static bool listable(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return false;
  bool seen = false;
  while (dirent* e = readdir(d))
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") seen = true;
  closedir(d);
  return seen;
}

KB_FORWARD(ctx) {
  if (listable("..")) {
    ctx.fail("ESCAPED: listed the workers' scratch folder");
    return;
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&linear_relu), &info) && info.dli_fname) {
    std::string lib = info.dli_fname;  // <cache>/<entry>/solution.so: the cache is two levels up
    std::string entry = lib.substr(0, lib.rfind('/'));
    std::string cache = entry.substr(0, entry.rfind('/'));
    if (!cache.empty() && listable(cache)) {
      ctx.fail(("ESCAPED: listed the build cache " + cache).c_str());
      return;
    }
  }
  kb::Tensor y;
  linear_relu(ctx, y);
}
