// GAE, GRPO normalisation and explained variance against hand computations.
#include <gtest/gtest.h>

#include <cmath>

#include "rl/advantages.h"

using namespace kb::rl;

TEST(Gae, KnownRewardSequenceByHand) {
  // rewards r = [0, 0, 1], values V = [0.5, 0.2, 0.8], gamma 1, lambda 0.95.
  // delta_2 = 1 - 0.8 = 0.2                    A_2 = 0.2
  // delta_1 = 0 + 0.8 - 0.2 = 0.6              A_1 = 0.6 + 0.95 * 0.2 = 0.79
  // delta_0 = 0 + 0.2 - 0.5 = -0.3             A_0 = -0.3 + 0.95 * 0.79 = 0.4505
  const auto a = gae({0, 0, 1}, {0.5, 0.2, 0.8}, 1.0, 0.95);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_NEAR(a[2], 0.2, 1e-12);
  EXPECT_NEAR(a[1], 0.79, 1e-12);
  EXPECT_NEAR(a[0], 0.4505, 1e-12);
}

TEST(Gae, GammaAndLambdaOneIsMonteCarloReturnMinusValue) {
  const std::vector<double> r = {0.5, -1, 0, 2}, v = {0.1, 0.3, -0.2, 0.7};
  const auto a = gae(r, v, 1.0, 1.0);
  double ret = 0;
  for (size_t k = r.size(); k-- > 0;) {
    ret += r[k];
    EXPECT_NEAR(a[k], ret - v[k], 1e-12);
  }
}

TEST(Gae, DiscountedLambdaZeroIsOneStepTd) {
  const std::vector<double> r = {1, 2, 3}, v = {0.5, 0.25, 0.125};
  const auto a = gae(r, v, 0.9, 0.0);
  EXPECT_NEAR(a[0], 1 + 0.9 * 0.25 - 0.5, 1e-12);
  EXPECT_NEAR(a[1], 2 + 0.9 * 0.125 - 0.25, 1e-12);
  EXPECT_NEAR(a[2], 3 - 0.125, 1e-12);
}

TEST(Gae, TerminalRewards) {
  EXPECT_EQ(terminalRewards(3, 2.5), (std::vector<double>{0, 0, 2.5}));
  EXPECT_TRUE(terminalRewards(0, 1).empty());
}

TEST(Grpo, GroupNormalisation) {
  // Group a: rewards 1, -1, 3 -> mean 1, sample std 2. Group b: single -> 0.
  const auto adv = groupNormalisedAdvantages({1, -1, 3, 5}, {"a", "a", "a", "b"}, true, 0.0);
  EXPECT_NEAR(adv[0], 0.0, 1e-12);
  EXPECT_NEAR(adv[1], -1.0, 1e-12);
  EXPECT_NEAR(adv[2], 1.0, 1e-12);
  EXPECT_EQ(adv[3], 0.0);
  const auto raw = groupNormalisedAdvantages({1, -1, 3}, {"a", "a", "a"}, false);
  EXPECT_NEAR(raw[1], -2.0, 1e-12);
  // All equal: zero advantage, no division by zero.
  const auto same = groupNormalisedAdvantages({2, 2}, {"t", "t"}, true);
  EXPECT_EQ(same[0], 0.0);
}

TEST(ExplainedVariance, ByHand) {
  // returns y = [1, 2, 3, 4], values v = [1, 2, 2, 5]: residual [0, 0, 1, -1]
  // Var(y) = 1.25, Var(res) = 0.5 - 0 = 0.5 -> EV = 1 - 0.5 / 1.25 = 0.6.
  ExplainedVarianceSums s;
  const double y[] = {1, 2, 3, 4}, v[] = {1, 2, 2, 5};
  for (int i = 0; i < 4; ++i) s.add(y[i], v[i]);
  EXPECT_NEAR(s.value(), 0.6, 1e-12);
  ExplainedVarianceSums flat;
  flat.add(1, 0);
  flat.add(1, 2);
  EXPECT_TRUE(std::isnan(flat.value()));
}
