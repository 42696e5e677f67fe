// Each loss against its formula computed independently here, element by
// element in double, on a hand-made batch that exercises every branch.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "rl/gradients.h"
#include "rl/losses.h"
#include "rl/optimizer.h"

using namespace kb::rl;

namespace {

at::Tensor t2(std::vector<float> v) { return at::tensor(v, at::kFloat).view({2, 3}); }

// Batch [2, 3]: ratios exp(logp - old) chosen to hit every clip branch.
//   token  r        A     branch (eps_low 0.2, eps_high 0.28)
//   0,0    1.5      +1    clipped high (r > 1.28, A > 0): L = -1.28
//   0,1    1.5      -1    unclipped (A < 0, r large): L = 1.5
//   0,2    0.5      -2    clipped low (r < 0.8, A < 0): L = -(0.8 * -2) = 1.6
//   1,0    0.5      +2    unclipped (A > 0, r small): L = -1.0
//   1,1    1.1      +1    inside: L = -1.1
//   1,2    3.0      +1    masked out
const std::vector<double> kRatio = {1.5, 1.5, 0.5, 0.5, 1.1, 3.0};
const std::vector<double> kAdv = {1, -1, -2, 2, 1, 1};
const std::vector<double> kMask = {1, 1, 1, 1, 1, 0};
const std::vector<double> kOld = {-1.0, -0.5, -2.0, -0.3, -1.2, -0.7};

}  // namespace

TEST(Losses, ClippedSurrogateEveryBranch) {
  std::vector<float> logp, old, adv, mask;
  for (int i = 0; i < 6; ++i) {
    old.push_back(static_cast<float>(kOld[i]));
    logp.push_back(static_cast<float>(kOld[i] + std::log(kRatio[i])));
    adv.push_back(static_cast<float>(kAdv[i]));
    mask.push_back(static_cast<float>(kMask[i]));
  }
  at::Tensor lp = t2(logp).requires_grad_(true);
  ClippedSurrogate s = clippedSurrogate(lp, t2(old), t2(adv), t2(mask), 0.2, 0.28);
  // Independent: L_t = -min(r A, clip(r, 0.8, 1.28) A).
  double want = 0, ratio_sum = 0, ratio_max = 0;
  for (int i = 0; i < 6; ++i) {
    const double r = kRatio[i], a = kAdv[i];
    want += kMask[i] * -std::min(r * a, std::clamp(r, 0.8, 1.28) * a);
    ratio_sum += kMask[i] * r;
    if (kMask[i] > 0) ratio_max = std::max(ratio_max, r);
  }
  EXPECT_NEAR(want, -1.28 + 1.5 + 1.6 - 1.0 - 1.1, 1e-12);  // the table above
  EXPECT_NEAR(s.loss_sum.item<double>(), want, 1e-5);
  EXPECT_EQ(s.clipped_high.item<double>(), 1.0);
  EXPECT_EQ(s.clipped_low.item<double>(), 1.0);
  EXPECT_NEAR(s.ratio_sum.item<double>(), ratio_sum, 1e-5);
  EXPECT_NEAR(s.ratio_max.item<double>(), ratio_max, 1e-5);
  // Gradient wrt logp: -r A on unclipped tokens, 0 on clipped and masked ones.
  s.loss_sum.backward();
  const std::vector<double> grad_want = {0, 1.5, 0, -1.0, -1.1, 0};
  for (int i = 0; i < 6; ++i)
    EXPECT_NEAR(lp.grad().view({-1})[i].item<double>(), grad_want[i], 1e-5) << "token " << i;
}

TEST(Losses, ValueLossPlainAndClipped) {
  const std::vector<float> v = {1.0f, 0.0f, 2.0f, -1.0f, 0.5f, 9.0f}, vo = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f},
                           ret = {1.0f, 1.0f, 0.0f, 1.0f, 0.5f, 0.0f};  // token 0: V moved past the clip toward R
  std::vector<float> m(kMask.begin(), kMask.end());
  double plain = 0, clipped = 0;
  for (int i = 0; i < 6; ++i) {
    plain += m[i] * 0.5 * std::pow(v[i] - ret[i], 2);
    const double vc = vo[i] + std::clamp<double>(v[i] - vo[i], -0.2, 0.2);
    clipped += m[i] * 0.5 * std::max(std::pow(v[i] - ret[i], 2), std::pow(vc - ret[i], 2));
  }
  EXPECT_NEAR(valueLossSum(t2(v), t2(vo), t2(ret), t2(m), 0.0).item<double>(), plain, 1e-5);
  EXPECT_NEAR(valueLossSum(t2(v), t2(vo), t2(ret), t2(m), 0.2).item<double>(), clipped, 1e-5);
  EXPECT_GT(clipped, plain);  // the clip branch is taken somewhere
}

TEST(Losses, K3KlNllAndEntropy) {
  const std::vector<float> lp = {-1.0f, -2.0f, -0.1f, -3.0f, -0.5f, -1.5f}, ref = {-1.5f, -1.0f, -0.1f, -2.0f, -0.2f, -4.0f};
  at::Tensor k3 = k3Kl(t2(lp), t2(ref));
  for (int i = 0; i < 6; ++i) {
    const double d = ref[i] - lp[i];
    EXPECT_NEAR(k3.view({-1})[i].item<double>(), std::exp(d) - d - 1, 1e-6);
    EXPECT_GE(k3.view({-1})[i].item<double>(), 0.0);
  }
  std::vector<float> m(kMask.begin(), kMask.end());
  double nll = 0;
  for (int i = 0; i < 6; ++i) nll += -lp[i] * m[i];
  EXPECT_NEAR(nllSum(t2(lp), t2(m)).item<double>(), nll, 1e-5);
  // Entropy of logits [1, 1, 3]: p = softmax; -sum p log p.
  at::Tensor logits = at::tensor({0.f, 1.f, 2.f, 0.f, 0.f, 0.f}, at::kFloat).view({1, 2, 3});
  at::Tensor h = entropyFromLogits(logits);
  double z = 1 + std::exp(1.0) + std::exp(2.0), want = 0;
  for (double x : {0.0, 1.0, 2.0}) want -= std::exp(x) / z * (x - std::log(z));
  EXPECT_NEAR(h[0][0].item<double>(), want, 1e-5);
  EXPECT_NEAR(h[0][1].item<double>(), std::log(3.0), 1e-5);
}

TEST(Optimizer, AdamWStepsByHandWithWarmupAndClipping) {
  // One parameter w = [1, -2], grad g = [0.3, -0.4] (norm 0.5), lr 0.1,
  // warm-up 2 steps (step 1 uses lr 0.05), weight decay 0.1.
  at::Tensor w = at::tensor({1.0f, -2.0f}).requires_grad_(true);
  AdamWOptions o;
  o.lr = 0.1;
  o.warmup_steps = 2;
  o.weight_decay = 0.1;
  AdamW opt({w}, o);
  Gradients grads({w}, at::kDouble);
  w.mutable_grad() = at::tensor({0.1f, -0.1f});
  grads.accumulate();  // two micro-batches add up: g = [0.3, -0.4]
  EXPECT_FALSE(w.grad().defined());
  w.mutable_grad() = at::tensor({0.2f, -0.3f});
  grads.accumulate();
  EXPECT_NEAR(grads.clipNorm(0.25), 0.5, 1e-6);  // scaled to 0.25: g = [0.15, -0.2]
  EXPECT_NEAR(opt.step(grads.buffers()), 0.05, 1e-12);
  // Step 1: m = 0.1 g, v = 0.001 g^2; mhat = g, vhat = g^2; update = sign(g) (eps small).
  const double g[2] = {0.15, -0.2}, w0[2] = {1.0, -2.0};
  for (int i = 0; i < 2; ++i) {
    const double decayed = w0[i] * (1 - 0.05 * 0.1);
    const double want = decayed - 0.05 * g[i] / (std::fabs(g[i]) + 1e-8);
    EXPECT_NEAR(w[i].item<double>(), want, 1e-6);
  }
  EXPECT_NEAR(opt.learningRate(2), 0.1, 1e-12);
  EXPECT_NEAR(opt.learningRate(10), 0.1, 1e-12);
}
