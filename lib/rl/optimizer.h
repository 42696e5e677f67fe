// AdamW (Loshchilov & Hutter 2019) with linear warm-up (gradient clipping:
// gradients.h).
//
//   lr_t = lr * min(1, t / warmup_steps)          (t = 1, 2, ...; warmup 0: lr)
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   w = w - lr_t * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) - lr_t * wd * w
//
// Low-precision parameters (bf16, fp16) get a float32 master copy: the
// update is made in float32 and copied back, so small updates are not lost.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kb::rl {

struct AdamWOptions {
  double lr = 1e-5;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  int64_t warmup_steps = 0;
};

class AdamW {
 public:
  AdamW(std::vector<at::Tensor> params, const AdamWOptions& options);
  // One update from `grads` (one per parameter, any floating dtype, e.g. a
  // Gradients buffer); returns the learning rate used.
  double step(const std::vector<at::Tensor>& grads);
  double learningRate(int64_t step) const;  // lr_t for step t (1-based)
  int64_t steps() const { return t_; }
  const std::vector<at::Tensor>& params() const { return params_; }
  // The state a resumed run needs: "m.<i>", "v.<i>", "master.<i>" (float32
  // master copies, low-precision parameters only) and "step" (a 1-element
  // int64 tensor), on the CPU.
  std::vector<std::pair<std::string, at::Tensor>> state() const;
  // Restores state(); throws kb::UsageError when it does not fit these parameters.
  void loadState(const std::map<std::string, at::Tensor>& state);

 private:
  std::vector<at::Tensor> params_, master_, m_, v_;
  AdamWOptions o_;
  int64_t t_ = 0;
};

}  // namespace kb::rl
