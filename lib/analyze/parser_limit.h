// parser-limit (docs/rules/parser-limit.md): Clang 19 cannot parse some code
// that nvcc or g++ accepts. Such an error is a note, never a violation, and
// the solution is judged by everything else Clang did parse. So that a
// deliberate parse error cannot hide a hack, every declaration Clang
// rejected is scanned token by token (after macro expansion) for the names
// the policy bans, and a fatal error (after which Clang stops entering
// #includes) makes every file of the solution scanned that way.
#pragma once

#include <string>
#include <vector>

#include <clang/AST/ASTContext.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/Preprocessor.h>

#include "analyze/rule.h"
#include "analyze/token_scan.h"

namespace kb::analyze {

struct ParseDiagnostic {
  bool fatal = false;
  clang::SourceLocation loc;
  std::string text;
  std::vector<clang::SourceLocation> notes;  // "in instantiation of ... here"
};

// Clang's text output (kept verbatim in the report), plus each error with
// its location for the attribution below.
class RecordingPrinter : public clang::TextDiagnosticPrinter {
 public:
  using clang::TextDiagnosticPrinter::TextDiagnosticPrinter;
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override;
  std::vector<ParseDiagnostic> errors;
  // An error loading the precompiled header (stale, corrupt, missing): the
  // checker's fault, never the solution's; driver.cpp parses again without it.
  bool pch_failed = false;
};

// Sees every token the preprocessor hands the parser (macros expanded) and
// keeps those, written in the solution's files, that the policy bans.
class TokenRecorder {
 public:
  TokenRecorder(CheckContext& ctx, const TokenScanner& scanner, clang::Preprocessor& pp)
      : ctx_(ctx), scanner_(scanner), pp_(pp) {}
  void onToken(const clang::Token& tok);

  struct Hit {
    clang::SourceLocation loc;  // expansion location, in a solution file
    std::string name;
    TokenHit hit;
    bool is_asm = false;
  };
  const std::vector<Hit>& hits() const { return hits_; }

 private:
  struct Pending {
    clang::SourceLocation loc;
    std::string name, prev;
  };
  void flush(const std::string& next);
  CheckContext& ctx_;
  const TokenScanner& scanner_;
  clang::Preprocessor& pp_;
  std::vector<Hit> hits_;
  std::string prev_;
  bool have_pending_ = false;
  Pending pending_;
};

// At the end of a parse with errors: one parser-limit note per error line in
// the solution, and the token-scan findings in what Clang rejected.
void reportParserLimits(CheckContext& ctx, clang::ASTContext& ast,
                        const std::vector<clang::Decl*>& top_level,
                        const std::vector<ParseDiagnostic>& errors, TokenRecorder& tokens,
                        const TokenScanner& scanner);

}  // namespace kb::analyze
