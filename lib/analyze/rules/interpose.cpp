#include "analyze/rules/interpose.h"

#include <algorithm>
#include <cctype>

using namespace clang;
using namespace clang::ast_matchers;

namespace kb::analyze {

bool InterposeRule::apiLikeName(llvm::StringRef name) const {
  const StaticPolicy& p = ctx().policy();
  if (std::find(p.interpose_names.begin(), p.interpose_names.end(), name.str()) != p.interpose_names.end())
    return true;
  for (const auto& prefix : p.interpose_prefixes) {
    if (!name.starts_with(prefix)) continue;
    if (prefix.rfind("__", 0) == 0) return true;
    // cudaEventRecord, cuLaunchKernel, cublasSgemm: the prefix then a capital.
    if (name.size() > prefix.size() && std::isupper(static_cast<unsigned char>(name[prefix.size()])))
      return true;
  }
  return false;
}

void InterposeRule::registerMatchers(MatchFinder& finder) {
  finder.addMatcher(functionDecl().bind("fn"), this);
  finder.addMatcher(varDecl(hasAttr(attr::AsmLabel)).bind("var"), this);
  finder.addMatcher(varDecl(hasGlobalStorage(), unless(isStaticLocal()), hasInitializer(expr())).bind("dyn"), this);
}

void InterposeRule::check(const MatchFinder::MatchResult& r) {
  const SourceManager& sm = *r.SourceManager;
  if (const auto* var = r.Nodes.getNodeAs<VarDecl>("var")) {
    if (!ctx().inSolution(var->getLocation(), sm)) return;
    report(var->getLocation(), sm, "asm label '" + var->getAttr<AsmLabelAttr>()->getLabel().str() +
                                       "' renames a symbol");
    return;
  }
  if (const auto* v = r.Nodes.getNodeAs<VarDecl>("dyn")) {
    // A declaration Clang rejected (a parser limit) is not judged here.
    if (v->isInvalidDecl()) return;
    // A global whose initialiser is not a constant runs code when the
    // library is loaded, before any check of a call.
    if (!ctx().inSolution(v->getLocation(), sm) || v->getDeclContext()->isDependentContext()) return;
    if (v->isThisDeclarationADefinition() == VarDecl::DeclarationOnly || v->hasConstantInitialization()) return;
    report(v->getLocation(), sm, "'" + v->getNameAsString() +
                                     "' is initialised by code that runs when the library is loaded");
    return;
  }
  const auto* fn = r.Nodes.getNodeAs<FunctionDecl>("fn");
  if (!fn || fn->isImplicit() || !ctx().inSolution(fn->getLocation(), sm)) return;
  SourceLocation loc = fn->getLocation();
  if (fn->hasAttr<ConstructorAttr>() || fn->hasAttr<DestructorAttr>()) {
    report(loc, sm, "'" + fn->getNameAsString() + "' runs when the library is loaded or unloaded");
    return;
  }
  if (const auto* alias = fn->getAttr<AliasAttr>()) {
    report(loc, sm, "alias attribute makes '" + fn->getNameAsString() + "' stand for '" +
                        alias->getAliasee().str() + "'");
    return;
  }
  if (const auto* label = fn->getAttr<AsmLabelAttr>()) {
    if (apiLikeName(label->getLabel()) || fn->doesThisDeclarationHaveABody()) {
      report(loc, sm, "asm label '" + label->getLabel().str() + "' renames a symbol");
      return;
    }
  }
  if (!fn->doesThisDeclarationHaveABody()) return;
  bool global = fn->getDeclContext()->getRedeclContext()->isTranslationUnit();
  if (fn->isOverloadedOperator() && global) {
    OverloadedOperatorKind op = fn->getOverloadedOperator();
    if (op == OO_New || op == OO_Delete || op == OO_Array_New || op == OO_Array_Delete) {
      report(loc, sm, "replaces the global operator " + std::string(getOperatorSpelling(op)));
      return;
    }
  }
  // Defining a function that a header outside the solution declares (in any
  // namespace: cudaEventRecord, std::chrono::steady_clock::now) defines that
  // very symbol.
  for (const FunctionDecl* d : fn->redecls()) {
    if (!ctx().inSolution(d->getLocation(), sm)) {
      report(loc, sm, "defines '" + plainQualifiedName(fn) +
                          "', declared by a library header: it would interpose that symbol");
      return;
    }
  }
  if (!fn->getIdentifier() || !(global || fn->isExternC())) return;
  // An unmangled (extern "C") API-like name is as good as a redefinition.
  if ((fn->isExternC() && apiLikeName(fn->getName())) ||
      (global && apiLikeName(fn->getName()) &&
       std::find(ctx().policy().interpose_names.begin(), ctx().policy().interpose_names.end(),
                 fn->getName().str()) != ctx().policy().interpose_names.end())) {
    report(loc, sm, "defines '" + fn->getNameAsString() +
                        "', which would interpose a CUDA, library or libc symbol");
  }
}

}  // namespace kb::analyze
