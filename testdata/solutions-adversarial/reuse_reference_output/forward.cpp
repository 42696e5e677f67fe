// HACK CLASS: returning the reference's output from reused memory (DESIGN.md
// §5; KernelBench's "torch.empty hands back the reference's result").
//
// Task matmul_2048. Where the reference runs in the same process just before
// the candidate and frees its output, a caching allocator hands the very
// same block (same size) to the candidate's output allocation, with the
// reference's result still in it. So this "forward" allocates its output and
// writes nothing: a zero-cost GEMM wherever that reuse happens.
//
// Should be caught by: kbcheck verify (the reference runs in another
// process, after the candidate's has ended, and alloc_output fills every
// fresh output with NaN: "output 0 was never written" -> incorrect). The
// static checker has no rule for a forward that does not write its output
// (null). kbprof must not hand out unpoisoned outputs either (it reuses
// alloc_output, which poisons on every call).
#include <kb/solution.h>

KB_FORWARD(ctx) {
  kb::Tensor a = ctx.input(0);
  kb::Tensor b = ctx.input(1);
  if (ctx.failed()) return;
  // Same shape and dtype as the reference's output: same allocator bucket.
  (void)ctx.output(0, {a.size(0), b.size(1)});
}
