// kbsynth import / export / baseline (docs/kbsynth.md): programs captured
// into task bundles by the capture pool (synth/capture_pool.h), the
// torch.compile baselines built by the baseline pool (synth/baseline_pool.h)
// as each capture ends, one JSON line per
// task on stdout, progress on stderr, and the import/export report.
//
// The caller (tools/kbsynth) checks the outputs, takes the output lock and
// installs the stop-signal handler; these functions poll `stop_signal` and
// return the exit status (docs/cli.md), 128 + signal after a clean stop.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "synth/problems.h"

namespace kb::synth {

struct CaptureOptions {
  std::string compiled = "none";   // also build the compiled baseline for this device ("none": no)
  std::string weights = "external";
  std::string python;
  std::string report;              // report path ("": the default of the command)
  bool strict = false;
  bool skip_existing = false;      // import: keep bundles already captured from the same program
  int init_seed = -1;
  int jobs = 0;                    // capture workers (0: planCapture's choice)
  int baseline_jobs = 0;           // baseline.py processes at once (0: baselineJobs)
  double memory_budget_gib = 0;    // for all workers together (0: 80% of MemAvailable)
  double timeout_s = 0;            // per task (0: $KB_CAPTURE_TIMEOUT, else 300)
  std::string capture_device;      // capture's forwards: cpu, cuda, cuda:N ("": $KB_CAPTURE_DEVICE, else cpu)
  std::string torch_version;       // for the report header ("" when unknown)
  std::string started_at;          // the report's started_at ("": when the run starts)
  std::function<int()> stop_signal = [] { return 0; };  // the signal that asked to stop, 0: none
};

// The problems of every source (kb::synth::findProblems); kb::UsageError when none.
std::vector<ImportItem> findImportItems(const std::vector<std::string>& sources, const ImportOptions& options);

// Writes each item's model.py under `out` (an existing folder the caller has
// locked), captures it, builds its baseline when asked, and writes
// OUT/import-report.json (or o.report). Exit 0, 1 (none imported, or any
// failed with --strict) or 128 + signal.
int runImport(const std::vector<ImportItem>& items, const std::filesystem::path& out, const CaptureOptions& o);

// Re-captures bundles from their model.py, keeping what their task.json
// says (id, provenance, tolerances, seeds); `id` names a single bundle.
// kb::UsageError for a folder without model.py or a bad id.
int runExport(const std::vector<std::string>& bundles, const std::string& id, const CaptureOptions& o);

// Builds (or keeps, unless force) compiled/<arch>.pt2 of each bundle for
// `device`, `jobs` bundles at once (0: synth/baseline_pool.h baselineJobs). Exit 0, 1 (any
// failed) or 128 + signal.
int buildBaselines(const std::vector<std::string>& bundles, const std::string& device, bool force,
                 const std::string& weights, const std::string& python, int jobs,
                 const std::function<int()>& stop_signal);

}  // namespace kb::synth
