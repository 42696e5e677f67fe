// Training metrics: one JSON object per optimizer step, appended to a JSONL
// file and flushed (docs/kbtrain.md "Metrics" documents every field), and a
// one-line progress summary on stderr.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

#include "core/json.h"

namespace kb::rl {

class MetricsWriter {
 public:
  // Truncates `path` (a run writes its own file); an empty path writes nothing.
  explicit MetricsWriter(const std::filesystem::path& path);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  void write(const Json& record);  // NaN / inf become null

 private:
  std::FILE* file_ = nullptr;
};

// Replaces non-finite numbers by null (JSON has no NaN).
Json finiteOrNull(double x);

// "step 3/10 loss 0.412 reward 0.50 kl 0.001 clip 0.02 gnorm 1.3 2310 tok/s"
std::string progressLine(const Json& record);

}  // namespace kb::rl
