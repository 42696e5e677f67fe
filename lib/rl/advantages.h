// Advantage estimators, on plain vectors (no torch): GAE for PPO and value
// pretraining, group normalisation for GRPO.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kb::rl {

// Generalised Advantage Estimation (Schulman et al. 2016, eq. 16) over the
// action tokens of one episode, in order:
//   delta_t = r_t + gamma * V_{t+1} - V_t        (V_T = 0 after the last token)
//   A_t     = delta_t + gamma * lambda * A_{t+1}  (A_T = 0)
// rewards and values have one entry per action token. Returns A.
std::vector<double> gae(const std::vector<double>& rewards, const std::vector<double>& values, double gamma,
                        double lambda);

// The token rewards of an episode with only a terminal reward: 0 for every
// action token, `reward` on the last.
std::vector<double> terminalRewards(size_t action_tokens, double reward);

// GRPO (Shao et al. 2024) group-normalised advantages: each episode's reward
// minus the mean of its group (episodes of the same task), divided by the
// group's standard deviation (sample std, n-1) + eps when scale_by_std
// (false: Dr. GRPO's unscaled variant). A group of one gets advantage 0.
std::vector<double> groupNormalisedAdvantages(const std::vector<double>& rewards,
                                              const std::vector<std::string>& groups, bool scale_by_std,
                                              double eps = 1e-6);

// 1 - Var(returns - values) / Var(returns) (population variances); NaN when
// Var(returns) is 0. Given as sums so that processes can add theirs first:
// n, sum y, sum y^2, sum (y - v), sum (y - v)^2.
struct ExplainedVarianceSums {
  double n = 0, y = 0, yy = 0, r = 0, rr = 0;
  void add(double ret, double value);
  double value() const;
};

}  // namespace kb::rl
