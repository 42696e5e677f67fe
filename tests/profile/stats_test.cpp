#include "profile/stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kb {
namespace {

TEST(Stats, EmptyIsZero) {
  profile::SampleStats s = profile::summarize({});
  EXPECT_EQ(s.n, 0u);
  EXPECT_EQ(s.median, 0);
  EXPECT_FALSE(profile::precise(s, 0.01, 1));
}

TEST(Stats, MedianMeanMinMaxOddAndEven) {
  profile::SampleStats odd = profile::summarize({5, 1, 3});
  EXPECT_DOUBLE_EQ(odd.median, 3);
  EXPECT_DOUBLE_EQ(odd.mean, 3);
  EXPECT_DOUBLE_EQ(odd.min, 1);
  EXPECT_DOUBLE_EQ(odd.max, 5);
  EXPECT_DOUBLE_EQ(odd.stddev, 2);  // sqrt(((5-3)^2 + (1-3)^2 + 0) / 2)
  profile::SampleStats even = profile::summarize({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(even.median, 2.5);
  EXPECT_DOUBLE_EQ(even.mean, 2.5);
}

TEST(Stats, QuantilesInterpolate) {
  std::vector<double> v{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  profile::SampleStats s = profile::summarize(v);
  EXPECT_DOUBLE_EQ(s.p10, 10);
  EXPECT_DOUBLE_EQ(s.p90, 90);
  EXPECT_DOUBLE_EQ(s.spread(), 80.0 / 50.0);
  EXPECT_DOUBLE_EQ(profile::quantileSorted({1, 2}, 0.25), 1.25);
}

// For n = 100 the order-statistic interval is ranks floor(50 - 9.8) = 40
// and ceil(50 + 9.8) + 1 = 61 (1-based): values 40 and 61 of 1..100.
TEST(Stats, MedianIntervalFromOrderStatistics) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  profile::SampleStats s = profile::summarize(v);
  EXPECT_DOUBLE_EQ(s.ci_low, 40);
  EXPECT_DOUBLE_EQ(s.ci_high, 61);
  EXPECT_NEAR(s.ciHalfWidth(), (61.0 - 40.0) / 2 / 50.5, 1e-12);
}

TEST(Stats, OneOutlierDoesNotWidenTheInterval) {
  std::vector<double> v(200, 1.0);
  for (int i = 0; i < 200; ++i) v[i] = 1.0 + 0.001 * (i % 7);
  v[17] = 1000.0;  // a context switch
  profile::SampleStats s = profile::summarize(v);
  EXPECT_LT(s.ciHalfWidth(), 0.005);
  EXPECT_GT(s.mean, 5.0);  // the mean is dragged, the median interval is not
  EXPECT_TRUE(profile::precise(s, 0.01, 10));
  EXPECT_FALSE(profile::precise(s, 0.01, 500));  // not enough samples
}

TEST(Stats, NoisySamplesAreNotPrecise) {
  std::vector<double> v;
  for (int i = 0; i < 20; ++i) v.push_back(i % 2 ? 1.0 : 2.0);
  EXPECT_FALSE(profile::precise(profile::summarize(v), 0.01, 10));
}

TEST(Stats, JsonFieldsRoundTrip) {
  profile::SampleStats s = profile::summarize({1, 2, 3, 4, 10});
  Json j = s.toJson();
  for (const char* k : {"n", "median_ms", "mean_ms", "min_ms", "max_ms", "stddev_ms", "p10_ms", "p90_ms", "spread",
                        "ci95_low_ms", "ci95_high_ms", "ci95_half_width"})
    EXPECT_TRUE(j.contains(k)) << k;
  profile::SampleStats back = profile::SampleStats::fromJson(j);
  EXPECT_EQ(back.n, s.n);
  EXPECT_DOUBLE_EQ(back.median, s.median);
  EXPECT_DOUBLE_EQ(back.mean, s.mean);
  EXPECT_DOUBLE_EQ(back.ci_low, s.ci_low);
  EXPECT_DOUBLE_EQ(back.ci_high, s.ci_high);
  EXPECT_DOUBLE_EQ(back.ciHalfWidth(), s.ciHalfWidth());
  EXPECT_EQ(profile::SampleStats::fromJson(Json()).n, 0u);
}

}  // namespace
}  // namespace kb
