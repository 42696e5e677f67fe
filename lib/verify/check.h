// `kbcheck TASK SOLUTION_DIR`: static -> build -> verify, stopping at the
// first stage that fails, with one report of every stage's result and time.
// The static stage (lib/analyze) is passed in by the caller, so that this
// library does not depend on the Clang checker (absent on the GPU machine).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "build/build.h"
#include "core/json.h"
#include "core/report.h"
#include "solution/solution.h"
#include "verify/verify.h"

namespace kb {

struct StageReport {
  std::string name;     // "static", "build", "verify"
  Status status = Status::Ok;
  bool skipped = false; // not run: an earlier stage failed, or not asked for
  double seconds = 0.0;
  Json detail;          // the stage's own report body (null when skipped)
};

// The static stage: checks the solution, returns its report.
using StaticStage = std::function<StageReport(const Solution&)>;

struct CheckOptions {
  StaticStage static_stage;  // empty: the stage is reported as skipped
  BuildOptions build;
  VerifyOptions verify;
};

struct CheckReport {
  Status status = Status::Ok;  // the first failing stage's status, else ok
  std::string message;         // that stage's one-line reason
  std::string task_id;
  std::string solution_hash;
  std::string gpu, driver, torch_version;  // from the verify stage, when it ran
  std::string started_at, finished_at;
  double seconds = 0.0;
  std::vector<StageReport> stages;  // always static, build, verify

  Json toJson() const;  // a full report: the common header, then "stages"
};

// Throws kb::UsageError for a missing task or solution directory.
CheckReport runCheck(const std::filesystem::path& task_dir, const std::filesystem::path& solution_dir,
                     const CheckOptions& options);

// Builds and reports like the build stage of runCheck.
StageReport buildStage(const Solution& solution, const BuildOptions& options, BuildResult* out);

}  // namespace kb
