#include "analyze/rules/extern_symbol.h"

#include <set>

#include <clang/AST/Mangle.h>

using namespace clang;
using namespace clang::ast_matchers;

namespace kb::analyze {
namespace {

bool anyRedeclOutside(const Decl* d, CheckContext& ctx, const SourceManager& sm) {
  for (const Decl* r : d->redecls())
    if (!ctx.inSolution(r->getLocation(), sm)) return true;
  return false;
}

bool anyRedeclReferenced(const Decl* d) {
  for (const Decl* r : d->redecls())
    if (r->isReferenced() || r->isUsed(false)) return true;
  return false;
}

}  // namespace

void ExternSymbolRule::registerMatchers(MatchFinder& finder) {
  finder.addMatcher(functionDecl().bind("fn"), this);
  finder.addMatcher(varDecl(hasExternalFormalLinkage()).bind("var"), this);
}

void ExternSymbolRule::check(const MatchFinder::MatchResult& r) {
  const SourceManager& sm = *r.SourceManager;
  ASTNameGenerator names(*r.Context);
  const DeclaratorDecl* decl = nullptr;
  bool defined = false;
  if (const auto* fn = r.Nodes.getNodeAs<FunctionDecl>("fn")) {
    if (fn->isImplicit() || fn->getBuiltinID() || fn->isDependentContext() ||
        fn->getTemplatedKind() != FunctionDecl::TK_NonTemplate || fn->isDeleted() ||
        fn->isDefaulted() || llvm::isa<CXXMethodDecl>(fn) && llvm::cast<CXXMethodDecl>(fn)->getParent()->isLambda())
      return;
    if (!fn->isExternallyVisible()) return;
    decl = fn;
    defined = fn->doesThisDeclarationHaveABody();
  } else if (const auto* var = r.Nodes.getNodeAs<VarDecl>("var")) {
    // extern __shared__ arrays are dynamic shared memory, sized at launch.
    if (var->isImplicit() || !var->hasGlobalStorage() || var->isStaticLocal() ||
        var->hasAttr<CUDASharedAttr>() ||
        var->getDeclContext()->isDependentContext())
      return;
    decl = var;
    defined = var->isThisDeclarationADefinition() != VarDecl::DeclarationOnly;
  }
  if (!decl || !ctx().inSolution(decl->getLocation(), sm)) return;
  // A declaration Clang rejected (a parser limit) has no reliable name.
  if (decl->isInvalidDecl()) return;
  std::string mangled = names.getName(decl);
  if (mangled.empty()) return;
  if (!mangled.empty() && mangled[0] == '\01') mangled.erase(0, 1);
  if (defined) {
    ctx().symbols().defined.insert(mangled);
    return;
  }
  if (anyRedeclOutside(decl, ctx(), sm) || !anyRedeclReferenced(decl)) return;
  auto& uses = ctx().symbols().referenced_undefined;
  if (uses.count(mangled)) return;
  SymbolFacts::Use use;
  use.display = decl->getNameAsString();
  use.file = ctx().solutionFile(decl->getLocation(), sm);
  SourceLocation loc = sm.getFileLoc(decl->getLocation());
  use.line = sm.getSpellingLineNumber(loc);
  use.column = sm.getSpellingColumnNumber(loc);
  uses[mangled] = use;
}

void finishExternSymbols(const std::vector<SymbolFacts>& facts, const StaticPolicy& policy,
                         std::vector<Finding>& findings) {
  std::string sev = policy.severityOf("extern-symbol");
  if (sev == "off") return;
  std::set<std::string> defined;
  for (const auto& f : facts) defined.insert(f.defined.begin(), f.defined.end());
  std::set<std::string> done;
  for (const auto& f : facts) {
    for (const auto& [mangled, use] : f.referenced_undefined) {
      if (defined.count(mangled) || !done.insert(mangled).second) continue;
      Finding finding;
      finding.rule = "extern-symbol";
      finding.severity = sev == "warning" ? Severity::Warning : Severity::Error;
      finding.file = use.file;
      finding.line = use.line;
      finding.column = use.column;
      finding.message = "'" + use.display + "' (symbol " + mangled +
                        ") is declared here, used, and defined nowhere in the solution; symbols "
                        "must come from the solution or an allowed header";
      findings.push_back(std::move(finding));
    }
  }
}

}  // namespace kb::analyze
