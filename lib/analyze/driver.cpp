// Runs the rules over every source: one Clang parse per source and side
// (host; and device for .cu), in parallel, each against a precompiled header
// of CUDA's and the interface's headers so that a parse costs ~0.1 s instead
// of ~1 s. Then joins what the parses found.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include <clang/Basic/Version.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Tooling/Tooling.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "core/file.h"
#include "analyze/inventory.h"
#include "analyze/parser_limit.h"
#include "analyze/prelude.h"
#include "analyze/token_scan.h"
#include "analyze/rule.h"
#include "analyze/rules/extern_symbol.h"
#include "analyze/rules/missing_entry.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "kb_config.h"

namespace fs = std::filesystem;

namespace kb::analyze {
namespace {

std::string readText(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// How a source is parsed: as the compiler that builds it sees it
// (lib/build/build.cpp). A .cu is nvcc's: a host pass with -O3 (its host
// compiler defines __OPTIMIZE__) and a device pass without (cicc does not).
// A .cpp is g++'s: plain C++ at -O2, no __CUDACC__.
enum class Mode { CudaHost, CudaDevice, Cxx };

// Clang 19 and CUDA 13 need help (DESIGN.md, issue 2): an empty
// texture_fetch_functions.h, an older SDK version so that device mode declares
// cudaConfigureCall, and CCCL on the include path.
// `interface_dir` is the folder holding kb/solution.h: the source tree's for
// a parse, the cache's own copy for a precompiled header (ensurePch).
std::vector<std::string> baseArgs(const CheckOptions& o, const fs::path& shim, const fs::path& interface_dir,
                                  Mode mode) {
  std::vector<std::string> a = {"clang++", "-fsyntax-only"};
  if (mode == Mode::Cxx) {
    a.insert(a.end(), {"-x", "c++", "-O2", "-isystem", (o.cuda_path / "include").string()});
  } else {
    a.insert(a.end(), {"-x", "cuda", mode == Mode::CudaDevice ? "--cuda-device-only" : "--cuda-host-only",
                       "--cuda-gpu-arch=" + o.gpu_arch, "--cuda-path=" + o.cuda_path.string(),
                       "-nocudalib", "-Wno-unknown-cuda-version", "-Xclang", "-target-sdk-version=12.5"});
    if (mode == Mode::CudaHost) a.push_back("-O3");
  }
  a.insert(a.end(), {"-isystem", (o.cuda_path / "include" / "cccl").string(),
                     "-idirafter", shim.string(),
                     "-resource-dir", o.resource_dir.string(),
                     // No error limit: "too many errors" is fatal, and after a
                     // fatal error Clang stops entering #includes.
                     "-std=c++17", "-w", "-ferror-limit=0", "-fno-caret-diagnostics",
                     // No typo correction: its edit distances are quadratic in
                     // an unknown name's length (a 600 KB identifier kept a
                     // check busy for minutes), and a hint is no finding.
                     "-fno-spell-checking",
                     // A precompiled header records the size and mtime of
                     // every file it read; with this flag, on building it
                     // also records their content hash, and on loading it a
                     // file whose mtime changed (a copied cache, a system
                     // header reinstalled unchanged) is accepted when its
                     // content is the same.
                     "-fpch-validate-input-files-content",
                     "-I", interface_dir.string()});
  if (o.extension) {
    // As torch's build compiles an extension: its headers and defines, and
    // no OpenMP (g++ runs without -fopenmp, so `_OPENMP` is undefined and
    // torch's headers do not include <omp.h>).
    a.insert(a.end(), o.extension->args.begin(), o.extension->args.end());
    if (mode != Mode::Cxx) a.insert(a.end(), o.extension->cuda_args.begin(), o.extension->cuda_args.end());
  } else if (mode != Mode::CudaDevice) {
    a.push_back("-fopenmp");  // so that OpenMP directives reach the AST
  }
  return a;
}

// The headers a torch extension's precompiled header adds to the prelude:
// what load_inline's generated files include first, and ATen's CUDA
// context (streams, guards), which most CUDA sources include.
const char* extensionPrelude(bool cuda) {
  return cuda ? "\n#include <torch/types.h>\n#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAGuard.h>\n"
              : "\n#include <torch/extension.h>\n";
}

// Matches only the declarations written in the solution's files. Without
// this scope the matchers would walk every declaration of the precompiled
// CUDA and C++ headers, which costs most of a second per parse.
// A parse's state beyond the rules: Clang's errors and the banned tokens
// (parser_limit.h).
struct ParseState {
  RecordingPrinter* printer = nullptr;
  const TokenScanner* scanner = nullptr;
  std::unique_ptr<TokenRecorder> tokens;
};

class SolutionScopeConsumer : public clang::ASTConsumer {
 public:
  SolutionScopeConsumer(clang::ast_matchers::MatchFinder& finder, CheckContext& ctx, ParseState& state)
      : finder_(finder), ctx_(ctx), state_(state) {}
  bool HandleTopLevelDecl(clang::DeclGroupRef group) override {
    for (clang::Decl* d : group) decls_.push_back(d);
    return true;
  }
  void HandleTranslationUnit(clang::ASTContext& ast) override {
    std::vector<clang::Decl*> scope;
    for (clang::Decl* d : decls_)
      if (ctx_.inSolution(d->getLocation(), ast.getSourceManager())) scope.push_back(d);
    ast.setTraversalScope(scope);
    finder_.matchAST(ast);
    if (state_.tokens)
      reportParserLimits(ctx_, ast, decls_, state_.printer->errors, *state_.tokens, *state_.scanner);
  }

 private:
  clang::ast_matchers::MatchFinder& finder_;
  CheckContext& ctx_;
  ParseState& state_;
  std::vector<clang::Decl*> decls_;
};

class CheckAction : public clang::ASTFrontendAction {
 public:
  CheckAction(clang::ast_matchers::MatchFinder& finder, std::vector<std::unique_ptr<Rule>>& rules,
              CheckContext& ctx, ParseState& state)
      : finder_(finder), rules_(rules), ctx_(ctx), state_(state) {}
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci,
                                                        llvm::StringRef) override {
    clang::Preprocessor& pp = ci.getPreprocessor();
    for (auto& rule : rules_) rule->registerPPCallbacks(pp);
    state_.tokens = std::make_unique<TokenRecorder>(ctx_, *state_.scanner, pp);
    pp.setTokenWatcher([tokens = state_.tokens.get()](const clang::Token& t) { tokens->onToken(t); });
    return std::make_unique<SolutionScopeConsumer>(finder_, ctx_, state_);
  }

 private:
  clang::ast_matchers::MatchFinder& finder_;
  std::vector<std::unique_ptr<Rule>>& rules_;
  CheckContext& ctx_;
  ParseState& state_;
};

struct ParseOutput {
  std::vector<Finding> findings;
  Inventory inventory;
  SymbolFacts symbols;
  bool ok = true;
  bool pch_failed = false;  // the precompiled header did not load: parse again without it
  std::string diagnostics;
};

// Runs one Clang invocation with `action`; returns false and Clang's
// diagnostics text on failure.
// `state`, when given, receives the printer that records the errors;
// `pch_failed`, whether an error was about loading the precompiled header.
bool invoke(std::vector<std::string> args, std::unique_ptr<clang::FrontendAction> action,
            std::string* diagnostics, ParseState* state = nullptr, bool* pch_failed = nullptr) {
  llvm::IntrusiveRefCntPtr<clang::FileManager> files(
      new clang::FileManager(clang::FileSystemOptions(), llvm::vfs::getRealFileSystem()));
  llvm::raw_string_ostream os(*diagnostics);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> opts = new clang::DiagnosticOptions();
  opts->ShowColors = false;
  RecordingPrinter printer(os, opts.get());
  if (state) state->printer = &printer;
  clang::tooling::ToolInvocation inv(std::move(args), std::move(action), files.get());
  inv.setDiagnosticConsumer(&printer);
  bool ok = inv.run();
  os.flush();
  if (state) state->printer = nullptr;
  if (pch_failed) *pch_failed = printer.pch_failed;
  return ok && printer.getNumErrors() == 0;
}

// A name no other thread or process uses for its temporary file.
std::string uniqueSuffix() {
  static std::atomic<unsigned> counter{0};
  return ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())) + "." +
         std::to_string(counter++);
}

// Makes `path` hold `content`. A file that already holds it is left alone
// (its mtime too); otherwise the content is written to a temporary file and
// renamed over `path`, so that concurrent checkers only ever see a whole file.
void writeFile(const fs::path& path, const std::string& content) {
  if (fs::exists(path) && readText(path) == content) return;
  writeFileAtomic(path, content);
}

// The precompiled headers and every file they are built from, all inside
// one folder of the cache named by a hash of their content (ensurePch).
struct PchSet {
  fs::path shim;          // texture_fetch_functions.h, empty
  fs::path iface;         // a copy of the interface header: <iface>/kb/solution.h
  std::string interface_text;
  fs::path prelude, cxx_prelude;
  std::string prelude_text, cxx_prelude_text;
  fs::path host, device, cxx;
  const fs::path& of(Mode m) const { return m == Mode::CudaHost ? host : m == Mode::CudaDevice ? device : cxx; }
  const fs::path& preludeOf(Mode m) const { return m == Mode::Cxx ? cxx_prelude : prelude; }
};

// Writes the files the precompiled headers are built from (and that a parse
// without them includes instead).
void writePchInputs(const PchSet& set) {
  std::error_code ec;
  fs::create_directories(set.shim, ec);
  if (!ec) fs::create_directories(set.iface / "kb", ec);
  if (ec) throw Error("cannot create cache directory " + set.shim.parent_path().string() + ": " + ec.message());
  writeFile(set.shim / "texture_fetch_functions.h", "// empty: Clang 19 cannot parse CUDA 13's\n");
  writeFile(set.prelude, set.prelude_text);
  writeFile(set.cxx_prelude, set.cxx_prelude_text);
  writeFile(set.iface / "kb" / "solution.h", set.interface_text);
}

// Builds (once per toolchain, arch and interface content) the precompiled
// headers into the cache; concurrent checkers race safely through rename().
//
// A precompiled header records the path, size and mtime of every file it
// read, and Clang refuses to load it when one of them changed. So it reads
// nothing from the source tree: the interface header is copied into the
// cache folder (keyed by its content) and the PCH is built from the copy.
// A new clone, a `touch`, or two trees sharing one cache give the same key
// and a PCH that stays valid; the parses themselves read the tree's header,
// whose include guard the PCH has already defined. Input files are also
// validated by content (-fpch-validate-input-files-content), and a PCH that
// still fails to load is not used (checkSolution parses without it).
PchSet ensurePch(const CheckOptions& o) {
  const fs::path interface_header = o.interface_include / "kb" / "solution.h";
  PchSet set;
  {
    std::ifstream in(interface_header, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in || ss.str().empty())
      throw Error("cannot read the interface header " + interface_header.string());
    set.interface_text = ss.str();
  }
  Sha256 key;
  key.update(clang::getClangFullVersion());
  key.update(readText(o.cuda_path / "version.json"));
  key.update(set.interface_text);
  key.update(o.gpu_arch);
  key.update(o.cuda_path.string());
  key.update(o.resource_dir.string());
  set.prelude_text = cudaPrelude();
  set.cxx_prelude_text = cxxPrelude();
  if (o.extension) {
    set.prelude_text += extensionPrelude(true);
    set.cxx_prelude_text += extensionPrelude(false);
    key.update("torch extension");
    for (const auto& a : o.extension->args) key.update(a + "\n");
    for (const auto& a : o.extension->cuda_args) key.update(a + "\n");
  }
  key.update(set.prelude_text);
  key.update(set.cxx_prelude_text);
  key.update("pch-v3: -O3 host, -O0 device, -x c++ -O2 for .cpp; interface header copied into the cache; "
             "inputs validated by content");
  const fs::path dir = o.cache_dir / "pch" / key.hexDigest().substr(0, 16);
  set.shim = dir / "shim";
  set.iface = dir / "include";
  set.prelude = dir / "prelude.cuh";
  set.cxx_prelude = dir / "prelude.hpp";
  set.host = dir / "host.pch";
  set.device = dir / "device.pch";
  set.cxx = dir / "cxx.pch";
  const Mode modes[3] = {Mode::CudaHost, Mode::CudaDevice, Mode::Cxx};
  bool missing = false;
  for (Mode m : modes) missing = missing || !fs::exists(set.of(m));
  if (!missing) return set;

  writePchInputs(set);
  std::string errors[3];
  std::thread workers[3];
  for (int side = 0; side < 3; ++side) {
    workers[side] = std::thread([&, side] {
      const Mode mode = modes[side];
      const fs::path out = set.of(mode);
      if (fs::exists(out)) return;
      const fs::path tmp = out.string() + uniqueSuffix();
      std::vector<std::string> args = baseArgs(o, set.shim, set.iface, mode);
      args.erase(std::find(args.begin(), args.end(), "-fsyntax-only"));
      // torch's headers leave most template instantiation to the source
      // (~4 s a parse): done once here instead (not on the device side, whose
      // header then fails to load).
      if (o.extension && mode != Mode::CudaDevice) args.push_back("-fpch-instantiate-templates");
      args.insert(args.end(), {"-S", "-o", tmp.string(), set.preludeOf(mode).string()});
      std::string diags;
      if (!invoke(args, std::make_unique<clang::GeneratePCHAction>(), &diags)) {
        errors[side] = diags.empty() ? "Clang failed without a message" : diags;
        std::error_code ec;
        fs::remove(tmp, ec);
        return;
      }
      std::error_code ec;
      fs::rename(tmp, out, ec);
      if (ec) {
        errors[side] = "cannot move " + tmp.string() + " to " + out.string() + ": " + ec.message();
        fs::remove(tmp, ec);
      }
    });
  }
  for (auto& w : workers) w.join();
  for (const auto& e : errors)
    if (!e.empty())
      throw Error("cannot build the precompiled CUDA headers (is the CUDA toolkit at " +
                  o.cuda_path.string() + "?):\n" + e);
  return set;
}

// One parse. With `use_pch`, against the precompiled header of `mode`;
// without, the prelude it was built from is included as text (slower, same
// declarations).
ParseOutput parseOne(const solution::Solution& solution, const StaticPolicy& policy, const CheckOptions& options,
                     const PchSet& pch, bool use_pch, const TokenScanner& scanner,
                     const solution::SolutionFile& file, Mode mode) {
  ParseOutput out;
  CheckContext ctx(solution, policy, options, mode == Mode::CudaDevice);
  std::vector<std::unique_ptr<Rule>> rules = makeRules(ctx);
  clang::ast_matchers::MatchFinder finder;
  for (auto& rule : rules) rule->registerMatchers(finder);
  InventoryCollector inventory(ctx);
  inventory.registerMatchers(finder);

  std::vector<std::string> args = baseArgs(options, pch.shim, options.interface_include, mode);
  if (options.extension) {
    auto more = options.extension->file_args.find(file.path);
    if (more != options.extension->file_args.end()) args.insert(args.end(), more->second.begin(), more->second.end());
  }
  args.insert(args.end(), {"-I", solution.root.string(), use_pch ? "-include-pch" : "-include",
                           (use_pch ? pch.of(mode) : pch.preludeOf(mode)).string(),
                           file.absolute.string()});
  ParseState state;
  state.scanner = &scanner;
  out.ok = invoke(args, std::make_unique<CheckAction>(finder, rules, ctx, state), &out.diagnostics,
                  &state, &out.pch_failed);
  out.findings = std::move(ctx.findings());
  out.inventory = std::move(ctx.inventory());
  out.symbols = std::move(ctx.symbols());
  return out;
}

template <typename T, typename Key>
void dedupe(std::vector<T>& v, Key key) {
  std::set<decltype(key(v[0]))> seen;
  std::vector<T> out;
  for (auto& x : v)
    if (seen.insert(key(x)).second) out.push_back(std::move(x));
  v = std::move(out);
}

void fillSourceLines(const solution::Solution& solution, std::vector<Finding>& findings) {
  std::map<std::string, std::vector<std::string>> lines;
  for (auto& f : findings) {
    if (f.line == 0) continue;
    auto it = lines.find(f.file);
    if (it == lines.end()) {
      std::vector<std::string> ls;
      std::ifstream in(solution.root / f.file);
      for (std::string l; std::getline(in, l);) ls.push_back(l);
      it = lines.emplace(f.file, std::move(ls)).first;
    }
    if (f.line <= it->second.size()) f.source_line = it->second[f.line - 1];
  }
}

}  // namespace

unsigned StaticResult::errorCount() const {
  return std::count_if(findings.begin(), findings.end(),
                       [](const Finding& f) { return f.severity == Severity::Error; });
}
unsigned StaticResult::warningCount() const {
  return std::count_if(findings.begin(), findings.end(),
                       [](const Finding& f) { return f.severity == Severity::Warning; });
}

CheckOptions defaultCheckOptions() {
  CheckOptions o;
  const char* cuda = std::getenv("KB_CUDA_PATH");
  o.cuda_path = cuda ? cuda : KB_CUDA_PATH;
  const char* iface = std::getenv("KB_INTERFACE_INCLUDE");
  o.interface_include = iface ? fs::path(iface) : dataPath("include");
  o.resource_dir = KB_CLANG_RESOURCE_DIR;
  if (const char* c = std::getenv("KB_CACHE_DIR")) {
    o.cache_dir = fs::path(c) / "static";
  } else if (const char* x = std::getenv("XDG_CACHE_HOME")) {
    o.cache_dir = fs::path(x) / "kernelbench-rl" / "static";
  } else if (const char* h = std::getenv("HOME")) {
    o.cache_dir = fs::path(h) / ".cache" / "kernelbench-rl" / "static";
  } else {
    o.cache_dir = fs::temp_directory_path() / "kernelbench-rl" / "static";
  }
  return o;
}

StaticResult checkSolution(const solution::Solution& solution, const StaticPolicy& policy, const CheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  StaticResult result;

  for (const auto& esc : solution.escapes) {
    if (policy.severityOf("symlink") == "off") break;
    Finding f;
    f.rule = "symlink";
    f.severity = policy.severityOf("symlink") == "warning" ? Severity::Warning : Severity::Error;
    f.file = esc.path;
    f.message = "symbolic link leaves the solution directory (points to " + esc.target + ")";
    result.findings.push_back(std::move(f));
  }

  PchSet pch;
  try {
    pch = ensurePch(options);
  } catch (const std::exception& e) {
    result.infra_failed = true;
    result.infra_message = e.what();
    return result;
  }

  struct Job {
    const solution::SolutionFile* file;
    Mode mode;
  };
  std::vector<Job> jobs;
  for (const solution::SolutionFile* f : solution.sources()) {
    if (f->kind == solution::SourceKind::CudaSource) {
      jobs.push_back({f, Mode::CudaHost});
      jobs.push_back({f, Mode::CudaDevice});
    } else {
      jobs.push_back({f, Mode::Cxx});
    }
  }
  const TokenScanner scanner(policy);
  std::vector<ParseOutput> outputs(jobs.size());
  unsigned workers = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  workers = std::min<unsigned>(workers, jobs.size());
  std::atomic<size_t> next{0};
  // A precompiled header that does not load (changed inputs, a corrupt or
  // vanished file) is the checker's problem, never the solution's: that
  // parse is done again without it, and the header is removed so that the
  // next check builds it anew.
  std::atomic<bool> stale[3] = {false, false, false};
  std::once_flag inputs_written;
  std::mutex infra_mutex;
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < jobs.size();) {
        const Mode mode = jobs[i].mode;
        outputs[i] = parseOne(solution, policy, options, pch, true, scanner, *jobs[i].file, mode);
        if (!outputs[i].pch_failed) continue;
        stale[static_cast<int>(mode)] = true;
        try {
          std::call_once(inputs_written, [&] { writePchInputs(pch); });
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(infra_mutex);
          result.infra_failed = true;
          result.infra_message = e.what();
          continue;
        }
        outputs[i] = parseOne(solution, policy, options, pch, false, scanner, *jobs[i].file, mode);
        if (outputs[i].pch_failed) {  // no PCH in this parse: cannot happen
          std::lock_guard<std::mutex> lock(infra_mutex);
          result.infra_failed = true;
          result.infra_message = "the parse without a precompiled header failed to load one:\n" +
                                 outputs[i].diagnostics;
        }
      }
    });
  for (auto& t : pool) t.join();
  for (Mode mode : {Mode::CudaHost, Mode::CudaDevice, Mode::Cxx}) {
    if (!stale[static_cast<int>(mode)]) continue;
    result.pch_fallback = true;
    std::error_code ec;
    fs::remove(pch.of(mode), ec);
  }
  if (result.infra_failed) return result;

  std::vector<SymbolFacts> facts;
  for (size_t i = 0; i < jobs.size(); ++i) {
    ParseOutput& o = outputs[i];
    // A parse with errors keeps its findings: Clang's recovery keeps the
    // AST of everything else, declarations Clang rejected are left out of
    // extern-symbol (rules/extern_symbol.cpp), and parser_limit.cpp has
    // noted the errors and token-scanned what was rejected.
    std::move(o.findings.begin(), o.findings.end(), std::back_inserter(result.findings));
    auto& inv = result.inventory;
    std::move(o.inventory.kernels.begin(), o.inventory.kernels.end(), std::back_inserter(inv.kernels));
    std::move(o.inventory.launches.begin(), o.inventory.launches.end(), std::back_inserter(inv.launches));
    std::move(o.inventory.library_calls.begin(), o.inventory.library_calls.end(),
              std::back_inserter(inv.library_calls));
    facts.push_back(std::move(o.symbols));
    if (!o.ok) {
      result.parsed = false;
      std::string side = jobs[i].mode == Mode::CudaDevice ? " (device side, " + options.gpu_arch + ")"
                         : jobs[i].mode == Mode::CudaHost ? " (host side)"
                                                          : " (C++, as g++ compiles it)";
      result.parse_errors.push_back(jobs[i].file->path + side + ":\n" + o.diagnostics);
    }
  }
  finishExternSymbols(facts, policy, result.findings);
  finishMissingEntry(facts, result.parsed, policy, result.findings);
  result.translation_units = jobs.size();

  // One finding per rule and line: host and device parses, and several
  // references on one line, say the same thing.
  auto& fs_ = result.findings;
  std::stable_sort(fs_.begin(), fs_.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.file, a.line, a.column, a.rule) < std::tie(b.file, b.line, b.column, b.rule);
  });
  if (!fs_.empty()) dedupe(fs_, [](const Finding& f) { return std::make_tuple(f.file, f.line, f.rule); });
  fillSourceLines(solution, fs_);
  auto& inv = result.inventory;
  if (!inv.kernels.empty()) dedupe(inv.kernels, [](const KernelInfo& k) { return std::make_tuple(k.file, k.line, k.name); });
  if (!inv.launches.empty()) dedupe(inv.launches, [](const LaunchSite& l) { return std::make_tuple(l.file, l.line, l.column); });
  if (!inv.library_calls.empty())
    dedupe(inv.library_calls, [](const LibraryCall& l) { return std::make_tuple(l.file, l.line, l.column, l.function); });

  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace kb::analyze
