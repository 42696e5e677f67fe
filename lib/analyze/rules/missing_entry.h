// missing-entry: the solution defines its entry point, kb_forward, with
// KB_FORWARD(ctx) { ... } (include/kb/solution.h). Without it there is
// nothing to run: the loader cannot find the symbol, however clean the rest
// is. A solution-wide rule: each parse records whether it saw the
// definition, and finishMissingEntry() joins the parses.
#pragma once

#include "analyze/rule.h"

namespace kb::analyze {

class MissingEntryRule : public Rule {
 public:
  using Rule::Rule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
};

// One whole-file finding on forward.cpp when no parse saw a host definition
// of extern "C" kb_forward in the solution. Silent when some source did not
// parse (`all_parsed` false): Clang's recovery may have dropped the
// definition, and the build decides.
void finishMissingEntry(const std::vector<SymbolFacts>& facts, bool all_parsed, const StaticPolicy& policy,
                        std::vector<Finding>& findings);

}  // namespace kb::analyze
