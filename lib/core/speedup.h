// The speed-up, computed here and nowhere else: t_baseline / t_candidate.
// kbprof's speedup_vs_eager / speedup_vs_compile (lib/profile) and
// kbreward's speedup_eager / speedup_compile (lib/reward) both call it, so
// the two reports cannot disagree on what a speed-up is.
#pragma once

#include <cmath>
#include <optional>

namespace kb {

// How many times faster the candidate is than the baseline, from two times
// in the same unit (medians, means, CI ends): baseline / candidate; nullopt
// unless both are finite and positive.
inline std::optional<double> speedup(double baseline, double candidate) {
  if (!(baseline > 0) || !(candidate > 0) || !std::isfinite(baseline) || !std::isfinite(candidate))
    return std::nullopt;
  return baseline / candidate;
}

}  // namespace kb
