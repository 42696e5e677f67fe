#include "analyze/rules/compiler_conditional.h"

#include <clang/Lex/Lexer.h>
#include <clang/Lex/PPCallbacks.h>
#include <llvm/Support/Regex.h>

using namespace clang;

namespace kb::analyze {
namespace {

class ConditionCallbacks : public PPCallbacks {
 public:
  ConditionCallbacks(CompilerConditionalRule& rule, Preprocessor& pp) : rule_(rule), pp_(pp) {}
  void If(SourceLocation loc, SourceRange range, ConditionValueKind) override { condition(loc, range); }
  void Elif(SourceLocation loc, SourceRange range, ConditionValueKind, SourceLocation) override {
    condition(loc, range);
  }
  void Ifdef(SourceLocation loc, const Token& name, const MacroDefinition&) override { macro(loc, name); }
  void Ifndef(SourceLocation loc, const Token& name, const MacroDefinition&) override { macro(loc, name); }
  void Elifdef(SourceLocation loc, const Token& name, const MacroDefinition&) override { macro(loc, name); }
  void Elifndef(SourceLocation loc, const Token& name, const MacroDefinition&) override { macro(loc, name); }
  void Elifdef(SourceLocation loc, SourceRange range, SourceLocation) override { condition(loc, range); }
  void Elifndef(SourceLocation loc, SourceRange range, SourceLocation) override { condition(loc, range); }

 private:
  void condition(SourceLocation loc, SourceRange range) {
    const SourceManager& sm = pp_.getSourceManager();
    llvm::StringRef text =
        Lexer::getSourceText(CharSourceRange::getCharRange(range), sm, pp_.getLangOpts());
    rule_.onCondition(loc, text, sm);
  }
  void macro(SourceLocation loc, const Token& name) {
    if (const IdentifierInfo* id = name.getIdentifierInfo())
      rule_.onCondition(loc, id->getName(), pp_.getSourceManager());
  }
  CompilerConditionalRule& rule_;
  Preprocessor& pp_;
};

}  // namespace

void CompilerConditionalRule::registerPPCallbacks(Preprocessor& pp) {
  pp.addPPCallbacks(std::make_unique<ConditionCallbacks>(*this, pp));
}

void CompilerConditionalRule::onCondition(SourceLocation loc, llvm::StringRef text,
                                          const SourceManager& sm) {
  if (!ctx().inSolution(loc, sm)) return;
  for (const auto& pattern : ctx().policy().compiler_macros) {
    llvm::SmallVector<llvm::StringRef, 4> match;
    if (llvm::Regex(pattern).match(text, &match)) {
      // The macro is the pattern's second group when it has one.
      llvm::StringRef name = match.size() > 2 ? match[2] : match[0];
      report(loc, sm, "condition on '" + name.str() +
                          "' makes the code nvcc builds differ from the code that was checked");
      return;
    }
  }
}

}  // namespace kb::analyze
