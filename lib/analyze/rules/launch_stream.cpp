#include "analyze/rules/launch_stream.h"

#include <clang/AST/ExprCXX.h>

using namespace clang;
using namespace clang::ast_matchers;

namespace kb::analyze {
namespace {

bool isStreamType(QualType t) {
  t = t.getCanonicalType();
  const auto* p = t->getAs<PointerType>();
  if (!p) return false;
  const auto* rec = p->getPointeeType()->getAsRecordDecl();
  return rec && rec->getName() == "CUstream_st";
}

// Why `arg` does not name the harness's stream, or "" if it may.
std::string badStream(const Expr* arg, ASTContext& ctx) {
  if (!arg || llvm::isa<CXXDefaultArgExpr>(arg)) return "no stream given (the legacy default stream)";
  const Expr* e = arg->IgnoreParenImpCasts();
  if (e->isValueDependent() || e->isTypeDependent()) return "";
  if (e->isNullPointerConstant(ctx, Expr::NPC_ValueDependentIsNotNull))
    return "stream 0 (the legacy default stream)";
  if (e->isEvaluatable(ctx)) return "a constant stream handle (a default stream)";
  return "";
}

}  // namespace

void LaunchStreamRule::registerMatchers(MatchFinder& finder) {
  finder.addMatcher(cudaKernelCallExpr().bind("launch"), this);
  finder.addMatcher(callExpr(callee(functionDecl().bind("callee"))).bind("call"), this);
  // A stream variable or field that is given a constant: `cudaStream_t s = 0;`,
  // `cfg.stream = 0;`, `cudaLaunchConfig_t cfg = {g, b, 0, 0};`.
  finder.addMatcher(varDecl(hasInitializer(expr().bind("init"))).bind("var"), this);
  finder.addMatcher(binaryOperator(isAssignmentOperator()).bind("assign"), this);
  finder.addMatcher(initListExpr().bind("list"), this);
}

void LaunchStreamRule::check(const MatchFinder::MatchResult& r) {
  const SourceManager& sm = *r.SourceManager;
  if (const auto* k = r.Nodes.getNodeAs<CUDAKernelCallExpr>("launch")) {
    if (!ctx().inSolution(k->getBeginLoc(), sm)) return;
    const CallExpr* config = k->getConfig();
    const Expr* stream = config && config->getNumArgs() >= 4 ? config->getArg(3) : nullptr;
    std::string why = badStream(stream, *r.Context);
    if (!why.empty())
      report(k->getBeginLoc(), sm, "kernel launched with " + why + "; pass ctx.stream()");
    return;
  }
  if (const auto* v = r.Nodes.getNodeAs<VarDecl>("var")) {
    const auto* init = r.Nodes.getNodeAs<Expr>("init");
    if (!isStreamType(v->getType()) || !ctx().inSolution(v->getLocation(), sm) || llvm::isa<ParmVarDecl>(v))
      return;
    std::string why = badStream(init, *r.Context);
    if (!why.empty())
      report(v->getLocation(), sm, "stream variable '" + v->getNameAsString() + "' holds " + why +
                                       "; use ctx.stream()");
    return;
  }
  if (const auto* a = r.Nodes.getNodeAs<BinaryOperator>("assign")) {
    if (!isStreamType(a->getLHS()->getType()) || !ctx().inSolution(a->getOperatorLoc(), sm)) return;
    std::string why = badStream(a->getRHS(), *r.Context);
    if (!why.empty()) report(a->getOperatorLoc(), sm, "assigns " + why + " to a stream; use ctx.stream()");
    return;
  }
  if (const auto* list = r.Nodes.getNodeAs<InitListExpr>("list")) {
    if (!ctx().inSolution(list->getBeginLoc(), sm)) return;
    for (unsigned i = 0; i < list->getNumInits(); ++i) {
      const Expr* e = list->getInit(i);
      if (!e || llvm::isa<ImplicitValueInitExpr>(e) || !isStreamType(e->getType())) continue;
      std::string why = badStream(e, *r.Context);
      if (!why.empty()) report(e->getBeginLoc(), sm, "initialises a stream with " + why + "; use ctx.stream()");
    }
    return;
  }
  const auto* call = r.Nodes.getNodeAs<CallExpr>("call");
  const auto* fn = r.Nodes.getNodeAs<FunctionDecl>("callee");
  if (!call || !fn || llvm::isa<CUDAKernelCallExpr>(call)) return;
  if (!ctx().inSolution(call->getBeginLoc(), sm)) return;
  // The launch configuration call inside <<<...>>> is handled above.
  if (fn->getIdentifier() &&
      (fn->getName() == "__cudaPushCallConfiguration" || fn->getName() == "cudaConfigureCall"))
    return;
  std::string name = plainQualifiedName(fn);
  for (const auto& banned : ctx().policy().default_stream_functions) {
    if (banned == name || banned == "::" + name) {
      report(call->getBeginLoc(), sm,
             "'" + name + "' runs on the legacy default stream; use its Async form on ctx.stream()");
      return;
    }
  }
  for (unsigned i = 0; i < fn->getNumParams() && i < call->getNumArgs(); ++i) {
    if (!isStreamType(fn->getParamDecl(i)->getType())) continue;
    std::string why = badStream(call->getArg(i), *r.Context);
    if (!why.empty())
      report(call->getBeginLoc(), sm, "'" + name + "' called with " + why + "; pass ctx.stream()");
  }
}

}  // namespace kb::analyze
