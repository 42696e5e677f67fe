#include "analyze/rules/device_library.h"

#include <clang/AST/ExprCXX.h>
#include <llvm/Support/Regex.h>

using namespace clang;
using namespace clang::ast_matchers;

namespace kb::analyze {

bool DeviceLibraryRule::denied(const NamedDecl* decl, std::string* name) const {
  if (!decl) return false;
  // Cheap filter first: only thrust and cub are in question.
  const NamespaceDecl* outer = nullptr;
  for (const DeclContext* dc = decl->getDeclContext(); dc; dc = dc->getParent())
    if (const auto* ns = llvm::dyn_cast<NamespaceDecl>(dc)) outer = ns;
  if (!outer || (outer->getName() != "thrust" && outer->getName() != "cub")) return false;
  *name = plainQualifiedName(decl);
  for (const auto& pattern : ctx().policy().device_library_deny)
    if (llvm::Regex(pattern).match(*name)) return true;
  return false;
}

void DeviceLibraryRule::registerMatchers(MatchFinder& finder) {
  finder.addMatcher(declRefExpr().bind("ref"), this);
  finder.addMatcher(cxxConstructExpr().bind("ctor"), this);
  finder.addMatcher(typeLoc(loc(qualType(hasDeclaration(namedDecl().bind("type_decl"))))).bind("type"), this);
}

void DeviceLibraryRule::check(const MatchFinder::MatchResult& r) {
  const SourceManager& sm = *r.SourceManager;
  std::string name;
  SourceLocation loc;
  if (const auto* e = r.Nodes.getNodeAs<DeclRefExpr>("ref")) {
    loc = e->getBeginLoc();
    if (!ctx().inSolution(loc, sm) || !denied(e->getDecl(), &name)) return;
  } else if (const auto* e = r.Nodes.getNodeAs<CXXConstructExpr>("ctor")) {
    loc = e->getBeginLoc();
    if (!ctx().inSolution(loc, sm) || !denied(e->getConstructor()->getParent(), &name)) return;
  } else if (const auto* t = r.Nodes.getNodeAs<TypeLoc>("type")) {
    loc = t->getBeginLoc();
    if (!ctx().inSolution(loc, sm) || !denied(r.Nodes.getNodeAs<NamedDecl>("type_decl"), &name)) return;
  } else {
    return;
  }
  report(loc, sm, "'" + name + "' is a device-wide library algorithm; write the kernel (CUB block/warp primitives are allowed)");
}

}  // namespace kb::analyze
