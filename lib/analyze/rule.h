// What a rule is: clang-tidy's shape. A rule registers AST matchers (and, if
// it needs them, preprocessor callbacks) and reports findings from check().
// One rule = one class in rules/, registered in registry.cpp, documented in
// docs/rules/<id>.md, tested by tests/analyze/cases/<id>/ (ids with '_').
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <clang/ASTMatchers/ASTMatchFinder.h>
#include <clang/Lex/Preprocessor.h>

#include "analyze/analyze.h"

namespace kb::analyze {

// Declarations and definitions with external linkage seen in one parse;
// rules/extern_symbol.cpp joins them over all parses.
struct SymbolFacts {
  struct Use {
    std::string display;  // the declaration as the user named it
    // Set when an asm label or `#pragma redefine_extname` written in the
    // solution binds the declaration to another symbol (the label).
    bool relabelled = false;
    std::string file;
    unsigned line = 0, column = 0;
  };
  std::map<std::string, Use> referenced_undefined;  // mangled -> first place
  std::set<std::string> defined;                    // mangled names
  bool defines_entry = false;  // extern "C" kb_forward defined here (rules/missing_entry.cpp)
};

// Per-parse state shared by the rules of one translation unit.
class CheckContext {
 public:
  CheckContext(const solution::Solution& solution, const StaticPolicy& policy, const CheckOptions& options,
               bool device_side)
      : solution_(solution), policy_(policy), options_(options), device_side_(device_side) {}

  const StaticPolicy& policy() const { return policy_; }
  const CheckOptions& options() const { return options_; }
  const solution::Solution& solution() const { return solution_; }
  bool deviceSide() const { return device_side_; }

  // The solution-relative path of the file holding `loc` (macro expansions
  // resolved to where they were written in a file), or "" when outside.
  std::string solutionFile(clang::SourceLocation loc, const clang::SourceManager& sm);
  bool inSolution(clang::SourceLocation loc, const clang::SourceManager& sm) {
    return !solutionFile(loc, sm).empty();
  }
  // Whether an absolute path lies in the solution directory.
  bool pathInSolution(const std::string& path) const;

  // Severity from the policy; `note` forces Severity::Note (parser-limit).
  void report(const std::string& rule, clang::SourceLocation loc, const clang::SourceManager& sm,
              std::string message, bool note = false);

  std::vector<Finding>& findings() { return findings_; }
  Inventory& inventory() { return inventory_; }
  SymbolFacts& symbols() { return symbols_; }
  // (file, line) of variables of static storage whose declarator Clang
  // parsed up to an initialiser (`static int n = <rejected>;`): a parse
  // error on that line rejected the initialiser, not the variable, so
  // mutable-global's finding there stands (parser_limit.cpp).
  std::set<std::pair<std::string, unsigned>>& initialisedDeclLines() { return initialised_decl_lines_; }

 private:
  const solution::Solution& solution_;
  const StaticPolicy& policy_;
  const CheckOptions& options_;
  bool device_side_;
  std::map<unsigned, std::string> file_cache_;  // FileID hash -> relative path or ""
  std::vector<Finding> findings_;
  std::set<std::pair<std::string, unsigned>> initialised_decl_lines_;
  Inventory inventory_;
  SymbolFacts symbols_;
};

class Rule : public clang::ast_matchers::MatchFinder::MatchCallback {
 public:
  Rule(std::string id, CheckContext& ctx) : id_(std::move(id)), ctx_(ctx) {}
  const std::string& id() const { return id_; }

  virtual void registerMatchers(clang::ast_matchers::MatchFinder& finder) = 0;
  virtual void registerPPCallbacks(clang::Preprocessor& pp) {}
  virtual void check(const clang::ast_matchers::MatchFinder::MatchResult& result) = 0;

  void run(const clang::ast_matchers::MatchFinder::MatchResult& result) final { check(result); }

 protected:
  void report(clang::SourceLocation loc, const clang::SourceManager& sm, std::string message) {
    ctx_.report(id_, loc, sm, std::move(message));
  }
  CheckContext& ctx() const { return ctx_; }

 private:
  std::string id_;
  CheckContext& ctx_;
};

// Every rule that the policy turns on, in a fixed order.
std::vector<std::unique_ptr<Rule>> makeRules(CheckContext& ctx);

// Qualified name with inline namespaces (std::__cxx11, cub::CUB_200_NS) left out.
std::string plainQualifiedName(const clang::NamedDecl* decl);

// Whether a value of type `t` can hold nothing but a torch extension's
// bindings: a class with no data (a registrar), std::function objects that
// take a pybind11::module_, strings, and the standard containers, pairs and
// classes made only of those (the CUDA Agent workspace's binding registry).
// No number, pointer or tensor fits: such a value cannot carry a result.
bool holdsOnlyBindings(clang::QualType t);

}  // namespace kb::analyze
