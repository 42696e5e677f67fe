// Token-level loss terms. Every per-token tensor is [B, T] float32 and
// `mask` [B, T] float32 is 1 on the action tokens that count. Each function
// returns SUMS over the masked tokens, never means: the trainer divides by
// the number of action tokens of the whole optimizer step (all micro-batches
// of all processes), which is what makes micro-batching and data
// parallelism give the same gradient as one pass over the whole batch
// (docs/kbtrain.md "Loss normalisation").
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

namespace kb::rl {

// Negative log-likelihood of the action tokens: sum_t -log pi(a_t|s_t) m_t.
at::Tensor nllSum(const at::Tensor& logprobs, const at::Tensor& mask);

// PPO clipped surrogate (Schulman et al. 2017, eq. 7) with asymmetric
// clipping ("clip-higher", DAPO, Yu et al. 2025):
//   r_t  = exp(log pi(a_t|s_t) - log pi_old(a_t|s_t))            (in float32)
//   L_t  = -min(r_t A_t, clip(r_t, 1 - eps_low, 1 + eps_high) A_t)
struct ClippedSurrogate {
  at::Tensor loss_sum;       // sum_t L_t m_t (differentiable)
  at::Tensor clipped_low;    // tokens where A<0 and r < 1 - eps_low (gradient cut)
  at::Tensor clipped_high;   // tokens where A>0 and r > 1 + eps_high
  at::Tensor ratio_sum;      // sum_t r_t m_t
  at::Tensor ratio_max;      // max_t r_t over masked tokens (0 when none)
};
ClippedSurrogate clippedSurrogate(const at::Tensor& logprobs, const at::Tensor& old_logprobs,
                                  const at::Tensor& advantages, const at::Tensor& mask, double eps_low,
                                  double eps_high);

// Value loss: 0.5 (V_t - R_t)^2, or with clip > 0 (PPO2's value clipping)
//   0.5 max((V_t - R_t)^2, (V_old + clip(V_t - V_old, -c, c) - R_t)^2).
at::Tensor valueLossSum(const at::Tensor& values, const at::Tensor& old_values, const at::Tensor& returns,
                        const at::Tensor& mask, double clip);

// KL(pi || pi_ref) per token by Schulman's k3 estimator (unbiased, >= 0):
//   k3 = exp(log pi_ref - log pi) - (log pi_ref - log pi) - 1.
at::Tensor k3Kl(const at::Tensor& logprobs, const at::Tensor& ref_logprobs);

// Entropy of the next-token distribution, -sum_v p log p, [B, T] float32,
// from logits [B, T, V].
at::Tensor entropyFromLogits(const at::Tensor& logits);

}  // namespace kb::rl
