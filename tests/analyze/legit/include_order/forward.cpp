// <string> before <vector> (and other standard headers the precompiled
// prelude already holds): every one resolves to libstdc++ under
// /usr/include/c++, however Clang spells the path it found (issue 35: a
// fresh cache once reported "<vector> resolves to /include/c++/12/vector").
// Also near misses of the descriptor, load-time and global-state rules that
// must stay clean.
#include <kb/solution.h>

#include <string>
#include <vector>
#include <algorithm>
#include <array>
#include <cstdio>
#include <iostream>
#include <memory>
#include <unistd.h>

namespace {
constexpr std::array<float, 3> kWeights = {0.25f, 0.5f, 0.25f};
constexpr std::array<int, 3> kOffsets = {-1, 0, 1};
const char* const kName = "include_order";
static float* const kNothing = nullptr;
struct Span {
  const float* data;
  long size;
};
const Span kEmpty{nullptr, 0};
}  // namespace

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  std::string label = std::string(kName) + "/" + std::to_string(x.numel());
  std::vector<float> host(kWeights.begin(), kWeights.end());
  std::unique_ptr<float[]> local(new float[4]);
  local[0] = host[0] + static_cast<float>(kOffsets[2]);
  long page = sysconf(_SC_PAGESIZE);
  if (label.empty() || page < 0) std::fprintf(stderr, "%s\n", label.c_str());
  std::cout.flush();
  (void)kNothing;
  (void)kEmpty;
}
