#include "analyze/rules/banned_api.h"

#include <algorithm>
#include <cstring>

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

// "/usr/include/x86_64-linux-gnu/sys/uio.h" -> "<sys/uio.h>".
std::string shortHeader(const std::string& path) {
  for (const char* dir : {"/include/x86_64-linux-gnu/", "/include/aarch64-linux-gnu/", "/include/"}) {
    size_t p = path.rfind(dir);
    if (p != std::string::npos) return "<" + path.substr(p + std::strlen(dir)) + ">";
  }
  return path;
}

}  // namespace

BannedApiRule::BannedApiRule(std::string id, CheckContext& ctx, BannedApi api)
    : Rule(std::move(id), ctx), api_(std::move(api)) {
  for (const auto& f : api_.functions) plain_functions_.push_back(stripGlobal(f));
  for (const auto& re : api_.name_patterns) name_patterns_.push_back(std::make_shared<llvm::Regex>(re));
  for (const auto& re : api_.strings) string_patterns_.push_back(std::make_shared<llvm::Regex>(re));
  for (const auto& re : api_.headers) header_patterns_.push_back(std::make_shared<llvm::Regex>(re));
}

std::string BannedApiRule::familyHeader(const FunctionDecl* fn, const SourceManager& sm) {
  if (!fn->getIdentifier()) return "";
  const std::string name = fn->getName().str();
  const auto& except = api_.headers_except;
  if (std::find(except.begin(), except.end(), name) != except.end()) return "";
  // A function a list names (fork in <unistd.h> is process's, mprotect in
  // <sys/mman.h> memory-protect's, open file-io's own) is judged by that list.
  const std::string q = plainQualifiedName(fn);
  for (const auto& [id, api] : ctx().policy().banned) {
    for (const auto& f : api.functions)
      if (stripGlobal(f) == q) return "";
  }
  for (const FunctionDecl* d : fn->redecls()) {
    SourceLocation loc = sm.getExpansionLoc(d->getLocation());
    // glibc declares many functions in internal headers (bits/fcntl-linux.h,
    // bits/uio-ext.h, bits/mman-shared.h) that only the public one includes:
    // walk up from a bits/ header to the header that included it.
    for (int depth = 0; loc.isValid() && depth < 16; ++depth) {
      FileID fid = sm.getFileID(loc);
      auto entry = sm.getFileEntryRefForID(fid);
      if (!entry) break;
      const std::string path = entry->getName().str();
      if (ctx().pathInSolution(path)) break;
      for (const auto& re : header_patterns_)
        if (re->match(path)) return path;
      if (path.find("/bits/") == std::string::npos) break;
      loc = sm.getIncludeLoc(fid);
    }
  }
  return "";
}

bool BannedApiRule::matchesPattern(const NamedDecl* d, std::string* shown) const {
  if (name_patterns_.empty() || !d) return false;
  std::vector<std::string> names;
  if (d->getIdentifier()) names.push_back(d->getName().str());
  if (const auto* label = d->getAttr<AsmLabelAttr>()) names.push_back(label->getLabel().str());
  for (const auto& n : names)
    for (const auto& re : name_patterns_)
      if (re->match(n)) {
        *shown = n;
        return true;
      }
  return false;
}

void BannedApiRule::registerMatchers(MatchFinder& finder) {
  if (!api_.functions.empty()) {
    finder.addMatcher(declRefExpr(to(functionDecl(hasAnyName(refs(api_.functions))))).bind("fn"), this);
    // Calls inside templates that are never instantiated stay unresolved.
    finder.addMatcher(unresolvedLookupExpr().bind("unresolved"), this);
  }
  // A declaration bound by an asm label to a banned symbol under another
  // name (`extern "C" int puts(const char*) __asm__("system");`, or
  // `#pragma redefine_extname puts system`): judged by the symbol.
  if (!api_.functions.empty() || !api_.variables.empty())
    finder.addMatcher(
        declRefExpr(to(declaratorDecl(anyOf(functionDecl(), varDecl()), hasAttr(attr::AsmLabel)).bind("label_decl")))
            .bind("label_ref"),
        this);
  if (!api_.classes.empty())
    finder.addMatcher(
        cxxConstructExpr(hasDeclaration(cxxConstructorDecl(ofClass(cxxRecordDecl(hasAnyName(refs(api_.classes)))))))
            .bind("ctor"),
        this);
  if (!api_.variables.empty())
    finder.addMatcher(declRefExpr(to(varDecl(hasAnyName(refs(api_.variables))))).bind("var"), this);
  if (!name_patterns_.empty()) {
    finder.addMatcher(declRefExpr(to(decl(anyOf(functionDecl(), varDecl())).bind("named"))).bind("pattern"), this);
    // Declaring one under another name: `extern "C" char rd[] __asm__("_r_debug");`.
    finder.addMatcher(declaratorDecl(hasAttr(attr::AsmLabel)).bind("labelled"), this);
  }
  if (!header_patterns_.empty())
    finder.addMatcher(declRefExpr(to(functionDecl().bind("family_fn"))).bind("family"), this);
  if (!api_.types.empty()) {
    auto banned_record = recordDecl(hasAnyName(refs(api_.types)));
    finder.addMatcher(typeLoc(loc(qualType(hasDeclaration(banned_record)))).bind("type"), this);
    // `auto* lm = ...; lm->l_next`: no type written, a member read.
    // (Checked in check(): the parent map covers only the solution's decls.)
    finder.addMatcher(memberExpr(member(fieldDecl())).bind("member"), this);
  }
  if (!string_patterns_.empty()) finder.addMatcher(stringLiteral().bind("string"), this);
}

void BannedApiRule::check(const MatchFinder::MatchResult& r) {
  const SourceManager& sm = *r.SourceManager;
  if (const auto* e = r.Nodes.getNodeAs<DeclRefExpr>("fn")) {
    // The solution's own function that happens to share the name (a
    // `__device__ float read(cudaSurfaceObject_t, int, int)` overload) is not
    // the library's; defining a library name is interpose's business.
    if (const auto* fd = llvm::dyn_cast<FunctionDecl>(e->getDecl()))
      if (const FunctionDecl* def = fd->getDefinition(); def && ctx().inSolution(def->getLocation(), sm))
        return;
    report(e->getBeginLoc(), sm, "'" + plainQualifiedName(e->getDecl()) + "' " + api_.message);
  } else if (const auto* e = r.Nodes.getNodeAs<DeclRefExpr>("label_ref")) {
    const auto* d = r.Nodes.getNodeAs<DeclaratorDecl>("label_decl");
    if (!ctx().inSolution(e->getBeginLoc(), sm)) return;
    std::string symbol = d->getAttr<AsmLabelAttr>()->getLabel().str();
    if (!symbol.empty() && symbol[0] == '\01') symbol.erase(0, 1);
    if (d->getIdentifier() && symbol == d->getName()) return;  // named as itself: the name rules judge it
    const auto& list = llvm::isa<FunctionDecl>(d) ? api_.functions : api_.variables;
    for (const auto& q : list) {
      if (q.rfind("::", 0) != 0 || q.substr(2) != symbol) continue;
      report(e->getBeginLoc(), sm, "'" + plainQualifiedName(d) + "' is bound to the symbol '" + symbol +
                                       "' by an asm label or #pragma redefine_extname, which " + api_.message);
      return;
    }
  } else if (const auto* e = r.Nodes.getNodeAs<DeclRefExpr>("family")) {
    const auto* fd = r.Nodes.getNodeAs<FunctionDecl>("family_fn");
    if (const FunctionDecl* def = fd->getDefinition(); def && ctx().inSolution(def->getLocation(), sm)) return;
    if (!ctx().inSolution(e->getBeginLoc(), sm)) return;
    std::string header = familyHeader(fd, sm);
    if (header.empty()) return;
    report(e->getBeginLoc(), sm, "'" + plainQualifiedName(fd) + "' (from " + shortHeader(header) + ") " +
                                     api_.message);
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
  } else if (const auto* e = r.Nodes.getNodeAs<DeclRefExpr>("pattern")) {
    std::string shown;
    if (matchesPattern(r.Nodes.getNodeAs<NamedDecl>("named"), &shown))
      report(e->getBeginLoc(), sm, "'" + shown + "' " + api_.message);
  } else if (const auto* d = r.Nodes.getNodeAs<DeclaratorDecl>("labelled")) {
    std::string shown;
    if (matchesPattern(d, &shown)) report(d->getLocation(), sm, "'" + shown + "' " + api_.message);
  } else if (const auto* t = r.Nodes.getNodeAs<TypeLoc>("type")) {
    report(t->getBeginLoc(), sm, "'" + t->getType().getUnqualifiedType().getAsString() + "' " + api_.message);
  } else if (const auto* m = r.Nodes.getNodeAs<MemberExpr>("member")) {
    const auto* field = llvm::cast<FieldDecl>(m->getMemberDecl());
    const std::string record = plainQualifiedName(field->getParent());
    if (std::none_of(api_.types.begin(), api_.types.end(),
                     [&](const std::string& t) { return stripGlobal(t) == record; }))
      return;
    report(m->getMemberLoc(), sm, "'" + plainQualifiedName(field->getParent()) + "::" +
                                      field->getNameAsString() + "' " + api_.message);
  } else if (const auto* lit = r.Nodes.getNodeAs<StringLiteral>("string")) {
    if (lit->getCharByteWidth() != 1) return;
    llvm::StringRef text = lit->getString();
    for (const auto& re : string_patterns_)
      if (re->match(text)) {
        report(lit->getBeginLoc(), sm, "string \"" + text.str() + "\" " + api_.message);
        return;
      }
  }
}

namespace {

bool isCtxStreamCall(const Expr* e) {
  const auto* call = llvm::dyn_cast<CXXMemberCallExpr>(e);
  if (!call) return false;
  const CXXMethodDecl* m = call->getMethodDecl();
  return m && m->getName() == "stream" && plainQualifiedName(m->getParent()) == "kb::Context";
}

// Whether `var` is assigned, incremented or has its address taken in `body`.
bool modified(const VarDecl* var, const Stmt* body, ASTContext& ast) {
  auto ref = declRefExpr(to(varDecl(equalsNode(var))));
  auto hits = match(findAll(stmt(anyOf(binaryOperator(isAssignmentOperator(), hasLHS(ignoringParenImpCasts(ref))),
                                        unaryOperator(hasOperatorName("&"), hasUnaryOperand(ignoringParenImpCasts(ref))),
                                        unaryOperator(hasAnyOperatorName("++", "--"), hasUnaryOperand(ignoringParenImpCasts(ref)))))
                                .bind("m")),
                    *body, ast);
  return !hits.empty();
}

// Whether a stream argument provably is ctx.stream().
bool isCtxStream(const Expr* e, ASTContext& ast, int depth = 0) {
  if (!e || depth > 8) return false;
  while (true) {
    e = e->IgnoreParenImpCasts();
    if (const auto* c = llvm::dyn_cast<ExplicitCastExpr>(e)) {
      e = c->getSubExpr();
      continue;
    }
    break;
  }
  if (isCtxStreamCall(e)) return true;
  const auto* ref = llvm::dyn_cast<DeclRefExpr>(e);
  const auto* var = ref ? llvm::dyn_cast<VarDecl>(ref->getDecl()) : nullptr;
  if (!var || !var->hasLocalStorage() || llvm::isa<ParmVarDecl>(var) || !var->getInit()) return false;
  const auto* fn = llvm::dyn_cast<FunctionDecl>(var->getDeclContext());
  if (!fn || !fn->getBody() || modified(var, fn->getBody(), ast)) return false;
  return isCtxStream(var->getInit(), ast, depth + 1);
}

bool isStreamParam(QualType t) {
  t = t.getCanonicalType();
  const auto* p = t->getAs<PointerType>();
  const auto* rec = p ? p->getPointeeType()->getAsRecordDecl() : nullptr;
  return rec && rec->getName() == "CUstream_st";
}

}  // namespace

void StreamCreateRule::registerMatchers(MatchFinder& finder) {
  BannedApiRule::registerMatchers(finder);
  const auto& fns = ctx().policy().ctx_stream_functions;
  if (!fns.empty())
    finder.addMatcher(callExpr(callee(functionDecl(hasAnyName(refs(fns))).bind("graph_fn"))).bind("graph_call"),
                      this);
}

void StreamCreateRule::check(const MatchFinder::MatchResult& r) {
  const auto* call = r.Nodes.getNodeAs<CallExpr>("graph_call");
  if (!call) return BannedApiRule::check(r);
  const auto* fn = r.Nodes.getNodeAs<FunctionDecl>("graph_fn");
  for (unsigned i = 0; i < fn->getNumParams() && i < call->getNumArgs(); ++i) {
    if (!isStreamParam(fn->getParamDecl(i)->getType())) continue;
    const Expr* arg = call->getArg(i);
    if (arg->isValueDependent() || arg->isTypeDependent() || isCtxStream(arg, *r.Context)) continue;
    report(call->getBeginLoc(), *r.SourceManager,
           "'" + plainQualifiedName(fn) +
               "' on a stream that is not provably ctx.stream(): capture and launch graphs only on "
               "ctx.stream() itself, or a local variable initialised from it and never changed");
  }
}

namespace {

// A pointer or reference (to a pointer ...) to a `void (union sigval)`
// function: the type of sigevent's SIGEV_THREAD notification function,
// which libc calls on a thread it starts itself (aio_*, lio_listio,
// timer_create, mq_notify).
bool isNotifyFunctionType(QualType t) {
  for (int depth = 0; depth < 6 && !t.isNull(); ++depth) {
    t = t.getCanonicalType();
    if (const auto* fn = t->getAs<FunctionProtoType>()) {
      if (!fn->getReturnType()->isVoidType() || fn->getNumParams() != 1) return false;
      const auto* rec = fn->getParamType(0).getCanonicalType()->getAsRecordDecl();
      return rec && rec->getName() == "sigval";
    }
    if (t->isPointerType() || t->isReferenceType()) {
      t = t->getPointeeType();
      continue;
    }
    if (const auto* a = llvm::dyn_cast<ArrayType>(t.getTypePtr())) {
      t = a->getElementType();
      continue;
    }
    return false;
  }
  return false;
}

}  // namespace

void HostThreadRule::registerMatchers(MatchFinder& finder) {
  BannedApiRule::registerMatchers(finder);
  finder.addMatcher(ompExecutableDirective().bind("omp"), this);
  // SIGEV_THREAD: the notification function stored in a sigevent (assigned,
  // initialised, its field's address taken, a lambda converted to it), and
  // the SIGEV_THREAD constant itself.
  finder.addMatcher(expr(anyOf(memberExpr(), castExpr(), declRefExpr(), unaryOperator())).bind("notify"), this);
  finder.addMatcher(declRefExpr(to(enumConstantDecl(hasName("SIGEV_THREAD")))).bind("sigev_thread"), this);
}

void HostThreadRule::check(const MatchFinder::MatchResult& r) {
  if (const auto* d = r.Nodes.getNodeAs<OMPExecutableDirective>("omp")) {
    report(d->getBeginLoc(), *r.SourceManager, "OpenMP directive " + api_.message);
    return;
  }
  if (const auto* e = r.Nodes.getNodeAs<DeclRefExpr>("sigev_thread")) {
    report(e->getBeginLoc(), *r.SourceManager,
           "SIGEV_THREAD makes libc start a thread for a notification (aio, lio_listio, timer_create, "
           "mq_notify); " + api_.message);
    return;
  }
  if (const auto* e = r.Nodes.getNodeAs<Expr>("notify")) {
    if (e->isTypeDependent() || !isNotifyFunctionType(e->getType())) return;
    // Calling such a function directly runs it here, on this thread.
    const Expr* inner = e->IgnoreParenImpCasts();
    const Expr* up = e;
    for (int depth = 0; depth < 4; ++depth) {
      auto parents = r.Context->getParents(*up);
      const auto* p = parents.empty() ? nullptr : parents[0].get<Expr>();
      if (const auto* call = llvm::dyn_cast_or_null<CallExpr>(p)) {
        if (call->getCallee()->IgnoreParenImpCasts() == inner) return;
        break;
      }
      if (!p || !(llvm::isa<ImplicitCastExpr>(p) || llvm::isa<ParenExpr>(p))) break;
      up = p;
    }
    report(e->getBeginLoc(), *r.SourceManager,
           "a sigevent notification function (SIGEV_THREAD) runs on a thread libc starts; " + api_.message);
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

void RawAllocRule::registerMatchers(MatchFinder& finder) {
  BannedApiRule::registerMatchers(finder);
  // __host__ __device__ code counts on the device-side parse only.
  auto device_code = functionDecl(anyOf(hasAttr(attr::CUDAGlobal), hasAttr(attr::CUDADevice))).bind("device_fn");
  finder.addMatcher(callExpr(callee(functionDecl(hasAnyName("::malloc", "::free", "::__nv_aligned_device_malloc",
                                                            "::calloc", "::realloc", "::aligned_alloc"))),
                             hasAncestor(device_code))
                        .bind("device_heap"),
                    this);
  finder.addMatcher(expr(anyOf(cxxNewExpr(), cxxDeleteExpr()), hasAncestor(device_code)).bind("device_heap"), this);
}

void RawAllocRule::check(const MatchFinder::MatchResult& r) {
  if (const auto* e = r.Nodes.getNodeAs<Expr>("device_heap")) {
    // Placement new constructs in memory the code already has.
    if (const auto* n = llvm::dyn_cast<CXXNewExpr>(e); n && n->getNumPlacementArgs() > 0) return;
    const auto* fn = r.Nodes.getNodeAs<FunctionDecl>("device_fn");
    if (fn && fn->hasAttr<CUDAHostAttr>() && !ctx().deviceSide()) return;
    report(e->getBeginLoc(), *r.SourceManager,
           "allocates from the device heap in device code: its blocks outlive the kernel (a freed one comes back "
           "with its contents to the next call); " + api_.message);
    return;
  }
  BannedApiRule::check(r);
}

}  // namespace kb::analyze
