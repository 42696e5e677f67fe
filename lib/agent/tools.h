// The agent's tools (docs/kbrollout.md "Tools"): bash, read_file, write_file,
// edit_file, glob, grep, compile, verify, profile, finish. Each takes the
// model's JSON arguments and returns an observation; nothing a tool call does
// (bad arguments, a refused path, a failing command, an exception) ends the
// rollout: it all comes back to the model as text.
#pragma once

#include <string>
#include <vector>

#include "agent/environment.h"
#include "chat/messages.h"
#include "agent/workspace.h"
#include "core/json.h"
#include "solution/solution.h"

namespace kb::agent {

struct ToolLimits {
  size_t max_observation_chars = 12000;  // what the model sees of one result
  double bash_timeout_seconds = 120.0;   // default per command
  double bash_max_timeout_seconds = 600.0;
  size_t max_file_bytes = solution::SolutionLimits{}.max_file_bytes;  // read_file / write_file / edit_file / grep
  size_t max_read_lines = 2000;          // per read_file call
  size_t max_glob_results = 500;
  size_t max_grep_matches = 200;
};

struct Observation {
  bool ok = true;          // false: refused, bad arguments, or the tool failed
  std::string text;        // what goes back to the model (already capped)
  bool truncated = false;  // the text was cut to fit
  bool finish = false;     // the finish tool was called
  std::string error_kind;  // "" when ok; "bad_arguments", "unknown_tool", "path_refused", ...
  Json detail = Json::object();  // structured result for the trajectory
  double seconds = 0.0;
};

class ToolBox {
 public:
  ToolBox(Workspace workspace, Environment& env, ToolLimits limits = {});

  std::vector<chat::ToolSpec> specs() const;
  // Runs one call. Never throws.
  Observation call(const chat::ToolCall& call);

  const Workspace& workspace() const { return ws_; }

 private:
  Observation dispatch(const std::string& name, const Json& args);
  Observation bash(const Json& args);
  Observation readFile(const Json& args);
  Observation writeFile(const Json& args);
  Observation editFile(const Json& args);
  Observation glob(const Json& args);
  Observation grep(const Json& args);
  Observation stage(const std::string& name);
  Observation finish(const Json& args);

  Workspace ws_;
  Environment& env_;
  ToolLimits limits_;
};

// Keeps the first and last parts of `text` within `max_chars`, with a line
// in between saying how much was left out. Sets *cut when it cut.
std::string capText(const std::string& text, size_t max_chars, bool* cut = nullptr);

// Matches '/'-separated `path` against a glob with *, ?, [...] within one
// component and ** across components.
bool globMatch(const std::string& pattern, const std::string& path);

}  // namespace kb::agent
