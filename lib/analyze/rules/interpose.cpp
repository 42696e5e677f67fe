#include "analyze/rules/interpose.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>

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

namespace {

// The sections the dynamic loader runs (or whose entries it calls) when the
// library is loaded or unloaded: .init_array, .preinit_array, .fini_array,
// .ctors, .dtors and their numbered variants (.init_array.00101), .init,
// .fini.
bool loadTimeSection(llvm::StringRef name) {
  for (const char* s : {".init_array", ".preinit_array", ".fini_array", ".ctors", ".dtors", ".init", ".fini"}) {
    llvm::StringRef prefix(s);
    if (name == prefix || (name.starts_with(prefix) && (name[prefix.size()] == '.' || name[prefix.size()] == '$')))
      return true;
  }
  return false;
}

// The section a declaration is placed in by an attribute
// (__attribute__((section)), [[gnu::section]], __declspec(allocate),
// #pragma clang section, #pragma code_seg/data_seg), or "" when none.
std::optional<std::string> placedSection(const Decl* d) {
  if (const auto* a = d->getAttr<SectionAttr>()) return a->getName().str();
  if (const auto* a = d->getAttr<CodeSegAttr>()) return a->getName().str();
  if (const auto* a = d->getAttr<PragmaClangBSSSectionAttr>()) return a->getName().str();
  if (const auto* a = d->getAttr<PragmaClangDataSectionAttr>()) return a->getName().str();
  if (const auto* a = d->getAttr<PragmaClangRodataSectionAttr>()) return a->getName().str();
  if (const auto* a = d->getAttr<PragmaClangRelroSectionAttr>()) return a->getName().str();
  if (const auto* a = d->getAttr<PragmaClangTextSectionAttr>()) return a->getName().str();
  if (const auto* a = d->getAttr<InitSegAttr>()) return a->getSection().str();
  return std::nullopt;
}

// Assembler text that switches section (.section, .pushsection, .init_array
// written as a directive) can put a pointer in .init_array, which the loader
// calls.
std::optional<std::string> asmSection(llvm::StringRef text) {
  for (const char* directive : {".section", ".pushsection"}) {
    size_t p = text.find(directive);
    if (p == llvm::StringRef::npos) continue;
    llvm::StringRef rest = text.drop_front(p + std::strlen(directive)).ltrim(" \t\"");
    return rest.take_until([](char c) { return c == ',' || c == ';' || c == '\n' || c == ' ' || c == '\t' || c == '"'; }).str();
  }
  for (const char* directive : {".init_array", ".preinit_array", ".fini_array", ".ctors", ".dtors"})
    if (text.contains(directive)) return std::string(directive);
  return std::nullopt;
}

}  // namespace

void InterposeRule::registerMatchers(MatchFinder& finder) {
  finder.addMatcher(functionDecl().bind("fn"), this);
  // Any declaration placed in a section by attribute, and asm that switches
  // section. Inline PTX in device code is not host assembly.
  finder.addMatcher(decl(anyOf(varDecl(), functionDecl())).bind("placed"), this);
  finder.addMatcher(decl(anyOf(hasParent(translationUnitDecl()), hasParent(namespaceDecl()))).bind("top"), this);
  auto device_code = functionDecl(anyOf(hasAttr(attr::CUDAGlobal),
                                        allOf(hasAttr(attr::CUDADevice), unless(hasAttr(attr::CUDAHost)))));
  finder.addMatcher(asmStmt(unless(hasAncestor(device_code))).bind("asm"), this);
  finder.addMatcher(varDecl(hasAttr(attr::AsmLabel)).bind("var"), this);
  finder.addMatcher(varDecl(hasGlobalStorage(), unless(isStaticLocal()), hasInitializer(expr())).bind("dyn"), this);
}

void InterposeRule::check(const MatchFinder::MatchResult& r) {
  const SourceManager& sm = *r.SourceManager;
  if (const auto* d = r.Nodes.getNodeAs<Decl>("placed")) {
    if (d->isImplicit() || !ctx().inSolution(d->getLocation(), sm)) return;
    const auto* named = llvm::cast<NamedDecl>(d);
    if (const auto* alias = d->getAttr<AliasAttr>(); alias && llvm::isa<VarDecl>(d)) {
      report(d->getLocation(), sm, "alias attribute makes '" + named->getNameAsString() + "' stand for '" +
                                       alias->getAliasee().str() + "'");
      return;
    }
    auto section = placedSection(d);
    if (!section) return;
    const std::string what = "'" + named->getNameAsString() + "' ";
    if (loadTimeSection(*section))
      report(d->getLocation(), sm, what + "is placed in section " + *section +
                                       ", whose entries run when the library is loaded or unloaded");
    else
      report(d->getLocation(), sm, what + "is placed in section " + *section +
                                       " by attribute: code or data outside the compiler's own layout");
    return;
  }
  if (const auto* top = r.Nodes.getNodeAs<Decl>("top")) {
    const auto* a = llvm::dyn_cast<FileScopeAsmDecl>(top);
    if (!a) return;
    if (auto section = asmSection(a->getAsmString()->getString()))
      report(a->getAsmLoc(), sm, "file-scope asm switches to section " + *section +
                                     ": it can place code the loader runs (.init_array)");
    return;
  }
  if (const auto* a = r.Nodes.getNodeAs<AsmStmt>("asm")) {
    if (ctx().deviceSide()) return;
    const auto* gcc = llvm::dyn_cast<GCCAsmStmt>(a);
    if (!gcc) return;
    if (auto section = asmSection(gcc->getAsmString()->getString()))
      report(a->getAsmLoc(), sm, "inline asm switches to section " + *section +
                                     ": it can place code the loader runs (.init_array)");
    return;
  }
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
    // A torch extension's registration (policy allow_binding_registry).
    if (ctx().policy().allow_binding_registry && holdsOnlyBindings(v->getType())) return;
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
  if (const auto* ifunc = fn->getAttr<IFuncAttr>()) {
    report(loc, sm, "'" + fn->getNameAsString() + "' is an ifunc: its resolver '" + ifunc->getResolver().str() +
                        "' runs when the library is loaded");
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
