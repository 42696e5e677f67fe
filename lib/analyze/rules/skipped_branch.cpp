#include "analyze/rules/skipped_branch.h"

#include <clang/Lex/Lexer.h>
#include <clang/Lex/MacroInfo.h>
#include <clang/Lex/PPCallbacks.h>
#include <llvm/Support/Regex.h>

using namespace clang;

namespace kb::analyze {
namespace {

// One #if ... #endif chain that is open.
struct Chain {
  bool in_solution = false;
  bool trusted = true;  // every condition so far depends on trusted names only
  std::string why;      // the first untrusted name, and why
  bool any_taken = false;
};

class BranchCallbacks : public PPCallbacks {
 public:
  BranchCallbacks(SkippedBranchRule& rule, CheckContext& ctx, Preprocessor& pp)
      : rule_(rule), ctx_(ctx), pp_(pp), sm_(pp.getSourceManager()) {
    for (const auto& re : ctx.policy().preprocessor_trusted) trusted_names_.emplace_back(re);
  }

  void If(SourceLocation loc, SourceRange, ConditionValueKind value) override {
    open(loc);
    conditionText(loc);
    branch(loc, value == CVK_True);
  }
  void Ifdef(SourceLocation loc, const Token& name, const MacroDefinition& md) override {
    open(loc);
    conditionName(name);
    branch(loc, static_cast<bool>(md));
  }
  void Ifndef(SourceLocation loc, const Token& name, const MacroDefinition& md) override {
    open(loc);
    conditionName(name);
    branch(loc, !md);
  }
  void Elif(SourceLocation loc, SourceRange, ConditionValueKind value, SourceLocation) override {
    conditionText(loc);
    branch(loc, value == CVK_True);
  }
  void Elifdef(SourceLocation loc, const Token& name, const MacroDefinition& md) override {
    conditionName(name);
    branch(loc, static_cast<bool>(md));
  }
  void Elifdef(SourceLocation loc, SourceRange, SourceLocation) override {
    conditionText(loc);  // not evaluated: an earlier branch was taken
    branch(loc, false);
  }
  void Elifndef(SourceLocation loc, const Token& name, const MacroDefinition& md) override {
    conditionName(name);
    branch(loc, !md);
  }
  void Elifndef(SourceLocation loc, SourceRange, SourceLocation) override {
    conditionText(loc);
    branch(loc, false);
  }
  void Else(SourceLocation loc, SourceLocation) override {
    if (!chains_.empty()) branch(loc, !chains_.back().any_taken);
  }
  void Endif(SourceLocation, SourceLocation) override {
    if (!chains_.empty()) chains_.pop_back();
  }

  // A macro's value is trusted only if the solution set it where every open
  // condition was trusted; anything else (the compiler's predefined macros,
  // system headers, the precompiled prelude, #pragma pop_macro) is not.
  void MacroDefined(const Token& name, const MacroDirective* md) override {
    if (md && trustedContext(name.getLocation())) trusted_directives_.insert(md);
  }
  void MacroUndefined(const Token& name, const MacroDefinition&, const MacroDirective* undef) override {
    if (undef && trustedContext(name.getLocation())) trusted_directives_.insert(undef);
  }

 private:
  void open(SourceLocation loc) {
    Chain c;
    c.in_solution = ctx_.inSolution(loc, sm_);
    chains_.push_back(c);
  }

  void branch(SourceLocation loc, bool taken) {
    if (chains_.empty()) return;
    Chain& c = chains_.back();
    if (taken) {
      c.any_taken = true;
    } else if (c.in_solution && !c.trusted) {
      rule_.skipped(loc, c.why, sm_);
    }
  }

  bool trustedContext(SourceLocation loc) {
    if (!ctx_.inSolution(loc, sm_)) return false;
    for (const Chain& c : chains_)
      if (!c.trusted) return false;
    return true;
  }

  void distrust(const std::string& why) {
    Chain& c = chains_.back();
    if (c.trusted) c.why = why;
    c.trusted = false;
  }

  void conditionName(const Token& name) {
    if (chains_.empty() || !chains_.back().in_solution) return;
    if (const IdentifierInfo* id = name.getIdentifierInfo()) {
      std::set<std::string> seen;
      std::string why = untrusted(id->getName().str(), 0, seen);
      if (!why.empty()) distrust(why);
    }
  }

  // Every identifier of the directive as written in the file, from its
  // keyword to its end of line (a raw lexer in directive mode: comments and
  // line continuations handled as the preprocessor does, a comment that
  // spans lines included), each expanded through the macro table as it
  // stands here. Read from the file, not from Clang's condition range,
  // which __has_builtin(...) and friends leave empty.
  void conditionText(SourceLocation directive) {
    if (chains_.empty() || !chains_.back().in_solution) return;
    const SourceLocation loc = sm_.getExpansionLoc(directive);
    const FileID fid = sm_.getFileID(loc);
    bool invalid = false;
    llvm::StringRef buffer = sm_.getBufferData(fid, &invalid);
    if (invalid) {
      distrust("a condition the checker could not read");
      return;
    }
    const char* start = buffer.data() + sm_.getFileOffset(loc);
    Lexer raw(sm_.getLocForStartOfFile(fid), pp_.getLangOpts(), buffer.data(), start, buffer.end());
    raw.setParsingPreprocessorDirective(true);
    Token tok;
    raw.LexFromRawLexer(tok);  // the directive's keyword: if, elif, ...
    std::set<std::string> seen;
    while (true) {
      raw.LexFromRawLexer(tok);
      if (tok.isOneOf(tok::eod, tok::eof)) return;
      if (!tok.is(tok::raw_identifier)) continue;
      std::string name = tok.needsCleaning()
                             ? Lexer::getSpelling(tok, sm_, pp_.getLangOpts())
                             : tok.getRawIdentifier().str();
      std::string why = untrusted(name, 0, seen);
      if (!why.empty()) {
        distrust(why);
        return;
      }
    }
  }

  bool allowListed(llvm::StringRef name) {
    for (auto& re : trusted_names_)
      if (re.match(name)) return true;
    return false;
  }

  // "" when `name` has the same meaning for the checker and the compilers
  // at this point, else why not.
  std::string untrusted(const std::string& name, int depth, std::set<std::string>& seen) {
    if (allowListed(name) || name == "__VA_OPT__") return "";
    if (!seen.insert(name).second) return "";  // a macro is not expanded inside itself
    if (depth > 64) return "'" + name + "' (macros nested too deep to follow)";
    IdentifierInfo* id = pp_.getIdentifierInfo(name);
    const MacroDirective* md = id ? pp_.getLocalMacroDirectiveHistory(id) : nullptr;
    if (!md) return "'" + name + "', which the solution never defines (a compiler may predefine it)";
    if (!trusted_directives_.count(md)) {
      if (md->getMacroInfo() && md->getMacroInfo()->isBuiltinMacro())
        return "'" + name + "', a compiler built-in";
      return ctx_.inSolution(md->getLocation(), sm_)
                 ? "'" + name + "', which the solution defines under a condition that is itself not trusted"
                 : "'" + name + "', which a compiler or a header outside the solution defines";
    }
    const MacroInfo* mi = md->getMacroInfo();
    if (!mi) return "";  // #undef in trusted code: undefined for every compiler
    std::set<const IdentifierInfo*> params(mi->param_begin(), mi->param_end());
    for (const Token& t : mi->tokens()) {
      if (t.is(tok::hashhash))
        return "'" + name + "', a macro that pastes tokens into new names";
      const IdentifierInfo* tid = t.getIdentifierInfo();
      if (!tid || params.count(tid)) continue;
      std::string why = untrusted(tid->getName().str(), depth + 1, seen);
      if (!why.empty()) return why + " (through '" + name + "')";
    }
    return "";
  }

  SkippedBranchRule& rule_;
  CheckContext& ctx_;
  Preprocessor& pp_;
  const SourceManager& sm_;
  std::vector<llvm::Regex> trusted_names_;
  std::vector<Chain> chains_;
  std::set<const MacroDirective*> trusted_directives_;
};

}  // namespace

void SkippedBranchRule::registerPPCallbacks(Preprocessor& pp) {
  pp.addPPCallbacks(std::make_unique<BranchCallbacks>(*this, ctx(), pp));
}

}  // namespace kb::analyze
