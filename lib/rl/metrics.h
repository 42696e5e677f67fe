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
  // Truncates `path` (a run writes its own file); an empty path writes
  // nothing. keep_through_step >= 0 (a resumed run): keeps the records of
  // steps 1..keep_through_step already in the file, drops later ones (written
  // after the checkpoint the run resumes from), and appends.
  explicit MetricsWriter(const std::filesystem::path& path, int64_t keep_through_step = -1);
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
