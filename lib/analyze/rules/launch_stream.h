// launch-stream: all device work goes on the stream the harness gives, so
// the timer sees it and nothing escapes the call. Flags kernel launches and
// calls (the CUDA API's and the solution's own helpers) whose stream argument
// is missing or a constant (0, the legacy or per-thread default stream), stream
// variables, fields and initialiser lists given such a constant, and APIs that
// always run on the default stream (cudaMemcpy, cudaMemset, ...). A stream
// that reaches a launch through run-time arithmetic is not tracked.
#pragma once

#include "analyze/rule.h"

namespace kb::analyze {

class LaunchStreamRule : public Rule {
 public:
  using Rule::Rule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
};

}  // namespace kb::analyze
