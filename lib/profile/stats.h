// Summary statistics of repeated timings, and the stopping rule of adaptive
// repetition (DESIGN.md §6): median, mean, min, max, spread and a 95%
// confidence interval of the median.
//
// The interval is distribution-free (order statistics of a binomial(n, 1/2),
// normal approximation): timings are skewed and have outliers (a context
// switch, a clock change), so an interval of the mean from a t-distribution
// would be too wide where one sample is absurd and too narrow where the
// distribution is bimodal. With n samples sorted, the interval is
// [x(j), x(k)], j = floor(n/2 - 0.98 sqrt(n)), k = ceil(n/2 + 0.98 sqrt(n)).
#pragma once

#include <cstddef>
#include <vector>

#include "core/json.h"

namespace kb::profile {

struct SampleStats {
  std::size_t n = 0;
  double median = 0, mean = 0, min = 0, max = 0;
  double stddev = 0;          // sample standard deviation (n - 1)
  double p10 = 0, p90 = 0;
  double ci_low = 0, ci_high = 0;  // 95% interval of the median
  // (p90 - p10) / median: how wide the bulk of the distribution is.
  double spread() const { return median > 0 ? (p90 - p10) / median : 0; }
  // Half the interval's width relative to the median (0.01 = ±1%).
  double ciHalfWidth() const { return median > 0 ? (ci_high - ci_low) / 2 / median : 0; }
  // kbprof's shape (docs/kbprof.md): median_ms, mean_ms, min_ms, max_ms,
  // stddev_ms, p10_ms, p90_ms, spread, ci95_low_ms, ci95_high_ms,
  // ci95_half_width, n. The samples are milliseconds.
  Json toJson() const;
  static SampleStats fromJson(const Json& j);  // missing fields read as 0
};

// Summary of `samples` (any order; empty gives all zeros).
SampleStats summarize(std::vector<double> samples);

// Linear-interpolated quantile q in [0, 1] of sorted samples.
double quantileSorted(const std::vector<double>& sorted, double q);

// True when the 95% interval of the median is within ±target of it (and
// there are at least `min_samples`).
bool precise(const SampleStats& s, double target, std::size_t min_samples);

}  // namespace kb::profile
