#include <filesystem>

#include <clang/Basic/SourceManager.h>

#include "analyze/rule.h"

namespace kb::analyze {

bool CheckContext::pathInSolution(const std::string& path) const {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  if (ec) return false;
  auto r = solution_.root.begin();
  auto q = p.begin();
  for (; r != solution_.root.end(); ++r, ++q)
    if (q == p.end() || *r != *q) return false;
  return true;
}

std::string CheckContext::solutionFile(clang::SourceLocation loc, const clang::SourceManager& sm) {
  if (loc.isInvalid()) return "";
  clang::SourceLocation file_loc = sm.getFileLoc(loc);
  clang::FileID fid = sm.getFileID(file_loc);
  if (fid.isInvalid()) return "";
  unsigned key = fid.getHashValue();
  auto it = file_cache_.find(key);
  if (it != file_cache_.end()) return it->second;
  std::string rel;
  if (auto entry = sm.getFileEntryRefForID(fid)) {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::weakly_canonical(std::string(entry->getName()), ec);
    if (!ec && pathInSolution(p.string()))
      rel = p.lexically_relative(solution_.root).generic_string();
  }
  file_cache_[key] = rel;
  return rel;
}

void CheckContext::report(const std::string& rule, clang::SourceLocation loc,
                          const clang::SourceManager& sm, std::string message, bool note) {
  std::string file = solutionFile(loc, sm);
  if (file.empty()) return;  // only the solution's own code is judged
  std::string sev = policy_.severityOf(rule);
  if (sev == "off") return;
  clang::SourceLocation file_loc = sm.getFileLoc(loc);
  Finding f;
  f.rule = rule;
  f.severity = note ? Severity::Note : sev == "warning" ? Severity::Warning : Severity::Error;
  f.file = file;
  f.line = sm.getSpellingLineNumber(file_loc);
  f.column = sm.getSpellingColumnNumber(file_loc);
  f.message = std::move(message);
  findings_.push_back(std::move(f));
}

std::string plainQualifiedName(const clang::NamedDecl* decl) {
  std::string name = decl->getNameAsString();
  for (const clang::DeclContext* dc = decl->getDeclContext(); dc; dc = dc->getParent()) {
    if (const auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(dc)) {
      if (ns->isInline() || ns->isAnonymousNamespace()) continue;
      name = ns->getNameAsString() + "::" + name;
    } else if (const auto* rd = llvm::dyn_cast<clang::RecordDecl>(dc)) {
      if (rd->getIdentifier()) name = rd->getNameAsString() + "::" + name;
    }
  }
  return name;
}

}  // namespace kb::analyze
