#include "analyze/rules/library_api.h"

#include <cctype>

#include <llvm/Support/Regex.h>

using namespace clang;
using namespace clang::ast_matchers;

namespace kb::analyze {

std::string libraryOf(llvm::StringRef name, const StaticPolicy& policy) {
  const LibraryPolicy* best = nullptr;
  size_t best_len = 0;
  for (const auto& lib : policy.libraries)
    for (const auto& prefix : lib.prefixes)
      if (name.starts_with(prefix) && prefix.size() > best_len) {
        best = &lib;
        best_len = prefix.size();
      }
  if (best) return best->name;
  auto capital_after = [&](size_t n) {
    return name.size() > n && std::isupper(static_cast<unsigned char>(name[n]));
  };
  if (name.starts_with("cuda") && capital_after(4)) return "cuda-runtime";
  if (name.starts_with("cu") && capital_after(2)) return "cuda-driver";
  return "";
}

void LibraryApiRule::registerMatchers(MatchFinder& finder) {
  finder.addMatcher(declRefExpr(to(functionDecl().bind("fn"))).bind("ref"), this);
}

void LibraryApiRule::check(const MatchFinder::MatchResult& r) {
  const auto* ref = r.Nodes.getNodeAs<DeclRefExpr>("ref");
  const auto* fn = r.Nodes.getNodeAs<FunctionDecl>("fn");
  const SourceManager& sm = *r.SourceManager;
  if (!ref || !fn || !fn->getIdentifier()) return;
  // Library APIs are C functions; kb::Context::cublas() is not one.
  if (!fn->getDeclContext()->getRedeclContext()->isTranslationUnit() && !fn->isExternC()) return;
  if (!ctx().inSolution(ref->getBeginLoc(), sm)) return;
  // Only real library functions (declared by a header); the solution's own
  // functions may be named anything.
  if (ctx().inSolution(fn->getCanonicalDecl()->getLocation(), sm)) return;
  llvm::StringRef name = fn->getName();
  for (const auto& lib : ctx().policy().libraries) {
    bool belongs = false;
    for (const auto& prefix : lib.prefixes) belongs |= name.starts_with(prefix);
    if (!belongs) continue;
    if (libraryOf(name, ctx().policy()) != lib.name) continue;  // a longer prefix owns it
    for (const auto& pattern : lib.allow)
      if (llvm::Regex(pattern).match(name)) return;
    report(ref->getBeginLoc(), sm, "'" + name.str() + "': " + lib.message);
    return;
  }
}

}  // namespace kb::analyze
