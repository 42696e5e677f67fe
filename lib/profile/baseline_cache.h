// Baseline timings (eager and torch.compile) cached per task, GPU, driver
// and torch version, so that profiling a changed candidate costs only the
// candidate's runs (DESIGN.md §6). One JSON file per key under the cache
// directory; written by kbprof after a run that measured them, read by the
// worker before it decides what to time.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/json.h"

namespace kb::profile {

// The name of the timing method, part of the cache key: CUDA events around
// each call, L2 flushed before it, and a head start of `head_start_us` of
// GPU work queued before the start event (0: none).
std::string timingMethodName(double head_start_us);

// The baselines' kinds, part of the cache key: the eager reference's
// ("libtorch": reference.pt in LibTorch; "python": model.py in Python) and
// the compile figure's ("aoti": compiled/<arch>.pt2; "python_compile":
// torch.compile in Python; "" none), e.g. "libtorch+aoti", "python+python_compile".
std::string baselineKindsName(const std::string& eager, const std::string& compile);

struct BaselineKey {
  std::string task_hash;      // taskContentHash()
  std::string gpu;            // device name, e.g. "NVIDIA H200"
  std::string driver;         // "580.159.04"
  std::string torch_version;  // "2.11.0"
  std::string method = timingMethodName(0);  // changes when the timing method does
  std::string baselines = baselineKindsName("libtorch", "aoti");  // which baselines
  // The Python baselines run model.py itself, which taskContentHash does
  // not read: its hash (modelSourceHash) when either kind is Python's, ""
  // otherwise (and then not in the key: the native entries keep theirs).
  std::string model_hash;
};

// Whether baseline kinds `kinds` (baselineKindsName) run model.py in Python.
bool kindsRunModelPy(const std::string& kinds);

// SHA-256 of the task's model.py ("" when it has none).
std::string modelSourceHash(const std::filesystem::path& task_dir);

// <dir>/<task hash prefix>-<gpu>-<driver>-<torch>.json for the LibTorch and
// AOTInductor baselines (the name they always had), with -<baselines>
// before .json for the others; every part reduced to [A-Za-z0-9._-].
std::filesystem::path baselineCacheFile(const std::filesystem::path& dir, const BaselineKey& key);

// The cached entry ({"key": ..., "eager": ..., "compile": ...}) when the
// file exists and its key matches exactly; nullopt otherwise (a corrupt
// file is ignored, not fatal).
std::optional<Json> readBaselineCache(const std::filesystem::path& dir, const BaselineKey& key);

// Writes the entry atomically (temporary file + rename).
void writeBaselineCache(const std::filesystem::path& dir, const BaselineKey& key, const Json& entry);

Json baselineKeyJson(const BaselineKey& key);

// SHA-256 over the files that decide the baselines' timings: task.json,
// reference.pt, inputs.pt (when present) and compiled/<arch>.pt2 (when present).
std::string taskContentHash(const std::filesystem::path& task_dir, const std::string& arch);

}  // namespace kb::profile
