#include "rl/losses.h"

namespace kb::rl {

at::Tensor nllSum(const at::Tensor& logprobs, const at::Tensor& mask) { return -(logprobs * mask).sum(); }

ClippedSurrogate clippedSurrogate(const at::Tensor& logprobs, const at::Tensor& old_logprobs,
                                  const at::Tensor& advantages, const at::Tensor& mask, double eps_low,
                                  double eps_high) {
  const at::Tensor ratio = at::exp(logprobs.to(at::kFloat) - old_logprobs.to(at::kFloat));
  const at::Tensor unclipped = ratio * advantages;
  const at::Tensor clipped = at::clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) * advantages;
  ClippedSurrogate s;
  s.loss_sum = -(at::minimum(unclipped, clipped) * mask).sum();
  at::NoGradGuard no_grad;
  const at::Tensor r = ratio.detach();
  s.clipped_low = ((advantages < 0).logical_and(r < 1.0 - eps_low).to(at::kFloat) * mask).sum();
  s.clipped_high = ((advantages > 0).logical_and(r > 1.0 + eps_high).to(at::kFloat) * mask).sum();
  s.ratio_sum = (r * mask).sum();
  s.ratio_max = (r * mask).max();
  return s;
}

at::Tensor valueLossSum(const at::Tensor& values, const at::Tensor& old_values, const at::Tensor& returns,
                        const at::Tensor& mask, double clip) {
  const at::Tensor v = values.to(at::kFloat);
  at::Tensor loss = (v - returns).pow(2);
  if (clip > 0) {
    const at::Tensor v_clipped = old_values + at::clamp(v - old_values, -clip, clip);
    loss = at::maximum(loss, (v_clipped - returns).pow(2));
  }
  return 0.5 * (loss * mask).sum();
}

at::Tensor k3Kl(const at::Tensor& logprobs, const at::Tensor& ref_logprobs) {
  const at::Tensor d = ref_logprobs.to(at::kFloat) - logprobs.to(at::kFloat);
  return at::exp(d) - d - 1.0;
}

at::Tensor entropyFromLogits(const at::Tensor& logits) {
  const at::Tensor logp = at::log_softmax(logits.to(at::kFloat), -1);
  return -(logp.exp() * logp).sum(-1);
}

}  // namespace kb::rl
