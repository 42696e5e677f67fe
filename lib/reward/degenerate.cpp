#include "reward/degenerate.h"

#include <algorithm>
#include <map>

#include "core/error.h"

namespace fs = std::filesystem;

namespace kb::reward {

std::optional<DegenerateTask> parseDegenerate(const Json& field) {
  if (!field.is_object()) return std::nullopt;
  auto reason = field.find("reason");
  if (reason == field.end() || !reason->is_string() || reason->get<std::string>().empty()) return std::nullopt;
  DegenerateTask d{reason->get<std::string>(), {}};
  if (auto c = field.find("contracts"); c != field.end() && c->is_array())
    for (const Json& name : *c)
      if (name.is_string()) d.contracts.push_back(name.get<std::string>());
  if (d.contracts.empty()) d.contracts = {"strict", "paper"};
  return d;
}

std::optional<DegenerateTask> degenerateOf(const Json& task_json) {
  if (!task_json.is_object() || !task_json.contains("degenerate")) return std::nullopt;
  return parseDegenerate(task_json["degenerate"]);
}

Json degenerateToJson(const DegenerateTask& d) { return {{"reason", d.reason}, {"contracts", d.contracts}}; }

bool excludedAsDegenerate(const std::optional<DegenerateTask>& task, const std::string& contract) {
  if (!task) return false;
  if (contract.empty()) return true;
  return std::find(task->contracts.begin(), task->contracts.end(), contract) != task->contracts.end();
}

void markDegenerateTasks(std::vector<Candidate>& candidates, const std::vector<fs::path>& task_roots,
                         WarningList& warn) {
  if (task_roots.empty()) return;
  const std::string what = "tasks whose task.json was not found or not read under --tasks (not checked for "
                           "degeneracy)";
  std::map<std::string, std::optional<DegenerateTask>> flag_of;  // one read per task
  for (Candidate& c : candidates) {
    if (c.degenerate_task) continue;
    auto known = flag_of.find(c.task_id);
    if (known == flag_of.end()) {
      std::optional<DegenerateTask> flag;
      bool found = false;
      for (const fs::path& root : task_roots) {
        fs::path file = root / c.task_id / "task.json";
        std::error_code ec;
        if (!fs::is_regular_file(file, ec)) continue;
        found = true;
        try {
          flag = degenerateOf(readJsonFile(file));
        } catch (const std::exception& e) {
          warn.add("task_not_found", what, c.task_id + " (" + e.what() + ")");
        }
        break;
      }
      if (!found) warn.add("task_not_found", what, c.task_id);
      known = flag_of.emplace(c.task_id, flag).first;
    }
    c.degenerate_task = known->second;
  }
}

}  // namespace kb::reward
