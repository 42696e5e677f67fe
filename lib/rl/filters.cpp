#include "rl/filters.h"

namespace kb::rl {

namespace {

bool argumentsValid(const Json& arguments) {
  if (arguments.is_object()) return true;
  if (!arguments.is_string()) return false;
  try {
    return Json::parse(arguments.get<std::string>()).is_object();
  } catch (const Json::parse_error&) {
    return false;
  }
}

bool hasInvalidToolCall(const Json& t) {
  for (const Json& turn : t.value("turns", Json::array())) {
    if (turn.contains("response"))
      for (const Json& c : turn["response"].value("tool_calls", Json::array()))
        if (!argumentsValid(c.value("arguments", Json("")))) return true;
    for (const Json& o : turn.value("observations", Json::array())) {
      const Json kind = o.value("error_kind", Json());
      if (kind == "bad_arguments" || kind == "unknown_tool") return true;
    }
  }
  return false;
}

bool hasLoop(const Json& t, int repeats) {
  std::string last;
  int run = 0;
  for (const Json& turn : t.value("turns", Json::array())) {
    if (!turn.contains("response")) continue;
    for (const Json& c : turn["response"].value("tool_calls", Json::array())) {
      const Json& args = c.value("arguments", Json(""));
      std::string key = c.value("name", "") + '\0' + (args.is_string() ? args.get<std::string>() : args.dump());
      run = key == last ? run + 1 : 1;
      last = key;
      if (run >= repeats) return true;
    }
  }
  return false;
}

bool hasMalformedTurn(const Json& t) {
  for (const Json& turn : t.value("turns", Json::array())) {
    if (turn.contains("policy_error") || turn.contains("nudge")) return true;
    if (!turn.contains("response")) return true;
    const Json& r = turn["response"];
    if (r.value("finish_reason", "") == "length") return true;
    if (r.value("content", "").find("<tool_call>") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> rejectionReasons(const Json& t, const FilterOptions& o) {
  std::vector<std::string> why;
  const Json* value = nullptr;
  if (t.contains("reward") && t["reward"].is_object() && t["reward"].contains("value") &&
      t["reward"]["value"].is_number())
    value = &t["reward"]["value"];
  else if (t.contains("reward") && t["reward"].is_number())
    value = &t["reward"];
  if (!value) {
    if (o.require_reward) why.push_back("no_reward");
  } else if (value->get<double>() <= o.min_reward) {
    why.push_back("reward_not_positive");
  }
  if (o.reject_invalid_tool_calls && hasInvalidToolCall(t)) why.push_back("invalid_tool_call");
  if (o.reject_loops && hasLoop(t, o.loop_repeats)) why.push_back("loop");
  if (o.reject_malformed && hasMalformedTurn(t)) why.push_back("malformed_turn");
  return why;
}

Json FilterSummary::toJson() const {
  Json r = Json::object();
  for (const char* k : {"no_reward", "reward_not_positive", "invalid_tool_call", "loop", "malformed_turn"})
    r[k] = reasons.count(k) ? reasons.at(k) : 0;
  return {{"seen", seen}, {"kept", kept}, {"rejected", rejected}, {"reasons", r}};
}

std::vector<Json> filterTrajectories(const std::vector<Json>& trajectories, const FilterOptions& options,
                                     FilterSummary* summary) {
  FilterSummary s;
  std::vector<Json> kept;
  for (const Json& t : trajectories) {
    ++s.seen;
    std::vector<std::string> why = rejectionReasons(t, options);
    if (why.empty()) {
      ++s.kept;
      kept.push_back(t);
    } else {
      ++s.rejected;
      for (const std::string& w : why) ++s.reasons[w];
    }
  }
  if (summary) *summary = s;
  return kept;
}

}  // namespace kb::rl
