// The reward of one candidate (DESIGN.md §1, the paper's eq. 1) and the
// ablation's speed-up rewards. docs/kbreward.md writes every formula out.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "reward/input.h"

namespace kb::reward {

// Correctness: verification only, for tasks nothing times (a CPU task, a
// machine without a GPU): a correct candidate gets the milestone scheme's
// "correct" value (`slower_value`, 1) and needs no timings; speed-ups are
// reported where timings happen to exist but never decide the reward.
enum class SchemeKind { Milestone, Speedup, LogSpeedup, Correctness };
enum class Stat { Median, Mean, Min };
enum class Baseline { Eager, Compile };

std::string_view schemeName(SchemeKind k);
std::optional<SchemeKind> parseSchemeName(std::string_view s);
// Every scheme's name, in the one spelling the tools accept and print
// ("milestone", "speedup", "log-speedup", "correctness"): the list that kbreward's and
// kbrollout's --scheme validate against (CLI11 IsMember).
std::vector<std::string> schemeNames();
std::string_view statName(Stat s);
std::optional<Stat> parseStatName(std::string_view s);
std::string_view baselineName(Baseline b);
std::optional<Baseline> parseBaselineName(std::string_view s);

struct Scheme {
  SchemeKind kind = SchemeKind::Milestone;
  double margin = 0.05;       // b(t, t0) = [(t0 - t) / t0 > margin]
  bool noise_aware = false;   // decide b() on the confidence intervals
  Stat stat = Stat::Median;   // which statistic is "t"
  double fail_value = -1;     // compile / correctness failure, hack
  double slower_value = 1;    // correct, not faster than eager by the margin
  double eager_value = 2;     // faster than eager only
  double both_value = 3;      // faster than eager and compile
  Baseline speedup_baseline = Baseline::Compile;  // t0 of speedup / log-speedup
};

// The scheme as written into every output record (docs/kbreward.md "scheme").
Json schemeToJson(const Scheme& s);

// Ties closer than this to the margin count as "not faster": 5% computed in
// binary floating point from decimal milliseconds should not flip on the last bit.
inline constexpr double kTieEpsilon = 1e-9;

// b(t, t0): t is more than `margin` faster than t0, i.e. (t0 - t) / t0 > margin.
bool fasterBy(double t, double t0, double margin);

// The statistic `stat` of a timing (NaN when the input did not give it).
double statOf(const Timing& t, Stat stat);

// Whether the candidate beats `base` by more than `margin`: on the statistic,
// or, noise-aware, pessimistically: the candidate's CI upper end against the
// baseline's CI lower end. False when a needed value is missing.
bool beats(const Timings& t, Baseline base, double margin, Stat stat, bool noise_aware);

struct Score {
  // Why there is no reward, or "" when there is one: "degenerate_task"
  // (reward/degenerate.h), "infra_error", "missing_status", "unknown_status",
  // "missing_timings".
  std::string excluded;
  std::string missing;        // for missing_timings: which values, e.g. "compile.median_ms"
  bool correct = false;       // status ok (and scored)
  std::optional<double> reward;
  double speedup_eager = kNaN;    // t_eager / t at the statistic; correct only
  double speedup_compile = kNaN;
  // ci95_low(t0) / ci95_high(t): what the speed-up is at least; NaN without CIs.
  double conservative_speedup_eager = kNaN;
  double conservative_speedup_compile = kNaN;
  bool faster_than_eager = false;    // b() as the scheme decides it
  bool faster_than_compile = false;
};

// Scores one candidate. Never throws on bad data: it excludes and says why.
Score score(const Candidate& c, const Scheme& s);

// Names a candidate the scorer excluded for a reason in its input
// (missing_timings, unknown_status, missing_status) in `warn`; infra_error is
// an outcome, not an input problem, and is counted in the report instead.
void noteExclusion(const Candidate& c, const Score& s, WarningList& warn);

}  // namespace kb::reward
