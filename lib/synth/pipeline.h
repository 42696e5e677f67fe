// The synthesis run behind `kbsynth seeds/compose/filter/stats/similarity`:
// a run folder OUT holding
//   synth.json       the run's settings (composer, seed, mix, profile, catalog, filter settings)
//   manifest.jsonl   one line per task, in index order (docs/kbsynth-synthesis.md
//                    documents every field); rewritten atomically as work finishes
//   programs/NNNNN.py  the composed programs
//   times.jsonl      wall-clock seconds per task and stage of the filter (kept out
//                    of the manifest so that the manifest is reproducible)
//   tasks/<id>/      task bundles of the kept tasks (filter --bundles)
// Work already recorded in the manifest is never redone, so an interrupted
// run resumes where it stopped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/json.h"
#include "synth/compose.h"
#include "synth/llm.h"

namespace kb::synth {

struct ComposeOptions {
  std::filesystem::path out;
  int64_t n = 0;
  uint64_t seed = 0;
  std::string composer = "rule";  // rule | llm
  Mix mix;
  std::string profile = "gpu";
  std::filesystem::path catalog;  // empty: defaultCatalogPath()
  LlmOptions llm;
  int64_t stop_after = 0;         // stop after composing this many new tasks (tests of resume); 0: no stop
  // Polled between tasks: the signal (SIGINT, SIGTERM) that asks for a clean
  // stop, 0 to go on. A stop saves the manifest and returns 128 + signal.
  std::function<int()> stop_signal;
};

struct FilterOptions {
  std::filesystem::path out;
  std::string device = "cpu";
  std::vector<std::string> stages;  // empty: all
  std::vector<std::string> references;
  double max_similarity = 0.9;
  double min_ms = 1.0, max_ms = 100.0;
  int jobs = 0;                     // worker processes; 0: the cores (at most 12 on CUDA)
  int compile_jobs = 0;             // workers of the torch.compile stage; 0: the cores (at most 16) on CUDA, else jobs
  int chunk = 0;                    // tasks per worker process before a fresh one; 0: no limit
  double task_timeout = 0;          // seconds per task in its worker; 0: $KB_SYNTH_TASK_TIMEOUT, else 600
  double time_limit = 0;            // stop starting tasks after this many seconds (exit 1, resumable); 0: none
  bool bundles = false;             // capture kept tasks as bundles under OUT/tasks
  bool force = false;               // refilter tasks already filtered
  std::string python;
  // Polled between tasks, as ComposeOptions::stop_signal: no task is started
  // after a stop, tasks in flight finish and are recorded, the manifest is
  // saved, no bundles are captured, and runFilter returns 128 + signal.
  std::function<int()> stop_signal;
};

// The filter stages in funnel order.
const std::vector<std::string>& filterStages();

// Each prints JSON on stdout and progress on stderr; returns the exit status.
int runSeeds(const std::filesystem::path& catalog, bool list_all);
int runCompose(const ComposeOptions& o);
int runFilter(const FilterOptions& o);
int runStats(const std::filesystem::path& out, bool json);
int runSimilarity(const std::vector<std::string>& programs, const std::vector<std::string>& references,
                  double max_similarity, const std::string& python);

// Manifest I/O (atomic rewrite; a torn last line of an interrupted writer is ignored).
std::vector<Json> readManifest(const std::filesystem::path& path);
void writeManifest(const std::filesystem::path& path, const std::vector<Json>& records);

}  // namespace kb::synth
