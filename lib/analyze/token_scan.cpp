#include "analyze/token_scan.h"

namespace kb::analyze {
namespace {

std::string lastComponent(const std::string& qualified) {
  size_t p = qualified.rfind("::");
  return p == std::string::npos ? qualified : qualified.substr(p + 2);
}

}  // namespace

TokenScanner::TokenScanner(const StaticPolicy& policy) {
  for (const auto& [rule, api] : policy.banned) {
    if (policy.severityOf(rule) == "off") continue;
    // A POSIX name like `read` or `open` is also a common variable name: it
    // counts when called or when its address is taken. Names of the
    // dynamic-loading rule, variables and types count wherever they appear.
    auto add = [&](const std::string& q, bool any_use) {
      Name n{TokenHit{rule, api.message}, any_use, q.rfind("::", 0) != 0};
      names_.emplace(lastComponent(q), n);
    };
    for (const auto& q : api.functions) add(q, rule == "dynamic-loading");
    for (const auto* list : {&api.variables, &api.classes, &api.types})
      for (const auto& q : *list) add(q, true);
    for (const auto& re : api.name_patterns)
      name_patterns_.push_back({rule, api.message, std::make_shared<llvm::Regex>(re)});
    for (const auto& re : api.strings)
      string_patterns_.push_back({rule, api.message, std::make_shared<llvm::Regex>(re)});
  }
  if (policy.severityOf("torch-api") != "off")
    for (const auto& ns : policy.forbidden_namespaces)
      namespaces_.try_emplace(ns, TokenHit{"torch-api", "names torch, ATen or c10, which a solution must not use"});
  if (policy.severityOf("device-library") != "off")
    namespaces_.try_emplace("thrust", TokenHit{"device-library", "uses a device-wide library algorithm"});
  if (policy.severityOf("library-api") != "off") {
    for (const auto& lib : policy.libraries) {
      Library l;
      l.prefixes = lib.prefixes;
      for (const auto& re : lib.allow) l.allow.push_back(std::make_shared<llvm::Regex>(re));
      l.message = lib.message;
      libraries_.push_back(std::move(l));
    }
  }
}

std::optional<TokenHit> TokenScanner::identifier(const std::string& name, const std::string& prev,
                                                 const std::string& next) const {
  auto [begin, end] = names_.equal_range(name);
  for (auto it = begin; it != end; ++it) {
    const Name& n = it->second;
    // A member of an object (`input.clone()` of a torch tensor in a
    // published solution, `p->read(...)`) is not the library's function of
    // that name: only a call or address of the name itself counts.
    const bool member = prev == "." || prev == "->";
    if (n.qualified ? prev == "::" : (n.any_use || (!member && next == "(") || prev == "&" || prev == "::"))
      return n.hit;
  }
  // g++ knows library built-ins Clang does not (`__builtin_fork`,
  // `__builtin_execve`, `__builtin__exit`): Clang rejects them, g++ calls
  // the library function. The name after the prefix counts wherever it is.
  if (llvm::StringRef(name).starts_with("__builtin_") && name.size() > 10) {
    auto [b, e] = names_.equal_range(name.substr(10));
    if (b != e) return b->second.hit;
  }
  for (const auto& p : name_patterns_)
    if (p.re->match(name)) return TokenHit{p.rule, p.message};
  if (next == "::")
    if (auto it = namespaces_.find(name); it != namespaces_.end()) return it->second;
  if (next == "(") {
    for (const auto& lib : libraries_) {
      bool ours = false;
      for (const auto& prefix : lib.prefixes) ours = ours || llvm::StringRef(name).starts_with(prefix);
      if (!ours) continue;
      bool allowed = false;
      for (const auto& re : lib.allow) allowed = allowed || re->match(name);
      if (!allowed) return TokenHit{"library-api", lib.message};
    }
  }
  return std::nullopt;
}

std::optional<TokenHit> TokenScanner::stringLiteral(const std::string& contents) const {
  for (const auto& p : string_patterns_)
    if (p.re->match(contents)) return TokenHit{p.rule, p.message};
  return std::nullopt;
}

}  // namespace kb::analyze
