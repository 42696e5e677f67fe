// skipped-branch: a parse sees only the preprocessor branches that are true
// for Clang; g++ and nvcc may take others (`#if __GNUC__ >= 5`, `#ifdef
// __OPTIMIZE__`, `#ifndef __CUDACC__` in a .cpp). Every branch of a solution
// file that a parse skipped is a finding, unless each identifier its chain of
// conditions depends on (after macro expansion) has the same value for the
// checker and for the compiler: the policy's `preprocessor_trusted` names
// (`__CUDA_ARCH__`, `__cplusplus`, ...) and macros the solution itself
// #defines or #undefs, unconditionally or under trusted conditions, whose
// bodies again depend on trusted names only. docs/rules/skipped-branch.md.
#pragma once

#include <set>

#include "analyze/rule.h"

namespace kb::analyze {

class SkippedBranchRule : public Rule {
 public:
  using Rule::Rule;
  void registerMatchers(clang::ast_matchers::MatchFinder&) override {}
  void registerPPCallbacks(clang::Preprocessor& pp) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult&) override {}

  // Public for the callbacks in the .cpp file.
  void skipped(clang::SourceLocation directive, const std::string& why, const clang::SourceManager& sm) {
    report(directive, sm, "the checker's parse skipped this branch, but its condition depends on " +
                              why + ": g++ or nvcc may take it and build code that was never checked");
  }
};

}  // namespace kb::analyze
