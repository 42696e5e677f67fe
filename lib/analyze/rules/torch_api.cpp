#include "analyze/rules/torch_api.h"

#include <algorithm>

#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <llvm/Demangle/Demangle.h>
#include <llvm/Support/Regex.h>

using namespace clang;
using namespace clang::ast_matchers;

namespace kb::analyze {

bool TorchApiRule::forbiddenName(llvm::StringRef name) const {
  const auto& ns = ctx().policy().forbidden_namespaces;
  return std::find(ns.begin(), ns.end(), name.str()) != ns.end();
}

bool TorchApiRule::forbidden(const Decl* decl) const {
  // The outermost named namespace decides.
  const NamespaceDecl* outer = nullptr;
  for (const DeclContext* dc = decl->getDeclContext(); dc; dc = dc->getParent())
    if (const auto* ns = llvm::dyn_cast<NamespaceDecl>(dc))
      if (!ns->isAnonymousNamespace()) outer = ns;
  if (const auto* ns = llvm::dyn_cast<NamespaceDecl>(decl))
    if (llvm::isa<TranslationUnitDecl>(ns->getDeclContext()->getRedeclContext())) outer = ns;
  return outer && forbiddenName(outer->getName());
}

bool TorchApiRule::demanglesIntoForbidden(llvm::StringRef symbol, std::string* demangled) const {
  symbol.consume_front("\01");
  if (!symbol.starts_with("_Z")) return false;
  *demangled = llvm::demangle(symbol.str());
  for (const auto& ns : ctx().policy().forbidden_namespaces)
    if (llvm::StringRef(*demangled).starts_with(ns + "::")) return true;
  return false;
}

std::string TorchApiRule::computeCall(const FunctionDecl* fn) const {
  const auto& spaces = ctx().policy().torch_compute_namespaces;
  if (spaces.empty() || !fn) return "";
  const NamespaceDecl* outer = nullptr;
  for (const DeclContext* dc = fn->getDeclContext(); dc; dc = dc->getParent())
    if (const auto* ns = llvm::dyn_cast<NamespaceDecl>(dc))
      if (!ns->isAnonymousNamespace()) outer = ns;
  if (!outer || std::find(spaces.begin(), spaces.end(), outer->getName().str()) == spaces.end()) return "";
  // Making, copying, moving and destroying a handle is no compute.
  if (llvm::isa<CXXConstructorDecl>(fn) || llvm::isa<CXXDestructorDecl>(fn) || llvm::isa<CXXConversionDecl>(fn))
    return "";
  if (const auto* m = llvm::dyn_cast<CXXMethodDecl>(fn))
    if (m->isCopyAssignmentOperator() || m->isMoveAssignmentOperator()) return "";
  const std::string name = plainQualifiedName(fn);
  for (const auto& re : ctx().policy().torch_allow)
    if (llvm::Regex(re).match(name)) return "";
  return name;
}

void TorchApiRule::registerMatchers(MatchFinder& finder) {
  if (!ctx().policy().torch_compute_namespaces.empty())
    finder.addMatcher(callExpr(callee(functionDecl().bind("callee"))).bind("call"), this);
  finder.addMatcher(namespaceDecl(hasParent(translationUnitDecl())).bind("ns"), this);
  finder.addMatcher(usingDirectiveDecl().bind("using"), this);
  finder.addMatcher(namespaceAliasDecl().bind("alias"), this);
  finder.addMatcher(declRefExpr().bind("ref"), this);
  finder.addMatcher(memberExpr().bind("member"), this);
  finder.addMatcher(cxxConstructExpr().bind("ctor"), this);
  finder.addMatcher(typeLoc(loc(qualType(hasDeclaration(namedDecl().bind("type_decl"))))).bind("type"), this);
  finder.addMatcher(functionDecl().bind("fn"), this);
}

void TorchApiRule::check(const MatchFinder::MatchResult& r) {
  const SourceManager& sm = *r.SourceManager;
  auto here = [&](SourceLocation loc) { return ctx().inSolution(loc, sm); };
  if (const auto* call = r.Nodes.getNodeAs<CallExpr>("call")) {
    std::string name = computeCall(r.Nodes.getNodeAs<FunctionDecl>("callee"));
    if (!name.empty() && here(call->getBeginLoc()))
      report(call->getBeginLoc(), sm, "calls '" + name + "': torch compute (the policy allows torch in an "
                                      "extension for allocation, shapes, views and streams only)");
  } else if (const auto* ns = r.Nodes.getNodeAs<NamespaceDecl>("ns")) {
    if (here(ns->getLocation()) && forbiddenName(ns->getName()))
      report(ns->getLocation(), sm, "declares namespace '" + ns->getNameAsString() +
                                        "': a solution may not reach torch, ATen or c10");
  } else if (const auto* u = r.Nodes.getNodeAs<UsingDirectiveDecl>("using")) {
    if (here(u->getLocation()) && u->getNominatedNamespace() && forbidden(u->getNominatedNamespace()))
      report(u->getLocation(), sm, "'using namespace " + u->getNominatedNamespace()->getNameAsString() +
                                       "' reaches into torch");
  } else if (const auto* a = r.Nodes.getNodeAs<NamespaceAliasDecl>("alias")) {
    if (here(a->getLocation()) && a->getNamespace() && forbidden(a->getNamespace()))
      report(a->getLocation(), sm, "namespace alias of '" + a->getNamespace()->getNameAsString() + "'");
  } else if (const auto* e = r.Nodes.getNodeAs<DeclRefExpr>("ref")) {
    if (here(e->getBeginLoc()) && forbidden(e->getDecl()))
      report(e->getBeginLoc(), sm, "uses '" + plainQualifiedName(e->getDecl()) + "' from torch");
  } else if (const auto* e = r.Nodes.getNodeAs<MemberExpr>("member")) {
    if (here(e->getMemberLoc()) && forbidden(e->getMemberDecl()))
      report(e->getMemberLoc(), sm, "uses '" + plainQualifiedName(e->getMemberDecl()) + "' from torch");
  } else if (const auto* e = r.Nodes.getNodeAs<CXXConstructExpr>("ctor")) {
    if (here(e->getBeginLoc()) && forbidden(e->getConstructor()))
      report(e->getBeginLoc(), sm,
             "constructs '" + plainQualifiedName(e->getConstructor()->getParent()) + "' from torch");
  } else if (const auto* t = r.Nodes.getNodeAs<TypeLoc>("type")) {
    const auto* d = r.Nodes.getNodeAs<NamedDecl>("type_decl");
    if (here(t->getBeginLoc()) && forbidden(d))
      report(t->getBeginLoc(), sm, "uses type '" + plainQualifiedName(d) + "' from torch");
  } else if (const auto* fn = r.Nodes.getNodeAs<FunctionDecl>("fn")) {
    // A mangled torch symbol declared by hand: extern "C" _ZN2at..., or an
    // asm label naming one.
    if (!here(fn->getLocation())) return;
    std::string demangled;
    if (fn->getIdentifier() == nullptr && !fn->hasAttr<AsmLabelAttr>()) return;
    llvm::StringRef symbol = fn->getIdentifier() ? fn->getName() : llvm::StringRef();
    if (const auto* label = fn->getAttr<AsmLabelAttr>()) symbol = label->getLabel();
    if (demanglesIntoForbidden(symbol, &demangled))
      report(fn->getLocation(), sm, "declares the mangled symbol of '" + demangled + "' from torch");
  }
}

}  // namespace kb::analyze
