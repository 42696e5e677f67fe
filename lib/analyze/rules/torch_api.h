// torch-api: nothing from torch, ATen, c10 (or pybind11, triton) may be
// declared or used. Torch's headers are not on the include path, so a
// solution can only reach torch by declaring its namespaces or its mangled
// symbols itself; both are caught here, as is every use through `using`,
// aliases, ADL, operators and templates.
// In a torch extension (docs/rules/torch-api.md "Torch extensions") the
// extension policy forbids fewer namespaces, and a call of a function of
// its torch_compute_namespaces (`at`, `torch`) is a finding unless its
// qualified name matches torch_allow: torch for allocation, shapes, views
// and streams, no torch compute.
#pragma once

#include "analyze/rule.h"

namespace kb::analyze {

class TorchApiRule : public Rule {
 public:
  using Rule::Rule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;

 private:
  bool forbidden(const clang::Decl* decl) const;
  bool forbiddenName(llvm::StringRef name) const;
  bool demanglesIntoForbidden(llvm::StringRef symbol, std::string* demangled) const;
  // Why calling `fn` is torch compute the policy refuses, or "".
  std::string computeCall(const clang::FunctionDecl* fn) const;
};

}  // namespace kb::analyze
