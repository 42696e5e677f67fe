// The policy is a file (policy/default.json is the paper's rules): which
// rules are on and at what severity, which APIs each banned-API rule lists,
// which library functions are allowed, which includes are refused.
// docs/policy.md documents every key.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kb::analyze {

struct BannedApi {
  std::vector<std::string> functions;  // qualified names: "::system", "std::async"
  std::vector<std::string> classes;    // constructing one is the violation
  std::vector<std::string> variables;  // reading one is the violation
  // Regexes over the plain name (and the asm label) of any function or
  // variable the code references: "^_dl_" covers glibc's loader internals.
  std::vector<std::string> name_patterns;
  // Record types whose use (a type written, a member read) is the violation.
  std::vector<std::string> types;
  // Regexes over the contents of string literals ("^/proc(/|$)").
  std::vector<std::string> strings;
  // Regexes over the path of the header that declares a function: a
  // reference to any function declared there is the violation, so a whole
  // family (every descriptor call of <unistd.h>, <fcntl.h>, <aio.h>, ...) is
  // banned without listing each spelling. A declaration in a glibc-internal
  // `bits/` header counts as the public header that includes it.
  std::vector<std::string> headers;
  // Plain function names that `headers` leaves alone ("sysconf"). Functions
  // that another rule's `functions` list names are that rule's.
  std::vector<std::string> headers_except;
  std::string message;                 // why, in a few words
};

struct LibraryPolicy {
  std::string name;                // "cublas"
  std::vector<std::string> prefixes;  // function-name prefixes that belong to it
  std::vector<std::string> allow;     // regexes of allowed functions; empty = none
  std::string message;
};

// The static policy: a policy file (policy/default.json, kbcheck --policy)
// read into the rules the checker applies. ("Policy" alone, chat::Policy, is
// the LLM a rollout asks.)
struct StaticPolicy {
  std::string name;
  std::string source_hash;                   // sha256 of the policy file
  std::map<std::string, std::string> rules;  // rule id -> "error" | "warning" | "off"
  std::map<std::string, BannedApi> banned;   // rule id -> what it bans
  std::vector<LibraryPolicy> libraries;
  std::vector<std::string> forbidden_namespaces;   // torch-api
  std::vector<std::string> device_library_deny;    // regexes over qualified names
  std::vector<std::string> include_deny;           // regexes over the spelled name
  std::vector<std::string> compiler_macros;          // compiler-conditional (regexes)
  // skipped-branch: identifiers whose value the checker's parses share with
  // the real compilers (regexes; `defined`, `__cplusplus`, `__CUDA_ARCH__`).
  std::vector<std::string> preprocessor_trusted;
  // stream-create: functions allowed only when their stream argument is
  // ctx.stream() (CUDA graph capture and replay).
  std::vector<std::string> ctx_stream_functions;
  std::vector<std::string> default_stream_functions;  // launch-stream
  std::vector<std::string> interpose_prefixes;        // interpose
  std::vector<std::string> interpose_names;
  bool allow_constant_memory = true;               // mutable-global
  // mutable-global: library macros whose own declarations are not state
  // (regexes over the macro's name; PYBIND11_MODULE in an extension).
  std::vector<std::string> mutable_global_macros;
  // mutable-global and interpose: a variable that can hold nothing but a
  // torch extension's bindings (holdsOnlyBindings: the CUDA Agent
  // workspace's registry and REGISTER_BINDING's registrars) is no state,
  // and making it at load time is the extension's registration.
  bool allow_binding_registry = false;
  // Python-format solutions (scripts/pycheck.py, docs/rules/python.md):
  // rule id -> "error" | "warning" | "off"; missing rules are errors.
  std::map<std::string, std::string> python_rules;
  // torch-api in torch extensions: functions of these namespaces (`at`,
  // `torch`) may be called only when their qualified name matches
  // torch_allow (allocation, shapes, views, streams: no compute).
  std::vector<std::string> torch_compute_namespaces;
  std::vector<std::string> torch_allow;  // regexes over qualified names
  // The policy for torch-extension sources (load_inline's strings, a
  // workspace's binding.cpp and kernels/): this one with the file's
  // "extension" object applied (docs/policy.md); null when it has none.
  std::shared_ptr<const StaticPolicy> extension;

  // "error", "warning" or "off" for a rule; rules missing from the file are on.
  std::string severityOf(const std::string& rule) const;
};

// The ids of all rules, with their one-line rationale (docs/rules/ has more).
struct RuleInfo {
  const char* id;
  const char* summary;
};
const std::vector<RuleInfo>& allRules();

// Loads a policy file; throws kb::UsageError naming the file and key on error.
StaticPolicy loadStaticPolicy(const std::filesystem::path& path);
// A policy by name (`kernelbench`: policy/kernelbench.json; `paper`: the
// default policy, the CUDA Agent paper's rules) or by path (returned as is).
std::filesystem::path resolvePolicy(const std::filesystem::path& name_or_path);

// The default policy file shipped with the toolchain ($KB_POLICY, else
// dataPath("policy/default.json"): installed or the source tree's, core/paths.h).
std::filesystem::path defaultPolicyPath();

}  // namespace kb::analyze
