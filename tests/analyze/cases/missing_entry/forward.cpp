// missing-entry: an init hook and a helper, but no KB_FORWARD. Everything
// here is clean, and still there is nothing for the harness to call.
#include <kb/solution.h>

namespace {
float twice(float x) { return 2 * x; }
}  // namespace

KB_INIT(ctx) {
  kb::Tensor w = ctx.param("weight");
  (void)w;
  (void)twice(1.0f);
}
