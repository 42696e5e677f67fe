// The run table: the paper's metrics (pass rate, faster-than-eager and
// faster-than-compile rates, geometric-mean speed-ups on correct solutions)
// and KernelBench's fast_p, per group (level or source) and overall; and the
// per-task comparison of two runs. docs/kbreward.md defines every number.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reward/input.h"
#include "reward/reward.h"

namespace kb::report {

// A report is built on the scoring's types.
using reward::Baseline;
using reward::Candidate;
using reward::Input;
using reward::kNaN;
using reward::Scheme;
using reward::SchemeKind;
using reward::Score;
using reward::Stat;
using reward::Timing;
using reward::Timings;
using reward::Warning;
using reward::WarningList;

struct ReportOptions {
  Scheme scheme;                                  // the reward of each task
  double rate_margin = 0.0;                       // faster-than rates: b() with this margin
  std::vector<double> fast_p = {0.0, 1.0, 1.5, 2.0};
  Baseline primary = Baseline::Compile;           // per-task bars and run comparison
  std::string title = "kbreward run report";
};

// One task's line in the report.
struct TaskRow {
  std::string task_id;
  std::string solution_hash;
  std::string group;
  std::string status;     // the status name, or the input text when unknown
  std::string excluded;   // as Score::excluded
  bool correct = false;
  std::optional<double> reward;
  double speedup_eager = kNaN;
  double speedup_compile = kNaN;
  bool faster_than_eager = false;    // at the report's rate margin
  bool faster_than_compile = false;
};

struct FastP {
  double p = 0;
  int eager = 0;    // correct tasks with speed-up over eager > p
  int compile = 0;  // ... over compile
  double eager_rate = kNaN;    // eager / scored
  double compile_rate = kNaN;
};

struct GroupStats {
  std::string group;           // "level 1", a source, or "all"
  int results = 0;             // tasks in the group, excluded ones too
  int excluded = 0;            // infra_error, unknown or missing status, missing timings
  int scored = 0;              // results - excluded: the denominator of every rate
  int correct = 0;
  int faster_than_eager = 0;
  int faster_than_compile = 0;
  double pass_rate = kNaN;
  double faster_than_eager_rate = kNaN;
  double faster_than_compile_rate = kNaN;
  double geomean_speedup_eager = kNaN;    // over correct tasks
  double geomean_speedup_compile = kNaN;
  double mean_reward = kNaN;              // over scored tasks
  std::vector<FastP> fast_p;
  // Per status name (the closed set, then unknown texts), excluded ones too.
  std::vector<std::pair<std::string, int>> status_counts;
};

struct RunReport {
  ReportOptions options;
  std::vector<GroupStats> groups;  // levels in order, then sources by name, then "other"
  GroupStats all;
  std::vector<TaskRow> tasks;      // input order
  std::vector<Warning> warnings;   // the reader's and the scorer's
  std::size_t records = 0;
  std::vector<std::string> sources;
  std::string gpu;                 // when one GPU for the whole run, else ""
  std::string timing_method;       // likewise
  std::string precision_contract;  // likewise: "strict" or "paper" (kbprof's precision.contract.name)
};

// Scores every candidate and builds the table. A task that appears more than
// once counts once (its last candidate) and is named in a warning.
RunReport aggregate(const Input& in, const ReportOptions& opts);

// Geometric mean exp(mean(ln x)); NaN for an empty list.
double geomean(const std::vector<double>& xs);

// How one task changed from run A to run B.
struct TaskChange {
  std::string task_id;
  std::string group;
  std::optional<TaskRow> a, b;
  // "fixed", "broke", "faster", "slower", "same", "still_failing",
  // "excluded", "only_a", "only_b".
  std::string change;
  double speedup_ratio = kNaN;  // B's speed-up / A's over the primary baseline, both correct
};

struct Comparison {
  RunReport a, b;
  std::vector<TaskChange> tasks;                      // A's order, then B-only tasks
  std::vector<std::pair<std::string, int>> changes;   // count per change kind, fixed order
};

// Pairs tasks by task_id; "faster"/"slower" use the scheme's margin on the
// primary baseline's speed-up.
Comparison compare(RunReport a, RunReport b);

}  // namespace kb::report
