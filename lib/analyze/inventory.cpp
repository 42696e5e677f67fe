#include "analyze/inventory.h"

#include <clang/AST/ExprCXX.h>
#include <clang/Lex/Lexer.h>

#include "analyze/rules/library_api.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace kb::analyze {
namespace {

std::string text(const Expr* e, const MatchFinder::MatchResult& r) {
  if (!e || llvm::isa<CXXDefaultArgExpr>(e)) return "";
  CharSourceRange range = CharSourceRange::getTokenRange(e->getSourceRange());
  range = Lexer::makeFileCharRange(range, *r.SourceManager, r.Context->getLangOpts());
  if (range.isInvalid()) return "";
  return Lexer::getSourceText(range, *r.SourceManager, r.Context->getLangOpts()).str();
}

}  // namespace

void InventoryCollector::registerMatchers(MatchFinder& finder) {
  finder.addMatcher(functionDecl(hasAttr(attr::CUDAGlobal), isDefinition()).bind("kernel"), this);
  finder.addMatcher(cudaKernelCallExpr().bind("launch"), this);
  finder.addMatcher(callExpr(callee(functionDecl().bind("callee"))).bind("call"), this);
}

void InventoryCollector::run(const MatchFinder::MatchResult& r) {
  const SourceManager& sm = *r.SourceManager;
  auto where = [&](SourceLocation loc, std::string* file, unsigned* line, unsigned* col) {
    *file = ctx_.solutionFile(loc, sm);
    SourceLocation f = sm.getFileLoc(loc);
    *line = sm.getSpellingLineNumber(f);
    if (col) *col = sm.getSpellingColumnNumber(f);
    return !file->empty();
  };
  if (const auto* k = r.Nodes.getNodeAs<FunctionDecl>("kernel")) {
    if (k->isTemplateInstantiation()) return;
    KernelInfo info;
    info.name = k->getNameAsString();
    info.is_template = k->getDescribedFunctionTemplate() != nullptr;
    if (where(k->getLocation(), &info.file, &info.line, nullptr))
      ctx_.inventory().kernels.push_back(info);
  } else if (const auto* l = r.Nodes.getNodeAs<CUDAKernelCallExpr>("launch")) {
    if (ctx_.deviceSide()) return;
    LaunchSite site;
    if (!where(l->getBeginLoc(), &site.file, &site.line, &site.column)) return;
    site.kernel = text(l->getCallee(), r);
    if (const CallExpr* c = l->getConfig()) {
      if (c->getNumArgs() > 0) site.grid = text(c->getArg(0), r);
      if (c->getNumArgs() > 1) site.block = text(c->getArg(1), r);
      if (c->getNumArgs() > 2) site.shared_mem = text(c->getArg(2), r);
      if (c->getNumArgs() > 3) site.stream = text(c->getArg(3), r);
    }
    ctx_.inventory().launches.push_back(site);
  } else if (const auto* call = r.Nodes.getNodeAs<CallExpr>("call")) {
    const auto* fn = r.Nodes.getNodeAs<FunctionDecl>("callee");
    if (ctx_.deviceSide() || llvm::isa<CUDAKernelCallExpr>(call) || !fn->getIdentifier()) return;
    if (ctx_.inSolution(fn->getCanonicalDecl()->getLocation(), sm)) return;
    if (fn->getName().starts_with("__cuda")) return;  // <<<>>> plumbing
    LibraryCall lc;
    const bool c_api = fn->getDeclContext()->getRedeclContext()->isTranslationUnit() || fn->isExternC();
    if (c_api) lc.library = libraryOf(fn->getName(), ctx_.policy());
    if (lc.library.empty()) {
      std::string q = plainQualifiedName(fn);
      if (q.rfind("cub::", 0) == 0) lc.library = "cub";
      else if (q.rfind("thrust::", 0) == 0) lc.library = "thrust";
      else return;
    }
    lc.function = fn->getNameAsString();
    if (where(call->getBeginLoc(), &lc.file, &lc.line, &lc.column))
      ctx_.inventory().library_calls.push_back(lc);
  }
}

}  // namespace kb::analyze
