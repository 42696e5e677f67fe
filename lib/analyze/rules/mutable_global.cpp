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
  // A declaration Clang rejected (a parser limit: `int f( ;` reads as a
  // variable `f`) is not judged as a variable; see docs/rules/parser-limit.md.
  if (v->isInvalidDecl()) return;
  if (v->isThisDeclarationADefinition() == VarDecl::DeclarationOnly) return;
  if (v->hasAttr<CUDASharedAttr>()) return;
  if (v->hasAttr<CUDAConstantAttr>() && ctx().policy().allow_constant_memory) return;
  if (v->isConstexpr()) return;
  QualType base = r.Context->getBaseElementType(v->getType());
  if (base.isConstQualified()) {
    // const, but still a cache: a class with mutable members, or a static
    // local computed on the first call from that call's values.
    const CXXRecordDecl* rec = base->getAsCXXRecordDecl();
    if (rec && rec->hasDefinition() && rec->hasMutableFields()) {
      report(v->getLocation(), sm, "const variable '" + v->getNameAsString() +
                                       "' has mutable members that can carry results across calls");
    } else if (v->isStaticLocal() && v->hasInit() && !v->getDeclContext()->isDependentContext() &&
               !v->hasConstantInitialization()) {
      report(v->getLocation(), sm, "static local '" + v->getNameAsString() +
                                       "' is computed on the first call and kept for every later one");
    }
    return;
  }
  if (v->getType()->isReferenceType() && v->getType()->getPointeeType().isConstQualified()) return;
  std::string what = v->getTLSKind() != VarDecl::TLS_None ? "thread_local variable"
                     : v->isStaticLocal()                  ? "static local variable"
                     : v->isStaticDataMember()             ? "static data member"
                     : v->hasAttr<HIPManagedAttr>()        ? "__managed__ global variable"
                     : v->hasAttr<CUDADeviceAttr>()        ? "__device__ global variable"
                                                           : "global variable";
  report(v->getLocation(), sm,
         "mutable " + what + " '" + v->getNameAsString() +
             "' can carry results across calls; keep state in ctx.create_state() or make it const");
}

}  // namespace kb::analyze
