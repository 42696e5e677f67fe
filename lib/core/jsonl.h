// JSONL files: one JSON object per line (trajectories, metrics, results).
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

#include "core/json.h"

namespace kb {

// Every line that parses as a JSON object, in order; blank lines are passed
// over, and any other line (e.g. the partial last line of an interrupted
// writer) is counted in *skipped. A missing file reads as empty; use
// std::filesystem::exists first where that is an error.
std::vector<Json> readJsonLines(const std::filesystem::path& path, size_t* skipped = nullptr);

}  // namespace kb
