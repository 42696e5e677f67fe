#include "analyze/policy.h"

#include <algorithm>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <llvm/Support/Regex.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/paths.h"

namespace kb::analyze {
namespace {

std::vector<std::string> strings(const Json& j, const std::string& key, const std::string& where) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  if (!j[key].is_array()) throw UsageError(where + "." + key + ": expected an array of strings");
  for (const auto& v : j[key]) {
    if (!v.is_string()) throw UsageError(where + "." + key + ": expected an array of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

void checkRegex(const std::string& re, const std::string& where) {
  std::string error;
  if (!llvm::Regex(re).isValid(error)) throw UsageError(where + ": bad regex '" + re + "': " + error);
}

bool knownRule(const std::string& id) {
  const auto& rules = allRules();
  return std::any_of(rules.begin(), rules.end(), [&](const RuleInfo& r) { return id == r.id; });
}

}  // namespace

std::string StaticPolicy::severityOf(const std::string& rule) const {
  auto it = rules.find(rule);
  return it == rules.end() ? "error" : it->second;
}

std::filesystem::path defaultPolicyPath() {
  if (const char* p = std::getenv("KB_POLICY")) return p;
  return dataPath("policy/default.json");
}

namespace {

Json readPolicyJson(const std::filesystem::path& path, std::string* text) {
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

std::filesystem::path resolvePolicy(const std::filesystem::path& name_or_path) {
  const std::string s = name_or_path.string();
  if (s == "paper") return dataPath("policy/default.json");
  if (s.find('/') == std::string::npos && name_or_path.extension().empty() && !std::filesystem::exists(name_or_path))
    return dataPath("policy/" + s + ".json");
  return name_or_path;
}

StaticPolicy loadStaticPolicy(const std::filesystem::path& given) {
  const std::filesystem::path path = resolvePolicy(given);
  std::string text;
  Json j = readPolicyJson(path, &text);
  // "extends": a base policy file (beside this one) whose fields this file
  // overrides; its rules and python_rules are merged, this file's winning.
  if (j.contains("extends")) {
    std::string base_text;
    Json merged = readPolicyJson(path.parent_path() / j["extends"].get<std::string>(), &base_text);
    for (const auto& [key, value] : j.items()) {
      if (key == "extends") continue;
      if ((key == "rules" || key == "python_rules") && merged.contains(key)) merged[key].update(value);
      else merged[key] = value;
    }
    j = std::move(merged);
    text = base_text + text;
  }
  const std::string where = path.filename().string();
  StaticPolicy p;
  p.name = j.value("name", path.stem().string());
  p.source_hash = "sha256:" + sha256Hex(text);
  try {
    if (j.contains("rules")) {
      for (const auto& [id, sev] : j["rules"].items()) {
        if (!knownRule(id)) throw UsageError(where + ": rules." + id + ": no such rule (see docs/rules/)");
        std::string s = sev.get<std::string>();
        if (s != "error" && s != "warning" && s != "off")
          throw UsageError(where + ": rules." + id + ": severity must be error, warning or off");
        p.rules[id] = s;
      }
    }
    if (j.contains("python_rules")) {  // scripts/pycheck.py's rules (docs/rules/python.md)
      for (const auto& [id, sev] : j["python_rules"].items()) {
        std::string s = sev.get<std::string>();
        if (id.rfind("py-", 0) != 0) throw UsageError(where + ": python_rules." + id + ": Python rule ids start with py-");
        if (s != "error" && s != "warning" && s != "off")
          throw UsageError(where + ": python_rules." + id + ": severity must be error, warning or off");
        p.python_rules[id] = s;
      }
    }
    if (j.contains("banned")) {
      for (const auto& [id, b] : j["banned"].items()) {
        if (!knownRule(id)) throw UsageError(where + ": banned." + id + ": no such rule (see docs/rules/)");
        BannedApi api;
        const std::string w = where + ".banned." + id;
        api.functions = strings(b, "functions", w);
        api.classes = strings(b, "classes", w);
        api.variables = strings(b, "variables", w);
        api.name_patterns = strings(b, "name_patterns", w);
        api.types = strings(b, "types", w);
        api.strings = strings(b, "strings", w);
        api.headers = strings(b, "headers", w);
        api.headers_except = strings(b, "headers_except", w);
        for (const auto* list : {&api.name_patterns, &api.strings, &api.headers})
          for (const auto& re : *list) checkRegex(re, w);
        api.message = b.value("message", "is not allowed in a solution");
        p.banned[id] = std::move(api);
      }
    }
    if (j.contains("libraries")) {
      for (const auto& [name, l] : j["libraries"].items()) {
        LibraryPolicy lib;
        lib.name = name;
        const std::string w = where + ".libraries." + name;
        lib.prefixes = strings(l, "prefixes", w);
        lib.allow = strings(l, "allow", w);
        lib.message = l.value("message", "is not allowed by the policy");
        p.libraries.push_back(std::move(lib));
      }
    }
    p.forbidden_namespaces = strings(j, "forbidden_namespaces", where);
    p.device_library_deny = strings(j, "device_library_deny", where);
    p.include_deny = strings(j, "include_deny", where);
    p.compiler_macros = strings(j, "compiler_macros", where);
    p.preprocessor_trusted = strings(j, "preprocessor_trusted", where);
    for (const auto& re : p.preprocessor_trusted) checkRegex(re, where + ".preprocessor_trusted");
    p.ctx_stream_functions = strings(j, "ctx_stream_functions", where);
    p.default_stream_functions = strings(j, "default_stream_functions", where);
    p.interpose_prefixes = strings(j, "interpose_prefixes", where);
    p.interpose_names = strings(j, "interpose_names", where);
    p.allow_constant_memory = j.value("allow_constant_memory", true);
  } catch (const Json::exception& e) {
    throw UsageError(where + ": " + e.what());
  }
  return p;
}

}  // namespace kb::analyze
