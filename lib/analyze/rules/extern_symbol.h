// extern-symbol: every function or variable a solution uses must be defined
// in the solution or come from an allowed header (CUDA's, the interface's,
// the C/C++ library's). A declaration written by hand and defined nowhere is
// how code reaches symbols it may not name (a mangled torch function, a
// libtorch C entry point); the linker would resolve it, so we refuse it.
#pragma once

#include "analyze/rule.h"

namespace kb::analyze {

class ExternSymbolRule : public Rule {
 public:
  using Rule::Rule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
  // `#pragma redefine_extname` (or `_Pragma`) written in the solution.
  void registerPPCallbacks(clang::Preprocessor& pp) override;
  void onPragma(clang::SourceLocation loc, const clang::SourceManager& sm);

 private:
  // A reference to a declaration that an asm label written in the solution
  // binds to another symbol; true when `result` was such a match.
  bool checkLabel(const clang::ast_matchers::MatchFinder::MatchResult& result);
};

// Joins the facts of every parse: a symbol referenced somewhere and defined
// nowhere becomes a finding.
void finishExternSymbols(const std::vector<SymbolFacts>& facts, const StaticPolicy& policy,
                         std::vector<Finding>& findings);

}  // namespace kb::analyze
