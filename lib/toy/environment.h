// The toy family's environments (task.h), as lib/agent's Environment:
// an answer becomes a solution directory -- the answer's kernel text spliced
// into a fixed forward.cpp that launches it on the task's input -- and the
// loop's final check (episode.h) is the environment's check(): compile,
// then verify when it compiled.
// No shell and no profile (the profile's cost per answer would dominate a
// learning run); docs/kbtrain.md says so.
//
// Two of them:
// - "expr": the expression evaluator (scoreToyAnswer): compile accepts any
//   text, verify evaluates the kernel line on 16 probe inputs.
// - "kbcheck": lib/eval's build (nvcc for CUDA; the host compiler with a
//   small CUDA stand-in for CPU) and verify, through eval sessions (which
//   stop at a failed build), against the task's bundle
//   (reference.pt; `kbtrain toy tasks` writes the programs, `kbsynth import`
//   captures them). So a compile error is nvcc's, a wrong answer is the
//   verifier's. No static check (the answer is spliced into a fixed
//   template).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/environment.h"
#include "core/json.h"
#include "toy/task.h"

namespace kb::toy {

struct ToyEnvOptions {
  std::filesystem::path bundles;  // <bundles>/<task id>/ (task.json, reference.pt, model.py): toy-<seed>
  // "cpu" (host build), or "cuda" / "cuda:N" (nvcc build), or a comma list
  // of CUDA devices ("cuda:0,cuda:1"): the jobs are spread over them in turn
  // (job k verifies on device k mod n), since each verify starts two worker
  // processes with their own CUDA context.
  std::string device = "cpu";
  std::string arch = "sm_90";     // nvcc's target
  int jobs = 4;                   // tasks whose answers are built and verified at once
  std::filesystem::path work_dir;     // the solution directories; empty: a temporary one, removed
  std::filesystem::path build_cache;  // empty: kbcheck's default
  // Verdicts kept across calls (JSONL, one line per scored pair: task,
  // answer's SHA-256, status, message; appended as each pair is scored, so
  // a call stopped part-way keeps what it finished): a pair scored before is not built
  // or verified again. Verification runs the task's fixed correctness seeds,
  // so a verdict is a function of the pair (an answer with a data race may
  // pass once and fail once; the first verdict stays). Empty: no cache.
  std::filesystem::path verdict_cache;
};

// The bundle of `task` under `bundles` (<bundles>/<task id>); a
// UsageError naming the missing directory when it has no task.json.
std::filesystem::path toyBundleDir(const std::filesystem::path& bundles, const ToyTask& task);

// The devices of `device` (ToyEnvOptions::device), each checked by
// lib/verify's checkDevice; a UsageError for an empty entry, a bad name or a
// list that mixes cpu and cuda.
std::vector<std::string> toyEnvDevices(const std::string& device);

// The solution directory for `answer`: forward.cpp and the answer's file
// (kernels/answer.cu for CUDA, answer.cpp with the stand-in for CPU).
void writeToySolution(const std::filesystem::path& dir, const std::string& answer, bool cuda);
// The answer back from a directory writeToySolution wrote (nullopt: not one).
std::optional<std::string> readToyAnswer(const std::filesystem::path& dir);

// What the two environments share: the solution directories
// (<work>/<task id>/<first 16 hex of the answer's SHA-256>, written once per
// distinct pair), no shell, no profile. Thread-safe.
class ToyEnvironment : public agent::Environment {
 public:
  // `work`: where the solutions go; empty: a temporary directory, removed
  // with the environment.
  ToyEnvironment(std::filesystem::path work, bool cuda);
  ~ToyEnvironment() override;

  // The answer to `task` as a solution directory that compile and verify
  // judge. Throws kb::Error when it cannot be written.
  std::filesystem::path writeAnswer(const ToyTask& task, const std::string& answer);
  // Scores ahead of the loop what is cheaper scored together (answers[i]
  // answers tasks[i]); compile and verify then answer from what it found.
  // Default: nothing.
  virtual void prepare(const std::vector<ToyTask>& tasks, const std::vector<std::string>& answers);
  // The rollout summary's "environment" object (null: none).
  virtual Json stats() const { return nullptr; }

  agent::ShellResult bash(const std::filesystem::path& workspace, const std::string& command,
                          double timeout_seconds) override;  // not started: no shell here
  agent::StageResult profile(const std::filesystem::path& solution_dir) override;  // not available

 protected:
  struct Written {
    ToyTask task;
    std::string answer_sha256;
  };
  // What writeAnswer wrote there; kb::Error for a directory it did not write.
  Written written(const std::filesystem::path& dir) const;

 private:
  std::filesystem::path work_;
  bool temporary_ = false;
  bool cuda_ = false;
  mutable std::mutex mu_;
  std::map<std::filesystem::path, Written> written_;
};

// The stage results of both: report {status, reason, message, cached}, where
// reason is final.check's word ("ok", "no_kernel_line", "parse_error: ...",
// "wrong_value" from the evaluator; the status from kbcheck).
agent::StageResult toyStage(const std::string& stage, Status status, const std::string& reason,
                            const std::string& message, bool cached = false);

// "expr": the evaluator. Solutions in a temporary directory.
std::unique_ptr<ToyEnvironment> makeExprToyEnvironment();

// "kbcheck": lib/eval. prepare() scores by task, `jobs` tasks at once: a
// task's new answers built, then verified together (eval::evaluateBatch:
// one reference worker per task instead of one per answer); pairs in the
// verdict cache are not built or verified again. stats(): {distinct (pairs),
// cached (of them, from the verdict cache), compile_errors and correct
// (distinct pairs, cached ones included), verified (answers verified by
// prepare), infra_errors, seconds}. A pair prepare did not see is scored
// (built, then verified) the first time compile, verify or check asks for
// it, and kept unless infra_error. Throws kb::UsageError for a bad device
// list.
std::unique_ptr<ToyEnvironment> makeKbcheckToyEnvironment(const ToyEnvOptions& options);

}  // namespace kb::toy
