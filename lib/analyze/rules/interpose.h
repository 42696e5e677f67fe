// interpose: a solution may not define functions that stand in for the CUDA
// runtime or driver, CUDA libraries or libc (cudaEventRecord,
// cudaEventElapsedTime, malloc, clock_gettime, ...), replace global operator
// new/delete, rename symbols with asm labels or aliases, or run code when the
// library is loaded (constructor/destructor attributes, globals initialised by
// non-constant expressions). Any of these would
// let it rewrite the timer or the harness's view of memory.
#pragma once

#include "analyze/rule.h"

namespace kb::analyze {

class InterposeRule : public Rule {
 public:
  using Rule::Rule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;

 private:
  bool apiLikeName(llvm::StringRef name) const;
};

}  // namespace kb::analyze
