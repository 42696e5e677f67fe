#include "analyze/rules/extern_symbol.h"

#include <set>

#include <clang/AST/Mangle.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>
#include <llvm/Support/Regex.h>

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

class PragmaCallbacks : public PPCallbacks {
 public:
  PragmaCallbacks(ExternSymbolRule& rule, Preprocessor& pp) : rule_(rule), pp_(pp) {}
  void PragmaDirective(SourceLocation loc, PragmaIntroducerKind) override {
    rule_.onPragma(loc, pp_.getSourceManager());
  }

 private:
  ExternSymbolRule& rule_;
  Preprocessor& pp_;
};

}  // namespace

void ExternSymbolRule::registerPPCallbacks(Preprocessor& pp) {
  pp.addPPCallbacks(std::make_unique<PragmaCallbacks>(*this, pp));
}

// `#pragma redefine_extname old new` gives every later (and earlier)
// declaration of `old`, a header's included, the symbol `new`: a header's
// own inline code (atof calling strtod) then calls it too, where no
// reference in the solution names it. Refused wherever it is written.
void ExternSymbolRule::onPragma(SourceLocation loc, const SourceManager& sm) {
  if (!ctx().inSolution(loc, sm)) return;
  bool invalid = false;
  const char* text = sm.getCharacterData(sm.getSpellingLoc(loc), &invalid);
  if (invalid || !text) return;
  std::string line;
  for (int i = 0; i < 256 && text[i] && text[i] != '\n'; ++i) line += text[i];
  static const llvm::Regex re("^(#[[:space:]]*pragma|_Pragma[[:space:]]*\\([[:space:]]*L?\"|__pragma[[:space:]]*\\()"
                              "[[:space:]]*redefine_extname([^[:alnum:]_]|$)");
  if (!re.match(line)) return;
  report(loc, sm, "#pragma redefine_extname binds a name to another symbol, also in the headers' own code "
                  "(atof calling strtod): what the rules judged under one name is a call of another");
}

void ExternSymbolRule::registerMatchers(MatchFinder& finder) {
  finder.addMatcher(functionDecl().bind("fn"), this);
  finder.addMatcher(varDecl(hasExternalFormalLinkage()).bind("var"), this);
  finder.addMatcher(
      declRefExpr(to(declaratorDecl(anyOf(functionDecl(), varDecl()), hasAttr(attr::AsmLabel)).bind("label_decl")))
          .bind("label_ref"),
      this);
}

// An asm label the solution wrote (`extern "C" int puts(const char*)
// __asm__("system");`, or `#pragma redefine_extname puts system` before
// <cstdio>, which labels the header's own declaration) binds a name an
// allowed header declares to another symbol: every rule that judges the
// name is bypassed. glibc's own labels (__REDIRECT) are the header's. The
// symbol must then be defined in the solution, like any other.
bool ExternSymbolRule::checkLabel(const MatchFinder::MatchResult& r) {
  const auto* ref = r.Nodes.getNodeAs<DeclRefExpr>("label_ref");
  if (!ref) return false;
  const SourceManager& sm = *r.SourceManager;
  const auto* d = r.Nodes.getNodeAs<DeclaratorDecl>("label_decl");
  if (!ctx().inSolution(ref->getBeginLoc(), sm) || !d->getIdentifier()) return true;
  const auto* label = d->getAttr<AsmLabelAttr>();
  bool written_here = ctx().inSolution(label->getLocation(), sm);
  for (const Decl* rd : d->redecls())
    if (const auto* a = rd->getAttr<AsmLabelAttr>(); a && !a->isInherited() && ctx().inSolution(rd->getLocation(), sm))
      written_here = true;
  std::string symbol = label->getLabel().str();
  if (!symbol.empty() && symbol[0] == '\01') symbol.erase(0, 1);
  if (!written_here || symbol.empty() || symbol == d->getName()) return true;
  auto& uses = ctx().symbols().referenced_undefined;
  if (uses.count(symbol)) return true;
  SymbolFacts::Use use;
  use.display = d->getNameAsString();
  use.relabelled = true;
  SourceLocation at = ctx().inSolution(label->getLocation(), sm) ? label->getLocation() : ref->getBeginLoc();
  use.file = ctx().solutionFile(at, sm);
  SourceLocation loc = sm.getFileLoc(at);
  use.line = sm.getSpellingLineNumber(loc);
  use.column = sm.getSpellingColumnNumber(loc);
  uses[symbol] = use;
  return true;
}

void ExternSymbolRule::check(const MatchFinder::MatchResult& r) {
  if (checkLabel(r)) return;
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
  if (!decl || decl->isInvalidDecl()) return;
  if (!ctx().inSolution(decl->getLocation(), sm)) return;
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
      finding.message = use.relabelled
                            ? "'" + use.display + "' is bound to the symbol " + mangled +
                                  " by an asm label or #pragma redefine_extname written here, and " + mangled +
                                  " is defined nowhere in the solution: a call of it reaches a symbol the rules "
                                  "judged under another name"
                            : "'" + use.display + "' (symbol " + mangled +
                                  ") is declared here, used, and defined nowhere in the solution; symbols "
                                  "must come from the solution or an allowed header";
      findings.push_back(std::move(finding));
    }
  }
}

}  // namespace kb::analyze
