#include "agent/workspace.h"

#include <sys/stat.h>

#include <fstream>
#include <system_error>

namespace kb::agent {
namespace fs = std::filesystem;

namespace {

void copyFile(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (!fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec) || ec)
    throw UsageError("cannot copy " + from.string() + " to " + to.string() + ": " + ec.message());
  fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                          fs::perms::others_read, ec);
}

}  // namespace

std::string solutionSkeleton() {
  return R"(// The entry point of your solution. See AGENT.md and include/kb/solution.h.
// Put kernels in kernels/*.cu (with a host launcher each) and call them here.
#include <kb/solution.h>

KB_FORWARD(ctx) {
  ctx.fail("not implemented yet");
}
)";
}

Workspace::Workspace(fs::path root) : root_(fs::absolute(std::move(root)).lexically_normal()) {
  if (!root_.empty() && root_.filename().empty()) root_ = root_.parent_path();
}

Workspace Workspace::create(const fs::path& root, const WorkspaceSetup& setup) {
  if (!fs::is_regular_file(setup.task_dir / "model.py"))
    throw UsageError(setup.task_dir.string() + ": no model.py");
  if (!fs::is_regular_file(setup.guide))
    throw UsageError("agent guide not found: " + setup.guide.string());
  if (!fs::is_regular_file(setup.interface_header))
    throw UsageError("solution interface header not found: " + setup.interface_header.string());
  std::error_code ec;
  fs::remove_all(root, ec);
  if (ec) throw Error("cannot empty workspace " + root.string() + ": " + ec.message());
  fs::create_directories(root / "solution" / "kernels", ec);
  if (ec) throw Error("cannot create workspace " + root.string() + ": " + ec.message());
  Workspace ws(fs::canonical(root));
  copyFile(setup.task_dir / "model.py", ws.root_ / "model.py");
  copyFile(setup.guide, ws.root_ / "AGENT.md");
  copyFile(setup.interface_header, ws.root_ / "include" / "kb" / "solution.h");
  std::ofstream out(ws.solutionDir() / "forward.cpp");
  out << solutionSkeleton();
  if (!out) throw Error("cannot write the solution skeleton in " + root.string());
  return ws;
}

fs::path Workspace::resolve(const std::string& path) const {
  if (path.empty()) throw PathRefused("empty path");
  if (path.find('\0') != std::string::npos) throw PathRefused("path contains a NUL byte");
  if (path.front() == '/')
    throw PathRefused("absolute path refused: '" + path +
                      "'; give a path relative to the workspace root, e.g. solution/forward.cpp");
  if (path.front() == '~')
    throw PathRefused("'~' is not expanded: '" + path + "'; give a path relative to the workspace root");
  fs::path out = root_;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    std::string part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    start = slash == std::string::npos ? path.size() + 1 : slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..")
      throw PathRefused("'..' refused in '" + path + "': the workspace is the whole world here");
    out /= part;
    struct stat st;
    if (::lstat(out.c_str(), &st) == 0) {
      if (S_ISLNK(st.st_mode))
        throw PathRefused("'" + display(out) + "' is a symbolic link; links are not followed");
    } else {
      // Missing from here on: a later component cannot be a link either.
      for (size_t s = start; s <= path.size();) {
        size_t sl = path.find('/', s);
        std::string p = path.substr(s, sl == std::string::npos ? std::string::npos : sl - s);
        s = sl == std::string::npos ? path.size() + 1 : sl + 1;
        if (p == "..") throw PathRefused("'..' refused in '" + path + "'");
        if (!p.empty() && p != ".") out /= p;
      }
      break;
    }
  }
  return out;
}

std::string Workspace::display(const fs::path& absolute) const {
  fs::path rel = absolute.lexically_relative(root_);
  if (rel.empty() || rel == ".") return ".";
  return rel.generic_string();
}

}  // namespace kb::agent
