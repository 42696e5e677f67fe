// Names that look like banned APIs but are the solution's own: members,
// nested namespaces, C++-linkage helpers. None of this may be flagged.
#include <cuda_runtime.h>

#include <kb/solution.h>

#include "kernels/alias.cuh"
#include "kernels/ops.cuh"

namespace ops {
namespace at {  // nested, not torch's ::at
inline int relu(int x) { return x > 0 ? x : 0; }
}  // namespace at
}  // namespace ops

struct Workspace {
  int open(int x) const { return x + 1; }
  int system(int x) const { return x * 2; }
  int read(int x) const { return x; }
  int getenv(int x) const { return x; }
  int mprotect(int x) const { return x; }  // a member, not ::mprotect
};

int cudaStyleHelper(int x) { return x; }  // C++ linkage: no C symbol is replaced
int fork_join_tiles(int n) { return n / 2; }

KB_FORWARD(ctx) {
  Workspace w;
  int thread = w.open(1) + w.system(2) + w.read(3) + w.getenv(4) + w.mprotect(0);
  thread += ops::at::relu(-1) + cudaStyleHelper(1) + fork_join_tiles(4);
  kb::Tensor x = ctx.input(0);
  kb::Tensor y = ctx.output(0, {x.size(0)});
  launch_scale(x.data_as<const float>(), y.data_as<float>(), static_cast<int>(x.numel()),
               static_cast<float>(thread), static_cast<cudaStream_t>(ctx.stream()));
}
