#include "analyze/rules/interpose.h"

#include <algorithm>
#include <cctype>

using namespace clang;
using namespace clang::ast_matchers;

namespace kb::analyze {

bool InterposeRule::apiLikeName(llvm::StringRef name) const {
  const Policy& p = ctx().policy();
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
}

void InterposeRule::check(const MatchFinder::MatchResult& r) {
  const SourceManager& sm = *r.SourceManager;
  if (const auto* var = r.Nodes.getNodeAs<VarDecl>("var")) {
    if (!ctx().inSolution(var->getLocation(), sm)) return;
    report(var->getLocation(), sm, "asm label '" + var->getAttr<AsmLabelAttr>()->getLabel().str() +
                                       "' renames a symbol");
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
  if (!fn->getIdentifier() || !(global || fn->isExternC())) return;
  // Redefining a function that a library header declares is the same
  // symbol; an unmangled (extern "C") API-like name is as good.
  bool redefines_header_decl = false;
  for (const FunctionDecl* d : fn->redecls())
    if (!ctx().inSolution(d->getLocation(), sm)) redefines_header_decl = true;
  if (redefines_header_decl || (fn->isExternC() && apiLikeName(fn->getName())) ||
      (global && apiLikeName(fn->getName()) &&
       std::find(ctx().policy().interpose_names.begin(), ctx().policy().interpose_names.end(),
                 fn->getName().str()) != ctx().policy().interpose_names.end())) {
    report(loc, sm, "defines '" + fn->getNameAsString() +
                        "', which would interpose a CUDA, library or libc symbol");
  }
}

}  // namespace kb::analyze
