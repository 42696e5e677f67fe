#include "analyze/rules/mutable_global.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace kb::analyze {

void MutableGlobalRule::registerMatchers(MatchFinder& finder) {
  finder.addMatcher(varDecl(hasGlobalStorage()).bind("var"), this);
}

void MutableGlobalRule::check(const MatchFinder::MatchResult& r) {
  const auto* v = r.Nodes.getNodeAs<VarDecl>("var");
  const SourceManager& sm = *r.SourceManager;
  if (!v || v->isImplicit() || !ctx().inSolution(v->getLocation(), sm)) return;
  if (llvm::isa<ParmVarDecl>(v)) return;
  if (v->isThisDeclarationADefinition() == VarDecl::DeclarationOnly) return;
  if (v->hasAttr<CUDASharedAttr>()) return;
  if (v->hasAttr<CUDAConstantAttr>() && ctx().policy().allow_constant_memory) return;
  if (v->isConstexpr()) return;
  QualType base = r.Context->getBaseElementType(v->getType());
  if (base.isConstQualified()) return;
  if (v->getType()->isReferenceType() && v->getType()->getPointeeType().isConstQualified()) return;
  std::string what = v->getTLSKind() != VarDecl::TLS_None ? "thread_local variable"
                     : v->isStaticLocal()                  ? "static local variable"
                     : v->isStaticDataMember()             ? "static data member"
                     : v->hasAttr<CUDADeviceAttr>()        ? "__device__ global variable"
                                                           : "global variable";
  report(v->getLocation(), sm,
         "mutable " + what + " '" + v->getNameAsString() +
             "' can carry results across calls; keep state in ctx.create_state() or make it const");
}

}  // namespace kb::analyze
