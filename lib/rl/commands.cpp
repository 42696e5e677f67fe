#include "rl/commands.h"

#include <csignal>

namespace kb::rl {

std::string stopMessage(const Json& summary, int signal, const std::vector<std::string>& args) {
  std::string cmd;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--resume") continue;
    cmd += (i ? " " : "") + (a.find_first_of(" '\"$") == std::string::npos ? a : "'" + a + "'");
  }
  const Json ck = summary.value("checkpoint", Json());
  return std::string("stopped by ") + (signal == SIGTERM ? "SIGTERM" : "SIGINT") + " after step " +
         std::to_string(summary.value("completed_steps", 0)) + " of " + std::to_string(summary.value("steps", 0)) +
         (ck.is_string() ? "; checkpoint in " + ck.get<std::string>() + "; resume with: " + cmd + " --resume"
                         : "; no step was done, nothing to resume");
}

}  // namespace kb::rl
