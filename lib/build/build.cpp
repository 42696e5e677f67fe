#include "build/build.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <map>
#include <sstream>
#include <thread>

#include "build/nvcc_plan.h"
#include "build/nvrtc.h"
#include "build/python_build.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "kb_config.h"
#include "core/process.h"

namespace fs = std::filesystem;

namespace kb::build {
namespace {

constexpr const char* kKeyVersion = "kb-build-v1";

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool writeFile(const fs::path& p, const std::string& content) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
  return static_cast<bool>(out);
}

std::string randomSuffix() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

// Everything a build needs to know about the machine.
struct Toolchain {
  fs::path cuda_home, nvcc, cxx, interface_include, shim_include;
  std::string identity;  // versions; part of the key
  std::string problem;   // non-empty: the toolchain is unusable (infra_error)
};

// The compilers' --version text, memoised in the cache by the binaries'
// identity (path, size, mtime, inode), so a warm build runs no compiler.
std::string versionText(const fs::path& binary, const fs::path& cache_dir, std::string* problem) {
  struct stat st{};
  if (::stat(binary.c_str(), &st) != 0) {
    *problem = "compiler not found: " + binary.string();
    return "";
  }
  std::string id = binary.string() + "|" + std::to_string(st.st_size) + "|" +
                   std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) +
                   "|" + std::to_string(st.st_ino);
  fs::path memo = cache_dir / "toolchain" / (sha256Hex(id).substr(0, 32) + ".txt");
  std::string text = readFile(memo);
  if (!text.empty()) return text;
  ProcessSpec spec;
  spec.argv = {binary.string(), "--version"};
  spec.env = scrubbedEnvironment({"PATH", "HOME", "TMPDIR"}, {"LC_ALL=C"});
  spec.limits.wall_seconds = 30;
  ProcessResult r = runProcess(spec);
  if (!r.ok()) {
    *problem = binary.string() + " --version failed: " + describeEnd(r);
    return "";
  }
  text = r.output;
  std::error_code ec;
  fs::create_directories(memo.parent_path(), ec);
  fs::path tmp = memo;
  tmp += ".tmp" + randomSuffix();
  if (writeFile(tmp, text)) fs::rename(tmp, memo, ec);
  return text;
}

Toolchain findToolchain(const BuildOptions& o, const fs::path& cache_dir) {
  Toolchain t;
  t.cuda_home = o.cuda_home.empty() ? fs::path(KB_CUDA_PATH) : o.cuda_home;
  t.nvcc = t.cuda_home / "bin" / "nvcc";
  std::string cxx = o.cxx;
  if (cxx.empty()) {
    const char* env = std::getenv("CXX");
    cxx = env && *env ? env : "g++";
  }
  const char* path = std::getenv("PATH");
  t.cxx = findOnPath(cxx, path ? path : "/usr/bin:/bin");
  if (t.cxx.empty()) {
    t.problem = "host compiler not found on PATH: " + cxx;
    return t;
  }
  t.interface_include = dataPath("include");
  t.shim_include = t.interface_include / "kb" / "nvrtc";
  std::string header = readFile(t.interface_include / "kb" / "solution.h");
  if (header.empty()) {
    t.problem = "interface header missing: " + (t.interface_include / "kb/solution.h").string();
    return t;
  }
  t.identity = "cxx:" + versionText(t.cxx, cache_dir, &t.problem);
  bool needs_nvcc = o.target == BuildTarget::Cuda || o.device_only;
  {
    // nvcc compiles any .cu, also in a CPU build: its version is in the key
    // whenever it exists, and its absence an error only where it is needed.
    std::string problem;
    std::string v = versionText(t.nvcc, cache_dir, &problem);
    if (!problem.empty() && needs_nvcc) t.problem = problem;
    t.identity += "\nnvcc:" + v;
  }
  t.identity += "\ninterface:" + sha256Hex(header);
  return t;
}

std::vector<std::string> nvccCommand(const Toolchain& t, const BuildOptions& o,
                                     const std::string& src, const std::string& obj) {
  std::vector<std::string> cmd = {t.nvcc.string(), "-ccbin", t.cxx.string(), "-std=c++17", "-O3",
                                  "-lineinfo", "-arch=" + o.arch, "-Xcompiler", "-fPIC",
                                  "-I" + t.interface_include.string(), "-I."};
  cmd.insert(cmd.end(), o.nvcc_flags.begin(), o.nvcc_flags.end());
  cmd.insert(cmd.end(), {"-c", src, "-o", obj});
  return cmd;
}

std::vector<std::string> cxxCommand(const Toolchain& t, const BuildOptions& o,
                                    const std::string& src, const std::string& obj) {
  std::vector<std::string> cmd = {t.cxx.string(), "-std=c++17", "-O2", "-fPIC",
                                  "-fdiagnostics-color=never",
                                  "-I" + t.interface_include.string(), "-I.",
                                  "-isystem", (t.cuda_home / "include").string()};
  cmd.insert(cmd.end(), o.cxx_flags.begin(), o.cxx_flags.end());
  cmd.insert(cmd.end(), {"-c", src, "-o", obj});
  return cmd;
}

std::vector<std::string> linkCommand(const Toolchain& t, const BuildOptions& o,
                                     const std::vector<std::string>& objs) {
  std::vector<std::string> cmd = {t.cxx.string(), "-shared", "-o", "solution.so"};
  cmd.insert(cmd.end(), objs.begin(), objs.end());
  cmd.insert(cmd.end(), {"-Wl,-z,defs", "-Wl,--as-needed"});
  if (o.target == BuildTarget::Cuda) {
    // A toolkit's lib64/ with its development links (libcudart.so), or the
    // lib/ of NVIDIA's PyPI packages (scripts/setup.sh), which hold only the
    // versioned names (libcudart.so.13): linked by file name then.
    fs::path lib = fs::exists(t.cuda_home / "lib64") ? t.cuda_home / "lib64" : t.cuda_home / "lib";
    cmd.insert(cmd.end(), {"-L" + lib.string(), "-Wl,-rpath," + lib.string()});
    auto library = [&](const std::string& name) {
      if (fs::exists(lib / ("lib" + name + ".so"))) return "-l" + name;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(lib, ec)) {
        std::string f = e.path().filename().string();
        if (f.rfind("lib" + name + ".so.", 0) == 0 && f.find('.', name.size() + 7) == std::string::npos)
          return "-l:" + f;
      }
      return "-l" + name;  // the linker's error names what is missing
    };
    for (const char* name : {"cudart", "cublas", "cublasLt"}) cmd.push_back(library(name));
    if (fs::exists(lib / "libcudnn.so")) cmd.push_back("-lcudnn");
  }
  return cmd;
}

std::vector<std::string> nvccCubinCommand(const Toolchain& t, const BuildOptions& o,
                                          const std::string& src, const std::string& out) {
  std::vector<std::string> cmd = {t.nvcc.string(), "-ccbin", t.cxx.string(), "-std=c++17", "-O3",
                                  "-cubin", "-arch=" + o.arch,
                                  "-I" + t.interface_include.string(), "-I."};
  cmd.insert(cmd.end(), o.nvcc_flags.begin(), o.nvcc_flags.end());
  cmd.insert(cmd.end(), {src, "-o", out});
  return cmd;
}

std::vector<std::string> nvrtcOptions(const Toolchain& t, const BuildOptions& o,
                                      const fs::path& src_root, const std::string& rel) {
  fs::path dir = (src_root / rel).parent_path();
  return {"--gpu-architecture=" + o.arch,
          "-std=c++17",
          "-default-device",  // host launchers are checked as device code
          "-rdc=true",        // ... so that their <<<>>> launches are legal
          "-DKB_DEVICE_CHECK=1",
          "-I" + t.shim_include.string(),
          "-I" + (t.cuda_home / "include" / "cccl").string(),
          "-I" + (t.cuda_home / "include").string(),
          "-I" + t.interface_include.string(),
          "-I" + src_root.string(),
          "-I" + dir.string()};
}

void replaceAll(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
}

CompileStep runStep(const std::string& source, const std::string& tool,
                    std::vector<std::string> argv, const fs::path& cwd, const BuildOptions& o,
                    const std::vector<std::string>& env = {}) {
  CompileStep step;
  step.source = source;
  step.tool = tool;
  ProcessSpec spec;
  spec.argv = argv;
  std::vector<std::string> set = {"LC_ALL=C"};
  set.insert(set.end(), env.begin(), env.end());
  spec.env = scrubbedEnvironment({"PATH", "HOME", "TMPDIR"}, set);
  spec.cwd = cwd;
  spec.limits.wall_seconds = o.timeout_seconds;
  spec.limits.file_size_bytes = 1ull << 30;
  spec.output_limit = 256 * 1024;
  ProcessResult r = runProcess(spec);
  step.seconds = r.wall_seconds;
  step.ok = r.ok();
  step.diagnostics = r.output;
  if (r.output_truncated) step.diagnostics += "\n[output cut at 256 KiB]\n";
  if (r.end == ProcessEnd::TimedOut)
    step.diagnostics += "\n" + tool + ": timed out after " + std::to_string(o.timeout_seconds) + " s\n";
  else if (r.end == ProcessEnd::Signaled)
    step.diagnostics += "\n" + tool + ": " + describeEnd(r) + "\n";
  else if (r.end == ProcessEnd::SpawnFailed)
    step.diagnostics = tool + ": could not start: " + r.message;
  step.command = std::move(argv);
  return step;
}

// One .cu compiled to `obj` as `nvcc -c` does, with nvcc's host and device
// halves side by side (build/nvcc_plan.h), their temporaries in `keep_dir`
// (relative to the source root). nvcc itself runs when its plan has another
// shape, the two module ids differ, or any step fails: a compile error's
// diagnostics are always nvcc's own, in its order.
CompileStep compileCuda(const Toolchain& t, const BuildOptions& o, const std::string& src,
                        const std::string& obj, const fs::path& cwd, const std::string& keep_dir) {
  auto t0 = Clock::now();
  std::vector<std::string> cmd = nvccCommand(t, o, src, obj);
  std::error_code ec;
  fs::create_directories(cwd / keep_dir, ec);
  std::vector<std::string> dry = cmd;
  dry.insert(dry.end(), {"-dryrun", "-keep", "-keep-dir", keep_dir});
  // `src` is a plain name (loadSolution refuses others), so the dry run's
  // quoting of it is undone exactly.
  CompileStep plan_step = ec ? CompileStep{} : runStep(src, "nvcc", dry, cwd, o);
  std::optional<NvccPlan> plan = plan_step.ok ? parseNvccDryRun(plan_step.diagnostics, nullptr) : std::nullopt;
  if (plan) {
    auto runAll = [&](const std::vector<std::vector<std::string>>& commands, std::string& output) {
      for (const auto& c : commands) {
        CompileStep s = runStep(src, "nvcc", c, cwd, o, plan->env);
        output += s.diagnostics;
        if (!s.ok) return false;
      }
      return true;
    };
    std::string host_output, device_output, after_output;
    bool device_ok = false;
    std::thread device([&] { device_ok = runAll(plan->device, device_output); });
    bool host_ok = runAll(plan->host, host_output);
    device.join();
    std::string module_id = readFile(cwd / plan->host_module_id);
    if (host_ok && device_ok && !module_id.empty() && module_id == readFile(cwd / plan->device_module_id) &&
        runAll(plan->after, after_output)) {
      CompileStep step;
      step.source = src;
      step.tool = "nvcc";
      step.ok = true;
      step.diagnostics = host_output + device_output + after_output;
      step.command = std::move(cmd);
      step.seconds = since(t0);
      return step;
    }
  }
  CompileStep step = runStep(src, "nvcc", cmd, cwd, o);
  step.seconds = since(t0);
  return step;
}

// The headers an extension's C++ units may start with, precompiled once per
// compiler, flags and torch into the build cache: load_inline's main.cpp
// starts with torch/extension.h; the paper's workspace bindings with
// torch/types.h (its light replacement for torch/extension.h) or, in
// binding.cpp, pybind11/pybind11.h. Parsing them is most of an extension's
// compile time.
constexpr const char* kPrecompiledHeaders[] = {"torch/extension.h", "torch/types.h", "pybind11/pybind11.h"};

// The folder holding, for each of `headers` (of kPrecompiledHeaders) that
// could be made, a file at the header's own relative path that includes
// it (pch-torch-<key>/torch/types.h) and its precompiled form beside it
// (.gch), which g++ takes for `-include` of that file when it is valid for
// the unit's flags (else, with -Winvalid-pch's warning, it reads the file).
// Forced only in front of a unit whose first line includes that header
// (firstInclude). Empty when none could be made.
fs::path precompiledHeaders(const Toolchain& tc, const BuildOptions& o, const std::vector<std::string>& flags,
                            const fs::path& cache, const std::set<std::string>& headers) {
  Sha256 h;
  h.update(tc.identity);
  for (const auto& f : flags) h.update("\n" + f);
  const fs::path dir = cache / ("pch-torch-" + h.hexDigest().substr(0, 24));
  bool any = false;
  for (const std::string& header : headers) {
    const fs::path file = dir / header, gch = dir / (header + ".gch");
    std::error_code ec;
    if (!fs::exists(gch)) {
      // Made in place (the dependency lists name this file), each file
      // renamed into place whole: a concurrent build may win, and that is
      // the same file.
      const std::string tmp = "." + randomSuffix();
      fs::create_directories(file.parent_path(), ec);
      if (!fs::exists(file) && writeFile(file.string() + tmp, "#include <" + header + ">\n"))
        fs::rename(file.string() + tmp, file, ec);
      std::vector<std::string> cmd = {tc.cxx.string()};
      cmd.insert(cmd.end(), flags.begin(), flags.end());
      cmd.insert(cmd.end(), {"-x", "c++-header", file.string(), "-o", gch.string() + tmp});
      if (runStep(header, "c++", cmd, dir, o).ok) fs::rename(gch.string() + tmp, gch, ec);
      fs::remove(gch.string() + tmp, ec);
    }
    any = any || fs::exists(gch);
  }
  return any ? dir : fs::path();
}

// Runs fn(i) for i in [0, n) on up to `jobs` threads.
template <typename Fn>
void parallelFor(std::size_t n, int jobs, Fn fn) {
  if (n == 0) return;
  std::size_t threads = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(1, jobs)));
  if (threads == 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (std::size_t k = 0; k < threads; ++k)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < n;) fn(i);
    });
  for (auto& th : pool) th.join();
}

// The directories a compiler searches for <...> includes on its own (its
// "#include <...> search starts here:" list from `-E -v`): its C++ library
// and builtin headers, wherever the toolchain is installed. Empty when it
// cannot be asked.
std::vector<fs::path> compilerIncludeDirs(const fs::path& cxx) {
  std::vector<fs::path> dirs;
  if (cxx.empty()) return dirs;
  ProcessResult r = runHelper({cxx.string(), "-xc++", "-E", "-v", "/dev/null"}, 30.0, false);
  if (r.end != ProcessEnd::Exited || r.exit_code != 0) return dirs;
  std::istringstream in(r.output);
  std::string line;
  bool listing = false;
  while (std::getline(in, line)) {
    if (line.rfind("#include <...> search starts here:", 0) == 0) listing = true;
    else if (line.rfind("End of search list.", 0) == 0) break;
    else if (listing && !line.empty() && line[0] == ' ') dirs.push_back(line.substr(1));
  }
  return dirs;
}

// One torch extension for the trusted stage to compile and link into
// work/ext/<name>.so: its translation units (relative to `dir`, where they
// are staged and compiled) and the flags they take. load_inline's
// main.cpp/cuda.cu, or a workspace's binding.cpp and kernels/.
struct ExtensionBuild {
  std::string name;  // the module's name (TORCH_EXTENSION_NAME)
  std::string where;  // names the extension in steps and diagnostics
  fs::path dir;
  std::vector<std::string> cxx_units, cuda_units;
  std::vector<std::string> cflags, cuda_cflags, ldflags;
};

// Compiles and links `e` into work/ext/<name>.so (in parallel, up to
// `jobs`); `libs` gets name -> "ext/<name>.so" when every step is ok.
// Every unit is compiled with -MD: a file it reads outside the extension's
// sources and the toolchain's, torch's and Python's headers fails the unit
// with a line naming it, and the compiler's own output (which may quote
// that file) is dropped.
std::vector<CompileStep> compileExtension(const Toolchain& tc, const BuildOptions& o, const ExtensionBuild& e,
                                          const fs::path& work, const fs::path& cache, int jobs,
                                          std::map<std::string, std::string>& libs, std::atomic<bool>* refused = nullptr) {
  const bool cuda = o.target == BuildTarget::Cuda;
  const TorchExtensionFlags tf = torchExtensionFlags(cuda);
  const std::string define = "-DTORCH_EXTENSION_NAME=" + e.name;
  std::vector<std::string> base = {"-std=c++17", "-O3", "-fPIC", "-fdiagnostics-color=never"};
  base.insert(base.end(), tf.compile.begin(), tf.compile.end());
  if (cuda) base.insert(base.end(), {"-isystem", (tc.cuda_home / "include").string()});
  std::vector<fs::path> allowed = tf.include_roots;
  std::set<std::string> headers;
  std::vector<std::string> first(e.cxx_units.size());
  for (std::size_t i = 0; i < e.cxx_units.size(); ++i) {
    first[i] = firstInclude(readFile(e.dir / e.cxx_units[i]));
    for (const char* h : kPrecompiledHeaders)
      if (first[i] == h) headers.insert(h);
  }
  const fs::path pch = headers.empty() ? fs::path() : precompiledHeaders(tc, o, base, cache, headers);
  std::error_code ec;
  for (const fs::path& root : {work / "src", tc.cuda_home, fs::path("/usr/include"), fs::path("/usr/lib/gcc"), pch})
    if (!root.empty()) allowed.push_back(fs::weakly_canonical(root, ec));
  // The host compiler's own headers wherever it lives (the GPU machine's
  // g++ is /opt/gcc: its limits.h was refused there as a host file).
  for (const fs::path& root : compilerIncludeDirs(tc.cxx)) allowed.push_back(fs::weakly_canonical(root, ec));

  struct Unit {
    std::string source;
    bool cuda;
  };
  std::vector<Unit> units;
  for (const auto& u : e.cxx_units) units.push_back({u, false});
  for (const auto& u : e.cuda_units) units.push_back({u, true});
  std::vector<CompileStep> steps(units.size());
  fs::create_directories(work / "ext", ec);
  fs::create_directories(e.dir / ".obj", ec);
  parallelFor(units.size(), jobs, [&](std::size_t i) {
    const std::string obj = ".obj/" + std::to_string(i) + ".o", dep = ".obj/" + std::to_string(i) + ".d";
    std::vector<std::string> cmd;
    if (!units[i].cuda) {
      cmd = {tc.cxx.string()};
      cmd.insert(cmd.end(), base.begin(), base.end());
      if (!pch.empty() && headers.count(first[i]) && fs::exists(pch / (first[i] + ".gch")))
        cmd.insert(cmd.end(), {"-Winvalid-pch", "-include", (pch / first[i]).string()});
      cmd.push_back(define);
      cmd.insert(cmd.end(), e.cflags.begin(), e.cflags.end());
    } else {
      cmd = {tc.nvcc.string(), "-ccbin", tc.cxx.string(), "-std=c++17", "-O3", "-arch=" + o.arch, "-Xcompiler",
             "-fPIC", define, "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
             "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__", "--expt-relaxed-constexpr"};
      cmd.insert(cmd.end(), tf.compile.begin(), tf.compile.end());
      cmd.insert(cmd.end(), e.cuda_cflags.begin(), e.cuda_cflags.end());
    }
    cmd.insert(cmd.end(), {"-MD", "-MF", dep, "-c", units[i].source, "-o", obj});
    const std::string where = e.where + " " + units[i].source;
    steps[i] = runStep(where, units[i].cuda ? "nvcc" : "c++", cmd, e.dir, o);
    if (std::string why = includeOutside(e.dir / dep, e.dir, allowed); !why.empty()) {
      steps[i].ok = false;
      steps[i].diagnostics = units[i].source + ": error: the compiler " + why + " (docs/solution-format.md)\n";
      if (refused) *refused = true;  // a policy refusal, never a fallback
    }
  });
  if (!std::all_of(steps.begin(), steps.end(), [](const CompileStep& s) { return s.ok; })) return steps;
  const std::string out = "ext/" + e.name + ".so";
  std::vector<std::string> link = {tc.cxx.string(), "-shared", "-o", (work / out).string()};
  for (std::size_t i = 0; i < units.size(); ++i) link.push_back(".obj/" + std::to_string(i) + ".o");
  link.insert(link.end(), tf.link.begin(), tf.link.end());
  if (cuda) {
    fs::path lib = fs::exists(tc.cuda_home / "lib64") ? tc.cuda_home / "lib64" : tc.cuda_home / "lib";
    link.insert(link.end(), {"-L" + lib.string(), "-Wl,-rpath," + lib.string(), "-lcudart"});
  }
  link.insert(link.end(), e.ldflags.begin(), e.ldflags.end());
  steps.push_back(runStep(e.where, "link", link, e.dir, o));
  if (steps.back().ok) libs[e.name] = out;
  return steps;
}

// A step that refuses an extension before any compiler runs.
CompileStep refusal(const std::string& tool, const std::string& where, const std::string& why) {
  CompileStep s;
  s.source = where;
  s.tool = tool;
  s.diagnostics = where + ": error: " + why + "\n";
  return s;
}

// The torch extensions a Python solution builds with load_inline, built
// here by the trusted stage as load_inline would (main.cpp and cuda.cu),
// each into work/ext/<name>.so; `libs` gets name -> that path, relative to
// work. The candidate never runs a compiler (docs/solution-format.md).
std::vector<CompileStep> buildExtensions(const Toolchain& tc, const BuildOptions& o,
                                         const std::vector<InlineExtension>& exts, const fs::path& work,
                                         const fs::path& cache, int jobs, std::map<std::string, std::string>& libs,
                                         std::map<std::string, std::string>& failed) {
  std::vector<CompileStep> steps;
  const bool cuda = o.target == BuildTarget::Cuda;
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : exts) {
    const std::string where = e.file + ":" + std::to_string(e.line) + ": load_inline(" + e.name + ")";
    if (!names.insert(e.name).second) {
      steps.push_back(refusal("load_inline", where, "a second extension named " + e.name));
      continue;
    }
    if (std::string flag = refusedExtensionFlag(e); !flag.empty()) {
      steps.push_back(
          refusal("load_inline", where, flag + " is not allowed: flags reach the compiler's command line (docs/solution-format.md)"));
      continue;
    }
    if (!cuda && !e.cuda_sources.empty()) {
      steps.push_back(refusal("load_inline", where, "cuda_sources need a CUDA build (--device cuda)"));
      continue;
    }
    ExtensionBuild b{e.name, where, work / "src" / "ext" / e.name, {"main.cpp"}, {},
                     e.extra_cflags, e.extra_cuda_cflags, e.extra_ldflags};
    fs::create_directories(b.dir, ec);
    writeFile(b.dir / "main.cpp", extensionMainCpp(e));
    if (!e.cuda_sources.empty()) {
      writeFile(b.dir / "cuda.cu", extensionCudaSource(e));
      b.cuda_units.push_back("cuda.cu");
    }
    std::atomic<bool> refused{false};
    std::vector<CompileStep> built = compileExtension(tc, o, b, work, cache, jobs, libs, &refused);
    if (!libs.count(e.name) && !refused) {
      // The compiler said no: the solution runs without this extension
      // (CompileStep::fallback); its load_inline raises with the first error.
      std::string first;
      for (auto& s : built)
        if (!s.ok) {
          s.fallback = true;
          if (first.empty()) first = s.diagnostics.substr(0, s.diagnostics.find('\n'));
        }
      failed[e.name] = first.empty() ? "the compiler failed" : first;
    }
    steps.insert(steps.end(), built.begin(), built.end());
  }
  return steps;
}

// A workspace's extension (the CUDA Agent paper's agent_workdir): its
// binding.cpp and kernels/ (Solution::workspaceSources, as staged in
// work/src) compiled with the paper's flags into the module model_new.py
// imports (python_build.h, workspaceExtension).
std::vector<CompileStep> buildWorkspaceExtension(const Toolchain& tc, const BuildOptions& o,
                                                 const solution::Solution& solution, const fs::path& work,
                                                 const fs::path& cache, int jobs,
                                                 std::map<std::string, std::string>& libs) {
  const WorkspaceExtension w = workspaceExtension();
  const std::string where = "workspace(" + w.name + ")";
  if (libs.count(w.name)) return {refusal("workspace", where, "a load_inline extension is also named " + w.name)};
  ExtensionBuild b{w.name, where, work / "src", {}, {}, w.cflags, w.cuda_cflags, {}};
  for (const solution::SolutionFile* f : solution.workspaceSources())
    (f->kind == solution::SourceKind::CudaSource ? b.cuda_units : b.cxx_units).push_back(f->path);
  if (b.cxx_units.empty() && b.cuda_units.empty()) return {refusal("workspace", where, "no .cpp or .cu to build")};
  if (o.target != BuildTarget::Cuda && !b.cuda_units.empty())
    return {refusal("workspace", where, b.cuda_units.front() + ": a .cu needs a CUDA build (--device cuda)")};
  return compileExtension(tc, o, b, work, cache, jobs, libs);
}

std::string keyOf(const solution::Solution& s, const BuildOptions& o, const Toolchain& t) {
  Sha256 h;
  auto field = [&](const std::string& name, const std::string& value) {
    h.update(name);
    h.update(std::string_view("=", 1));
    h.update(value);
    h.update(std::string_view("\0", 1));
  };
  field("version", kKeyVersion);
  field("solution", s.hash);
  field("target", o.target == BuildTarget::Cuda ? "cuda" : "cpu");
  field("arch", o.arch);
  field("device_only", o.device_only ? "1" : "0");
  for (const auto& f : o.nvcc_flags) field("nvcc_flag", f);
  for (const auto& f : o.cxx_flags) field("cxx_flag", f);
  field("toolchain", t.identity);
  field("cuda_home", t.cuda_home.string());
  if (o.device_only) {
    const Nvrtc* nvrtc = Nvrtc::get(t.cuda_home);
    field("nvrtc", nvrtc ? nvrtc->version() : "none");
  }
  if (s.isPython()) field("python", pythonKeyFields(o));
  return "sha256:" + h.hexDigest();
}

std::string keyDirName(const std::string& key) { return key.substr(key.find(':') + 1); }

}  // namespace

fs::path defaultBuildCacheDir() {
  if (const char* d = std::getenv("KB_CACHE_DIR"); d && *d) return fs::path(d) / "build";
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return fs::path(d) / "kernelbench-rl" / "build";
  if (const char* d = std::getenv("HOME"); d && *d)
    return fs::path(d) / ".cache" / "kernelbench-rl" / "build";
  return fs::temp_directory_path() / "kernelbench-rl-build";
}

std::string trimDiagnostics(const std::string& text, int max_errors, std::size_t max_bytes,
                            bool* truncated) {
  static const std::regex kErrorLine(
      R"((^|[:)\s])(fatal error|error|catastrophic error)(\s*#?\w*-?D?)?:|undefined reference to)");
  std::istringstream in(text);
  std::string line, out;
  int errors = 0;
  int dropped_errors = 0;
  bool cut = false;
  while (std::getline(in, line)) {
    bool is_error = std::regex_search(line, kErrorLine);
    if (is_error && errors >= max_errors) {
      cut = true;
      ++dropped_errors;
      // count the rest without keeping them
      while (std::getline(in, line))
        if (std::regex_search(line, kErrorLine)) ++dropped_errors;
      break;
    }
    if (is_error) ++errors;
    if (out.size() + line.size() + 1 > max_bytes) {
      cut = true;
      break;
    }
    out += line;
    out += '\n';
  }
  if (cut) {
    out += "[kbcheck: diagnostics cut";
    if (dropped_errors) out += "; " + std::to_string(dropped_errors) + " more error line(s)";
    out += "]\n";
  }
  if (truncated) *truncated = cut;
  return out;
}

Json BuildResult::toJson() const {
  Json j;
  j["status"] = std::string(statusName(status));
  j["key"] = key;
  j["solution_hash"] = solution_hash;
  j["target"] = target;
  j["arch"] = arch;
  j["device_only"] = device_only;
  j["library"] = library.empty() ? Json(nullptr) : Json(library.string());
  j["cached"] = cached;
  j["seconds"] = seconds;
  j["build_seconds"] = build_seconds;
  j["message"] = message;
  j["diagnostics"] = diagnostics;
  j["diagnostics_truncated"] = diagnostics_truncated;
  Json steps = Json::array();
  for (const auto& s : this->steps) {
    Json step;
    step["source"] = s.source;
    step["tool"] = s.tool;
    step["ok"] = s.ok;
    if (s.fallback) step["fallback"] = true;
    step["seconds"] = s.seconds;
    step["command"] = s.command;
    steps.push_back(step);
  }
  j["steps"] = steps;
  return j;
}

BuildResult BuildResult::fromJson(const Json& j) {
  BuildResult r;
  r.status = parseStatus(j.value("status", "infra_error")).value_or(Status::InfraError);
  r.key = j.value("key", "");
  r.solution_hash = j.value("solution_hash", "");
  r.target = j.value("target", "");
  r.arch = j.value("arch", "");
  r.device_only = j.value("device_only", false);
  if (j.contains("library") && j["library"].is_string()) r.library = j["library"].get<std::string>();
  r.build_seconds = j.value("build_seconds", 0.0);
  r.message = j.value("message", "");
  r.diagnostics = j.value("diagnostics", "");
  r.diagnostics_truncated = j.value("diagnostics_truncated", false);
  if (j.contains("steps"))
    for (const auto& s : j["steps"]) {
      CompileStep step;
      step.source = s.value("source", "");
      step.tool = s.value("tool", "");
      step.ok = s.value("ok", false);
      step.seconds = s.value("seconds", 0.0);
      if (s.contains("command")) step.command = s["command"].get<std::vector<std::string>>();
      r.steps.push_back(step);
    }
  return r;
}

BuildResult buildSolution(const solution::Solution& solution, const BuildOptions& options) {
  auto t0 = Clock::now();
  BuildResult result;
  result.solution_hash = solution.hash;
  result.target = options.target == BuildTarget::Cuda ? "cuda" : "cpu";
  result.arch = options.arch;
  result.device_only = options.device_only;
  auto infra = [&](const std::string& why) {
    result.status = Status::InfraError;
    result.message = why;
    result.seconds = since(t0);
    return result;
  };

  fs::path cache = options.cache_dir.empty() ? defaultBuildCacheDir() : options.cache_dir;
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) return infra("cannot create the build cache " + cache.string() + ": " + ec.message());
  Toolchain tc = findToolchain(options, cache);
  if (!tc.problem.empty()) return infra(tc.problem);
  result.key = keyOf(solution, options, tc);
  fs::path entry = cache / keyDirName(result.key);

  // Warm: the entry exists (a finished build, successful or not).
  if (options.use_cache && fs::exists(entry / "build.json")) {
    try {
      BuildResult hit = BuildResult::fromJson(readJsonFile(entry / "build.json"));
      if (hit.key == result.key &&
          (hit.status != Status::Ok || options.device_only || fs::exists(entry / "solution.so"))) {
        if (hit.status == Status::Ok && !options.device_only) hit.library = entry / "solution.so";
        hit.cached = true;
        hit.seconds = since(t0);
        return hit;
      }
    } catch (const std::exception&) {
      // unreadable entry: rebuild over it
    }
  }

  // Cold: stage the code files (the snapshot loadSolution hashed) and build.
  fs::path work = cache / ("tmp-" + randomSuffix());
  fs::path src = work / "src", obj = work / "obj";
  fs::create_directories(src, ec);
  fs::create_directories(obj, ec);
  if (ec) return infra("cannot create " + work.string() + ": " + ec.message());
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code e;
      if (!dir.empty()) fs::remove_all(dir, e);
    }
  } cleanup{work};
  for (const auto& f : solution.files) {
    if (!solution.isCode(f)) continue;
    std::string content = readFile(f.absolute);
    if (sha256Hex(content) != f.sha256)
      return infra(f.path + " changed after the solution was read; build again");
    fs::create_directories((src / f.path).parent_path(), ec);
    if (!writeFile(src / f.path, content)) return infra("cannot write " + (src / f.path).string());
  }

  std::vector<CompileStep> extension_steps;
  if (solution.isPython()) {
    // A question the solution cannot answer, not the machine's failure.
    if (options.device_only)
      throw UsageError("--device-only checks the device code of .cu files with NVRTC; " + solution.entry +
                       " is a Python-format solution (its torch extensions are built by `kbcheck build`)");
    ExtensionList extensions = readInlineExtensions(solution);
    if (!extensions.problem.empty()) return infra(extensions.problem);
    const bool workspace = solution.format == solution::Format::Workspace;
    if ((workspace || !extensions.extensions.empty()) && !torchExtensionFlags(false).available)
      return infra("this build has no torch to build torch extensions against");
    std::map<std::string, std::string> libs, failed;
    const int ext_jobs = options.jobs > 0 ? options.jobs
                                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    extension_steps = buildExtensions(tc, options, extensions.extensions, work, cache, ext_jobs, libs, failed);
    if (workspace) {
      std::vector<CompileStep> ws = buildWorkspaceExtension(tc, options, solution, work, cache, ext_jobs, libs);
      extension_steps.insert(extension_steps.end(), ws.begin(), ws.end());
    }
    if (libs.size() + failed.size() == extensions.extensions.size() + (workspace ? 1 : 0)) {
      PythonStage staged = stagePython(solution, options, work, libs, failed);
      if (!staged.ok) return infra(staged.problem);
    }
  }
  std::vector<const solution::SolutionFile*> units;
  for (const solution::SolutionFile* f : solution.isPython() ? std::vector<const solution::SolutionFile*>{}
                                                             : solution.sources())
    if (!options.device_only || f->kind == solution::SourceKind::CudaSource) units.push_back(f);
  int jobs = options.jobs > 0 ? options.jobs
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<CompileStep> steps(units.size());
  std::vector<std::string> objects(units.size());
  const std::string src_prefix = src.string() + "/";

  if (options.device_only) {
    const Nvrtc* nvrtc = Nvrtc::get(tc.cuda_home);
    parallelFor(units.size(), jobs, [&](std::size_t i) {
      const std::string& rel = units[i]->path;
      if (nvrtc) {
        CompileStep s;
        s.source = rel;
        s.tool = "nvrtc";
        s.command = nvrtcOptions(tc, options, src, rel);
        NvrtcOutcome n = nvrtc->compile(readFile(src / rel), rel, s.command);
        s.ok = n.ok;
        s.seconds = n.seconds;
        s.diagnostics = n.log;
        if (n.ok) {
          steps[i] = std::move(s);
          return;
        }
      }
      // NVRTC is unavailable or said no: nvcc's device pass decides.
      std::string out = "obj/" + std::to_string(i) + ".cubin";
      steps[i] = runStep(rel, "nvcc-cubin", nvccCubinCommand(tc, options, rel, "../" + out),
                         src, options);
    });
  } else {
    parallelFor(units.size(), jobs, [&](std::size_t i) {
      const solution::SolutionFile* f = units[i];
      objects[i] = "../obj/" + std::to_string(i) + ".o";
      if (f->kind == solution::SourceKind::CudaSource)
        steps[i] = compileCuda(tc, options, f->path, objects[i], src, "../obj/" + std::to_string(i) + ".nvcc");
      else
        steps[i] = runStep(f->path, "c++", cxxCommand(tc, options, f->path, objects[i]), src,
                           options);
    });
  }

  steps.insert(steps.end(), extension_steps.begin(), extension_steps.end());
  bool compiled = std::all_of(steps.begin(), steps.end(), [](const CompileStep& s) { return s.ok || s.fallback; });
  if (compiled && !options.device_only && !solution.isPython()) {
    std::vector<std::string> objs;
    for (const auto& o : objects) objs.push_back(o.substr(3));  // relative to work
    steps.push_back(runStep("", "link", linkCommand(tc, options, objs), work, options));
  }
  for (const auto& s : steps)
    if (s.ok == false && s.diagnostics.find("could not start") != std::string::npos)
      return infra(s.diagnostics);

  std::string diag;
  for (auto& s : steps) {
    replaceAll(s.diagnostics, src_prefix, "");
    if (!s.ok) diag += s.diagnostics;
  }
  bool all_ok = std::all_of(steps.begin(), steps.end(), [](const CompileStep& s) { return s.ok || s.fallback; });
  result.status = all_ok ? Status::Ok : Status::CompileError;
  result.diagnostics = trimDiagnostics(diag, options.max_errors, options.max_diagnostic_bytes,
                                       &result.diagnostics_truncated);
  if (!all_ok) {
    for (const auto& s : steps)
      if (!s.ok && !s.fallback) {
        result.message = (s.source.empty() ? std::string("link") : s.source) + ": " + s.tool +
                         " failed";
        break;
      }
  }
  result.steps = std::move(steps);
  result.build_seconds = since(t0);

  // Publish: work/ becomes the cache entry (atomically, by rename).
  fs::remove_all(src, ec);
  fs::remove_all(obj, ec);
  Json stored = result.toJson();
  stored["library"] = nullptr;
  writeJsonFile(work / "build.json", stored);
  if (options.use_cache) {
    fs::rename(work, entry, ec);
    if (ec && !fs::exists(entry / "build.json")) {
      // an unreadable old entry: replace it
      fs::remove_all(entry, ec);
      fs::rename(work, entry, ec);
    }
    if (!ec) {
      cleanup.dir.clear();
    } else if (!fs::exists(entry / "build.json")) {
      return infra("cannot store the build in " + entry.string() + ": " + ec.message());
    }
    // else: a concurrent build of the same key won the rename; use its entry
    if (result.status == Status::Ok && !options.device_only) result.library = entry / "solution.so";
  } else if (result.status == Status::Ok && !options.device_only) {
    // Uncached: keep the library beside the cache in a private directory.
    fs::path keep = cache / ("uncached-" + randomSuffix());
    fs::rename(work, keep, ec);
    if (ec) return infra("cannot keep the build: " + ec.message());
    cleanup.dir.clear();
    result.library = keep / "solution.so";
  }
  result.seconds = since(t0);
  return result;
}

}  // namespace kb::build
