// The toy family's answers (toy_task.h) scored by the real environment
// instead of the expression evaluator: each distinct (task, answer) pair
// becomes a solution directory -- the answer's kernel text spliced into a
// fixed forward.cpp that launches it on the task's input -- built by
// lib/build (nvcc for CUDA; the host compiler with a small CUDA stand-in
// for CPU) and verified by lib/verify against the task's bundle
// (reference.pt; `kbtrain toy tasks` writes the programs, `kbsynth import`
// captures them). So a compile error is nvcc's, a wrong answer is
// the verifier's, and the reward is the milestone reward's fail and
// correct levels (-1, +1). No static check (the answer is spliced into a
// fixed template) and no profile (its cost per answer would dominate a
// learning run); docs/kbtrain.md says so.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "rl/toy_task.h"

namespace kb::rl {

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

// One score per answer (answers[i] answers tasks[i]). Identical pairs are
// built and verified once (and not at all when the verdict cache has it).
// The work goes by task, `jobs` tasks at once: a task's new answers are
// built, then verified together (verifySolutions: one reference worker per
// task instead of one per answer).
// `stats` (when given) receives {distinct (pairs), cached (of them, from the
// verdict cache), compile_errors and correct (distinct pairs, cached ones
// included), verified (answers verified by this call), infra_errors,
// seconds}.
std::vector<ToyScore> scoreToyAnswersInEnvironment(const std::vector<ToyTask>& tasks,
                                                   const std::vector<std::string>& answers,
                                                   const ToyEnvOptions& options, Json* stats = nullptr);

}  // namespace kb::rl
