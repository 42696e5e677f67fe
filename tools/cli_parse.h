// The command-line contract of the eight tools (docs/cli.md), in one header
// every tools/*/main.cpp includes:
//
//   kb::tools::setVersionFlag(app, "kbsynth");   // --version: "kbsynth 0.1.0"
//   if (auto rc = kb::tools::parseOrExit(app, argc, argv, "kbsynth")) return *rc;
//   return kb::tools::runGuarded("kbsynth", [&] { ...; return kb::tools::kExitOk; });
//
// - --version prints "TOOL VERSION" (setVersionFlag); --help's "Usage:" names
//   the tool, never argv[0]'s path (parseOrExit names the app).
// - durations: durationFlags(app, {"--timeout", ...}) makes flags take
//   "90", "90s", "1.5m", "500ms", "2h" (parseDuration; a plain number is
//   seconds) and pass seconds on.
// - --json FILE where a subcommand has no JSON report: refuseJsonFlag.
//
// - exit codes: kExitOk 0 done; kExitFailed 1 the inputs were judged and
//   something failed; kExitUsage 2 bad usage or bad input, reported before
//   any work; kExitInfra 3 infrastructure fault; 128 + signal after a clean
//   stop on SIGINT / SIGTERM (130 / 143).
// - errors: one line "TOOL: what" on stderr; a bad flag
//   "TOOL: unknown flag --x (see TOOL --help)".
// - outputs: checkWritableFile / checkWritableDir before any work,
//   checkOneStdout for flags that take "-", writeFileAtomic (temporary file +
//   rename), OutputLock (an exclusive flock; a second writer is refused with
//   exit 2), printJsonLine (one compact JSON object per stdout line).
// - SIGINT / SIGTERM: StopSignals turns them into a flag the work polls and
//   forwards SIGINT to the tool's child processes.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "core/file.h"
#include "core/json.h"
#include "core/report.h"
#include "kb_config.h"

namespace kb::tools {

inline constexpr int kExitOk = 0;      // done
inline constexpr int kExitFailed = 1;  // the inputs were judged and something failed
inline constexpr int kExitUsage = 2;   // bad usage or bad input, before any work
inline constexpr int kExitInfra = 3;   // infrastructure fault (not the input's fault)
inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT (143: 128 + SIGTERM)

// A message as one line: newlines and tabs become "; " and " ", trailing
// blanks go.
inline std::string oneLine(std::string s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\r') continue;
    if (c == '\n') {
      while (!out.empty() && out.back() == ' ') out.pop_back();
      if (!out.empty() && i + 1 < s.size() && out.back() != ';' && out.back() != ':') out += ";";
      if (!out.empty() && i + 1 < s.size()) out += ' ';
      while (i + 1 < s.size() && (s[i + 1] == ' ' || s[i + 1] == '\n')) ++i;
    } else {
      out += c == '\t' ? ' ' : c;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}

// "TOOL: what" on stderr.
inline void printError(const std::string& tool, const std::string& what) {
  std::string line = tool + ": " + oneLine(what) + "\n";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

// The exit code of a verdict (docs/cli.md): 0 ok, 1 judged and failed, 3
// infra_error, which like every exit 3 is named on stderr's last line
// ("TOOL: infra_error: why"; the report says it too).
inline int verdictExit(const std::string& tool, Status status, const std::string& message) {
  if (status == Status::Ok) return kExitOk;
  if (status != Status::InfraError) return kExitFailed;
  std::fflush(stdout);
  printError(tool, "infra_error: " + message);
  return kExitInfra;
}

namespace detail {

// The flags of one command: its own options and its option groups' (groups
// are unnamed subcommands).
inline void collectOwnNames(const CLI::App& app, std::set<std::string>& longs, std::set<char>& shorts) {
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& n : o->get_lnames()) longs.insert(n);
    for (const auto& n : o->get_snames())
      if (n.size() == 1) shorts.insert(n[0]);
  }
  for (const CLI::App* g : app.get_subcommands([](const CLI::App* a) { return a->get_name().empty(); }))
    collectOwnNames(*g, longs, shorts);
}

// The flags valid on this command line: the app's own and those of the
// subcommands it chose (so a flag of another subcommand is unknown here).
inline void collectNames(const CLI::App& app, std::set<std::string>& longs, std::set<char>& shorts) {
  collectOwnNames(app, longs, shorts);
  for (const CLI::App* sub : app.get_subcommands())
    if (!sub->get_name().empty()) collectNames(*sub, longs, shorts);
}

inline bool looksNumeric(const std::string& s) {
  if (s.size() < 2) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end && *end == '\0';
}

}  // namespace detail

// After a parse: the first argument that names no flag of the app or of the
// subcommands it chose ("--frobnicate", "-Z"); empty when every flag is
// known. Arguments after "--" are positional.
inline std::string unknownFlag(const CLI::App& app, const std::vector<std::string>& args) {
  std::set<std::string> longs;
  std::set<char> shorts;
  detail::collectNames(app, longs, shorts);
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a.size() > 2 && a[0] == '-' && a[1] == '-') {
      std::string name = a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
      if (!longs.count(name)) return "--" + name;
    } else if (a.size() >= 2 && a[0] == '-' && a[1] != '-' && !detail::looksNumeric(a)) {
      if (!shorts.count(a[1])) return a.substr(0, 2);
    }
  }
  return "";
}

namespace detail {

template <class Parse>
std::optional<int> parseWith(CLI::App& app, const std::vector<std::string>& args, const std::string& tool,
                             Parse&& parse) {
  app.name(tool);  // "Usage: TOOL ...", not argv[0] (a path when run as build/tools/TOOL/TOOL)
  try {
    parse();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::string flag = unknownFlag(app, args);
    if (!flag.empty()) {
      printError(tool, "unknown flag " + flag + " (see " + tool + " --help)");
    } else if (e.get_name() == "ExtrasError") {
      std::string what = e.what();
      auto colon = what.find(": ");
      printError(tool, "unexpected argument " + (colon == std::string::npos ? what : what.substr(colon + 2)) +
                           " (see " + tool + " --help)");
    } else {
      printError(tool, std::string(e.what()) + " (see " + tool + " --help)");
    }
    return kExitUsage;
  }
  return std::nullopt;
}

}  // namespace detail

// --version prints "TOOL VERSION" (e.g. "kbreward 0.1.0") and exits 0, the
// same line in every tool.
inline void setVersionFlag(CLI::App& app, const std::string& tool) {
  app.set_version_flag("--version", tool + " " + KB_VERSION, "Print the version and exit");
}

// Parses the command line. The exit status when parsing ended the run
// (--help and --version: 0 after printing; a bad flag or value: 2 after one
// line "TOOL: what (see TOOL --help)"), nothing when the run goes on. An
// unknown flag is named as such even where CLI11 would first complain about
// a missing required option.
inline std::optional<int> parseOrExit(CLI::App& app, int argc, char** argv, const char* tool) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return detail::parseWith(app, args, tool, [&] { app.parse(argc, argv); });
}

// The same for arguments in their command-line order (without argv[0]).
inline std::optional<int> parseOrExit(CLI::App& app, const std::vector<std::string>& args, const std::string& tool) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  return detail::parseWith(app, args, tool, [&] { app.parse(reversed); });
}

// Runs the tool's work and turns what it throws into the contract's exit
// code and one line on stderr: kb::UsageError 2, any other error 3.
inline int runGuarded(const std::string& tool, const std::function<int()>& work) {
  try {
    return work();
  } catch (const kb::UsageError& e) {
    printError(tool, e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    printError(tool, e.what());
    return kExitInfra;
  }
}

// ---- outputs ----------------------------------------------------------------

namespace detail {

// The nearest existing ancestor of a path that does not exist (or the path).
inline std::filesystem::path existingAncestor(std::filesystem::path p) {
  namespace fs = std::filesystem;
  std::error_code ec;
  p = fs::absolute(p, ec).lexically_normal();
  while (!p.empty() && !fs::exists(p, ec)) {
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  return p;
}

}  // namespace detail

// Throws kb::UsageError (exit 2) unless `path` can be written as a file:
// "-" (stdout) always can; otherwise it is not a directory, and it is a
// writable file or a new name in a directory this process may write to
// (directories that do not exist yet must be creatable).
inline void checkWritableFile(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  if (path.empty() || path == "-") return;
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec)) throw kb::UsageError(flag + " " + path + ": is a directory");
  if (fs::exists(p, ec)) {
    if (::access(path.c_str(), W_OK) != 0)
      throw kb::UsageError(flag + " " + path + ": cannot write (" + std::strerror(errno) + ")");
    return;
  }
  fs::path dir = fs::absolute(p, ec).parent_path();
  fs::path at = detail::existingAncestor(dir);
  if (!fs::is_directory(at, ec)) throw kb::UsageError(flag + " " + path + ": " + at.string() + " is not a directory");
  if (::access(at.c_str(), W_OK | X_OK) != 0)
    throw kb::UsageError(flag + " " + path + ": cannot write in " + at.string() + " (" + std::strerror(errno) + ")");
}

// The same for an output directory: an existing writable directory, or a
// new one whose nearest existing ancestor is a writable directory.
inline void checkWritableDir(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  if (path.empty()) return;
  std::error_code ec;
  fs::path p(path);
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) throw kb::UsageError(flag + " " + path + ": not a directory");
    if (::access(path.c_str(), W_OK | X_OK) != 0)
      throw kb::UsageError(flag + " " + path + ": cannot write (" + std::strerror(errno) + ")");
    return;
  }
  fs::path at = detail::existingAncestor(p);
  if (!fs::is_directory(at, ec)) throw kb::UsageError(flag + " " + path + ": " + at.string() + " is not a directory");
  if (::access(at.c_str(), W_OK | X_OK) != 0)
    throw kb::UsageError(flag + " " + path + ": cannot create it in " + at.string() + " (" + std::strerror(errno) + ")");
}

// At most one stream on stdout: throws kb::UsageError when more than one of
// the given flags is "-", e.g. checkOneStdout({{"--json", json}, {"--sarif", sarif}}).
inline void checkOneStdout(std::initializer_list<std::pair<std::string, std::string>> flags) {
  std::string first;
  for (const auto& [flag, value] : flags) {
    if (value != "-") continue;
    if (!first.empty())
      throw kb::UsageError(first + " - and " + flag + " - both write to stdout; send one of them to a file");
    first = flag;
  }
}

// One compact JSON object and a newline on stdout, flushed (JSONL);
// writeFileAtomic (temporary file + rename) and writeJsonOutput ("-": one
// stdout line, a path: the indented document) are kb's, in core/file.h, so
// that the libraries behind the drivers write the same way.
using kb::printJsonLine;
using kb::writeFileAtomic;
using kb::writeJsonOutput;

// An exclusive flock(2) on `lock_path` (created if need be) for the life of
// the object; a second writer (another process holding it) gets
// kb::UsageError "... is in use by another process" (exit 2).
class OutputLock {
 public:
  OutputLock() = default;
  OutputLock(const std::filesystem::path& lock_path, const std::string& what) {
    std::error_code ec;
    if (lock_path.has_parent_path()) std::filesystem::create_directories(lock_path.parent_path(), ec);
    fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw kb::UsageError(what + ": cannot open the lock " + lock_path.string() + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK)
        throw kb::UsageError(what + " is in use by another process (locked: " + lock_path.string() + ")");
      throw kb::UsageError(what + ": cannot lock " + lock_path.string() + ": " + std::strerror(err));
    }
  }
  // The lock on a directory itself (its descriptor), so no lock file lands
  // among its contents.
  static OutputLock directory(const std::filesystem::path& dir, const std::string& what) {
    OutputLock l;
    l.fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (l.fd_ < 0) throw kb::UsageError(what + ": cannot open " + dir.string() + ": " + std::strerror(errno));
    if (::flock(l.fd_, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      l.release();
      if (err == EWOULDBLOCK) throw kb::UsageError(what + " is in use by another process (locked)");
      throw kb::UsageError(what + ": cannot lock " + dir.string() + ": " + std::strerror(err));
    }
    return l;
  }
  OutputLock(OutputLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  OutputLock& operator=(OutputLock&& o) noexcept {
    if (this != &o) {
      release();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock() { release(); }
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// ---- flag values ------------------------------------------------------------

// "--seeds 0,1,2": comma-separated non-negative integers, the same in every
// tool. Throws kb::UsageError.
inline std::vector<uint64_t> parseSeedList(const std::string& s, const std::string& flag = "--seeds") {
  std::vector<uint64_t> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    bool ok = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos && part.size() <= 19;
    if (!ok) throw kb::UsageError(flag + " takes comma-separated non-negative integers, not \"" + s + "\"");
    out.push_back(std::stoull(part));
  }
  if (out.empty() || (!s.empty() && s.back() == ','))
    throw kb::UsageError(flag + " takes comma-separated non-negative integers, not \"" + s + "\"");
  return out;
}

// Inputs: an existing path this process may read (a folder: list and
// enter). As a CLI11 check, so a missing or unreadable input is a usage
// error (exit 2) before any work, e.g. ->check(kb::tools::readablePath()).
inline std::string unreadableReason(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return "no such file or folder: " + path;
    return "cannot read " + path + " (" + std::strerror(errno) + ")";
  }
  int mode = S_ISDIR(st.st_mode) ? (R_OK | X_OK) : R_OK;
  if (::access(path.c_str(), mode) != 0) return "cannot read " + path + " (" + std::strerror(errno) + ")";
  return "";
}
inline CLI::Validator readablePath() {
  return CLI::Validator([](std::string& v) { return unreadableReason(v); }, "PATH", "READABLE");
}
inline void checkReadable(const std::string& path, const std::string& what) {
  if (std::string why = unreadableReason(path); !why.empty()) throw kb::UsageError(what + ": " + why);
}

// --device values: cpu, cuda or cuda:N (the device a task runs on).
inline CLI::Validator deviceValidator(bool allow_cpu = true) {
  return CLI::Validator(
      [allow_cpu](std::string& v) -> std::string {
        if (v == "cuda" || (allow_cpu && v == "cpu")) return "";
        if (v.rfind("cuda:", 0) == 0 && v.size() > 5 && v.find_first_not_of("0123456789", 5) == std::string::npos)
          return "";
        return std::string("must be ") + (allow_cpu ? "cpu, " : "") + "cuda or cuda:N, not \"" + v + "\"";
      },
      allow_cpu ? "{cpu,cuda,cuda:N}" : "{cuda,cuda:N}", "DEVICE");
}

// A solution path: a directory (forward.cpp, or model_new.py), or one .py
// file (KernelBench's single-file form; docs/solution-format.md).
inline CLI::Validator solutionPathValidator() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        std::error_code ec;
        if (std::filesystem::is_directory(v, ec)) return "";
        if (std::filesystem::is_regular_file(v, ec) && std::filesystem::path(v).extension() == ".py") return "";
        if (!std::filesystem::exists(v, ec)) return "Directory does not exist: " + v;
        return "not a solution directory or a .py file: " + v;
      },
      "DIR|FILE.py", "SOLUTION");
}

// --arch values: sm_NN, sm_NNa, sm_NNf, compute_NN.
inline CLI::Validator archValidator() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        for (const char* p : {"sm_", "compute_"}) {
          std::string pre = p;
          if (v.rfind(pre, 0) != 0) continue;
          std::string rest = v.substr(pre.size());
          if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) rest.pop_back();
          if (rest.size() >= 2 && rest.find_first_not_of("0123456789") == std::string::npos) return "";
        }
        return "must be sm_NN, sm_NNa or compute_NN (e.g. sm_90), not \"" + v + "\"";
      },
      "ARCH", "ARCH");
}

// ---- durations --------------------------------------------------------------

// A duration flag's value in seconds (docs/cli.md "Durations"): a
// non-negative decimal number with an optional unit, ms, s, m or h; a plain
// number is seconds: "90" = "90s" = "1.5m", "500ms", "2h". nullopt for
// anything else ("5parsecs", "-1", "5 s", "1e3").
inline std::optional<double> parseDuration(const std::string& text) {
  size_t i = 0, digits = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  const std::string number = text.substr(0, i), unit = text.substr(i);
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "ms") scale = 1e-3;
  else if (unit == "m") scale = 60;
  else if (unit == "h") scale = 3600;
  else return std::nullopt;
  const double seconds = std::strtod(number.c_str(), nullptr) * scale;
  if (!std::isfinite(seconds)) return std::nullopt;
  return seconds;
}

// A CLI11 transform: the duration becomes its seconds ("1.5m" -> "90"), or
// the flag is refused (exit 2): "--timeout: must be a duration: ...".
// whole_seconds: for an integer flag ("500ms" is refused there).
inline CLI::Validator durationValidator(bool whole_seconds = false) {
  return CLI::Validator(
      [whole_seconds](std::string& v) -> std::string {
        std::optional<double> s = parseDuration(v);
        if (!s)
          return "must be a duration: seconds, or a number with ms, s, m or h (90, 1.5m, 500ms, 2h), not \"" + v +
                 "\"";
        if (whole_seconds && *s != std::floor(*s)) return "must be whole seconds, not \"" + v + "\"";
        char buf[64];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, *s);  // the shortest text that reads back as *s
        if (ec != std::errc()) return "must be a duration, not \"" + v + "\"";
        v.assign(buf, end);
        return "";
      },
      "", "DURATION");
}

// Makes the named flags durations wherever they occur in `app` and its
// subcommands, e.g. durationFlags(app, {"--timeout", "--build-timeout"}):
// each then takes "90", "90s", "1.5m", "500ms", "2h" and passes seconds on to
// its own checks (a Range in seconds stays as it was). An integer flag takes
// whole seconds. Call once every flag is added.
inline void durationFlags(CLI::App& app, std::initializer_list<std::string> names) {
  for (CLI::Option* o : app.get_options()) {
    bool named = false;
    for (const std::string& n : names) named = named || o->check_name(n);
    if (!named) continue;
    std::string type = o->get_type_name();
    type = type.substr(0, type.find(':'));
    o->transform(durationValidator(type == "INT" || type == "UINT"));
    o->type_name("DURATION");
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) durationFlags(*sub, names);
}

// A subcommand that has no JSON report still answers --json FILE with one
// line, e.g. "kbpolicy: --json: decode prints text, not JSON (see kbpolicy
// --help)" (exit 2), rather than "unknown flag". The flag is not listed in
// its --help.
inline void refuseJsonFlag(CLI::App* sub, const std::string& why) {
  sub->add_option_function<std::string>(
         "--json", [why](const std::string&) { throw CLI::ValidationError("--json", why); }, "not accepted: " + why)
      ->group("");
}

// ---- SIGINT / SIGTERM ---------------------------------------------------------

// While one is alive, SIGINT and SIGTERM set a flag instead of killing the
// process, and (forward_to_children) SIGINT is passed on to the process's
// children, so that a helper started in the same process group stops as it
// would on Ctrl-C (scripts/capture.py exits quietly). A second signal of the
// same kind ends the process at once (exit 128 + signal).
class StopSignals {
 public:
  // forward_signal: what the children get; SIGTERM for a helper that has no
  // quiet SIGINT handler (Python prints a traceback on SIGINT, none on SIGTERM).
  explicit StopSignals(bool forward_to_children = true, int forward_signal = SIGINT)
      : forward_(forward_to_children), forward_signal_(forward_signal) {
    if (::pipe2(pipe_, O_CLOEXEC) != 0) pipe_[0] = pipe_[1] = -1;
    self() = this;
    struct sigaction sa {};
    sa.sa_handler = &StopSignals::onSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    if (pipe_[0] >= 0) watcher_ = std::thread([this] { watch(); });
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    if (pipe_[1] >= 0) {
      char c = 0;
      [[maybe_unused]] auto n = ::write(pipe_[1], &c, 1);
    }
    if (watcher_.joinable()) watcher_.join();
    for (int fd : pipe_)
      if (fd >= 0) ::close(fd);
    self() = nullptr;
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  static bool stopRequested() { return signal_.load() != 0; }
  // The signal that asked for the stop (0: none).
  static int signal() { return signal_.load(); }
  // The exit code of a clean stop: 128 + the signal.
  static int exitCode() { return 128 + (signal_.load() ? signal_.load() : SIGINT); }

 private:
  static StopSignals*& self() {
    static StopSignals* s = nullptr;
    return s;
  }
  // CLOCK_MONOTONIC in ns (clock_gettime is async-signal-safe).
  static int64_t nowNs() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  }
  static void onSignal(int sig) {
    int expected = 0;
    if (!signal_.compare_exchange_strong(expected, sig) && expected == sig) {
      // A second one within a second is the same stop delivered twice
      // (`timeout -s INT` signals the tool and then its process group; a
      // terminal's ^C reaches the whole foreground group): ignored, so the
      // clean stop goes on. A second one later is a person insisting: end
      // now, after one line (the next run reclaims what is left).
      if (nowNs() - first_ns_.load() < 1'000'000'000) return;
      static const char msg[] = ": stopped at once on a second signal; temporary folders left behind are removed by the next run\n";
      const char* tool = program_invocation_short_name;  // glibc: argv[0]'s last part, safe to read here
      [[maybe_unused]] auto w1 = ::write(2, tool, std::strlen(tool));
      [[maybe_unused]] auto w2 = ::write(2, msg, sizeof msg - 1);
      ::signal(sig, SIG_DFL);
      ::raise(sig);
      return;
    }
    if (expected == 0) first_ns_.store(nowNs());
    StopSignals* s = self();
    if (s && s->pipe_[1] >= 0) {
      char c = static_cast<char>(sig);
      [[maybe_unused]] auto n = ::write(s->pipe_[1], &c, 1);
    }
  }
  // Forwards the stop to every child of this process (found in /proc).
  void watch() {
    char c = 0;
    while (::read(pipe_[0], &c, 1) < 0 && errno == EINTR) {
    }
    if (c == 0 || !forward_) return;  // the destructor, or nothing to pass on
    const pid_t me = ::getpid();
    if (DIR* d = ::opendir("/proc")) {
      while (dirent* e = ::readdir(d)) {
        pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
        if (pid <= 0) continue;
        // read(2), not a stream: a process that exits between open and
        // read fails the read with ESRCH, which libstdc++'s filebuf throws
        // (here, in a thread: std::terminate; seen in CI under load).
        std::string text;
        int fd = ::open(("/proc/" + std::string(e->d_name) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        char buf[1024];
        ssize_t n = ::read(fd, buf, sizeof buf);
        ::close(fd);
        if (n <= 0) continue;
        text.assign(buf, static_cast<size_t>(n));
        auto close_paren = text.rfind(')');
        if (close_paren == std::string::npos) continue;
        std::istringstream rest(text.substr(close_paren + 1));
        std::string state;
        long ppid = 0;
        rest >> state >> ppid;
        if (ppid == me) ::kill(pid, forward_signal_);
      }
      ::closedir(d);
    }
  }

  static inline std::atomic<int> signal_{0};
  static inline std::atomic<int64_t> first_ns_{0};
  bool forward_ = true;
  int forward_signal_ = SIGINT;
  int pipe_[2] = {-1, -1};
  struct sigaction old_int_ {}, old_term_ {};
  std::thread watcher_;
};

}  // namespace kb::tools
