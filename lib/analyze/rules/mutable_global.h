// mutable-global: no mutable variable of static or thread storage duration
// (globals, static locals, static members, thread_local, __device__ and
// __managed__ globals). Such state can carry a result from one call to the
// next (caching keyed by pointer or shape). __shared__ memory lives for one
// block and is fine; __constant__ is allowed by default (weights prepared in
// init). State that must persist goes through ctx.create_state().
// A variable that a macro of the policy's mutable_global_macros declares
// from its own body in a library header (a torch extension's
// PYBIND11_MODULE: the module's definition) is the library's, not state.
#pragma once

#include "analyze/rule.h"

namespace kb::analyze {

class MutableGlobalRule : public Rule {
 public:
  using Rule::Rule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;

 private:
  bool libraryMacro(clang::SourceLocation loc, const clang::SourceManager& sm, const clang::LangOptions& lo);
};

}  // namespace kb::analyze
