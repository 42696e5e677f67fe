#include "analyze/rules/mutable_global.h"

#include <set>

#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/Lex/Lexer.h>
#include <llvm/Support/Regex.h>

using namespace clang;
using namespace clang::ast_matchers;

namespace kb::analyze {
namespace {

// Why a const type's const-ness stops at a pointer: "" when it does not.
// `T* const` points at non-const T; a const std::unique_ptr<T[]> or
// std::vector<T*> hands out non-const T; a const struct of the solution's
// with a `T*` member likewise. A library class is judged by its template
// arguments (std::vector<float> is const all the way down, std::vector<float*>
// is not), except the smart pointers, which point at their first argument.
// Whether `t`, or for an array any level of it, is const (`const float[]`).
bool constElements(QualType t) {
  for (int depth = 0; depth < 8; ++depth) {
    if (t.isConstQualified()) return true;
    const ArrayType* a = t->getAsArrayTypeUnsafe();
    if (!a) return false;
    t = a->getElementType();
  }
  return false;
}

std::string shallowConst(QualType t, CheckContext& ctx, const SourceManager& sm, std::set<const Type*>& seen,
                         int depth = 0) {
  if (t.isNull() || depth > 8 || t->isDependentType()) return "";
  t = t.getCanonicalType();
  while (const ArrayType* a = t->getAsArrayTypeUnsafe()) t = a->getElementType().getCanonicalType();
  if (t->isPointerType() || t->isReferenceType()) {
    QualType pointee = t->getPointeeType();
    if (pointee->isFunctionType() || constElements(pointee)) return "";
    return t->isPointerType() ? "points at non-const data" : "refers to non-const data";
  }
  const auto* rec = t->getAsCXXRecordDecl();
  if (!rec || !rec->hasDefinition() || !seen.insert(t.getTypePtr()).second) return "";
  rec = rec->getDefinition();
  const bool library = !ctx.inSolution(rec->getLocation(), sm);
  if (library) {
    const auto* spec = llvm::dyn_cast<ClassTemplateSpecializationDecl>(rec);
    if (!spec) return "";
    const std::string name = plainQualifiedName(spec);
    const TemplateArgumentList& args = spec->getTemplateArgs();
    if ((name == "std::unique_ptr" || name == "std::shared_ptr" || name == "std::weak_ptr") && args.size() > 0 &&
        args[0].getKind() == TemplateArgument::Type) {
      if (!constElements(args[0].getAsType().getCanonicalType())) return "is a " + name + " to non-const data";
    }
    for (const TemplateArgument& arg : args.asArray()) {
      if (arg.getKind() != TemplateArgument::Type) continue;
      std::string why = shallowConst(arg.getAsType(), ctx, sm, seen, depth + 1);
      if (!why.empty()) return "holds " + arg.getAsType().getAsString() + ", which " + why;
    }
    return "";
  }
  for (const CXXBaseSpecifier& base : rec->bases()) {
    std::string why = shallowConst(base.getType(), ctx, sm, seen, depth + 1);
    if (!why.empty()) return why;
  }
  for (const FieldDecl* f : rec->fields()) {
    std::string why = shallowConst(f->getType(), ctx, sm, seen, depth + 1);
    if (!why.empty()) return "has member '" + f->getNameAsString() + "', which " + why;
  }
  return "";
}

// A variable of static storage that the solution does not define: some
// declaration of it comes from a header outside the solution (libc's
// optind, program_invocation_short_name, environ, stdout, timezone) and no
// definition is in the solution.
bool libraryVariable(const VarDecl* v, CheckContext& ctx, const SourceManager& sm) {
  bool outside = false;
  for (const VarDecl* d : v->redecls()) {
    const bool in = ctx.inSolution(d->getLocation(), sm);
    if (in && d->isThisDeclarationADefinition() != VarDecl::DeclarationOnly) return false;
    outside = outside || !in;
  }
  return outside;
}

bool pointsAtNonConst(QualType t) {
  return t->isPointerType() && !t->getPointeeType().isConstQualified();
}

// Whether the reference `e` writes the variable's own storage (or an
// element or member of it): assigned, incremented, its address taken as a
// pointer to non-const, bound to a non-const reference or passed as one.
// A write through a pointer the variable holds (`stdout->x`) is not one.
bool writesStorage(const Expr* e, ASTContext& ast) {
  const Expr* cur = e;
  for (int depth = 0; depth < 32; ++depth) {
    auto parents = ast.getParents(*cur);
    if (parents.empty()) return false;
    if (const auto* vd = parents[0].get<VarDecl>())
      return vd->getType()->isReferenceType() && !vd->getType()->getPointeeType().isConstQualified();
    const Stmt* p = parents[0].get<Stmt>();
    if (!p) return false;
    if (llvm::isa<ParenExpr>(p)) {
      cur = llvm::cast<Expr>(p);
      continue;
    }
    if (const auto* m = llvm::dyn_cast<MemberExpr>(p)) {
      if (m->isArrow() || m->getBase()->IgnoreParenImpCasts() != cur->IgnoreParenImpCasts()) return false;
      if (llvm::isa<CXXMethodDecl>(m->getMemberDecl())) return false;  // a member call: see the rule's limits
      cur = m;
      continue;
    }
    if (const auto* c = llvm::dyn_cast<ImplicitCastExpr>(p)) {
      switch (c->getCastKind()) {
        case CK_NoOp:
        case CK_DerivedToBase:
        case CK_UncheckedDerivedToBase:
          cur = c;
          continue;
        case CK_ArrayToPointerDecay: {
          auto up = ast.getParents(*c);
          const Stmt* q = up.empty() ? nullptr : up[0].get<Stmt>();
          if (const auto* s = llvm::dyn_cast_or_null<ArraySubscriptExpr>(q); s && s->getBase() == c) {
            cur = s;
            continue;
          }
          if (const auto* n = llvm::dyn_cast_or_null<ImplicitCastExpr>(q); n && n->getCastKind() == CK_NoOp)
            return pointsAtNonConst(n->getType());
          return pointsAtNonConst(c->getType());
        }
        default:
          return false;  // read (lvalue-to-rvalue) or converted
      }
    }
    if (const auto* s = llvm::dyn_cast<ArraySubscriptExpr>(p)) {
      if (s->getBase()->IgnoreParenImpCasts() != cur->IgnoreParenImpCasts()) return false;  // used as an index
      cur = s;
      continue;
    }
    if (const auto* u = llvm::dyn_cast<UnaryOperator>(p)) {
      if (u->isIncrementDecrementOp()) return true;
      if (u->getOpcode() == UO_AddrOf) return pointsAtNonConst(u->getType());
      return false;
    }
    if (const auto* b = llvm::dyn_cast<BinaryOperator>(p))
      return b->isAssignmentOp() && b->getLHS()->IgnoreParens() == cur;
    if (const auto* op = llvm::dyn_cast<CXXOperatorCallExpr>(p)) {
      // `g = x`, `g += x`, `++g` on a class object; `std::cout << x`
      // (which changes only the stream's own state) is not counted.
      return (op->isAssignmentOp() || op->getOperator() == OO_PlusPlus || op->getOperator() == OO_MinusMinus) &&
             op->getNumArgs() > 0 && op->getArg(0)->IgnoreParenImpCasts() == cur->IgnoreParenImpCasts();
    }
    if (const auto* call = llvm::dyn_cast<CallExpr>(p)) {
      const FunctionDecl* fn = call->getDirectCallee();
      if (!fn) return false;
      for (unsigned i = 0; i < call->getNumArgs() && i < fn->getNumParams(); ++i) {
        if (call->getArg(i)->IgnoreParenImpCasts() != cur->IgnoreParenImpCasts()) continue;
        QualType t = fn->getParamDecl(i)->getType();
        if (t->isReferenceType() && !t->getPointeeType().isConstQualified()) return true;
      }
      return false;
    }
    return false;
  }
  return false;
}

}  // namespace

void MutableGlobalRule::registerMatchers(MatchFinder& finder) {
  finder.addMatcher(varDecl(hasGlobalStorage()).bind("var"), this);
  // State kept in libc's or the C++ library's globals.
  finder.addMatcher(declRefExpr(to(varDecl(hasGlobalStorage()).bind("lib_var"))).bind("lib_ref"), this);
  // iostream's per-stream user storage and its global index counter.
  auto storage = cxxMethodDecl(hasAnyName("std::ios_base::iword", "std::ios_base::pword", "std::ios_base::xalloc",
                                          "std::ios_base::register_callback"));
  finder.addMatcher(memberExpr(member(storage)).bind("ios_storage"), this);
  finder.addMatcher(declRefExpr(to(storage)).bind("ios_storage"), this);
  // Library calls whose job is to keep a value the caller chose (or a
  // sequence that counts calls) in the library's own state, to be read back
  // by a later call: the default memory resource, the global locale and its
  // facets, the C random generators' seeds and states, stream buffers.
  auto setter = functionDecl(hasAnyName(
      "std::pmr::set_default_resource", "std::locale::global", "::setlocale", "::uselocale", "::srand", "::rand",
      "std::srand", "std::rand", "::srandom", "::random", "::initstate", "::setstate", "::srand48", "::seed48",
      "::lcong48", "::drand48", "::lrand48", "::mrand48", "::setvbuf", "::setbuf", "::setbuffer", "::setlinebuf",
      "::mallopt", "::tzset", "::setkey", "::hcreate", "::hsearch", "::tsearch", "::tfind", "::tdelete",
      "::strtok", "std::strtok"));
  finder.addMatcher(declRefExpr(to(setter)).bind("lib_state"), this);
}

bool MutableGlobalRule::libraryMacro(SourceLocation loc, const SourceManager& sm, const LangOptions& lo) {
  const auto& allow = ctx().policy().mutable_global_macros;
  if (allow.empty() || !loc.isMacroID()) return false;
  // Written by the macro's body in a header outside the solution, not by
  // the solution (a macro of the solution's own, or one it redefined).
  if (ctx().inSolution(sm.getSpellingLoc(loc), sm)) return false;
  // The macro named in the solution's file: the outermost expansion.
  const SourceLocation at = sm.getExpansionLoc(loc);
  const std::string name(sm.getCharacterData(at), Lexer::MeasureTokenLength(at, sm, lo));
  for (const auto& re : allow)
    if (llvm::Regex(re).match(name)) return true;
  return false;
}

void MutableGlobalRule::check(const MatchFinder::MatchResult& r) {
  const SourceManager& sm = *r.SourceManager;
  if (const auto* e = r.Nodes.getNodeAs<DeclRefExpr>("lib_state")) {
    if (!ctx().inSolution(e->getBeginLoc(), sm)) return;
    report(e->getBeginLoc(), sm, "'" + plainQualifiedName(e->getDecl()) +
                                     "' keeps state in the library between calls (a value it was given, or a "
                                     "sequence that counts calls), which can carry results across calls");
    return;
  }
  if (const auto* e = r.Nodes.getNodeAs<Expr>("ios_storage")) {
    const auto* d = llvm::isa<MemberExpr>(e) ? llvm::cast<MemberExpr>(e)->getMemberDecl()
                                             : llvm::cast<DeclRefExpr>(e)->getDecl();
    report(e->getExprLoc(), sm, "'std::ios_base::" + d->getNameAsString() +
                                    "' keeps values in a stream's (or the library's) own storage, which can carry "
                                    "results across calls");
    return;
  }
  if (const auto* e = r.Nodes.getNodeAs<DeclRefExpr>("lib_ref")) {
    const auto* v = r.Nodes.getNodeAs<VarDecl>("lib_var");
    if (!ctx().inSolution(e->getBeginLoc(), sm) || e->isTypeDependent()) return;
    if (r.Context->getBaseElementType(v->getType()).isConstQualified() && !v->getType()->isReferenceType()) return;
    if (!libraryVariable(v, ctx(), sm) || !writesStorage(e, *r.Context)) return;
    report(e->getBeginLoc(), sm, "writes '" + plainQualifiedName(v) +
                                     "', a global the solution does not own, which can carry results across "
                                     "calls; keep state in ctx.create_state()");
    return;
  }
  const auto* v = r.Nodes.getNodeAs<VarDecl>("var");
  if (!v || v->isImplicit() || !ctx().inSolution(v->getLocation(), sm)) return;
  if (llvm::isa<ParmVarDecl>(v)) return;
  // A declaration Clang rejected (a parser limit: `int f( ;` reads as a
  // variable `f`) is not judged as a variable; see docs/rules/parser-limit.md.
  if (v->isInvalidDecl()) return;
  if (libraryMacro(v->getLocation(), sm, r.Context->getLangOpts())) return;
  if (ctx().policy().allow_binding_registry && holdsOnlyBindings(v->getType())) return;
  if (v->isThisDeclarationADefinition() == VarDecl::DeclarationOnly) return;
  if (v->hasAttr<CUDASharedAttr>()) return;
  if (v->hasAttr<CUDAConstantAttr>() && ctx().policy().allow_constant_memory) return;
  if (v->isConstexpr()) return;
  QualType base = r.Context->getBaseElementType(v->getType());
  if (base.isConstQualified()) {
    // const, but still a cache: a class with mutable members, a pointer
    // (or a class holding one) whose pointee is not const and is set up at
    // run time, or a static local computed on the first call from that
    // call's values.
    const CXXRecordDecl* rec = base->getAsCXXRecordDecl();
    const bool dynamic = v->hasInit() && !v->getDeclContext()->isDependentContext() &&
                         !v->getType()->isDependentType() && !v->hasConstantInitialization();
    std::set<const Type*> seen;
    if (rec && rec->hasDefinition() && rec->hasMutableFields()) {
      report(v->getLocation(), sm, "const variable '" + v->getNameAsString() +
                                       "' has mutable members that can carry results across calls");
    } else if (std::string why; dynamic && !(why = shallowConst(base, ctx(), sm, seen)).empty()) {
      // With a constant initialiser the pointee is null or a static object
      // judged by its own declaration; set up at run time (new, malloc,
      // make_unique), it is a buffer only this pointer reaches.
      report(v->getLocation(), sm, "const variable '" + v->getNameAsString() + "' " + why +
                                       " set up at run time: const-ness stops at the pointer, and what it "
                                       "points at can carry results across calls");
    } else if (v->isStaticLocal() && dynamic) {
      report(v->getLocation(), sm, "static local '" + v->getNameAsString() +
                                       "' is computed on the first call and kept for every later one");
    }
    return;
  }
  if (v->getType()->isReferenceType() && v->getType()->getPointeeType().isConstQualified()) return;
  std::string what = v->getTLSKind() != VarDecl::TLS_None ? "thread_local variable"
                     : v->isStaticLocal()                  ? "static local variable"
                     : v->isStaticDataMember()             ? "static data member"
                     : v->hasAttr<HIPManagedAttr>()        ? "__managed__ global variable"
                     : v->hasAttr<CUDADeviceAttr>()        ? "__device__ global variable"
                                                           : "global variable";
  report(v->getLocation(), sm,
         "mutable " + what + " '" + v->getNameAsString() +
             "' can carry results across calls; keep state in ctx.create_state() or make it const");
}

}  // namespace kb::analyze
