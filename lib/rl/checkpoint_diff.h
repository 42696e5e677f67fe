// `kbtrain diff`: how far apart two checkpoints are (the data-parallel
// checks compare a 1-process and an N-process run with it).
#pragma once

#include <filesystem>

#include "core/json.h"

namespace kb::rl {

// {"max_abs_diff": x, "files": {"model.safetensors": x, ...}}: the largest
// |a - b| over the tensors of each *.safetensors file both directories hold.
// Throws kb::Error when a shared file holds different tensor names.
Json checkpointDiff(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace kb::rl
