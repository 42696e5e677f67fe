// One evaluation of a solution for a task: the stages a caller asks for,
// static -> build -> verify -> profile, in that order, stopping at the first
// that fails, with a typed result per stage and one report header. The
// chain itself is eval::Session (session.h), which keeps a solution's build
// and verdicts between calls; evaluate() is one session asked once (kbcheck,
// kbprof), evaluateBatch() several verified together. The rollout
// environment (lib/agent) and kbserve (lib/serve) hold sessions.
//
// Stateless per request and safe to call from many threads at once: nothing
// global is kept here. The one thing worth keeping between requests, the
// Clang static policy, lives in a StaticChecker the caller owns and passes in.
//
// With profile asked (and verify not), the profile's workers start before
// the build (prepareProfile) and get ready beside it; a failed build ends
// them before any candidate code runs (docs/threat-model.md).
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/analyze.h"  // plain structs; the checker itself links only with Clang
#include "build/build.h"
#include "core/json.h"
#include "core/report.h"
#include "profile/profile.h"
#include "reward/input.h"
#include "reward/reward.h"
#include "solution/solution.h"
#include "verify/verify.h"

namespace kb::eval {

// ---- the static stage ------------------------------------------------------

struct StaticOptions {
  std::string gpu_arch;                // "": the checker's default (sm_90)
  std::filesystem::path cuda_path;     // "": the checker's default
  std::filesystem::path cache_dir;     // precompiled headers; "": the default
  unsigned jobs = 0;                   // parallel parses; 0: all cores
  std::string task_id;                 // names the report ("" when none)
};

struct StaticOutcome {
  bool available = false;      // false: this build has no Clang checker
  Status status = Status::Ok;  // analyze::staticStatus
  double seconds = 0;
  std::string message;         // when failing: the first error, solution root stripped
  analyze::StaticResult result;
  Json report;                 // `kbcheck static --json`'s report (docs/kbcheck.md); null when not available
};

// The Clang checker with its policy, read the first time it is needed and
// then shared by every request of the object's owner (check() is const and
// may run on many threads). Built without Clang, available() is false and
// check() says "not available".
class StaticChecker {
 public:
  explicit StaticChecker(std::filesystem::path policy = {});  // empty: analyze::defaultPolicyPath()
  virtual ~StaticChecker();
  static bool available();
  // Throws what analyze::loadStaticPolicy throws (kb::Error without Clang).
  const analyze::StaticPolicy& policy() const;
  // Virtual only so that evaluate() reaches it without naming it: a tool that
  // never makes a StaticChecker links no Clang (eval_static.cpp).
  virtual StaticOutcome check(const solution::Solution& solution, const StaticOptions& options) const;

 private:
  std::filesystem::path path_;
  mutable std::once_flag once_;
  mutable analyze::StaticPolicy policy_;
};

// ---- one request -----------------------------------------------------------

struct Stages {
  bool static_check = false;
  bool build = true;
  bool verify = false;
  bool profile = false;
};

struct Request {
  std::filesystem::path task_dir;      // empty: no task (build only)
  std::filesystem::path solution_dir;  // empty with profile: the baselines only (kbprof TASK)
  const solution::Solution* solution = nullptr;  // already read by the caller: used instead of solution_dir
  std::filesystem::path library;       // build not asked: the solution.so built earlier
  std::string solution_hash;           // ... and the hash that names it (no solution given)
  Stages stages;
  const StaticChecker* static_checker = nullptr;  // none: the static stage is skipped
  StaticOptions static_options;
  build::BuildOptions build;
  verify::VerifyOptions verify;
  profile::ProfileOptions profile;
  std::string tool = "kbcheck";        // the header's tool
  // false: an exception from a stage propagates (the command lines report it
  // through runGuarded); true: that stage ends infra_error with its message.
  bool stage_errors_as_infra = false;
};

struct StageResult {
  std::string name;            // "static", "build", "verify", "profile"
  Status status = Status::Ok;
  bool skipped = true;         // not run: not asked for, or an earlier stage failed
  double seconds = 0;
  Json detail;                 // the stage's own report (null when skipped)
};

struct Result {
  ReportHeader header;     // tool, task, solution hash, GPU/driver/torch (verify's), times, final status
  std::string message;     // "<stage>: <first line of why>" for the failing stage, "" when ok
  double seconds = 0;      // the whole request
  std::vector<StageResult> stages;  // always static, build, verify, profile, in that order
  // Typed, for what ran:
  std::optional<StaticOutcome> static_check;
  std::optional<build::BuildResult> build;
  std::optional<verify::VerifyResult> verify;
  std::optional<profile::ProfileResult> profile;

  const StageResult& stage(std::string_view name) const;
  Status status() const { return header.status; }
};

// Runs the stages `request` asks for: Session(request).run(). Throws
// kb::UsageError for a missing or malformed task or solution (before any
// stage runs).
Result evaluate(const Request& request);

// Several solutions of one task (request.task_dir), already read by the
// caller: a session each through the static and build stages, then the built
// ones verified together (Session::verifyTogether: a candidate worker each, one
// reference worker for all, so the reference starts once per batch instead
// of once per solution). One Result per solution, in order, as evaluate()
// would give it. `request`'s solution fields are ignored; profile is not
// offered (kb::UsageError), verify must be asked. With
// stage_errors_as_infra, a failed batch verification makes every verified
// solution's verify stage infra_error.
std::vector<Result> evaluateBatch(const Request& request, const std::vector<solution::Solution>& solutions);

// ---- what callers render ---------------------------------------------------

// kbcheck's report (docs/kbcheck-build-verify.md): the header with `stage`,
// then message, seconds and the static, build and verify stages.
Json checkReportJson(const Result& result, const std::string& stage);
// kbcheck's text: one line per stage that ran, with its details.
std::string renderCheckText(const Result& result);

// kbprof's report (docs/kbprof.md): the profile with its build, or, when
// the build failed, the build-failure report.
Json profileReportJson(const Result& result);

// The reward of a finished check (docs/kbreward.md; the paper's eq. 1 under
// the milestone scheme): {"scheme", "value", "excluded", ["missing"],
// "correct", ["speedup_eager", "speedup_compile"]}. `status` nullopt: no
// verdict (value null, excluded "verify_not_available"); `profile_missing`:
// correct but nothing timed it (a CPU task), so only the correctness scheme
// gives a value (else excluded "profile_not_available"); infra_error is
// never scored. kbrollout's final check and kbserve both write this.
//
// `task_json` (the bundle's task.json; null: not known) and `contract` (the
// precision contract the verdict was judged under, "strict" or "paper"; "":
// not known): a task flagged degenerate under that contract
// (reward/degenerate.h) gets no reward, excluded "degenerate_task", and the
// flag is written as "degenerate_task" whenever the task has one.
Json rewardJson(const std::string& task_id, const std::string& solution_hash, std::optional<Status> status,
                const std::optional<reward::Timings>& timings, bool profile_missing, const reward::Scheme& scheme,
                const Json& task_json = Json(), const std::string& contract = "");

// The profile's timings as lib/reward scores them (median, mean, min and the
// 95% interval of each participant; all NaN for one that was not timed).
reward::Timings rewardTimings(const profile::ProfileResult& profile);

}  // namespace kb::eval
