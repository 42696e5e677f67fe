// Legitimate: y = silu(x) (task silu_large) with a kernel written in inline
// PTX (ld.global.nc.v4.f32, ex2.approx.ftz.f32, rcp.approx + a Newton step
// in fma.rn.f32, st.global.v4.f32), on ctx.stream(). Inline PTX is allowed
// by the paper's rules. Expected: no static finding, verify ok, kbprof ok.
#include <kb/solution.h>

#include <cuda_runtime.h>

#include "kernels/silu_ptx.cuh"

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  if (!x.is_contiguous()) {
    ctx.fail("expected a contiguous input");
    return;
  }
  kb::Tensor y = ctx.output(0, x.ndim, x.sizes);
  if (ctx.failed()) return;
  cudaError_t err = launch_silu_ptx(x.data_as<const float>(), y.data_as<float>(), x.numel(),
                                    static_cast<cudaStream_t>(ctx.stream()));
  if (err != cudaSuccess) ctx.fail(cudaGetErrorString(err));
}
