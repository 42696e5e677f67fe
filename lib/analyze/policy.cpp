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
#include "core/policy_file.h"

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

std::filesystem::path resolvePolicy(const std::filesystem::path& name_or_path) {
  return resolvePolicyFile(name_or_path);
}

namespace {

// The policy of torch-extension sources: the file's fields with its
// "extension" object applied. Its rules are merged; its banned lists are
// added to the same rule's lists (its message, if given, replaces); any
// other key it names replaces the file's.
Json extensionJson(const Json& j) {
  Json ext = j;
  ext.erase("extension");
  for (const auto& [key, value] : j["extension"].items()) {
    if (key == "rules" && ext.contains("rules")) {
      ext["rules"].update(value);
    } else if (key == "banned" && ext.contains("banned")) {
      for (const auto& [id, b] : value.items()) {
        Json& base = ext["banned"][id];
        for (const auto& [field, list] : b.items()) {
          if (list.is_array() && base.contains(field) && base[field].is_array())
            for (const auto& item : list) base[field].push_back(item);
          else
            base[field] = list;
        }
      }
    } else {
      ext[key] = value;
    }
  }
  return ext;
}

StaticPolicy policyFromJson(const Json& j, const std::string& where, const std::string& name,
                            const std::string& hash);

}  // namespace

StaticPolicy loadStaticPolicy(const std::filesystem::path& given) {
  const std::filesystem::path path = resolvePolicy(given);
  // "extends" merged (core/policy_file.h): rules, python_rules and the keys
  // of "extension" key by key, the file's winning.
  std::string text;
  Json j = readPolicyFile(path, &text);
  const std::string where = path.filename().string();
  const std::string hash = "sha256:" + sha256Hex(text);
  StaticPolicy p = policyFromJson(j, where, j.value("name", path.stem().string()), hash);
  if (j.contains("extension")) {
    if (!j["extension"].is_object()) throw UsageError(where + ": extension: expected an object");
    p.extension = std::make_shared<StaticPolicy>(policyFromJson(extensionJson(j), where + ".extension", p.name, hash));
  }
  return p;
}

namespace {

StaticPolicy policyFromJson(const Json& j, const std::string& where, const std::string& name,
                            const std::string& hash) {
  StaticPolicy p;
  p.name = name;
  p.source_hash = hash;
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
    p.mutable_global_macros = strings(j, "mutable_global_macros", where);
    p.allow_binding_registry = j.value("allow_binding_registry", false);
    for (const auto& re : p.mutable_global_macros) checkRegex(re, where + ".mutable_global_macros");
    p.torch_compute_namespaces = strings(j, "torch_compute_namespaces", where);
    p.torch_allow = strings(j, "torch_allow", where);
    for (const auto& re : p.torch_allow) checkRegex(re, where + ".torch_allow");
  } catch (const Json::exception& e) {
    throw UsageError(where + ": " + e.what());
  }
  return p;
}

}  // namespace

}  // namespace kb::analyze
