#include "analyze/rules/banned_api.h"

#include <algorithm>

#include <clang/AST/ExprCXX.h>
#include <clang/AST/StmtOpenMP.h>

using namespace clang;
using namespace clang::ast_matchers;

namespace kb::analyze {
namespace {

std::vector<llvm::StringRef> refs(const std::vector<std::string>& v) {
  return std::vector<llvm::StringRef>(v.begin(), v.end());
}

std::string stripGlobal(const std::string& s) { return s.rfind("::", 0) == 0 ? s.substr(2) : s; }

}  // namespace

BannedApiRule::BannedApiRule(std::string id, CheckContext& ctx, BannedApi api)
    : Rule(std::move(id), ctx), api_(std::move(api)) {
  for (const auto& f : api_.functions) plain_functions_.push_back(stripGlobal(f));
}

void BannedApiRule::registerMatchers(MatchFinder& finder) {
  if (!api_.functions.empty()) {
    finder.addMatcher(declRefExpr(to(functionDecl(hasAnyName(refs(api_.functions))))).bind("fn"), this);
    // Calls inside templates that are never instantiated stay unresolved.
    finder.addMatcher(unresolvedLookupExpr().bind("unresolved"), this);
  }
  if (!api_.classes.empty())
    finder.addMatcher(
        cxxConstructExpr(hasDeclaration(cxxConstructorDecl(ofClass(cxxRecordDecl(hasAnyName(refs(api_.classes)))))))
            .bind("ctor"),
        this);
  if (!api_.variables.empty())
    finder.addMatcher(declRefExpr(to(varDecl(hasAnyName(refs(api_.variables))))).bind("var"), this);
}

void BannedApiRule::check(const MatchFinder::MatchResult& r) {
  const SourceManager& sm = *r.SourceManager;
  if (const auto* e = r.Nodes.getNodeAs<DeclRefExpr>("fn")) {
    report(e->getBeginLoc(), sm, "'" + plainQualifiedName(e->getDecl()) + "' " + api_.message);
  } else if (const auto* e = r.Nodes.getNodeAs<UnresolvedLookupExpr>("unresolved")) {
    for (const NamedDecl* d : e->decls()) {
      const NamedDecl* target = d->getUnderlyingDecl();
      std::string q = plainQualifiedName(target);
      if (std::find(plain_functions_.begin(), plain_functions_.end(), q) != plain_functions_.end()) {
        report(e->getBeginLoc(), sm, "'" + q + "' " + api_.message);
        break;
      }
    }
  } else if (const auto* e = r.Nodes.getNodeAs<CXXConstructExpr>("ctor")) {
    report(e->getBeginLoc(), sm,
           "'" + plainQualifiedName(e->getConstructor()->getParent()) + "' " + api_.message);
  } else if (const auto* e = r.Nodes.getNodeAs<DeclRefExpr>("var")) {
    report(e->getBeginLoc(), sm, "'" + plainQualifiedName(e->getDecl()) + "' " + api_.message);
  }
}

void HostThreadRule::registerMatchers(MatchFinder& finder) {
  BannedApiRule::registerMatchers(finder);
  finder.addMatcher(ompExecutableDirective().bind("omp"), this);
}

void HostThreadRule::check(const MatchFinder::MatchResult& r) {
  if (const auto* d = r.Nodes.getNodeAs<OMPExecutableDirective>("omp")) {
    report(d->getBeginLoc(), *r.SourceManager, "OpenMP directive " + api_.message);
    return;
  }
  BannedApiRule::check(r);
}

void RawSyscallRule::registerMatchers(MatchFinder& finder) {
  BannedApiRule::registerMatchers(finder);
  // Inline PTX inside __global__ or __device__-only code (lambdas in it
  // included) is allowed; any other asm on the host side is host assembly.
  auto device_code = functionDecl(anyOf(hasAttr(attr::CUDAGlobal),
                                        allOf(hasAttr(attr::CUDADevice), unless(hasAttr(attr::CUDAHost)))));
  finder.addMatcher(asmStmt(unless(hasAncestor(device_code))).bind("asm"), this);
  finder.addMatcher(decl(hasParent(translationUnitDecl())).bind("top_decl"), this);
}

void RawSyscallRule::check(const MatchFinder::MatchResult& r) {
  if (const auto* a = r.Nodes.getNodeAs<AsmStmt>("asm")) {
    // On the host-side parse, code under __CUDA_ARCH__ is gone, so asm left
    // in a host (or __host__ __device__) function is host assembly.
    if (ctx().deviceSide()) return;
    report(a->getAsmLoc(), *r.SourceManager, "inline assembly in host code can make system calls");
    return;
  }
  if (const auto* top = r.Nodes.getNodeAs<Decl>("top_decl")) {
    const auto* a = llvm::dyn_cast<FileScopeAsmDecl>(top);
    if (!a) return;
    report(a->getAsmLoc(), *r.SourceManager,
           "file-scope asm can define symbols, make system calls or embed files");
    return;
  }
  BannedApiRule::check(r);
}

}  // namespace kb::analyze
