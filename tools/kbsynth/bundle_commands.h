// The bundle subcommands of kbsynth (import, export, baseline, check, info):
// flag definitions over lib/synth/import_run.h and lib/synth/check_bundle.h.
// main.cpp adds them to its CLI11 app.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "synth/import_run.h"
#include "synth/check_bundle.h"
#include "synth/problems.h"

namespace kb {

struct BundleCli {
  CLI::App *import = nullptr, *exp = nullptr, *baseline = nullptr, *check = nullptr, *info = nullptr;
  synth::CaptureOptions co;
  synth::ImportOptions io;
  std::vector<std::string> sources, bundles;
  std::string out_dir, export_id;
  std::string device = "cpu", weights = "external";
  bool force = false;
  int baseline_jobs = 0;  // kbsynth baseline -j (0: baselineJobs)
  synth::BundleCheckOptions ck;
  std::string seeds = "0,1,2";
  bool no_compiled = false;
};

void addBundleCommands(CLI::App& app, BundleCli& b);
// The exit status of the chosen bundle subcommand; nullopt when another one was chosen.
std::optional<int> runBundleCommands(BundleCli& b, const std::string& python);

}  // namespace kb
