// mutable-global: no mutable variable of static or thread storage duration
// (globals, static locals, static members, thread_local, __device__ and
// __managed__ globals). Such state can carry a result from one call to the
// next (caching keyed by pointer or shape). __shared__ memory lives for one
// block and is fine; __constant__ is allowed by default (weights prepared in
// init). State that must persist goes through ctx.create_state().
#pragma once

#include "analyze/rule.h"

namespace kb::analyze {

class MutableGlobalRule : public Rule {
 public:
  using Rule::Rule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
};

}  // namespace kb::analyze
