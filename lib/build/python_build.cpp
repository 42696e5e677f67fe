// The build stage of a Python-format solution (docs/solution-format.md):
// the cache entry holds the trusted adapter (lib/pymodel, copied in as
// solution.so), the solution's Python files, the torch extensions it uses
// (load_inline's, a workspace's binding.cpp and kernels/), built here by the
// trusted stage (build.cpp), and pymodel.json (the entry file, the
// extensions, and the task's init: the seed and the arguments ModelNew is
// built with). The candidate never runs a compiler.
#include "build/python_build.h"

#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "core/file.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/paths.h"
#include "python/scripts.h"

namespace fs = std::filesystem;

namespace kb::build {

fs::path pythonAdapterPath() {
  if (const char* env = std::getenv("KB_PYMODEL_ADAPTER"); env && *env) return env;
  if (fs::path installed = installedHelper("libkb_pymodel.so"); !installed.empty()) return installed;
#ifdef KB_PYMODEL_BUILD_PATH
  if (::access(KB_PYMODEL_BUILD_PATH, R_OK) == 0) return KB_PYMODEL_BUILD_PATH;
#endif
  return {};
}

namespace {

std::vector<std::string> stringList(const Json& j) {
  std::vector<std::string> out;
  if (j.is_string()) out.push_back(j.get<std::string>());
  else if (j.is_array())
    for (const auto& e : j)
      if (e.is_string()) out.push_back(e.get<std::string>());
  return out;
}

bool matchesAny(const std::string& flag, std::initializer_list<const char*> patterns) {
  for (const char* p : patterns)
    if (std::regex_match(flag, std::regex(p))) return true;
  return false;
}

}  // namespace

ExtensionList readInlineExtensions(const solution::Solution& solution) {
  ExtensionList out;
  std::vector<std::string> args = {solution.root.string()};
  for (const auto& f : solution.files)
    if (f.kind == solution::SourceKind::Python) args.push_back(f.path);
  args.push_back("--extract");
  python::ScriptResult run;
  try {
    run = python::runScript(python::pythonPath(), "pycheck.py", args);
  } catch (const std::exception& e) {
    out.problem = std::string("cannot read the load_inline calls: ") + e.what();
    return out;
  }
  bool done = false;
  for (const Json& line : run.lines) {
    if (line.value("done", false)) done = true;
    if (!line.contains("extension")) continue;
    const Json& x = line["extension"];
    InlineExtension e;
    e.name = x.value("name", "");
    e.file = x.value("file", "");
    e.line = x.value("line", 0);
    e.cpp_sources = stringList(x.value("cpp_sources", Json()));
    e.cuda_sources = stringList(x.value("cuda_sources", Json()));
    e.functions = x.value("functions", Json());
    e.extra_cflags = stringList(x.value("extra_cflags", Json()));
    e.extra_cuda_cflags = stringList(x.value("extra_cuda_cflags", Json()));
    e.extra_ldflags = stringList(x.value("extra_ldflags", Json()));
    out.extensions.push_back(std::move(e));
  }
  if (!done) out.problem = "the load_inline reader ended early (exit " + std::to_string(run.exit_code) + ")";
  return out;
}

std::string extensionMainCpp(const InlineExtension& e) {
  std::string text = "#include <torch/extension.h>\n";
  for (const auto& s : e.cpp_sources) text += s + "\n";
  std::vector<std::pair<std::string, std::string>> fns;
  if (e.functions.is_string()) fns.emplace_back(e.functions.get<std::string>(), e.functions.get<std::string>());
  else if (e.functions.is_array())
    for (const auto& f : e.functions) fns.emplace_back(f.get<std::string>(), f.get<std::string>());
  else if (e.functions.is_object())
    for (const auto& [k, v] : e.functions.items()) fns.emplace_back(k, v.is_string() ? v.get<std::string>() : k);
  if (!e.functions.is_null()) {
    text += "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n";
    for (const auto& [name, doc] : fns)
      text += "m.def(\"" + name + "\", torch::wrap_pybind_function(" + name + "), \"" + doc + "\");\n";
    text += "}\n";
  }
  return text;
}

std::string extensionCudaSource(const InlineExtension& e) {
  if (e.cuda_sources.empty()) return {};
  std::string text = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n";
  for (const auto& s : e.cuda_sources) text += s + "\n";
  return text;
}

std::string refusedExtensionFlag(const InlineExtension& e) {
  // Flags that change code generation or diagnostics only: no paths, no
  // plugins, no response files, no wrappers, no output redirection.
  for (const auto& f : e.extra_cflags)
    if (!matchesAny(f, {"-O[0-3s]?", "-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.]*)?", "-U[A-Za-z_][A-Za-z0-9_]*",
                        "-std=(c|gnu)\\+\\+(14|17|20)", "-W[a-z0-9=-]*", "-w", "-g[0-3]?", "-march=native",
                        "-ffast-math", "-funroll-loops", "-fno-[a-z-]+"}))
      return "extra_cflags " + f;
  for (const auto& f : e.extra_cuda_cflags)
    if (!matchesAny(f, {"-O[0-3]", "-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.]*)?", "-U[A-Za-z_][A-Za-z0-9_]*",
                        "-std=c\\+\\+(14|17|20)", "--?use_fast_math", "--expt-relaxed-constexpr",
                        "--expt-extended-lambda", "--extended-lambda", "-lineinfo", "-w", "--?maxrregcount=[0-9]+",
                        "-Xptxas=-?[A-Za-z0-9,=-]+", "--ptxas-options=-?[A-Za-z0-9,=-]+", "-res-usage",
                        "-arch=sm_[0-9]+a?", "-gencode=arch=compute_[0-9]+a?,code=(sm|compute)_[0-9]+a?",
                        "-Xcompiler=-O[0-3]", "--restrict", "-ftz=(true|false)", "-prec-div=(true|false)",
                        "-prec-sqrt=(true|false)", "-fmad=(true|false)"}))
      return "extra_cuda_cflags " + f;
  for (const auto& f : e.extra_ldflags)
    if (!matchesAny(f, {"-l(cublas|cublasLt|cudnn|cuda|cudart|curand|cufft|cusparse|cusolver)"}))
      return "extra_ldflags " + f;
  return {};
}

TorchExtensionFlags torchExtensionFlags(bool cuda) {
  TorchExtensionFlags t;
#if defined(KB_TORCH_DIR) && defined(KB_PYTHON_INCLUDE)
  const fs::path torch = KB_TORCH_DIR;
  t.available = true;
  t.compile = {"-DTORCH_API_INCLUDE_EXTENSION_H", "-D_GLIBCXX_USE_CXX11_ABI=1",
               "-isystem", (torch / "include").string(),
               "-isystem", (torch / "include/torch/csrc/api/include").string(),
               "-isystem", KB_PYTHON_INCLUDE};
  t.include_roots = {torch, KB_PYTHON_INCLUDE};
  const std::string lib = (torch / "lib").string();
  t.link = {"-L" + lib, "-Wl,-rpath," + lib, "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"};
  if (cuda) t.link.insert(t.link.end(), {"-lc10_cuda", "-ltorch_cuda"});
#else
  (void)cuda;
#endif
  return t;
}

PythonStage stagePython(const solution::Solution& solution, const BuildOptions& options, const fs::path& work,
                        const std::map<std::string, std::string>& extensions,
                        const std::map<std::string, std::string>& failed) {
  PythonStage out;
  fs::path adapter = options.python_adapter.empty() ? pythonAdapterPath() : options.python_adapter;
  if (adapter.empty() || !fs::exists(adapter)) {
    out.problem = "this build has no Python adapter (lib/pymodel needs LibTorch and Python's development files)";
    return out;
  }
  // No task (kbcheck build SOLUTION): built all the same, with no init;
  // running it needs the task's (the adapter says so).
  std::error_code ec;
  fs::copy_file(adapter, work / "solution.so", fs::copy_options::overwrite_existing, ec);
  if (ec) {
    out.problem = "cannot copy the Python adapter: " + ec.message();
    return out;
  }
  for (const auto& f : solution.files) {
    if (f.kind != solution::SourceKind::Python) continue;
    std::string content = readFile(f.absolute);
    if (sha256Hex(content) != f.sha256) {
      out.problem = f.path + " changed after the solution was read; build again";
      return out;
    }
    fs::create_directories((work / f.path).parent_path(), ec);
    writeFileAtomic(work / f.path, content);
  }
  Json config;
  config["entry"] = solution.entry;
  config["extensions"] = Json::object();
  for (const auto& [name, file] : extensions) config["extensions"][name] = file;
  config["failed_extensions"] = Json::object();
  for (const auto& [name, why] : failed) config["failed_extensions"][name] = why;
  config["init"] = options.python_init;
  writeJsonFile(work / "pymodel.json", config);
  out.ok = true;
  return out;
}

std::string firstInclude(const std::string& text) {
  static const std::regex kInclude(R"(^[ \t]*#[ \t]*include[ \t]*<([A-Za-z0-9_./]+)>[ \t]*(//.*)?$)");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto last = line.find_last_not_of(" \t\r\f\v");
    if (last != std::string::npos && line[last] == '\\') return {};
    const auto first = line.find_first_not_of(" \t\r\f\v");
    if (first == std::string::npos || line.compare(first, 2, "//") == 0) continue;
    std::smatch m;
    const std::string code = line.substr(0, last + 1);
    if (std::regex_match(code, m, kInclude)) return m[1];
    return {};
  }
  return {};
}


std::vector<std::string> dependencyList(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  bool after_colon = false;
  auto flush = [&] {
    if (cur.empty()) return;
    if (after_colon) out.push_back(cur);
    else if (cur.back() == ':') after_colon = true;
    cur.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      flush();
      ++i;
    } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      cur += ' ';
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      flush();
    } else if (c == ':' && !after_colon && cur.empty()) {
      after_colon = true;  // nvcc writes "a.o : a.cu"
    } else {
      cur += c;
    }
  }
  flush();
  return out;
}

std::string includeOutside(const fs::path& depfile, const fs::path& cwd, const std::vector<fs::path>& allowed) {
  std::ifstream in(depfile, std::ios::binary);
  if (!in) return "wrote no dependency list, so what it read is not known";
  std::ostringstream text;
  text << in.rdbuf();
  std::error_code ec;
  for (const std::string& dep : dependencyList(text.str())) {
    fs::path p = fs::weakly_canonical(fs::path(dep).is_absolute() ? fs::path(dep) : cwd / dep, ec);
    if (ec) return "reads " + dep + ", which cannot be resolved";
    bool inside = false;
    for (const fs::path& root : allowed) {
      auto r = root.begin(), q = p.begin();
      for (; r != root.end() && q != p.end() && *r == *q; ++r, ++q) {
      }
      if (r == root.end()) {
        inside = true;
        break;
      }
    }
    if (!inside)
      return "reads " + p.string() + ", outside the solution and the toolchain's, torch's and Python's headers";
  }
  return {};
}

Json taskInitOf(const fs::path& task_dir) {
  if (task_dir.empty() || !fs::exists(task_dir / "task.json")) return nullptr;
  Json task = readJsonFile(task_dir / "task.json");
  return task.contains("init") ? task["init"] : Json();
}

std::string pythonKeyFields(const BuildOptions& options) {
  fs::path adapter = options.python_adapter.empty() ? pythonAdapterPath() : options.python_adapter;
  std::string fields = "python_init=" + options.python_init.dump();
  if (!adapter.empty()) fields += "\nadapter=" + sha256Hex(readFile(adapter));
  // How extensions are built (v2: the dependency check, the precompiled
  // headers), the workspace's module and flags, and the torch they are
  // built against (its version.py names the version and the git commit).
  const WorkspaceExtension w = workspaceExtension();
  fields += "\nextensions=v2\nworkspace=" + w.name;
  for (const auto& f : w.cflags) fields += " " + f;
  for (const auto& f : w.cuda_cflags) fields += " " + f;
#ifdef KB_TORCH_DIR
  std::error_code ec;
  if (const fs::path version = fs::path(KB_TORCH_DIR) / "version.py"; fs::exists(version, ec))
    fields += "\ntorch=" + sha256Hex(readFile(version));
#endif
  return fields;
}

}  // namespace kb::build
