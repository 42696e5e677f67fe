// kbsynth check and info (docs/kbsynth.md): whether C++ reproduces Python
// for task bundles, and a summary line per bundle.
//
// checkBundles runs scripts/expected.py once for all bundles (the inputs and
// outputs of the original model.py per seed, and its timings with
// time_iters > 0), then compares, per bundle, the inputs lib/task makes, the
// reference.pt outputs and the compiled baseline outputs against them
// (maxAbsDiff) and prints one JSON line per bundle on stdout. The caller
// installs the stop-signal handler (expected.py gets SIGTERM).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kb::synth {

struct BundleCheckOptions {
  std::string device = "cpu";
  std::vector<uint64_t> seeds = {0, 1, 2};
  bool compiled = true;  // also check the compiled baseline
  double max_diff = 1e-5;
  int time_iters = 0, warmup = 10, repeats = 5;
  std::string python;
  std::function<int()> stop_signal = [] { return 0; };  // the signal that asked to stop, 0: none
};

// Exit 0 (every bundle within max_diff), 1 (any differs or fails) or
// 128 + signal. kb::UsageError for a bad bundle, before any work; kb::Error
// when expected.py fails as a whole.
int checkBundles(const std::vector<std::string>& bundles, const BundleCheckOptions& options);

// Validates each bundle (files present and unchanged, format version,
// compiled packages) and prints one JSON summary line each. Exit 0.
int printBundleInfo(const std::vector<std::string>& bundles);

}  // namespace kb::synth
