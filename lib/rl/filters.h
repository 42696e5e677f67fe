// Rejection filters of RFT (DESIGN.md §1): keep a trajectory only if its
// reward is positive and it has no invalid tool calls, no loops and no
// malformed turns. Each filter can be switched off; every reason a rejected
// trajectory hits is counted (one trajectory may hit several).
//
// The reasons (docs/kbtrain.md "RFT filters"):
//   no_reward          reward.value is null or absent (excluded, infra error)
//   reward_not_positive reward.value <= min_reward
//   invalid_tool_call  a call's arguments are not a JSON object, or the
//                      environment answered bad_arguments / unknown_tool
//   loop               loop_repeats identical tool calls (same name and
//                      arguments) in a row
//   malformed_turn     a turn that failed (policy_error), was cut by the
//                      token limit (finish_reason "length"), had no tool call
//                      (a nudge was sent), or left a "<tool_call>" unparsed in
//                      its text
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "core/json.h"

namespace kb::rl {

struct FilterOptions {
  bool require_reward = true;
  double min_reward = 0.0;  // keep reward > min_reward
  bool reject_invalid_tool_calls = true;
  bool reject_loops = true;
  int loop_repeats = 3;
  bool reject_malformed = true;
};

// The reasons one trajectory is rejected (empty: kept).
std::vector<std::string> rejectionReasons(const Json& trajectory, const FilterOptions& options);

struct FilterSummary {
  size_t seen = 0, kept = 0, rejected = 0;
  std::map<std::string, size_t> reasons;  // reason -> trajectories hitting it
  Json toJson() const;
};

// The kept trajectories, in order; fills *summary.
std::vector<Json> filterTrajectories(const std::vector<Json>& trajectories, const FilterOptions& options,
                                     FilterSummary* summary);

}  // namespace kb::rl
