// Every branch of the milestone reward (eq. 1), its 5% boundaries, the
// noise-aware variant and the ablation's speed-up rewards, on hand-computed
// cases: the numbers in each test are chosen so that the expected reward can
// be checked with pencil and paper; the comment beside each says how.
//
// Then the reader's streams and directories (lib/reward/input.h,
// docs/kbreward.md §1; the rest of the reader is tests/report/input_test.cpp):
// JSON values one after another -- JSONL, concatenated pretty-printed
// documents (what `cat a.json b.json` or a loop of `--json -` gives), or both
// -- each become a record named by the line it starts on, and what is not
// JSON is named by its line without hiding the records after it. A directory
// gives its report files: kbrollout's trajectories and files without a
// task_id (timeline.json, kbreward's own report.json) are left out.
#include "reward/reward.h"
#include "reward/input.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"

namespace kb::reward {
namespace {

// A timing with median = mean = min = m and the given 95% interval.
Timing tm(double m, double lo, double hi) {
  Timing t;
  t.median_ms = t.mean_ms = t.min_ms = m;
  t.ci95_low_ms = lo;
  t.ci95_high_ms = hi;
  t.n = 100;
  return t;
}

// Tight intervals (+-0.1%), so the noise-aware reward agrees with the median.
Timing tight(double m) { return tm(m, m * 0.999, m * 1.001); }

Candidate ok(Timing eager, Timing compile, Timing cand) {
  Candidate c;
  c.task_id = "t";
  c.status = Status::Ok;
  c.input_status = "ok";
  c.timings.eager = eager;
  c.timings.compile = compile;
  c.timings.candidate = cand;
  return c;
}

Candidate ok(double eager, double compile, double cand) {
  return ok(tight(eager), tight(compile), tight(cand));
}

double reward(const Candidate& c, const Scheme& s = {}) {
  Score sc = score(c, s);
  EXPECT_TRUE(sc.reward.has_value()) << sc.excluded;
  return sc.reward.value_or(kNaN);
}

TEST(FasterBy, IsStrictlyMoreThanTheMargin) {
  EXPECT_FALSE(fasterBy(95, 100, 0.05));    // (100 - 95) / 100 = 5%: not more than 5%
  EXPECT_TRUE(fasterBy(94.99, 100, 0.05));  // 5.01%
  EXPECT_FALSE(fasterBy(100, 100, 0.0));    // equal is not faster, even at margin 0
  EXPECT_TRUE(fasterBy(99.9, 100, 0.0));
  EXPECT_FALSE(fasterBy(110, 100, 0.05));   // slower
  // 1 - 0.95 is 0.05000000000000004 in binary: still exactly 5%, still not faster.
  EXPECT_FALSE(fasterBy(0.95, 1.0, 0.05));
  EXPECT_TRUE(fasterBy(0.9499, 1.0, 0.05));  // 5.01%
  EXPECT_FALSE(fasterBy(0, 100, 0.05));     // a zero or missing time proves nothing
  EXPECT_FALSE(fasterBy(kNaN, 100, 0.05));
  EXPECT_FALSE(fasterBy(50, kNaN, 0.05));
}

TEST(Milestone, EveryFailureIsMinusOne) {
  for (Status s : {Status::StaticViolation, Status::CompileError, Status::RuntimeError, Status::Timeout,
                   Status::Crash, Status::Incorrect, Status::HackDetected}) {
    // Timings that would earn 3 must not matter: a hack is -1 however fast.
    Candidate c = ok(100, 100, 10);
    c.status = s;
    Score sc = score(c, {});
    ASSERT_TRUE(sc.reward.has_value()) << statusName(s);
    EXPECT_EQ(*sc.reward, -1) << statusName(s);
    EXPECT_FALSE(sc.correct);
    EXPECT_EQ(sc.excluded, "");
  }
}

TEST(Milestone, FailureNeedsNoTimings) {
  Candidate c;
  c.task_id = "t";
  c.status = Status::CompileError;
  EXPECT_EQ(reward(c), -1);
}

TEST(Milestone, InfraErrorHasNoRewardAndIsExcluded) {
  Candidate c = ok(100, 100, 10);
  c.status = Status::InfraError;
  Score sc = score(c, {});
  EXPECT_FALSE(sc.reward.has_value());  // not -1: never the solution's fault
  EXPECT_EQ(sc.excluded, "infra_error");
}

// Correctness only: verification decides, no timings needed; a fast
// candidate earns no more than a slow one; failures and infra as ever.
TEST(Correctness, CorrectIsOneWithoutTimingsAndTimingsNeverDecide) {
  Scheme cs;
  cs.kind = SchemeKind::Correctness;
  Candidate untimed;
  untimed.task_id = "cpu_task";
  untimed.status = Status::Ok;
  untimed.input_status = "ok";
  Score a = score(untimed, cs);
  ASSERT_TRUE(a.reward.has_value());
  EXPECT_EQ(*a.reward, 1);
  EXPECT_TRUE(a.correct);
  EXPECT_EQ(a.excluded, "");
  EXPECT_TRUE(std::isnan(a.speedup_eager));
  Score fast = score(ok(100, 100, 10), cs);  // 10x faster than both
  EXPECT_EQ(*fast.reward, 1);
  EXPECT_DOUBLE_EQ(fast.speedup_eager, 10.0);  // reported, not rewarded
  EXPECT_FALSE(fast.faster_than_eager);
  untimed.status = Status::Incorrect;
  EXPECT_EQ(*score(untimed, cs).reward, -1);
  untimed.status = Status::InfraError;
  EXPECT_FALSE(score(untimed, cs).reward.has_value());
  EXPECT_EQ(parseSchemeName("correctness"), SchemeKind::Correctness);
}

TEST(Milestone, FasterThanBothIsThree) {
  // eager 100, compile 100, candidate 90: 10% faster than each.
  EXPECT_EQ(reward(ok(100, 100, 90)), 3);
}

TEST(Milestone, FasterThanEagerOnlyIsTwo) {
  // (100 - 90)/100 = 10% > 5%; (80 - 90)/80 = -12.5%.
  EXPECT_EQ(reward(ok(100, 80, 90)), 2);
}

TEST(Milestone, FasterThanCompileOnlyIsOne) {
  // Eq. 1 pays 2 only for b(t, eager): (80 - 90)/80 < 0 although (100 - 90)/100 = 10%.
  Score sc = score(ok(80, 100, 90), {});
  EXPECT_EQ(sc.reward, 1);
  EXPECT_FALSE(sc.faster_than_eager);
  EXPECT_TRUE(sc.faster_than_compile);
}

TEST(Milestone, CorrectButSlowerIsOne) { EXPECT_EQ(reward(ok(100, 80, 120)), 1); }

TEST(Milestone, FivePercentBoundaryAgainstEager) {
  // Compile is far behind (200), so only the eager boundary decides 1 or 3.
  EXPECT_EQ(reward(ok(100, 200, 95)), 1);     // exactly 5%: not more than 5%
  EXPECT_EQ(reward(ok(100, 200, 94.99)), 3);  // 5.01%
  EXPECT_EQ(reward(ok(1.0, 2.0, 0.95)), 1);   // the same 5% from decimal milliseconds
  EXPECT_EQ(reward(ok(1.0, 2.0, 0.9499)), 3);
}

TEST(Milestone, FivePercentBoundaryAgainstCompile) {
  // Eager is far behind (200), so only the compile boundary decides 2 or 3.
  EXPECT_EQ(reward(ok(200, 100, 95)), 2);     // exactly 5% against compile
  EXPECT_EQ(reward(ok(200, 100, 94.99)), 3);
  EXPECT_EQ(reward(ok(200, 2.4, 2.28)), 2);   // (2.4 - 2.28)/2.4 = 5% exactly
  EXPECT_EQ(reward(ok(200, 2.4, 2.2799)), 3);
}

TEST(Milestone, MarginAndValuesAreFlags) {
  Scheme s;
  s.margin = 0.10;
  s.fail_value = -2;
  s.slower_value = 0;
  s.eager_value = 0.5;
  s.both_value = 1;
  EXPECT_EQ(reward(ok(100, 100, 92), s), 0);    // 8% is not more than 10%
  EXPECT_EQ(reward(ok(100, 100, 89), s), 1);    // 11% against both
  EXPECT_EQ(reward(ok(100, 95, 89), s), 0.5);   // 11% against eager, (95-89)/95 = 6.3% against compile
  Candidate c = ok(100, 100, 50);
  c.status = Status::Incorrect;
  EXPECT_EQ(reward(c, s), -2);
}

TEST(Milestone, StatisticIsAFlag) {
  // Medians equal (no gain); means 10% apart; minimum 20% apart.
  Timing e = tight(100), k = tight(100), x = tight(100);
  x.mean_ms = 90;
  x.min_ms = 80;
  Scheme s;
  EXPECT_EQ(reward(ok(e, k, x), s), 1);
  s.stat = Stat::Mean;
  EXPECT_EQ(reward(ok(e, k, x), s), 3);
  s.stat = Stat::Min;
  Score sc = score(ok(e, k, x), s);
  EXPECT_EQ(sc.reward, 3);
  EXPECT_DOUBLE_EQ(sc.speedup_eager, 100.0 / 80.0);
}

TEST(NoiseAware, LuckyMedianDoesNotCount) {
  // Median 90 against 100 is 10% faster, but the candidate's interval reaches
  // 99 and the baselines' reach down to 96: (96 - 99)/96 < 0.
  Candidate c = ok(tm(100, 96, 104), tm(100, 96, 104), tm(90, 85, 99));
  EXPECT_EQ(reward(c), 3);
  Scheme s;
  s.noise_aware = true;
  Score sc = score(c, s);
  EXPECT_EQ(sc.reward, 1);
  EXPECT_FALSE(sc.faster_than_eager);
  EXPECT_DOUBLE_EQ(sc.conservative_speedup_eager, 96.0 / 99.0);
  EXPECT_DOUBLE_EQ(sc.speedup_eager, 100.0 / 90.0);  // the point estimate is still reported
}

TEST(NoiseAware, ClearWinCounts) {
  // (98 - 81)/98 = 17.3% against both.
  Scheme s;
  s.noise_aware = true;
  EXPECT_EQ(reward(ok(tm(100, 98, 102), tm(100, 98, 102), tm(80, 79, 81)), s), 3);
}

TEST(NoiseAware, EagerOnly) {
  // eager: (98 - 86)/98 = 12.2%; compile: (80 - 86)/80 < 0.
  Scheme s;
  s.noise_aware = true;
  EXPECT_EQ(reward(ok(tm(100, 98, 102), tm(82, 80, 84), tm(85, 84, 86)), s), 2);
}

TEST(NoiseAware, OverlapAgainstCompileOnlyDropsToTwo) {
  // eager: (98 - 86)/98 = 12.2%; compile median 95 is 10.5% behind 85, but its
  // interval starts at 88: (88 - 86)/88 = 2.3% < 5%.
  Candidate c = ok(tm(100, 98, 102), tm(95, 88, 102), tm(85, 84, 86));
  EXPECT_EQ(reward(c), 3);
  Scheme s;
  s.noise_aware = true;
  EXPECT_EQ(reward(c, s), 2);
}

TEST(NoiseAware, FivePercentBoundaryOnTheIntervals) {
  Scheme s;
  s.noise_aware = true;
  // Baselines' lower ends 100, candidate's upper end 95: exactly 5%.
  EXPECT_EQ(reward(ok(tm(110, 100, 120), tm(110, 100, 120), tm(90, 85, 95)), s), 1);
  EXPECT_EQ(reward(ok(tm(110, 100, 120), tm(110, 100, 120), tm(90, 85, 94.99)), s), 3);
}

TEST(NoiseAware, MissingIntervalsExcludeInsteadOfGuessing) {
  Timing e;
  e.median_ms = 100;  // no interval
  Scheme s;
  s.noise_aware = true;
  Score sc = score(ok(e, tight(100), tight(50)), s);
  EXPECT_FALSE(sc.reward.has_value());
  EXPECT_EQ(sc.excluded, "missing_timings");
  EXPECT_EQ(sc.missing, "eager.ci95_low_ms");
  // Without --noise-aware the median is enough.
  EXPECT_EQ(reward(ok(e, tight(100), tight(50))), 3);
}

TEST(Speedup, RawAndLog) {
  // eager 100, compile 50, candidate 25: 4x over eager, 2x over compile.
  Candidate c = ok(100, 50, 25);
  Scheme s;
  s.kind = SchemeKind::Speedup;
  EXPECT_DOUBLE_EQ(reward(c, s), 2.0);  // the default baseline is torch.compile
  s.speedup_baseline = Baseline::Eager;
  EXPECT_DOUBLE_EQ(reward(c, s), 4.0);
  s.kind = SchemeKind::LogSpeedup;
  EXPECT_DOUBLE_EQ(reward(c, s), std::log(4.0));
  s.speedup_baseline = Baseline::Compile;
  EXPECT_DOUBLE_EQ(reward(c, s), std::log(2.0));
  // A slower candidate has a negative log-speedup: 50/100 -> ln 0.5.
  EXPECT_DOUBLE_EQ(reward(ok(100, 50, 100), s), std::log(0.5));
}

TEST(Speedup, FailureAndNoiseAware) {
  Scheme s;
  s.kind = SchemeKind::Speedup;
  Candidate bad = ok(100, 50, 25);
  bad.status = Status::Timeout;
  EXPECT_EQ(reward(bad, s), -1);
  // Noise-aware: ci95_low(compile) / ci95_high(candidate) = 48 / 30 = 1.6.
  s.noise_aware = true;
  EXPECT_DOUBLE_EQ(reward(ok(tm(100, 96, 104), tm(50, 48, 52), tm(25, 20, 30)), s), 1.6);
}

TEST(Exclusion, MissingTimingsAreNamed) {
  Candidate c = ok(100, 100, 50);
  c.timings.compile.reset();
  c.timings.candidate->median_ms = kNaN;
  Score sc = score(c, {});
  EXPECT_EQ(sc.excluded, "missing_timings");
  EXPECT_EQ(sc.missing, "compile, candidate.median_ms");
  EXPECT_FALSE(sc.reward.has_value());
}

TEST(Exclusion, UnknownAndMissingStatus) {
  Candidate c = ok(100, 100, 50);
  c.status.reset();
  c.input_status = "passed";
  EXPECT_EQ(score(c, {}).excluded, "unknown_status");
  c.input_status = "";
  EXPECT_EQ(score(c, {}).excluded, "missing_status");
  EXPECT_FALSE(score(c, {}).reward.has_value());
}

TEST(Exclusion, NotesNameTheCandidate) {
  WarningList w;
  Candidate c = ok(100, 100, 50);
  c.task_id = "kb_1";
  c.status.reset();
  c.input_status = "passed";
  noteExclusion(c, score(c, {}), w);
  ASSERT_EQ(w.list().size(), 1u);
  EXPECT_EQ(w.list()[0].kind, "unknown_status");
  EXPECT_EQ(w.list()[0].items[0], "kb_1 (\"passed\")");
}

TEST(Scheme, WrittenOut) {
  Scheme s;
  s.noise_aware = true;
  Json j = schemeToJson(s);
  EXPECT_EQ(j["name"], "milestone");
  EXPECT_EQ(j["margin"], 0.05);
  EXPECT_EQ(j["noise_aware"], true);
  EXPECT_EQ(j["statistic"], "median");
  EXPECT_EQ(j["values"]["fail"], -1);
  EXPECT_EQ(j["values"]["faster_than_both"], 3);
  EXPECT_EQ(j["speedup_baseline"], "compile");
  EXPECT_EQ(parseSchemeName("log-speedup"), SchemeKind::LogSpeedup);
  EXPECT_FALSE(parseSchemeName("linear").has_value());
}

// ---- the reader: streams and directories ------------------------------------

namespace fs = std::filesystem;

std::vector<std::string> taskIds(const RawInput& raw) {
  std::vector<std::string> out;
  for (const RawRecord& r : raw.records) out.push_back(r.json.value("task_id", ""));
  return out;
}

std::vector<std::string> origins(const RawInput& raw) {
  std::vector<std::string> out;
  for (const RawRecord& r : raw.records) out.push_back(r.origin);
  return out;
}

// A kbcheck report as `kbcheck --json FILE` writes it: indented, several lines.
std::string pretty(const std::string& task, const std::string& hash, const std::string& status) {
  Json j = {{"tool", "kbcheck"}, {"stage", "verify"}, {"task_id", task}, {"solution_hash", hash},
            {"status", status}, {"verify", {{"seeds", Json::array({0, 1})}, {"max_abs_err", 0.0}}}};
  return j.dump(2) + "\n";
}

TEST(Stream, ConcatenatedPrettyDocumentsAreEachARecord) {
  std::string a = pretty("t1", "h1", "ok"), b = pretty("t1", "h2", "incorrect"), c = pretty("t2", "h3", "ok");
  RawInput raw;
  parseText(a + b + c, "-", raw);
  EXPECT_EQ(taskIds(raw), (std::vector<std::string>{"t1", "t1", "t2"}));
  // Named by the line each starts on.
  auto lines = [](const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); };
  EXPECT_EQ(origins(raw), (std::vector<std::string>{"-:1", "-:" + std::to_string(1 + lines(a)),
                                                    "-:" + std::to_string(1 + lines(a) + lines(b))}));
  EXPECT_TRUE(raw.unparsable.empty());
  EXPECT_TRUE(raw.not_objects.empty());
  // Every candidate is one: three of them, two of one task.
  Input in = assemble(std::move(raw));
  EXPECT_EQ(in.candidates.size(), 3u);
}

TEST(Stream, DocumentsWithoutNewlinesBetweenThemAndMixedWithJsonl) {
  RawInput raw;
  parseText("{\"task_id\": \"a\"}{\"task_id\": \"b\"}\n" + pretty("c", "h", "ok") + "{\"task_id\": \"d\"}\n", "in",
            raw);
  ASSERT_EQ(taskIds(raw), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(raw.records[0].origin, "in:1");
  EXPECT_EQ(raw.records[1].origin, "in:1");
  EXPECT_EQ(raw.records[2].origin, "in:2");
}

TEST(Stream, BracketsAndEscapesInsideStringsDoNotEndADocument) {
  RawInput raw;
  parseText("{\"task_id\": \"x\", \"note\": \"} ] { \\\" [\"}\n{\"task_id\": \"y\"}\n", "in", raw);
  ASSERT_EQ(taskIds(raw), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(raw.records[0].json["note"], "} ] { \" [");
}

TEST(Stream, BadLinesAreNamedAndTheRecordsAfterThemKept) {
  // Line 2 is not JSON, line 3 is an object cut short (an interrupted
  // append), line 5 a JSON value that is not an object, line 6 a cut string.
  std::string text =
      "{\"task_id\": \"a\"}\n"
      "this line is not JSON\n"
      "{\"task_id\": \"b\", \"status\": \n" +
      pretty("c", "h", "ok") +  // lines 4..
      "42\n"
      "{\"task_id\": \"d\", \"sta\n"
      "{\"task_id\": \"e\"}\n";
  int c_lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) - 6;
  RawInput raw;
  parseText(text, "f.jsonl", raw);
  EXPECT_EQ(taskIds(raw), (std::vector<std::string>{"a", "c", "e"}));
  EXPECT_EQ(raw.unparsable, (std::vector<std::string>{"f.jsonl:2", "f.jsonl:3", "f.jsonl:" + std::to_string(5 + c_lines)}));
  EXPECT_EQ(raw.not_objects, (std::vector<std::string>{"f.jsonl:" + std::to_string(4 + c_lines)}));
}

TEST(Stream, OneDocumentIsStillNamedByTheFile) {
  RawInput raw;
  parseText(pretty("t", "h", "ok"), "r.json", raw);
  EXPECT_EQ(origins(raw), std::vector<std::string>{"r.json"});
  RawInput arr;
  parseText("[{\"task_id\": \"a\"}, 3]", "a.json", arr);
  EXPECT_EQ(origins(arr), std::vector<std::string>{"a.json[0]"});
  EXPECT_EQ(arr.not_objects, std::vector<std::string>{"a.json[1]"});
}

// An eval folder as kbrollout eval writes it, with kbreward's report of it.
class Dir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kb-stream-input-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "rollouts");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  static std::string trajectory(const std::string& task, int sample) {
    Json t = {{"format", "kb-trajectory"}, {"format_version", 1}, {"tool", "kbrollout"},
              {"rollout_id", task + "#" + std::to_string(sample)}, {"task_id", task},
              {"solution_hash", "h" + task}, {"status", "ok"}, {"timings", nullptr}};
    return t.dump() + "\n";
  }
  static std::string result(const std::string& task) {
    Json r = {{"tool", "kbrollout"}, {"task_id", task}, {"solution_hash", "h" + task}, {"status", "ok"},
              {"rollout_id", task + "#0"}, {"reward", 1.0}};
    return r.dump() + "\n";
  }
  fs::path dir_;
};

TEST_F(Dir, AnEvalFolderGivesItsResultsOnly) {
  write("rollouts/trajectories.jsonl", trajectory("a", 0) + trajectory("b", 0));
  write("rollouts/results.jsonl", result("a") + result("b"));
  write("rollouts/timeline.json", "{\n  \"gpu\": [],\n  \"cpu\": [{\"slot\": \"0\"}]\n}\n");
  write("report.json", "{\n  \"tool\": \"kbreward\", \"stage\": \"report\", \"task_id\": null, \"tasks\": []\n}\n");
  RawInput raw;
  readPath(dir_, raw);
  EXPECT_EQ(taskIds(raw), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(raw.sources, std::vector<std::string>{(dir_ / "rollouts/results.jsonl").string()});
  Input in = assemble(std::move(raw));
  EXPECT_EQ(in.candidates.size(), 2u);
  for (const Warning& w : in.warnings) ADD_FAILURE() << "warning " << w.kind << ": " << formatWarning(w);
}

TEST_F(Dir, ANamedTrajectoryFileIsReadAsItWas) {
  write("rollouts/trajectories.jsonl", trajectory("a", 0));
  RawInput raw;
  readPath(dir_ / "rollouts/trajectories.jsonl", raw);
  EXPECT_EQ(taskIds(raw), std::vector<std::string>{"a"});
}

TEST_F(Dir, AFolderOfNoReportsIsAUsageErrorNamingTheFiles) {
  write("rollouts/trajectories.jsonl", trajectory("a", 0));
  write("rollouts/timeline.json", "{\"gpu\": []}\n");
  RawInput raw;
  try {
    readPath(dir_, raw);
    FAIL() << "no UsageError";
  } catch (const UsageError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("no report files"), std::string::npos) << what;
    EXPECT_NE(what.find("timeline.json"), std::string::npos) << what;
    EXPECT_NE(what.find("trajectories.jsonl"), std::string::npos) << what;
  }
}

TEST_F(Dir, AReportFileWithBadLinesIsStillReadAndNamed) {
  write("results.jsonl", result("a") + "oops\n");
  write("broken.jsonl", "not json at all\n");
  RawInput raw;
  readPath(dir_, raw);
  EXPECT_EQ(taskIds(raw), std::vector<std::string>{"a"});
  EXPECT_EQ(raw.unparsable, (std::vector<std::string>{(dir_ / "broken.jsonl").string() + ":1",
                                                      (dir_ / "results.jsonl").string() + ":2"}));
}

}  // namespace
}  // namespace kb::reward
