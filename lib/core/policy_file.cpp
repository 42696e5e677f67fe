#include "core/policy_file.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/paths.h"

namespace kb {

std::filesystem::path resolvePolicyFile(const std::filesystem::path& name_or_path) {
  if (name_or_path.empty()) {
    if (const char* p = std::getenv("KB_POLICY"); p && *p) return resolvePolicyFile(p);
    return dataPath("policy/default.json");
  }
  const std::string s = name_or_path.string();
  if (s == "paper") return dataPath("policy/default.json");
  if (s.find('/') == std::string::npos && name_or_path.extension().empty() && !std::filesystem::exists(name_or_path))
    return dataPath("policy/" + s + ".json");
  return name_or_path;
}

namespace {

Json readOne(const std::filesystem::path& path, std::string* text) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read policy file " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  *text = ss.str();
  try {
    return Json::parse(*text);
  } catch (const Json::parse_error& e) {
    throw UsageError(path.string() + ": invalid JSON: " + e.what());
  }
}

}  // namespace

Json readPolicyFile(const std::filesystem::path& path, std::string* text) {
  std::string own_text;
  Json j = readOne(path, &own_text);
  if (!j.is_object()) throw UsageError(path.string() + ": a policy is a JSON object");
  if (j.contains("extends")) {
    if (!j["extends"].is_string()) throw UsageError(path.string() + ": extends: expected a file name");
    std::string base_text;
    Json merged = readOne(path.parent_path() / j["extends"].get<std::string>(), &base_text);
    if (!merged.is_object()) throw UsageError(path.string() + ": extends: the base is not a JSON object");
    for (const auto& [key, value] : j.items()) {
      if (key == "extends") continue;
      if ((key == "rules" || key == "python_rules") && merged.contains(key)) {
        merged[key].update(value);
      } else if (key == "extension" && merged.contains(key) && value.is_object()) {
        for (const auto& [k, v] : value.items()) {
          if (k == "rules" && merged[key].contains("rules")) merged[key]["rules"].update(v);
          else merged[key][k] = v;
        }
      } else {
        merged[key] = value;
      }
    }
    j = std::move(merged);
    own_text = base_text + own_text;
  }
  if (text) *text = std::move(own_text);
  return j;
}

bool policyAllowsTorchOps(const std::filesystem::path& name_or_path) {
  const Json j = readPolicyFile(resolvePolicyFile(name_or_path));
  const Json rules = j.value("python_rules", Json::object());
  if (!rules.is_object() || !rules.contains("py-torch-compute")) return false;
  return rules["py-torch-compute"] != "error";
}

}  // namespace kb
