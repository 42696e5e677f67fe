#include "rl/advantages.h"

#include <cmath>
#include <limits>
#include <map>

#include "core/error.h"

namespace kb::rl {

std::vector<double> gae(const std::vector<double>& rewards, const std::vector<double>& values, double gamma,
                        double lambda) {
  if (rewards.size() != values.size())
    throw Error("gae: " + std::to_string(rewards.size()) + " rewards but " + std::to_string(values.size()) +
                " values");
  const size_t T = rewards.size();
  std::vector<double> adv(T, 0.0);
  double next_value = 0.0, next_adv = 0.0;
  for (size_t k = T; k-- > 0;) {
    const double delta = rewards[k] + gamma * next_value - values[k];
    adv[k] = delta + gamma * lambda * next_adv;
    next_value = values[k];
    next_adv = adv[k];
  }
  return adv;
}

std::vector<double> terminalRewards(size_t n, double reward) {
  std::vector<double> r(n, 0.0);
  if (n > 0) r.back() = reward;
  return r;
}

std::vector<double> groupNormalisedAdvantages(const std::vector<double>& rewards,
                                              const std::vector<std::string>& groups, bool scale_by_std,
                                              double eps) {
  if (rewards.size() != groups.size()) throw Error("grpo: rewards and groups differ in length");
  std::map<std::string, std::vector<size_t>> members;
  for (size_t i = 0; i < groups.size(); ++i) members[groups[i]].push_back(i);
  std::vector<double> adv(rewards.size(), 0.0);
  for (const auto& [g, idx] : members) {
    if (idx.size() < 2) continue;
    double mean = 0;
    for (size_t i : idx) mean += rewards[i];
    mean /= static_cast<double>(idx.size());
    double var = 0;
    for (size_t i : idx) var += (rewards[i] - mean) * (rewards[i] - mean);
    const double std = std::sqrt(var / static_cast<double>(idx.size() - 1));
    for (size_t i : idx) adv[i] = scale_by_std ? (rewards[i] - mean) / (std + eps) : rewards[i] - mean;
  }
  return adv;
}

void ExplainedVarianceSums::add(double ret, double value) {
  n += 1;
  y += ret;
  yy += ret * ret;
  r += ret - value;
  rr += (ret - value) * (ret - value);
}

double ExplainedVarianceSums::value() const {
  if (n < 1) return std::numeric_limits<double>::quiet_NaN();
  const double var_y = yy / n - (y / n) * (y / n);
  const double var_r = rr / n - (r / n) * (r / n);
  if (var_y <= 1e-12) return std::numeric_limits<double>::quiet_NaN();
  return 1.0 - var_r / var_y;
}

}  // namespace kb::rl
