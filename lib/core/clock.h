// Elapsed wall time: the steady clock and the seconds since a point of it.
#pragma once

#include <chrono>

namespace kb {

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace kb
