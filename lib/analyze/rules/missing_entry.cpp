#include "analyze/rules/missing_entry.h"

#include <clang/AST/Attr.h>

using namespace clang;
using namespace clang::ast_matchers;

namespace kb::analyze {

void MissingEntryRule::registerMatchers(MatchFinder& finder) {
  finder.addMatcher(functionDecl(hasName("kb_forward"), isDefinition()).bind("entry"), this);
}

void MissingEntryRule::check(const MatchFinder::MatchResult& r) {
  const auto* fn = r.Nodes.getNodeAs<FunctionDecl>("entry");
  if (!fn || !fn->isExternC() || fn->isInvalidDecl()) return;
  // The loader calls a host function: a __global__ or __device__-only
  // kb_forward is not the entry point.
  if (fn->hasAttr<CUDAGlobalAttr>() || (fn->hasAttr<CUDADeviceAttr>() && !fn->hasAttr<CUDAHostAttr>())) return;
  if (!ctx().inSolution(fn->getLocation(), *r.SourceManager)) return;
  ctx().symbols().defines_entry = true;
}

void finishMissingEntry(const std::vector<SymbolFacts>& facts, bool all_parsed, const StaticPolicy& policy,
                        std::vector<Finding>& findings) {
  const std::string sev = policy.severityOf("missing-entry");
  if (sev == "off" || !all_parsed) return;
  for (const auto& f : facts)
    if (f.defines_entry) return;
  Finding finding;
  finding.rule = "missing-entry";
  finding.severity = sev == "warning" ? Severity::Warning : Severity::Error;
  finding.file = "forward.cpp";
  finding.message =
      "the solution defines no entry point: write KB_FORWARD(ctx) { ... } (include/kb/solution.h) in "
      "forward.cpp";
  findings.push_back(std::move(finding));
}

}  // namespace kb::analyze
