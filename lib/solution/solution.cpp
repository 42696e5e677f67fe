#include "solution/solution.h"

#include <cctype>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/error.h"
#include "core/file.h"
#include "core/hash.h"

namespace fs = std::filesystem;

namespace kb::solution {
namespace {

bool isInside(const fs::path& root, const fs::path& p) {
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q)
    if (q == p.end() || *r != *q) return false;
  return true;
}

}  // namespace

// Letters, digits and . _ + - in every part of a relative path, no part
// starting with '-'.
bool plainCodePath(const std::string& rel) {
  bool part_start = true;
  for (unsigned char c : rel) {
    if (c == '/') {
      part_start = true;
      continue;
    }
    if (part_start && c == '-') return false;
    part_start = false;
    if (!std::isalnum(c) && c != '.' && c != '_' && c != '+' && c != '-') return false;
  }
  return !rel.empty();
}

SourceKind classifyPath(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  if (ext == ".cu") return SourceKind::CudaSource;
  if (ext == ".cpp" || ext == ".cc" || ext == ".cxx") return SourceKind::CxxSource;
  if (ext == ".cuh" || ext == ".h" || ext == ".hpp" || ext == ".hh" || ext == ".inl")
    return SourceKind::Header;
  if (ext == ".py") return SourceKind::Python;
  return SourceKind::Other;
}

bool isWorkspaceHarnessFile(const std::string& rel) { return rel == "model.py" || rel.rfind("utils/", 0) == 0; }

std::vector<const SolutionFile*> Solution::workspaceSources() const {
  std::vector<const SolutionFile*> out;
  if (format != Format::Workspace) return out;
  for (const auto& f : files) {
    if (f.kind != SourceKind::CudaSource && f.kind != SourceKind::CxxSource) continue;
    const std::string::size_type slash = f.path.find('/');
    if (slash == std::string::npos || (f.path.compare(0, slash, "kernels") == 0 &&
                                       f.path.find('/', slash + 1) == std::string::npos))
      out.push_back(&f);
  }
  return out;
}

const char* formatName(Format f) {
  switch (f) {
    case Format::Native: return "native";
    case Format::KernelBench: return "kernelbench";
    case Format::Workspace: return "workspace";
  }
  return "native";
}

std::vector<const SolutionFile*> Solution::sources() const {
  std::vector<const SolutionFile*> out;
  for (const auto& f : files)
    if (f.kind == SourceKind::CudaSource || f.kind == SourceKind::CxxSource) out.push_back(&f);
  std::stable_partition(out.begin(), out.end(),
                        [](const SolutionFile* f) { return f->path == "forward.cpp"; });
  return out;
}

Solution loadSolution(const fs::path& dir, const SolutionLimits& limits) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw UsageError("solution directory not found: " + dir.string());
  // One .py file: KernelBench's single-file solution; only that file.
  bool single_file = fs::is_regular_file(dir, ec) && dir.extension() == ".py";
  if (!single_file && !fs::is_directory(dir, ec)) throw UsageError("not a directory: " + dir.string());
  Solution s;
  s.root = fs::canonical(single_file ? dir.parent_path().empty() ? fs::path(".") : dir.parent_path() : dir, ec);
  if (ec) throw UsageError("cannot resolve " + dir.string() + ": " + ec.message());

  std::uintmax_t total = 0;
  std::vector<fs::path> paths;
  if (single_file) {
    paths.push_back(s.root / dir.filename());
  } else {
    fs::recursive_directory_iterator it(s.root, fs::directory_options::none, ec), end;
    if (ec) throw UsageError("cannot list " + dir.string() + ": " + ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec) throw UsageError("cannot list " + dir.string() + ": " + ec.message());
      paths.push_back(it->path());
      // Folders count too; the files are checked against the limit below.
      if (paths.size() > 4 * limits.max_files + 64)
        throw UsageError("solution has more than " + std::to_string(limits.max_files) + " files");
    }
  }
  for (const fs::path& p : paths) {
    const fs::directory_entry it(p, ec);
    std::string rel = p.lexically_relative(s.root).generic_string();
    if (it.is_symlink(ec)) {
      fs::path target = fs::weakly_canonical(p, ec);
      if (ec || !isInside(s.root, target)) {
        s.escapes.push_back({rel, ec ? fs::read_symlink(p, ec).string() : target.string()});
        continue;
      }
      if (fs::is_directory(target, ec)) continue;  // its files are listed where they live
    }
    if (it.is_directory(ec)) continue;
    SolutionFile f;
    f.path = rel;
    f.absolute = p;
    f.kind = classifyPath(p);
    f.size = fs::file_size(p, ec);
    if (ec) throw UsageError("cannot read " + p.string() + ": " + ec.message());
    // Every file counts against the limits, read or not: a gigabyte "notes"
    // file beside forward.cpp would otherwise ride along into every copy
    // of the solution (a replay, a workspace, a service request).
    if (f.size > limits.max_file_bytes)
      throw UsageError(rel + ": " + std::to_string(f.size) + " bytes is over the limit of " +
                       std::to_string(limits.max_file_bytes) + " for one file of a solution");
    total += f.size;
    if (total > limits.max_total_bytes)
      throw UsageError("solution files exceed " + std::to_string(limits.max_total_bytes) + " bytes in total");
    if (f.kind != SourceKind::Other) {
      // A code file's name reaches compiler command lines, and nvcc runs its
      // steps through a shell: `a$(cmd).cu` would run cmd on the host, and
      // a name starting with '-' is a compiler flag (`-wrapper=...`).
      if (!plainCodePath(rel))
        throw UsageError(rel + ": a code file's name may use only letters, digits and . _ + - (and / between "
                               "folders), and no part may start with '-'");
      std::string content = readFile(p);
      if (content.find('\0') != std::string::npos)
        throw UsageError(rel + ": binary file (contains NUL bytes) where source code is expected");
      f.sha256 = sha256Hex(content);
    }
    s.files.push_back(std::move(f));
    if (s.files.size() > limits.max_files)
      throw UsageError("solution has more than " + std::to_string(limits.max_files) + " files");
  }
  std::sort(s.files.begin(), s.files.end(),
            [](const SolutionFile& a, const SolutionFile& b) { return a.path < b.path; });
  auto has = [&](const std::string& path) {
    return std::any_of(s.files.begin(), s.files.end(), [&](const SolutionFile& f) { return f.path == path; });
  };
  if (single_file) {
    s.format = Format::KernelBench;
    s.entry = dir.filename().string();
  } else if (has("forward.cpp")) {
    s.format = Format::Native;
  } else if (has("model_new.py")) {
    s.format = has("binding.cpp") ? Format::Workspace : Format::KernelBench;
    s.entry = "model_new.py";
  } else {
    throw UsageError("no forward.cpp (nor model_new.py) in " + dir.string());
  }
  // The paper's fixed files that its own harness runs (utils/: compile,
  // verification, profiling) and its copy of the reference (model.py) are
  // the judge's to provide: listed, never hashed, compiled or imported.
  if (s.format == Format::Workspace)
    for (auto& f : s.files)
      if (isWorkspaceHarnessFile(f.path)) {
        f.kind = SourceKind::Other;
        f.sha256.clear();
      }

  Sha256 h;
  for (const auto& f : s.files) {
    if (f.kind == SourceKind::Other) continue;
    h.update(f.path);
    h.update(std::string_view("\0", 1));
    h.update(f.sha256);
  }
  s.hash = "sha256:" + h.hexDigest();
  return s;
}

}  // namespace kb::solution
