// Gradient accumulation over micro-batches in a buffer of its own dtype.
//
// After each micro-batch's backward, accumulate() adds every parameter's
// .grad into the buffer and clears it. float64 buffers (the default for
// float32 models) make the sum independent of the order the micro-batches
// and processes are added in, to float64 rounding: this is what lets N
// processes reproduce one process's weights (docs/kbtrain.md "Loss
// normalisation and data parallelism"). float32 buffers serve bfloat16
// models (better than accumulating in bfloat16 .grad).
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <string>
#include <vector>

namespace kb::rl {

class Gradients {
 public:
  Gradients(const std::vector<at::Tensor>& params, at::ScalarType dtype);
  void accumulate();                           // buffers += params' .grad; .grad cleared
  std::vector<at::Tensor>& buffers() { return buffers_; }
  // Scales the buffers so their global L2 norm is at most max_norm (<= 0:
  // no clipping); returns the norm before clipping.
  double clipNorm(double max_norm);
  void zero();

 private:
  std::vector<at::Tensor> params_, buffers_;
};

// "auto": float64 for float32/float64 models, float32 otherwise; or "float64", "float32".
at::ScalarType gradientDtype(const std::string& name, at::ScalarType model_dtype);

}  // namespace kb::rl
