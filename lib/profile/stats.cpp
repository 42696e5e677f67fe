#include "profile/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kb::profile {

double quantileSorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  auto hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

SampleStats summarize(std::vector<double> samples) {
  SampleStats s;
  s.n = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantileSorted(samples, 0.5);
  s.p10 = quantileSorted(samples, 0.1);
  s.p90 = quantileSorted(samples, 0.9);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.n);
  if (s.n > 1) {
    double ss = 0;
    for (double x : samples) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(s.n - 1));
  }
  // Order-statistic interval of the median: ranks n/2 ± 1.96 sqrt(n)/2
  // (1-based), clamped to the sample.
  double n = static_cast<double>(s.n);
  double half = 1.959964 * std::sqrt(n) / 2;
  auto j = static_cast<long>(std::floor(n / 2 - half));
  auto k = static_cast<long>(std::ceil(n / 2 + half)) + 1;
  j = std::clamp(j, 1L, static_cast<long>(s.n));
  k = std::clamp(k, 1L, static_cast<long>(s.n));
  s.ci_low = samples[static_cast<std::size_t>(j - 1)];
  s.ci_high = samples[static_cast<std::size_t>(k - 1)];
  return s;
}

bool precise(const SampleStats& s, double target, std::size_t min_samples) {
  return s.n >= min_samples && s.median > 0 && s.ciHalfWidth() <= target;
}

Json SampleStats::toJson() const {
  Json j;
  j["median_ms"] = median;
  j["mean_ms"] = mean;
  j["min_ms"] = min;
  j["max_ms"] = max;
  j["stddev_ms"] = stddev;
  j["p10_ms"] = p10;
  j["p90_ms"] = p90;
  j["spread"] = spread();
  j["ci95_low_ms"] = ci_low;
  j["ci95_high_ms"] = ci_high;
  j["ci95_half_width"] = ciHalfWidth();
  j["n"] = n;
  return j;
}

SampleStats SampleStats::fromJson(const Json& j) {
  SampleStats s;
  if (!j.is_object()) return s;
  s.median = j.value("median_ms", 0.0);
  s.mean = j.value("mean_ms", 0.0);
  s.min = j.value("min_ms", 0.0);
  s.max = j.value("max_ms", 0.0);
  s.stddev = j.value("stddev_ms", 0.0);
  s.p10 = j.value("p10_ms", 0.0);
  s.p90 = j.value("p90_ms", 0.0);
  s.ci_low = j.value("ci95_low_ms", 0.0);
  s.ci_high = j.value("ci95_high_ms", 0.0);
  s.n = j.value("n", std::size_t{0});
  return s;
}

}  // namespace kb::profile
