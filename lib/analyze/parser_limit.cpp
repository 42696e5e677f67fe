#include "analyze/parser_limit.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include <clang/AST/Attr.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/Basic/DiagnosticFrontend.h>
#include <clang/Basic/DiagnosticSerialization.h>
#include <clang/Basic/TokenKinds.h>
#include <clang/Lex/Lexer.h>

using namespace clang;

namespace kb::analyze {
namespace {

// The text between the quotes of a string literal's spelling (prefixes,
// raw-string delimiters dropped; escapes left as written).
std::string literalContents(llvm::StringRef spelling) {
  size_t open = spelling.find('"'), close = spelling.rfind('"');
  if (open == llvm::StringRef::npos || close <= open) return "";
  llvm::StringRef body = spelling.slice(open + 1, close);
  if (open > 0 && spelling[open - 1] == 'R') {  // R"delim( ... )delim"
    size_t paren = body.find('(');
    size_t last = body.rfind(')');
    if (paren != llvm::StringRef::npos && last != llvm::StringRef::npos && last > paren)
      body = body.slice(paren + 1, last);
  }
  return body.str();
}

bool isAsmKeyword(const Token& t) { return t.is(tok::kw_asm); }

std::string spellingOf(const Token& t) {
  if (const IdentifierInfo* id = t.getIdentifierInfo()) return id->getName().str();
  if (const char* p = tok::getPunctuatorSpelling(t.getKind())) return p;
  return "";
}

bool deviceOnly(const Decl* d) {
  if (const auto* t = llvm::dyn_cast_or_null<FunctionTemplateDecl>(d)) d = t->getTemplatedDecl();
  const auto* fn = llvm::dyn_cast_or_null<FunctionDecl>(d);
  return fn && (fn->hasAttr<CUDAGlobalAttr>() || (fn->hasAttr<CUDADeviceAttr>() && !fn->hasAttr<CUDAHostAttr>()));
}

// A stretch of one file that Clang rejected: the top-level declaration
// (inside namespaces and extern "C" blocks) holding an error, or, where
// Clang dropped the declaration, the gap between its neighbours.
struct Region {
  FileID fid;
  unsigned begin = 0, end = 0;
  const Decl* decl = nullptr;
};

class RegionFinder {
 public:
  RegionFinder(ASTContext& ast) : sm_(ast.getSourceManager()), lo_(ast.getLangOpts()) {}

  Region find(SourceLocation loc, const std::vector<Decl*>& decls) {
    Region r;
    loc = sm_.getExpansionLoc(loc);
    r.fid = sm_.getFileID(loc);
    const unsigned off = sm_.getFileOffset(loc);
    r.end = sm_.getBufferData(r.fid).size();
    std::vector<const Decl*> level(decls.begin(), decls.end());
    while (true) {
      const Decl* inside = nullptr;
      for (const Decl* d : level) {
        unsigned b, e;
        if (!extent(d, r.fid, &b, &e)) continue;
        if (b <= off && off <= e) {
          inside = d;
          r.begin = b;
          r.end = e;
        } else if (e < off && e >= r.begin) {
          r.begin = e;  // gap: after the last declaration before the error
        } else if (b > off && b < r.end) {
          r.end = b;    // ... and before the first one after it
        }
      }
      if (!inside) return r;
      r.decl = inside;
      const auto* dc = llvm::dyn_cast<DeclContext>(inside);
      if (!llvm::isa<NamespaceDecl>(inside) && !llvm::isa<LinkageSpecDecl>(inside)) return r;
      level.assign(dc->decls_begin(), dc->decls_end());
      r.decl = nullptr;  // a namespace is not a function: no device context
    }
  }

 private:
  bool extent(const Decl* d, FileID fid, unsigned* b, unsigned* e) {
    SourceRange range = d->getSourceRange();
    if (range.isInvalid()) return false;
    SourceLocation bl = sm_.getExpansionLoc(range.getBegin());
    SourceLocation el = sm_.getExpansionRange(range.getEnd()).getEnd();
    if (sm_.getFileID(bl) != fid || sm_.getFileID(el) != fid) return false;
    *b = sm_.getFileOffset(bl);
    *e = sm_.getFileOffset(el) + Lexer::MeasureTokenLength(el, sm_, lo_);
    return true;
  }
  const SourceManager& sm_;
  const LangOptions& lo_;
};

unsigned lineOf(const std::string& text, size_t offset) {
  return 1 + std::count(text.begin(), text.begin() + std::min(offset, text.size()), '\n');
}

// After a fatal error Clang stops entering #includes, so what the parse saw
// cannot be trusted to be all: every code file of the solution is lexed raw
// (no macro expansion; macro bodies are lexed where they are written).
void rawScanSolution(CheckContext& ctx, const TokenScanner& scanner, const LangOptions& lo) {
  for (const solution::SolutionFile& f : ctx.solution().files) {
    if (!ctx.solution().isCode(f)) continue;
    std::ifstream in(f.absolute, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    Lexer raw(SourceLocation(), lo, text.data(), text.data(), text.data() + text.size());
    std::vector<std::pair<std::string, size_t>> toks;  // spelling, offset
    Token t;
    bool more = true;
    while (more) {
      more = !raw.LexFromRawLexer(t);
      if (t.is(tok::eof)) break;
      const char* start = text.data() + raw.getCurrentBufferOffset() - t.getLength();
      toks.emplace_back(std::string(start, t.getLength()), start - text.data());
    }
    auto report = [&](size_t i, const std::string& rule, const std::string& message) {
      if (ctx.policy().severityOf(rule) == "off") return;
      Finding fd;
      fd.rule = rule;
      fd.severity = ctx.policy().severityOf(rule) == "warning" ? Severity::Warning : Severity::Error;
      fd.file = f.path;
      fd.line = lineOf(text, toks[i].second);
      fd.column = 1;
      fd.message = message;
      ctx.findings().push_back(std::move(fd));
    };
    for (size_t i = 0; i < toks.size(); ++i) {
      const std::string& s = toks[i].first;
      if (s.empty()) continue;
      if (s.front() == '"' || (s.size() > 1 && s.find('"') != std::string::npos && std::isalpha(s.front()))) {
        if (auto hit = scanner.stringLiteral(literalContents(s)))
          report(i, hit->rule, "string \"" + literalContents(s) + "\" in a solution Clang stopped parsing: " +
                                   hit->message);
        continue;
      }
      if (!(std::isalpha(static_cast<unsigned char>(s.front())) || s.front() == '_')) continue;
      if (s == "asm" || s == "__asm__" || s == "__asm") {
        report(i, "raw-syscall", "inline assembly in a solution Clang stopped parsing (a fatal error): "
                                 "host or device cannot be told apart");
        continue;
      }
      const std::string prev = i > 0 ? toks[i - 1].first : "";
      const std::string next = i + 1 < toks.size() ? toks[i + 1].first : "";
      if (auto hit = scanner.identifier(s, prev, next))
        report(i, hit->rule, "'" + s + "' in a solution Clang stopped parsing (a fatal error): " + hit->message);
    }
  }
}

}  // namespace

void RecordingPrinter::HandleDiagnostic(DiagnosticsEngine::Level level, const Diagnostic& info) {
  TextDiagnosticPrinter::HandleDiagnostic(level, info);
  if (level >= DiagnosticsEngine::Error) {
    // Serialization's diagnostics are all about AST files (here: the PCH):
    // "has been modified since the precompiled header was built",
    // "malformed or corrupted AST file", "unable to read PCH file", ...
    const unsigned id = info.getID();
    if ((id >= diag::DIAG_START_SERIALIZATION && id < diag::DIAG_START_LEX) ||
        id == diag::err_fe_unable_to_load_pch)
      pch_failed = true;
    llvm::SmallString<160> text;
    info.FormatDiagnostic(text);
    errors.push_back({level == DiagnosticsEngine::Fatal, info.getLocation(), text.str().str(), {}});
  } else if (level == DiagnosticsEngine::Note && !errors.empty()) {
    errors.back().notes.push_back(info.getLocation());
  }
}

void TokenRecorder::flush(const std::string& next) {
  if (!have_pending_) return;
  have_pending_ = false;
  if (auto hit = scanner_.identifier(pending_.name, pending_.prev, next))
    hits_.push_back({pending_.loc, pending_.name, *hit, false});
}

void TokenRecorder::onToken(const Token& t) {
  const std::string spelling = t.isAnnotation() ? "" : spellingOf(t);
  flush(spelling);
  const std::string prev = prev_;
  prev_ = spelling;
  if (t.isAnnotation() || t.getLocation().isInvalid()) return;
  const SourceManager& sm = pp_.getSourceManager();
  const SourceLocation loc = sm.getExpansionLoc(t.getLocation());
  if (!ctx_.inSolution(loc, sm)) return;
  if (isAsmKeyword(t)) {
    hits_.push_back({loc, "asm", {"raw-syscall", "inline assembly in host code can make system calls"}, true});
  } else if (t.is(tok::identifier)) {
    have_pending_ = true;
    pending_ = {loc, spelling, prev};
  } else if (tok::isStringLiteral(t.getKind())) {
    std::string contents = literalContents(pp_.getSpelling(t));
    if (auto hit = scanner_.stringLiteral(contents))
      hits_.push_back({loc, "\"" + contents + "\"", *hit, false});
  }
}

void reportParserLimits(CheckContext& ctx, ASTContext& ast, const std::vector<Decl*>& top_level,
                        const std::vector<ParseDiagnostic>& errors, TokenRecorder& tokens,
                        const TokenScanner& scanner) {
  if (errors.empty()) return;
  Token end;
  end.startToken();
  end.setKind(tok::eof);
  tokens.onToken(end);  // decides the last identifier
  const SourceManager& sm = ast.getSourceManager();
  RegionFinder finder(ast);
  std::vector<Region> regions;
  bool unattributed = false, fatal = false;
  std::set<unsigned> noted_lines;
  std::set<std::pair<std::string, unsigned>> error_lines;
  for (const ParseDiagnostic& e : errors) {
    fatal = fatal || e.fatal;
    SourceLocation where = e.loc;
    if (!ctx.inSolution(where, sm)) {
      where = SourceLocation();
      for (SourceLocation n : e.notes)
        if (ctx.inSolution(n, sm)) {
          where = n;
          break;
        }
    }
    if (where.isInvalid()) {
      unattributed = true;
      continue;
    }
    Region r = finder.find(where, top_level);
    regions.push_back(r);
    error_lines.insert({ctx.solutionFile(where, sm), sm.getSpellingLineNumber(sm.getFileLoc(where))});
    ctx.report("parser-limit", where, sm,
               "Clang could not parse this (" + e.text +
                   "); if nvcc or g++ accepts it, that is a limit of the checker: the rest was "
                   "judged, and the tokens of the rejected declaration were scanned for banned names",
               /*note=*/true);
  }
  if (unattributed) {
    // An error with no location in the solution (inside a CUDA header, with
    // no instantiation note pointing back): every solution token counts.
    SourceLocation main = sm.getLocForStartOfFile(sm.getMainFileID());
    ctx.report("parser-limit", main, sm,
               "Clang reported an error outside the solution's files; if nvcc or g++ accepts the "
               "solution, that is a limit of the checker: every token of this file and its headers "
               "was scanned for banned names",
               /*note=*/true);
  }
  // Rules that judge a declaration as a whole (a global variable, a
  // load-time initialiser) do not judge one Clang rejected on its own line:
  // `int x = ;` is a parse error, not a mutable global. The token scan below
  // still looks at its names. Only the error's own line: a static local
  // elsewhere in a function that holds a g++-only construct, or a global
  // whose initialiser alone was rejected on another line, is still judged
  // (a review by attack, 2026-12-07, hid a counter in each).
  std::erase_if(ctx.findings(), [&](const Finding& f) {
    if (f.rule == "mutable-global" && ctx.initialisedDeclLines().count({f.file, f.line})) return false;
    return (f.rule == "mutable-global" || f.rule == "interpose") && error_lines.count({f.file, f.line});
  });
  std::set<std::pair<unsigned, std::string>> done;
  for (const TokenRecorder::Hit& h : tokens.hits()) {
    const FileID fid = sm.getFileID(h.loc);
    const unsigned off = sm.getFileOffset(h.loc);
    const Region* in = nullptr;
    for (const Region& r : regions)
      if (r.fid == fid && r.begin <= off && off <= r.end) in = &r;
    if (!in && !unattributed && !fatal) continue;
    if (h.is_asm && in && deviceOnly(in->decl)) continue;  // inline PTX in device code
    if (h.is_asm && !in) continue;  // outside any rejected declaration the AST judged it
    if (!done.insert({h.loc.getRawEncoding(), h.hit.rule}).second) continue;
    ctx.report(h.hit.rule, h.loc, sm,
               "'" + h.name + "' in code Clang could not parse (token scan): " + h.hit.message);
  }
  if (fatal) rawScanSolution(ctx, scanner, ast.getLangOpts());
}

}  // namespace kb::analyze
