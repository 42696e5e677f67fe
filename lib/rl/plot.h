// `kbtrain plot`: metric curves as one self-contained HTML page (inline SVG,
// no script, no network), one chart per numeric field.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::rl {

// `runs` are metrics files in order (e.g. the loop's iterations); their
// steps are laid end to end, and a dashed line marks where each file starts.
// Fields that are never numbers (stage, ...) are not plotted.
std::string metricsHtml(const std::vector<std::filesystem::path>& runs, const std::string& title);

}  // namespace kb::rl
