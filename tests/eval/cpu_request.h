// The tests' lib/eval request on the CPU: a private build cache and
// scratch directory, short limits.
#pragma once

#include <filesystem>

#include "eval/eval.h"

inline kb::eval::Request cpuRequest(const std::filesystem::path& task, const std::filesystem::path& solution,
                                    kb::eval::Stages stages, const std::filesystem::path& scratch) {
  kb::eval::Request q;
  q.task_dir = task;
  q.solution_dir = solution;
  q.stages = stages;
  q.build.target = kb::build::BuildTarget::Cpu;
  q.build.cache_dir = scratch / "cache";
  q.verify.device = "cpu";
  q.verify.limits.wall_seconds = 20;
  q.verify.limits.cpu_seconds = 20;
  q.verify.scratch_dir = scratch;
  q.profile.device = "cpu";
  q.profile.budget_seconds = 0.5;
  q.profile.use_baseline_cache = false;
  q.profile.scratch_dir = scratch;
  return q;
}
