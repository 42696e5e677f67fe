#include "analyze/rules/include.h"

#include <filesystem>

#include <clang/Lex/PPCallbacks.h>
#include <llvm/Support/Regex.h>

using namespace clang;

namespace kb::analyze {
namespace {

class IncludeCallbacks : public PPCallbacks {
 public:
  IncludeCallbacks(IncludeRule& rule, const SourceManager& sm) : rule_(rule), sm_(sm) {}
  void InclusionDirective(SourceLocation hash_loc, const Token&, StringRef file_name, bool angled,
                          CharSourceRange, OptionalFileEntryRef file, StringRef, StringRef,
                          const Module*, bool, SrcMgr::CharacteristicKind) override {
    rule_.onInclude(hash_loc, file_name, angled, file, sm_);
  }
  void EmbedDirective(SourceLocation hash_loc, StringRef file_name, bool angled,
                      OptionalFileEntryRef, const LexEmbedParametersResult&) override {
    rule_.onEmbed(hash_loc, file_name, angled, sm_);
  }

 private:
  IncludeRule& rule_;
  const SourceManager& sm_;
};

bool under(const std::filesystem::path& p, const std::filesystem::path& dir) {
  if (dir.empty()) return false;
  auto r = dir.begin();
  auto q = p.begin();
  for (; r != dir.end(); ++r, ++q) {
    if (r->empty()) continue;  // trailing slash
    if (q == p.end() || *r != *q) return false;
  }
  return true;
}

std::filesystem::path canon(const std::filesystem::path& p) {
  std::error_code ec;
  auto c = std::filesystem::weakly_canonical(p, ec);
  return ec ? p : c;
}

}  // namespace

void IncludeRule::registerPPCallbacks(Preprocessor& pp) {
  pp.addPPCallbacks(std::make_unique<IncludeCallbacks>(*this, pp.getSourceManager()));
}

bool IncludeRule::deniedName(llvm::StringRef name) const {
  for (const auto& pattern : ctx().policy().include_deny)
    if (llvm::Regex(pattern).match(name)) return true;
  return false;
}

void IncludeRule::onEmbed(SourceLocation hash_loc, StringRef spelled, bool angled, const SourceManager& sm) {
  if (!ctx().inSolution(hash_loc, sm)) return;
  report(hash_loc, sm, "#embed " + std::string(angled ? "<" : "\"") + spelled.str() +
                           (angled ? ">" : "\"") + " reads a file into the code");
}

bool IncludeRule::allowedLocation(const std::string& path) const {
  namespace fs = std::filesystem;
  const fs::path p = canon(path);
  const CheckOptions& o = ctx().options();
  if (ctx().pathInSolution(p.string())) return true;
  for (const fs::path& dir : {canon(o.interface_include), canon(o.cuda_path), canon(o.resource_dir)})
    if (under(p, dir)) return true;
  if (o.extension)  // a torch extension's: torch's headers (the policy's include_deny still applies)
    for (const fs::path& dir : o.extension->include_dirs)
      if (under(p, canon(dir))) return true;
  // The C and C++ standard libraries (libstdc++ and glibc, as Debian and
  // Ubuntu lay them out); third-party folders under /usr/include are not.
  if (under(p, "/usr/include/c++") || under(p, "/usr/include/x86_64-linux-gnu") ||
      under(p, "/usr/include/aarch64-linux-gnu"))
    return true;
  if (under(p, "/usr/include")) {
    fs::path rel = p.lexically_relative("/usr/include");
    std::string first = rel.begin()->string();
    if (std::distance(rel.begin(), rel.end()) == 1) return true;  // <stdio.h>, <math.h>, ...
    for (const char* libc : {"sys", "bits", "asm", "asm-generic", "linux", "gnu"})
      if (first == libc) return true;
  }
  return false;
}

void IncludeRule::onInclude(SourceLocation hash_loc, StringRef spelled, bool angled,
                            OptionalFileEntryRef file, const SourceManager& sm) {
  if (!ctx().inSolution(hash_loc, sm)) return;
  const std::string shown = angled ? "<" + spelled.str() + ">" : "\"" + spelled.str() + "\"";
  if (deniedName(spelled)) {
    report(hash_loc, sm, "#include " + shown + " is refused by the policy");
    return;
  }
  if (!file) return;  // Clang reports the missing file itself
  // The path header search found, resolved on the file system. Clang's
  // "real path" of a file is only lexically cleaned: with the compiler's
  // installation found at "/.." (no directory in argv[0]) libstdc++ is
  // "/../lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12", whose
  // ".." Clang drops lexically to "/include/c++/12", while /lib is a link
  // to /usr/lib and the file is /usr/include/c++/12/vector (issue 35).
  const std::string path = canon(file->getName().str()).string();
  // The same header reached by another spelling (<c++/12/thread>,
  // <x86_64-linux-gnu/sys/socket.h>, an absolute path): test every tail of
  // the resolved path of a file outside the solution.
  if (!ctx().pathInSolution(path)) {
    llvm::StringRef rest(path);
    while (!rest.empty()) {
      if (deniedName(rest)) {
        report(hash_loc, sm, "#include " + shown + " resolves to " + path + ", refused by the policy");
        return;
      }
      size_t slash = rest.find('/');
      if (slash == llvm::StringRef::npos) break;
      rest = rest.drop_front(slash + 1);
    }
  }
  if (!allowedLocation(path))
    report(hash_loc, sm, "#include " + shown + " resolves to " + path +
                             ", outside the solution and the allowed include directories");
}

}  // namespace kb::analyze
