// device-library: no device-wide library algorithms (thrust, cub::Device*)
// where the policy forbids them; CUB's block- and warp-level building blocks
// inside the solution's own kernels are fine.
#pragma once

#include "analyze/rule.h"

namespace kb::analyze {

class DeviceLibraryRule : public Rule {
 public:
  using Rule::Rule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;

 private:
  bool denied(const clang::NamedDecl* decl, std::string* name) const;
};

}  // namespace kb::analyze
