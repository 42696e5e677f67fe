// The run table over testdata/reward/run250_a.jsonl (250 results in
// KernelBench's three levels), checked against aggregates computed by hand
// from the fixture's classes (testdata/reward/gen_run250.sh), and the
// comparison of run A with run B.
#include "report/aggregate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "report/render.h"

namespace kb::report {
namespace {

using namespace kb::reward;  // a report is built on the scoring's types

std::string root() {
  const char* r = std::getenv("KB_SOURCE_ROOT");
  return r ? r : ".";
}

Input load(const std::string& rel) {
  RawInput raw;
  readPath(root() + "/" + rel, raw);
  return assemble(std::move(raw));
}

const GroupStats& group(const RunReport& r, const std::string& name) {
  if (name == "all") return r.all;
  for (const GroupStats& g : r.groups)
    if (g.group == name) return g;
  ADD_FAILURE() << "no group " << name;
  return r.all;
}

// The hand computation, level by level. Each correct class contributes
// (speed-up)^count to a geometric mean, because the fixture's +-2% wobble
// (1.02^-1, 1.02^0, 1.02^1 in equal numbers) multiplies out to 1.
//
// Level 1: 100 tasks = 4 compile_error + 2 incorrect + 1 runtime_error +
//   1 timeout + 1 hack_detected (9 failures) + 1 infra_error (excluded) +
//   90 correct: 30 at (2.5x eager, 1.8x compile), 24 at (1.3, 0.9),
//   6 at (1.08, 0.8) with wide intervals, 30 at (0.7, 0.5).
// Level 2: 100 = 3 compile_error + 2 incorrect + 1 crash + 1 static_violation
//   + 1 hack_detected (8) + 2 infra_error + 90 correct: 45 at (3.0, 2.2),
//   30 at (1.6, 1.2), 15 at (0.95, 0.75).
// Level 3: 50 = 2 compile_error + 1 runtime_error + 2 timeout + 1 incorrect +
//   1 crash (7) + 1 infra_error + 42 correct: 21 at (1.2, 1.1), 15 at
//   (0.9, 0.6), 6 at (1.1, 1.09) with wide intervals.
struct Expected {
  int results, excluded, scored, correct, faster_eager, faster_compile;
  double geo_eager, geo_compile;
  int fast_eager[4], fast_compile[4];  // p = 0, 1, 1.5, 2
  double reward_sum, reward_sum_noise_aware;
};

double geo(std::initializer_list<std::pair<double, int>> classes) {
  double log_sum = 0;
  int n = 0;
  for (auto [s, count] : classes) {
    log_sum += count * std::log(s);
    n += count;
  }
  return std::exp(log_sum / n);
}

const Expected kL1 = {
    100, 1, 99, 90,
    30 + 24 + 6,  // faster than eager: every class above 1x
    30,           // faster than compile: only the 1.8x class
    geo({{2.5, 30}, {1.3, 24}, {1.08, 6}, {0.7, 30}}),
    geo({{1.8, 30}, {0.9, 24}, {0.8, 6}, {0.5, 30}}),
    {90, 60, 30, 30},  // eager: > 0 all; > 1 the first three; > 1.5 and > 2: the 2.5x class
    {90, 30, 30, 0},   // compile: 1.8x is above 1 and 1.5, not 2
    // 9 failures at -1, 30 x 3, 24 x 2, 6 x 2, 30 x 1
    -9.0 + 90 + 48 + 12 + 30,
    // noise-aware, the 6 wide ones: ci95_low(eager)/ci95_high(cand) = 1.08 * 0.95/1.05 < 1.05: 2 -> 1
    -9.0 + 90 + 48 + 6 + 30,
};
const Expected kL2 = {
    100, 2, 98, 90, 45 + 30, 45 + 30,
    geo({{3.0, 45}, {1.6, 30}, {0.95, 15}}),
    geo({{2.2, 45}, {1.2, 30}, {0.75, 15}}),
    {90, 75, 75, 45},
    {90, 75, 45, 45},
    -8.0 + 45 * 3 + 30 * 3 + 15 * 1,
    -8.0 + 45 * 3 + 30 * 3 + 15 * 1,
};
const Expected kL3 = {
    50, 1, 49, 42, 21 + 6, 21 + 6,
    geo({{1.2, 21}, {0.9, 15}, {1.1, 6}}),
    geo({{1.1, 21}, {0.6, 15}, {1.09, 6}}),
    {42, 27, 0, 0},
    {42, 27, 0, 0},
    -7.0 + 21 * 3 + 15 * 1 + 6 * 3,
    // the 6 wide ones lose both milestones: 1.1 * 0.95/1.05 = 0.995 < 1.05
    -7.0 + 21 * 3 + 15 * 1 + 6 * 1,
};

void expectGroup(const GroupStats& g, const Expected& e) {
  SCOPED_TRACE(g.group);
  EXPECT_EQ(g.results, e.results);
  EXPECT_EQ(g.excluded, e.excluded);
  EXPECT_EQ(g.scored, e.scored);
  EXPECT_EQ(g.correct, e.correct);
  EXPECT_EQ(g.faster_than_eager, e.faster_eager);
  EXPECT_EQ(g.faster_than_compile, e.faster_compile);
  EXPECT_DOUBLE_EQ(g.pass_rate, double(e.correct) / e.scored);
  EXPECT_DOUBLE_EQ(g.faster_than_eager_rate, double(e.faster_eager) / e.scored);
  EXPECT_DOUBLE_EQ(g.faster_than_compile_rate, double(e.faster_compile) / e.scored);
  // The fixture's times are printed with 9 significant digits.
  EXPECT_NEAR(g.geomean_speedup_eager, e.geo_eager, 1e-7);
  EXPECT_NEAR(g.geomean_speedup_compile, e.geo_compile, 1e-7);
  ASSERT_EQ(g.fast_p.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(g.fast_p[i].eager, e.fast_eager[i]) << "p=" << g.fast_p[i].p;
    EXPECT_EQ(g.fast_p[i].compile, e.fast_compile[i]) << "p=" << g.fast_p[i].p;
    EXPECT_DOUBLE_EQ(g.fast_p[i].eager_rate, double(e.fast_eager[i]) / e.scored);
  }
  EXPECT_NEAR(g.mean_reward, e.reward_sum / e.scored, 1e-12);
}

TEST(Run250, LevelsMatchTheHandComputation) {
  RunReport r = aggregate(load("testdata/reward/run250_a.jsonl"), {});
  EXPECT_TRUE(r.warnings.empty()) << formatWarning(r.warnings.at(0));
  ASSERT_EQ(r.groups.size(), 3u);
  EXPECT_EQ(r.groups[0].group, "level 1");
  EXPECT_EQ(r.groups[2].group, "level 3");
  expectGroup(group(r, "level 1"), kL1);
  expectGroup(group(r, "level 2"), kL2);
  expectGroup(group(r, "level 3"), kL3);
  EXPECT_EQ(r.gpu, "NVIDIA H200");
  EXPECT_EQ(r.timing_method, "cuda_events");
}

TEST(Run250, OverallIsTheUnionNotTheMeanOfLevels) {
  RunReport r = aggregate(load("testdata/reward/run250_a.jsonl"), {});
  Expected all{};
  all.results = 250;
  all.excluded = 4;
  all.scored = 246;
  all.correct = 222;
  all.faster_eager = 60 + 75 + 27;
  all.faster_compile = 30 + 75 + 27;
  all.geo_eager = geo({{2.5, 30}, {1.3, 24}, {1.08, 6}, {0.7, 30}, {3.0, 45}, {1.6, 30}, {0.95, 15},
                       {1.2, 21}, {0.9, 15}, {1.1, 6}});
  all.geo_compile = geo({{1.8, 30}, {0.9, 24}, {0.8, 6}, {0.5, 30}, {2.2, 45}, {1.2, 30}, {0.75, 15},
                         {1.1, 21}, {0.6, 15}, {1.09, 6}});
  int fe[4] = {222, 60 + 75 + 27, 30 + 75, 30 + 45};
  int fc[4] = {222, 30 + 75 + 27, 30 + 45, 45};
  std::copy(fe, fe + 4, all.fast_eager);
  std::copy(fc, fc + 4, all.fast_compile);
  all.reward_sum = kL1.reward_sum + kL2.reward_sum + kL3.reward_sum;
  expectGroup(r.all, all);
  // Spelled out once: pass rate 222/246 = 90.2%, the geomeans about 1.49x and 1.12x.
  EXPECT_EQ(fmtPercent(r.all.pass_rate), "90.2%");
  EXPECT_EQ(fmtSpeedup(r.all.geomean_speedup_eager), "1.49x");
  EXPECT_EQ(fmtSpeedup(r.all.geomean_speedup_compile), "1.12x");
  std::size_t infra = 0;
  for (const auto& [name, n] : r.all.status_counts)
    if (name == "infra_error") infra = n;
  EXPECT_EQ(infra, 4u);
}

TEST(Run250, NoiseAwareMilestones) {
  ReportOptions o;
  o.scheme.noise_aware = true;
  RunReport r = aggregate(load("testdata/reward/run250_a.jsonl"), o);
  EXPECT_NEAR(group(r, "level 1").mean_reward, kL1.reward_sum_noise_aware / 99, 1e-12);
  EXPECT_NEAR(group(r, "level 2").mean_reward, kL2.reward_sum_noise_aware / 98, 1e-12);
  EXPECT_NEAR(group(r, "level 3").mean_reward, kL3.reward_sum_noise_aware / 49, 1e-12);
}

TEST(Run250, RateMarginCountsOnlyClearWins) {
  // At a 5% margin the rates are the milestones: level 3's wide 1.09x-against-
  // compile class still counts on the median (1.0686x at its slowest is > 1/0.95).
  ReportOptions o;
  o.rate_margin = 0.05;
  RunReport r = aggregate(load("testdata/reward/run250_a.jsonl"), o);
  EXPECT_EQ(group(r, "level 1").faster_than_eager, 60);
  EXPECT_EQ(group(r, "level 3").faster_than_compile, 27);
}

TEST(Aggregate, SmallCaseByHand) {
  RawInput raw;
  parseText(
      // two tasks in "synth": one 2x/1x, one incorrect; one infra error in level 1.
      "{\"task_id\":\"s1\",\"source\":\"synth\",\"status\":\"ok\",\"timings\":{\"eager\":{\"median_ms\":4},"
      "\"compile\":{\"median_ms\":2},\"candidate\":{\"median_ms\":2}}}\n"
      "{\"task_id\":\"s2\",\"source\":\"synth\",\"status\":\"incorrect\"}\n"
      "{\"task_id\":\"k1\",\"level\":1,\"status\":\"infra_error\"}\n",
      "small", raw);
  RunReport r = aggregate(assemble(std::move(raw)), {});
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].group, "level 1");  // levels first
  const GroupStats& k = r.groups[0];
  EXPECT_EQ(k.results, 1);
  EXPECT_EQ(k.scored, 0);
  EXPECT_TRUE(std::isnan(k.pass_rate));  // nothing to rate: "-", never 0%
  const GroupStats& s = r.groups[1];
  EXPECT_DOUBLE_EQ(s.pass_rate, 0.5);
  EXPECT_DOUBLE_EQ(s.geomean_speedup_eager, 2.0);
  EXPECT_DOUBLE_EQ(s.geomean_speedup_compile, 1.0);
  EXPECT_EQ(s.faster_than_compile, 0);  // 1x is not faster
  EXPECT_DOUBLE_EQ(s.mean_reward, (2 + -1) / 2.0);  // 2: eager only
  EXPECT_EQ(s.fast_p[1].eager, 1);
  EXPECT_EQ(s.fast_p[1].compile, 0);
}

TEST(Aggregate, RepeatedTaskCountsOnceAndIsNamed) {
  RawInput raw;
  parseText("{\"task_id\":\"a\",\"solution_hash\":\"1\",\"status\":\"crash\"}\n"
            "{\"task_id\":\"a\",\"solution_hash\":\"2\",\"status\":\"timeout\"}\n",
            "x", raw);
  RunReport r = aggregate(assemble(std::move(raw)), {});
  ASSERT_EQ(r.tasks.size(), 1u);
  EXPECT_EQ(r.tasks[0].status, "timeout");
  bool named = false;
  for (const Warning& w : r.warnings)
    if (w.kind == "duplicate_task" && w.items[0] == "a (2 candidates)") named = true;
  EXPECT_TRUE(named);
}

TEST(Aggregate, GeomeanOfNothingIsNaN) {
  EXPECT_TRUE(std::isnan(geomean({})));
  EXPECT_DOUBLE_EQ(geomean({2, 8}), 4);
}

TEST(Compare, RunAAgainstRunB) {
  // gen_run250.sh b: level 1's 4 compile errors fixed; level 2's first 3
  // correct tasks broken; level 1's 30 slow tasks 1.5x faster; level 3's 15
  // slow tasks 0.8x as fast. Failures stay failures (5 + 8 + 7 = 20), infra
  // errors stay excluded (4), and the other 222 - 3 - 30 - 15 = 174 are the same.
  Comparison c = compare(aggregate(load("testdata/reward/run250_a.jsonl"), {}),
                         aggregate(load("testdata/reward/run250_b.jsonl"), {}));
  auto count = [&](const std::string& kind) {
    for (const auto& [k, n] : c.changes)
      if (k == kind) return n;
    return -1;
  };
  EXPECT_EQ(count("fixed"), 4);
  EXPECT_EQ(count("broke"), 3);
  EXPECT_EQ(count("faster"), 30);
  EXPECT_EQ(count("slower"), 15);
  EXPECT_EQ(count("still_failing"), 20);
  EXPECT_EQ(count("excluded"), 4);
  EXPECT_EQ(count("same"), 174);
  EXPECT_EQ(count("only_a"), 0);
  EXPECT_EQ(count("only_b"), 0);
  for (const TaskChange& ch : c.tasks)
    if (ch.change == "faster") {
      EXPECT_NEAR(ch.speedup_ratio, 1.5, 1e-7) << ch.task_id;
    }
  // Level 1 pass rate 90/99 -> 94/99.
  Table t = compareTable(c);
  bool seen = false;
  for (const auto& row : t.rows)
    if (row[0] == "level 1" && row[1] == "pass rate") {
      EXPECT_EQ(row[2], "90.9%");
      EXPECT_EQ(row[3], "94.9%");
      EXPECT_EQ(row[4], "+4.0 pt");
      seen = true;
    }
  EXPECT_TRUE(seen);
}

TEST(Compare, TasksOnlyInOneRun) {
  auto run = [](const std::string& text) {
    RawInput raw;
    parseText(text, "x", raw);
    return aggregate(assemble(std::move(raw)), {});
  };
  Comparison c = compare(run("{\"task_id\":\"a\",\"status\":\"crash\"}\n"),
                         run("{\"task_id\":\"b\",\"status\":\"crash\"}\n"));
  ASSERT_EQ(c.tasks.size(), 2u);
  EXPECT_EQ(c.tasks[0].change, "only_a");
  EXPECT_EQ(c.tasks[1].change, "only_b");
}

}  // namespace
}  // namespace kb::report
