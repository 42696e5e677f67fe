// Collects the inventory (kernels, launch sites, library calls) while the
// rules run; it judges nothing.
#pragma once

#include "analyze/rule.h"

namespace kb::analyze {

class InventoryCollector : public clang::ast_matchers::MatchFinder::MatchCallback {
 public:
  explicit InventoryCollector(CheckContext& ctx) : ctx_(ctx) {}
  void registerMatchers(clang::ast_matchers::MatchFinder& finder);
  void run(const clang::ast_matchers::MatchFinder::MatchResult& result) override;

 private:
  CheckContext& ctx_;
};

}  // namespace kb::analyze
