// compiler-conditional: the checker parses with Clang, the build compiles
// with nvcc. Code under `#ifdef __NVCC__` (or `#if !defined(__clang__)`, or a
// CUDA-version test) would be built without ever being checked, so
// preprocessor conditions on the compiler's identity or version are refused.
// __CUDA_ARCH__ is fine: both the host and the device side are parsed.
#pragma once

#include "analyze/rule.h"

namespace kb::analyze {

class CompilerConditionalRule : public Rule {
 public:
  using Rule::Rule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override {}
  void registerPPCallbacks(clang::Preprocessor& pp) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override {}

  // Called by the preprocessor callback with the text of a condition.
  void onCondition(clang::SourceLocation loc, llvm::StringRef text, const clang::SourceManager& sm);
};

}  // namespace kb::analyze
