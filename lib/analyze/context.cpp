#include <filesystem>

#include <clang/AST/DeclTemplate.h>
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

namespace {

bool bindingsOnly(clang::QualType t, int depth) {
  if (t.isNull() || depth > 12) return false;
  t = t.getCanonicalType().getNonReferenceType().getUnqualifiedType();
  const auto* rec = t->getAsCXXRecordDecl();
  if (!rec || !rec->hasDefinition()) return false;
  rec = rec->getDefinition();
  const std::string name = plainQualifiedName(rec);
  if (name == "std::basic_string" || name == "std::allocator" || name == "std::char_traits") return true;
  if (const auto* spec = llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(rec)) {
    const clang::TemplateArgumentList& args = spec->getTemplateArgs();
    if (name == "std::function") {
      // std::function<R(Args...)>: a binding takes the module.
      if (args.size() != 1 || args[0].getKind() != clang::TemplateArgument::Type) return false;
      const auto* fn = args[0].getAsType()->getAs<clang::FunctionProtoType>();
      if (!fn) return false;
      for (clang::QualType p : fn->getParamTypes()) {
        const auto* r = p.getNonReferenceType()->getAsCXXRecordDecl();
        if (r && plainQualifiedName(r) == "pybind11::module_") return true;
      }
      return false;
    }
    for (const char* c : {"std::vector", "std::pair", "std::tuple", "std::map", "std::unordered_map", "std::list",
                          "std::deque", "std::less", "std::hash", "std::equal_to"}) {
      if (name != c) continue;
      for (const clang::TemplateArgument& a : args.asArray())
        if (a.getKind() == clang::TemplateArgument::Type && !bindingsOnly(a.getAsType(), depth + 1)) return false;
      return true;
    }
    if (name.rfind("std::", 0) == 0) return false;
  } else if (name.rfind("std::", 0) == 0) {
    return false;
  }
  for (const clang::CXXBaseSpecifier& b : rec->bases())
    if (!bindingsOnly(b.getType(), depth + 1)) return false;
  for (const clang::FieldDecl* f : rec->fields())
    if (f->isMutable() || !bindingsOnly(f->getType(), depth + 1)) return false;
  return true;
}

}  // namespace

bool holdsOnlyBindings(clang::QualType t) { return bindingsOnly(t, 0); }

}  // namespace kb::analyze
