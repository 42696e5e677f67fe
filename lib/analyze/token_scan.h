// What a token scan looks for in code Clang could not parse (the
// parser-limit rule, docs/rules/parser-limit.md): a parse error must never
// hide a banned call, so the tokens of a rejected declaration are matched by
// name against the policy, without the AST.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <llvm/Support/Regex.h>

#include "analyze/policy.h"

namespace kb::analyze {

struct TokenHit {
  std::string rule;
  std::string message;
};

class TokenScanner {
 public:
  explicit TokenScanner(const StaticPolicy& policy);

  // `prev` and `next` are the spellings of the tokens around the identifier.
  std::optional<TokenHit> identifier(const std::string& name, const std::string& prev,
                                     const std::string& next) const;
  std::optional<TokenHit> stringLiteral(const std::string& contents) const;

 private:
  struct Pattern {
    std::string rule, message;
    std::shared_ptr<llvm::Regex> re;
  };
  struct Name {
    TokenHit hit;
    bool any_use = false;   // else only called, or address taken, or qualified
    bool qualified = false; // std::thread: only after "::"
  };
  std::multimap<std::string, Name> names_;       // banned functions, variables, classes
  std::map<std::string, TokenHit> namespaces_;   // before "::": torch, at, thrust, ...
  std::vector<Pattern> name_patterns_, string_patterns_;
  struct Library {
    std::vector<std::string> prefixes;
    std::vector<std::shared_ptr<llvm::Regex>> allow;
    std::string message;
  };
  std::vector<Library> libraries_;               // before "(": cufftExecC2C(...)
};

}  // namespace kb::analyze
