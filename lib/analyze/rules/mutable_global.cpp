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
      return b->isAssignmentOp() && b->getLHS()->IgnoreParens() == cur->IgnoreParens();
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


// The variable an lvalue or pointer expression is rooted at, through
// parentheses, casts, `&`, subscripts, `.` members and pointer arithmetic
// (`(int*)&g.v[2] + 1` is rooted at g); null where it goes through a
// pointer the variable holds (`->`, `*`) or a call.
const VarDecl* rootVariable(const Expr* e) {
  for (int depth = 0; e && depth < 32; ++depth) {
    e = e->IgnoreParens();
    if (const auto* c = llvm::dyn_cast<CastExpr>(e)) {
      e = c->getSubExpr();
    } else if (const auto* u = llvm::dyn_cast<UnaryOperator>(e)) {
      if (u->getOpcode() != UO_AddrOf) return nullptr;
      e = u->getSubExpr();
    } else if (const auto* s = llvm::dyn_cast<ArraySubscriptExpr>(e)) {
      e = s->getBase();
    } else if (const auto* m = llvm::dyn_cast<MemberExpr>(e)) {
      if (m->isArrow()) return nullptr;
      e = m->getBase();
    } else if (const auto* b = llvm::dyn_cast<BinaryOperator>(e)) {
      if (!b->isAdditiveOp()) return nullptr;
      e = b->getLHS()->getType()->isPointerType() ? b->getLHS() : b->getRHS();
    } else if (const auto* call = llvm::dyn_cast<CallExpr>(e)) {
      // std::addressof(g), std::launder(p), std::as_const(g)
      const FunctionDecl* fn = call->getDirectCallee();
      if (!fn || call->getNumArgs() != 1) return nullptr;
      const std::string q = plainQualifiedName(fn);
      if (q != "std::addressof" && q != "std::__addressof" && q != "std::launder" && q != "std::as_const")
        return nullptr;
      e = call->getArg(0);
    } else if (const auto* r = llvm::dyn_cast<DeclRefExpr>(e)) {
      const auto* v = llvm::dyn_cast<VarDecl>(r->getDecl());
      if (!v) return nullptr;
      // A local reference bound to a global: `const Box& b = g_box;`.
      if (v->getType()->isReferenceType() && v->hasLocalStorage() && v->getInit()) {
        e = v->getInit();
        continue;
      }
      return v;
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

// A const variable of static or thread storage whose const-ness a cast or a
// symbol-address API can take away: not constexpr, not a reference, and
// (while __constant__ memory is allowed) not __constant__, whose writing is
// allowed anyway.
bool constStaticObject(const VarDecl* v, ASTContext& ast, bool allow_constant) {
  if (!v || !v->hasGlobalStorage() || v->isConstexpr() || v->getType()->isReferenceType()) return false;
  if (v->hasAttr<CUDAConstantAttr>() && allow_constant) return false;
  return ast.getBaseElementType(v->getType()).isConstQualified();
}

// Whether an explicit cast takes const away: `const T*` to `T*` (or to an
// integer, from which any pointer can be made again), or a const lvalue to
// `T&`.
bool castRemovesConst(const ExplicitCastExpr* c) {
  QualType to = c->getTypeAsWritten().getCanonicalType();
  // A C-style cast's steps (`(void*)p`: a bitcast to void*) are implicit
  // casts marked part of it: judge the type before them.
  const Expr* sub = c->getSubExpr();
  while (const auto* ic = llvm::dyn_cast<ImplicitCastExpr>(sub)) {
    if (!ic->isPartOfExplicitCast() || (ic->getCastKind() != CK_BitCast && ic->getCastKind() != CK_NoOp)) break;
    sub = ic->getSubExpr();
  }
  QualType from = sub->getType().getCanonicalType();
  if (to.isNull() || from.isNull() || to->isDependentType() || from->isDependentType()) return false;
  if (to->isReferenceType()) {
    return !to->getPointeeType().isConstQualified() && from.isConstQualified();
  }
  if (!from->isPointerType() || !from->getPointeeType().isConstQualified()) return false;
  if (to->isPointerType()) return !to->getPointeeType().isConstQualified();
  return to->isIntegerType();
}

// Why a const variable still lives in writable storage, "" when it does
// not: thread-local storage is always writable, and a const object whose
// class has a non-trivial destructor is not put in read-only memory (the
// destructor writes it).
std::string writableConst(const VarDecl* v, QualType base) {
  if (v->getTLSKind() != VarDecl::TLS_None) return "is thread_local, and thread-local storage is writable";
  const CXXRecordDecl* rec = base->getAsCXXRecordDecl();
  if (rec && rec->hasDefinition() && !rec->getDefinition()->hasTrivialDestructor())
    return "has a non-trivial destructor, so it is not placed in read-only memory";
  return "";
}

// The stream a `<<`/`>>` chain writes to: `std::cout << a << b` is std::cout.
const VarDecl* streamRoot(const Expr* e) {
  for (int depth = 0; e && depth < 64; ++depth) {
    const auto* op = llvm::dyn_cast<CXXOperatorCallExpr>(e->IgnoreParenImpCasts());
    if (!op || (op->getOperator() != OO_LessLess && op->getOperator() != OO_GreaterGreater) || op->getNumArgs() != 2)
      break;
    e = op->getArg(0);
  }
  return rootVariable(e);
}

bool isZeroAssignment(const Expr* lhs, ASTContext& ast) {
  const Expr* cur = lhs;
  for (int depth = 0; depth < 4; ++depth) {
    auto parents = ast.getParents(*cur);
    const Stmt* p = parents.empty() ? nullptr : parents[0].get<Stmt>();
    if (const auto* paren = llvm::dyn_cast_or_null<ParenExpr>(p)) {
      cur = paren;
      continue;
    }
    const auto* b = llvm::dyn_cast_or_null<BinaryOperator>(p);
    if (!b || b->getOpcode() != BO_Assign || b->getLHS() != cur) return false;
    Expr::EvalResult value;
    return !b->getRHS()->isValueDependent() && b->getRHS()->EvaluateAsInt(value, ast) && value.Val.getInt() == 0;
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
      "::strtok", "std::strtok", "std::ios_base::sync_with_stdio"));
  finder.addMatcher(declRefExpr(to(setter)).bind("lib_state"), this);
  // const-ness taken away from a const global (const_cast, a C-style or
  // reinterpret cast to a non-const pointer, reference or an integer).
  finder.addMatcher(explicitCastExpr().bind("const_cast"), this);
  // A const __device__ variable's device address, or a copy into it.
  finder.addMatcher(callExpr(callee(functionDecl(hasAnyName(
                                 "::cudaGetSymbolAddress", "::cudaMemcpyToSymbol", "::cudaMemcpyToSymbolAsync",
                                 "::cudaMemcpyToSymbol_ptds", "::cudaMemcpyToSymbolAsync_ptsz",
                                 "::cudaGraphAddMemcpyNodeToSymbol", "::cudaGraphMemcpyNodeSetParamsToSymbol",
                                 "::cudaGraphExecMemcpyNodeSetParamsToSymbol"))))
                        .bind("symbol_call"),
                    this);
  // errno (and h_errno) as storage: `errno = key` keeps a value for the
  // next call on the same thread. Clearing it (`errno = 0`) is fine.
  finder.addMatcher(unaryOperator(hasOperatorName("*"),
                                  hasUnaryOperand(ignoringParenImpCasts(callExpr(callee(functionDecl(
                                      hasAnyName("::__errno_location", "::__h_errno_location")))))))
                        .bind("errno"),
                    this);
  // A standard stream's format state (precision, width, fill, flags, its
  // buffer and tie) set on a stream of static storage (std::cout): it keeps
  // the value for the next call, where the getter reads it back.
  finder.addMatcher(cxxMemberCallExpr(callee(cxxMethodDecl(hasAnyName("precision", "width", "fill", "flags", "setf",
                                                                      "unsetf", "imbue", "rdbuf", "tie",
                                                                      "exceptions", "copyfmt", "setstate",
                                                                      "register_callback"),
                                                           ofClass(cxxRecordDecl(isSameOrDerivedFrom(
                                                               hasName("std::ios_base")))))),
                                      unless(argumentCountIs(0)))
                        .bind("stream_setter"),
                    this);
  // The same through a manipulator computed at run time:
  // `std::cout << std::setprecision(key)`.
  finder.addMatcher(callExpr(callee(functionDecl(hasAnyName("std::setprecision", "std::setw", "std::setfill",
                                                           "std::setbase", "std::setiosflags",
                                                           "std::resetiosflags"))))
                        .bind("manipulator"),
                    this);
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
  ASTContext& ast = *r.Context;
  const bool allow_constant = ctx().policy().allow_constant_memory;
  if (const auto* c = r.Nodes.getNodeAs<ExplicitCastExpr>("const_cast")) {
    if (!ctx().inSolution(c->getBeginLoc(), sm) || c->isTypeDependent() || !castRemovesConst(c)) return;
    const VarDecl* v = rootVariable(c->getSubExpr());
    if (!constStaticObject(v, ast, allow_constant)) return;
    report(c->getBeginLoc(), sm, "cast takes const away from '" + v->getNameAsString() +
                                     "', a const variable of static storage: what is written through it can "
                                     "carry results across calls; keep state in ctx.create_state()");
    return;
  }
  if (const auto* call = r.Nodes.getNodeAs<CallExpr>("symbol_call")) {
    if (!ctx().inSolution(call->getBeginLoc(), sm)) return;
    for (const Expr* arg : call->arguments()) {
      const VarDecl* v = rootVariable(arg);
      if (!v || !v->hasAttr<CUDADeviceAttr>() || !constStaticObject(v, ast, allow_constant)) continue;
      report(call->getBeginLoc(), sm, "'" + plainQualifiedName(call->getDirectCallee()) + "' on '" +
                                          v->getNameAsString() +
                                          "', a const __device__ variable: its device memory is writable, and "
                                          "what is written there can carry results across calls");
      return;
    }
    return;
  }
  if (const auto* e = r.Nodes.getNodeAs<UnaryOperator>("errno")) {
    if (!ctx().inSolution(e->getBeginLoc(), sm) || !writesStorage(e, ast) || isZeroAssignment(e, ast)) return;
    report(e->getBeginLoc(), sm, "writes errno, thread-local storage the library owns, which keeps the value "
                                 "for the next call on this thread; only clearing it (errno = 0) is allowed");
    return;
  }
  if (const auto* call = r.Nodes.getNodeAs<CXXMemberCallExpr>("stream_setter")) {
    if (!ctx().inSolution(call->getBeginLoc(), sm)) return;
    const VarDecl* v = streamRoot(call->getImplicitObjectArgument());
    if (!v || !v->hasGlobalStorage()) return;
    report(call->getExprLoc(), sm, "sets the state of '" + plainQualifiedName(v) +
                                       "', a stream of static storage, which keeps it for the next call (where "
                                       "it can be read back); format a local std::ostringstream instead");
    return;
  }
  if (const auto* call = r.Nodes.getNodeAs<CallExpr>("manipulator")) {
    if (!ctx().inSolution(call->getBeginLoc(), sm) || call->getNumArgs() != 1) return;
    const Expr* arg = call->getArg(0);
    if (arg->isValueDependent() || arg->isEvaluatable(ast)) return;
    // Streamed straight into a local stream (`os << std::setw(n)`) is fine.
    const Expr* up = call;
    for (int depth = 0; depth < 8; ++depth) {
      auto parents = ast.getParents(*up);
      const Expr* p = parents.empty() ? nullptr : parents[0].get<Expr>();
      if (!p) break;
      if (const auto* op = llvm::dyn_cast<CXXOperatorCallExpr>(p);
          op && (op->getOperator() == OO_LessLess || op->getOperator() == OO_GreaterGreater) && op->getNumArgs() == 2) {
        const VarDecl* v = streamRoot(op->getArg(0));
        if (v && !v->hasGlobalStorage()) return;
        break;
      }
      up = p;
    }
    report(call->getBeginLoc(), sm, "'" + plainQualifiedName(call->getDirectCallee()) +
                                        "' with a value computed at run time: on a stream of static storage "
                                        "(std::cout) it keeps that value for the next call; use a constant, or "
                                        "a local std::ostringstream");
    return;
  }
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
  // But `static auto n = <rejected>;` is invalid only because its type was
  // to come from the initialiser: a non-const variable all the same.
  if (v->isInvalidDecl() && (!v->getType()->getContainedAutoType() || v->getType().isConstQualified() ||
                             v->isConstexpr() || !v->hasGlobalStorage()))
    return;
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
    } else if (std::string why = writableConst(v, base);
               !why.empty() && !(v->hasAttr<CUDAConstantAttr>() && allow_constant)) {
      report(v->getLocation(), sm, "const variable '" + v->getNameAsString() + "' " + why +
                                       ": a cast that takes const away writes it, and what it holds can carry "
                                       "results across calls");
    }
    return;
  }
  if (v->getType()->isReferenceType() && v->getType()->getPointeeType().isConstQualified()) return;
  {
    // Written with an initialiser (`= ...` or `{...}` after the name): on a
    // line Clang rejected, the rejection was the initialiser's.
    SourceLocation after = Lexer::getLocForEndOfToken(v->getLocation(), 0, sm, r.Context->getLangOpts());
    std::optional<Token> next = Lexer::findNextToken(v->getLocation(), sm, r.Context->getLangOpts());
    if (after.isValid() && next && (next->is(tok::equal) || next->is(tok::l_brace))) {
      SourceLocation at = sm.getFileLoc(v->getLocation());
      ctx().initialisedDeclLines().insert({ctx().solutionFile(at, sm), sm.getSpellingLineNumber(at)});
    }
  }
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
