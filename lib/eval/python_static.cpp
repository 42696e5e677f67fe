// The static stage of a Python-format solution: scripts/pycheck.py's rules
// (docs/rules/python.md) over its .py files, then the Clang rules over the
// C++ and CUDA it builds into torch extensions (docs/rules/README.md "Torch
// extensions"), all reported in the Clang checker's form
// (analyze::StaticResult), so that the static report, its rendering and the
// verdict are the same for every format. Python code is parsed with
// Python's ast, never run; a load_inline call's sources are the literal
// arguments that the build stage reads too (build::readInlineExtensions),
// written out as the build writes them (extensionMainCpp, extensionCudaSource)
// and parsed as it compiles them.
#include "eval/python_static.h"

#ifdef KB_HAVE_CLANG
#include <array>

#include "analyze/render.h"
#include "build/python_build.h"
#include "core/clock.h"
#include "core/file.h"
#include "core/scratch_dir.h"
#include "python/scripts.h"
#include "verify/private_dirs.h"

namespace fs = std::filesystem;

namespace kb::eval {
namespace {

// Where the characters of one load_inline source string were written
// (pycheck.py --source-map): segments {offset in the string, line, column}.
using Segments = std::vector<std::array<long, 3>>;

struct SourceMaps {
  std::vector<Segments> cpp, cuda;
};

std::vector<Segments> segmentsOf(const Json& j) {
  std::vector<Segments> out;
  if (!j.is_array()) return out;
  for (const Json& source : j) {
    Segments segs;
    if (source.is_array())
      for (const Json& s : source)
        if (s.is_array() && s.size() == 3 && s[0].is_number() && s[1].is_number() && s[2].is_number())
          segs.push_back({s[0].get<long>(), s[1].get<long>(), s[2].get<long>()});
    out.push_back(std::move(segs));
  }
  return out;
}

std::string mapKey(const std::string& file, int line, const std::string& name) {
  return file + ":" + std::to_string(line) + ":" + name;
}

// pycheck.py's own rules; fills `maps` with the source maps of the
// literal load_inline calls, by mapKey.
analyze::StaticResult pythonRules(const solution::Solution& solution, const analyze::StaticPolicy& policy,
                                  std::map<std::string, SourceMaps>& maps) {
  analyze::StaticResult result;
  auto severity = [&](const std::string& rule) {
    auto it = policy.python_rules.find(rule);
    return it == policy.python_rules.end() ? std::string("error") : it->second;
  };
  std::vector<std::string> args = {solution.root.string()};
  for (const auto& f : solution.files)
    if (f.kind == solution::SourceKind::Python) args.push_back(f.path);
  // pycheck.py marks torch compute at the policy's severity (it needs the
  // severity to look for it at all); every other rule is filtered here.
  args.push_back("--torch-compute");
  args.push_back(severity("py-torch-compute"));
  args.push_back("--source-map");
  python::ScriptResult run;
  try {
    run = python::runScript(python::pythonPath(), "pycheck.py", args);
  } catch (const std::exception& e) {
    result.infra_failed = true;
    result.infra_message = std::string("the Python checker could not start: ") + e.what();
    return result;
  }
  bool done = false;
  for (const Json& line : run.lines) {
    if (line.contains("parse_error")) {
      // Unlike a C++ source Clang cannot parse (a parser-limit note; nvcc
      // decides), a Python file the rules cannot read fails: CPython's own
      // parser is the one that runs it, so nothing legitimate is lost, and a
      // file made to defeat the checker (nesting past the recursion limit)
      // is the file's fault, never an infra_error.
      const std::string text = line["parse_error"].get<std::string>();
      result.parse_errors.push_back(text);
      analyze::Finding f;
      f.rule = "py-unreadable";
      f.severity = severity(f.rule) == "warning" ? analyze::Severity::Warning : analyze::Severity::Error;
      f.file = text.substr(0, text.find(':'));
      f.message = "the Python rules cannot read this file: " + text.substr(text.find("error: ") == std::string::npos
                                                                               ? 0
                                                                               : text.find("error: ") + 7);
      if (severity(f.rule) != "off") result.findings.push_back(std::move(f));
    } else if (line.contains("source_map")) {
      const Json& m = line["source_map"];
      SourceMaps& sm = maps[mapKey(m.value("file", ""), m.value("line", 0), m.value("name", ""))];
      sm.cpp = segmentsOf(m.value("cpp_sources", Json()));
      sm.cuda = segmentsOf(m.value("cuda_sources", Json()));
    } else if (line.value("done", false)) {
      done = true;
    } else if (line.contains("rule")) {
      analyze::Finding f;
      f.rule = line["rule"].get<std::string>();
      std::string sev = f.rule == "py-torch-compute" ? line.value("severity", "error") : severity(f.rule);
      if (sev == "off") continue;
      f.severity = sev == "warning" ? analyze::Severity::Warning : analyze::Severity::Error;
      f.file = line.value("file", "");
      f.line = line.value("line", 0u);
      f.column = line.value("column", 0u);
      f.message = line.value("message", "");
      f.source_line = line.value("source_line", "");
      result.findings.push_back(std::move(f));
    }
  }
  if (!done) {
    result.infra_failed = true;
    result.infra_message = "the Python checker ended early (exit " + std::to_string(run.exit_code) + ")";
  }
  result.translation_units = static_cast<unsigned>(args.size() - 4);
  return result;
}

// One generated file of a load_inline extension and where its sources sit.
struct Generated {
  const build::InlineExtension* ext = nullptr;
  std::string text;                   // as the build writes it
  const std::vector<std::string>* sources = nullptr;
  const std::vector<Segments>* maps = nullptr;
  std::size_t begin = std::string::npos;  // byte offset of the first source in text
};

// The generated file holds the sources one after the other, each followed
// by a newline (build/python_build.cpp); where they start is found, not
// assumed, so that a change of the generator's prelude keeps the mapping.
std::size_t sourcesOffset(const std::string& text, const std::vector<std::string>& sources) {
  std::string joined;
  for (const auto& s : sources) joined += s + "\n";
  return joined.empty() ? std::string::npos : text.find(joined);
}

// The .py line and column of (line, column) of a generated file; false for
// the code the generator wrote around the sources (the includes, the
// pybind11 module) or where no map says.
bool mapBack(const Generated& g, unsigned line, unsigned column, unsigned* py_line, unsigned* py_column) {
  if (g.begin == std::string::npos || line == 0) return false;
  std::size_t off = 0;
  for (unsigned l = 1; l < line; ++l) {
    off = g.text.find('\n', off);
    if (off == std::string::npos) return false;
    ++off;
  }
  off += column ? column - 1 : 0;
  if (off < g.begin) return false;
  std::size_t o = off - g.begin;
  for (std::size_t i = 0; i < g.sources->size(); ++i) {
    const std::string& s = (*g.sources)[i];
    if (o > s.size()) {
      o -= s.size() + 1;
      continue;
    }
    if (i >= g.maps->size() || (*g.maps)[i].empty()) return false;
    const Segments& segs = (*g.maps)[i];
    const std::array<long, 3>* seg = &segs.front();
    for (const auto& x : segs)
      if (x[0] >= 0 && static_cast<std::size_t>(x[0]) <= o) seg = &x;
    long l = (*seg)[1], c = (*seg)[2];
    for (std::size_t k = static_cast<std::size_t>(std::max(0L, (*seg)[0])); k < o && k < s.size(); ++k) {
      if (s[k] == '\n') ++l, c = 1;
      else ++c;
    }
    *py_line = static_cast<unsigned>(l);
    *py_column = static_cast<unsigned>(c);
    return true;
  }
  return false;
}

// The extension's flags that decide what the preprocessor keeps (macros,
// the standard; for g++, the optimisation level, which sets __OPTIMIZE__):
// passed to its parses as to its compiles. nvcc's -O reaches only its host
// compiler, which the host parse already runs at -O3 (and cicc defines no
// __OPTIMIZE__). A flag that changes the predefined macros makes the
// precompiled header unusable: that parse runs without it (slower, same result).
std::vector<std::string> preprocessorFlags(const std::vector<std::string>& flags, bool cuda) {
  std::vector<std::string> out;
  for (const auto& f : flags)
    if (f.rfind("-D", 0) == 0 || f.rfind("-U", 0) == 0 || f.rfind("-std=", 0) == 0 ||
        (!cuda && f.rfind("-O", 0) == 0))
      out.push_back(f);
  return out;
}

std::string lineOf(const std::string& text, unsigned line) {
  std::size_t off = 0;
  for (unsigned l = 1; l < line && off != std::string::npos; ++l) {
    off = text.find('\n', off);
    if (off != std::string::npos) ++off;
  }
  if (off == std::string::npos || off >= text.size()) return {};
  return text.substr(off, text.find('\n', off) - off);
}

void addResult(analyze::StaticResult& into, analyze::StaticResult&& from) {
  into.findings.insert(into.findings.end(), std::make_move_iterator(from.findings.begin()),
                       std::make_move_iterator(from.findings.end()));
  auto& inv = into.inventory;
  inv.kernels.insert(inv.kernels.end(), from.inventory.kernels.begin(), from.inventory.kernels.end());
  inv.launches.insert(inv.launches.end(), from.inventory.launches.begin(), from.inventory.launches.end());
  inv.library_calls.insert(inv.library_calls.end(), from.inventory.library_calls.begin(),
                           from.inventory.library_calls.end());
  into.parsed = into.parsed && from.parsed;
  into.parse_errors.insert(into.parse_errors.end(), from.parse_errors.begin(), from.parse_errors.end());
  into.pch_fallback = into.pch_fallback || from.pch_fallback;
  into.translation_units += from.translation_units;
  if (from.infra_failed) {
    into.infra_failed = true;
    into.infra_message = from.infra_message;
  }
}

// An extension has no kb::Context: the call's stream is torch's current
// stream (the adapter makes it the harness's), and state lives in
// ModelNew's parameters and buffers, passed in.
void extensionWording(analyze::Finding& f) {
  auto replace = [&](const std::string& from, const std::string& to) {
    for (std::size_t p = 0; (p = f.message.find(from, p)) != std::string::npos; p += to.size())
      f.message.replace(p, from.size(), to);
  };
  replace("ctx.stream()", "at::cuda::getCurrentCUDAStream()");
  replace("ctx.create_state()", "a ModelNew buffer passed in");
}

// The Clang rules over each load_inline extension's generated main.cpp
// and cuda.cu, written into a scratch folder that stands in for a solution
// directory; findings are mapped back to the .py file.
void checkInlineExtensions(const solution::Solution& solution, const analyze::StaticPolicy& policy,
                           analyze::CheckOptions options, const std::map<std::string, SourceMaps>& maps,
                           const std::vector<build::InlineExtension>& exts, analyze::StaticResult& result) {
  ScratchDir dir = makeScratchDir(verify::defaultScratchRoot(), "kb-extcheck");  // hidden from workers
  solution::Solution gen;
  gen.root = fs::canonical(dir.path);
  gen.entry = "";
  std::map<std::string, Generated> generated;  // path in gen -> its file
  static const SourceMaps no_maps;
  for (std::size_t i = 0; i < exts.size(); ++i) {
    const build::InlineExtension& e = exts[i];
    auto m = maps.find(mapKey(e.file, e.line, e.name));
    const SourceMaps& sm = m == maps.end() ? no_maps : m->second;
    const std::string folder = "ext" + std::to_string(i) + "_" + e.name;
    auto add = [&](const std::string& name, std::string text, const std::vector<std::string>& sources,
                   const std::vector<Segments>& segs, solution::SourceKind kind,
                   const std::vector<std::string>& flags) {
      const std::string rel = folder + "/" + name;
      Generated g;
      g.ext = &e;
      g.sources = &sources;
      g.maps = &segs;
      g.begin = sourcesOffset(text, sources);
      g.text = std::move(text);
      fs::create_directories(gen.root / folder);
      writeFileAtomic(gen.root / rel, g.text);
      solution::SolutionFile f;
      f.path = rel;
      f.absolute = gen.root / rel;
      f.kind = kind;
      f.size = g.text.size();
      gen.files.push_back(std::move(f));
      std::vector<std::string> args = {"-DTORCH_EXTENSION_NAME=" + e.name};
      for (auto& a : preprocessorFlags(flags, kind == solution::SourceKind::CudaSource)) args.push_back(std::move(a));
      options.extension->file_args[rel] = std::move(args);
      generated.emplace(rel, std::move(g));
    };
    add("main.cpp", build::extensionMainCpp(e), e.cpp_sources, sm.cpp, solution::SourceKind::CxxSource,
        e.extra_cflags);
    if (!e.cuda_sources.empty())
      add("cuda.cu", build::extensionCudaSource(e), e.cuda_sources, sm.cuda, solution::SourceKind::CudaSource,
          e.extra_cuda_cflags);
  }
  analyze::StaticResult got = analyze::checkSolution(gen, policy, options);
  for (analyze::Finding& f : got.findings) {
    auto g = generated.find(f.file);
    if (g == generated.end()) continue;  // not a generated file: cannot happen
    const build::InlineExtension& e = *g->second.ext;
    unsigned line = 0, column = 0;
    const std::string where = "load_inline(name=\"" + e.name + "\") " + fs::path(f.file).filename().string();
    if (mapBack(g->second, f.line, f.column, &line, &column)) {
      f.message += " [in " + where + "]";
      f.line = line;
      f.column = column;
    } else {
      // The code the generator wrote around the sources (or a source no map
      // covers): the finding is the call's.
      f.message += " [in " + where + ", generated line " + std::to_string(f.line) + ": " +
                   lineOf(g->second.text, f.line) + "]";
      f.line = static_cast<unsigned>(e.line);
      f.column = 0;
    }
    f.file = e.file;
    f.source_line.clear();
    extensionWording(f);
  }
  for (std::string& text : got.parse_errors) {
    const std::string root = gen.root.string() + "/";
    for (auto p = text.find(root); p != std::string::npos; p = text.find(root)) text.erase(p, root.size());
  }
  std::error_code ec;
  fs::remove_all(dir.path, ec);  // else the next check's makeScratchDir reclaims it
  for (auto& l : got.inventory.launches) l.file = "load_inline:" + l.file;
  for (auto& k : got.inventory.kernels) k.file = "load_inline:" + k.file;
  for (auto& c : got.inventory.library_calls) c.file = "load_inline:" + c.file;
  addResult(result, std::move(got));
}

// The Clang rules over a workspace's binding.cpp and kernels/ (the sources
// its extension is built from, Solution::workspaceSources), in place.
void checkWorkspaceSources(const solution::Solution& solution, const analyze::StaticPolicy& policy,
                           analyze::CheckOptions options, analyze::StaticResult& result) {
  const std::vector<const solution::SolutionFile*> built = solution.workspaceSources();
  if (built.empty()) return;
  // Only the files the extension is built from are parsed; headers are
  // seen through their #includes.
  solution::Solution ws = solution;
  ws.escapes.clear();  // the Python side reports none; symlink is the directory scan's, not repeated
  ws.files.clear();
  for (const auto& f : solution.files) {
    bool source = f.kind == solution::SourceKind::CudaSource || f.kind == solution::SourceKind::CxxSource;
    bool is_built = std::any_of(built.begin(), built.end(), [&](const auto* b) { return b->path == f.path; });
    if (!source || is_built) ws.files.push_back(f);
  }
  const build::WorkspaceExtension we = build::workspaceExtension();
  for (const auto* f : built) {
    std::vector<std::string> args = {"-DTORCH_EXTENSION_NAME=" + we.name};
    const bool cuda = f->kind == solution::SourceKind::CudaSource;
    for (auto& a : preprocessorFlags(cuda ? we.cuda_cflags : we.cflags, cuda))
      args.push_back(std::move(a));
    options.extension->file_args[f->path] = std::move(args);
  }
  analyze::StaticResult got = analyze::checkSolution(ws, policy, options);
  for (analyze::Finding& f : got.findings) extensionWording(f);
  addResult(result, std::move(got));
}

}  // namespace

analyze::StaticResult checkPythonSolution(const solution::Solution& solution, const analyze::StaticPolicy& policy,
                                          const analyze::CheckOptions& options) {
  auto t0 = Clock::now();
  std::map<std::string, SourceMaps> maps;
  analyze::StaticResult result = pythonRules(solution, policy, maps);
  if (!result.infra_failed) {
    build::ExtensionList list = build::readInlineExtensions(solution);
    if (!list.problem.empty()) {
      result.infra_failed = true;
      result.infra_message = list.problem;
    } else if (!list.extensions.empty() || !solution.workspaceSources().empty()) {
      build::TorchExtensionFlags tf = build::torchExtensionFlags(true);
      if (!tf.available) {
        result.infra_failed = true;
        result.infra_message = "this build has no torch headers to check the solution's extension sources against";
      } else {
        analyze::CheckOptions o = options;
        o.extension.emplace();
        o.extension->args = tf.compile;
        // As build.cpp's nvcc line for an extension's cuda.cu.
        o.extension->cuda_args = {"-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                                  "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__"};
        o.extension->include_dirs = tf.include_roots;
        const analyze::StaticPolicy& ext_policy = policy.extension ? *policy.extension : policy;
        try {
          if (!list.extensions.empty()) checkInlineExtensions(solution, ext_policy, o, maps, list.extensions, result);
          checkWorkspaceSources(solution, ext_policy, o, result);
        } catch (const std::exception& e) {
          result.infra_failed = true;
          result.infra_message = std::string("the extension sources could not be checked: ") + e.what();
        }
      }
    }
  }
  std::stable_sort(result.findings.begin(), result.findings.end(), [](const analyze::Finding& a, const analyze::Finding& b) {
    return std::tie(a.file, a.line, a.column, a.rule) < std::tie(b.file, b.line, b.column, b.rule);
  });
  // Fill the .py lines of findings mapped into them.
  std::map<std::string, std::vector<std::string>> lines;
  for (analyze::Finding& f : result.findings) {
    if (!f.source_line.empty() || f.line == 0) continue;
    auto it = lines.find(f.file);
    if (it == lines.end()) {
      std::vector<std::string> ls;
      std::error_code ec;
      if (fs::is_regular_file(solution.root / f.file, ec)) {
        std::string text = readFile(solution.root / f.file);
        for (std::size_t p = 0; p <= text.size();) {
          std::size_t n = text.find('\n', p);
          ls.push_back(text.substr(p, n == std::string::npos ? std::string::npos : n - p));
          if (n == std::string::npos) break;
          p = n + 1;
        }
      }
      it = lines.emplace(f.file, std::move(ls)).first;
    }
    if (f.line <= it->second.size()) f.source_line = it->second[f.line - 1];
  }
  result.seconds = since(t0);
  return result;
}

}  // namespace kb::eval
#endif
