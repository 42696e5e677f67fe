// Running the Python helpers in scripts/ (capture.py, baseline.py,
// expected.py, read_rows.py) as subprocesses: the only places the toolchain
// needs PyTorch's Python side. Each prints one JSON object per line on
// stdout; its stderr goes straight to ours.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/scratch_dir.h"
#include "task/bundle.h"

namespace kb::python {

// The interpreter: `flag` when not empty, else $KB_PYTHON, else
// /opt/kb-venv/bin/python3 when it exists, else "python3" on the PATH.
std::string pythonPath(const std::string& flag = "");

// The folder of the scripts: $KB_SCRIPTS_DIR, else kb::dataPath("scripts")
// (lib/core/paths.h: the installed share/kernelbench-rl/scripts, or the
// source tree's when run from a build tree).
std::filesystem::path scriptsDir();

struct ScriptResult {
  int exit_code = 0;            // of the interpreter; 128+N when killed by signal N
  std::vector<Json> lines;      // stdout lines that parsed as JSON objects
  std::vector<std::string> other;  // stdout lines that did not
  std::string note;                // runBaselineScript: " (...)" when it ran the script again
};

// Environment variables to set (NAME -> value) in a child, over the parent's.
using EnvOverrides = std::vector<std::pair<std::string, std::string>>;

// Runs `python scripts/<script> args...`, calling on_line for each JSON line
// as it arrives (progress). Throws kb::Error when the interpreter cannot be
// started.
ScriptResult runScript(const std::string& python, const std::string& script,
                       const std::vector<std::string>& args,
                       const std::function<void(const Json&)>& on_line = {}, const EnvOverrides& env = {});

// A long-lived helper, `python scripts/<script> args...`, spoken to line by
// line: JSON lines go to its stdin (a socket, so that writing to a dead
// worker is an error, not SIGPIPE), lines come back from its stdout with a
// time limit; its stderr goes straight to ours. It runs in its own process
// group, which kill() and the destructor end with SIGKILL, and with a
// $TMPDIR of its own that goes when it is reaped, however it ended.
class ScriptWorker {
 public:
  // Throws kb::Error when the interpreter cannot be started. `env` replaces
  // (or adds) variables of ours in its environment.
  ScriptWorker(const std::string& python, const std::string& script, const std::vector<std::string>& args,
               const EnvOverrides& env = {});
  ~ScriptWorker();
  ScriptWorker(const ScriptWorker&) = delete;
  ScriptWorker& operator=(const ScriptWorker&) = delete;

  // Sends one line (a newline is added); false when the worker has gone.
  bool send(const std::string& line);
  enum class Read { line, timeout, eof };
  // The next stdout line (without its newline) within timeout_s seconds.
  Read readLine(std::string& line, double timeout_s);
  // SIGKILL to the worker's process group; then reaps it.
  void kill();
  // Closes its stdin and waits for it to exit; the exit status (128+N when
  // killed by signal N). kill() first to stop it instead.
  int wait();
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  int in_ = -1, out_ = -1;
  ScratchDir tmpdir_;  // the worker's $TMPDIR, removed when it is reaped
  std::string buf_;
  bool reaped_ = false;
  int status_ = 0;
};

// Whether a baseline.py killed by a signal is run again with /usr/bin/c++:
// $CXX names another compiler (runBaselineScript, kbsynth's baseline pool).
bool otherCxxThanSystem();

// `python scripts/baseline.py args...`, and once more with CXX=/usr/bin/c++
// (and CC=/usr/bin/cc) when the first run was killed by a signal while $CXX
// named another compiler: on the H200 machine $CXX is a wrapper whose
// AOTInductor packages crash the loader (docs/gpu-validation.md). Bundles
// the first run finished are "cached" in the second. `note` says so.
ScriptResult runBaselineScript(const std::string& python, const std::vector<std::string>& args,
                               const std::function<void(const Json&)>& on_line = {}, const EnvOverrides& env = {});

// The compiled baseline for `arch` on first need: when checkCompiled() finds
// compiled/<arch>.pt2 missing or stale, runs scripts/baseline.py for
// `device` ("cpu", "cuda", "cuda:1") and re-opens the bundle. Returns the
// bundle as it now is; throws kb::Error with baseline.py's reason when the
// build fails.
//
// A failure is recorded in compiled/<arch>.failed.json (model.py's hash,
// the Python that built it, the reason) and thrown again at once by later calls for
// the same model.py and Python, instead of another build of a minute or more;
// deleting the file (or changing model.py) tries again. Built through
// runBaselineScript.
task::TaskBundle ensureCompiled(const task::TaskBundle& bundle, const std::string& arch, const std::string& device,
                          const std::string& python = "");

}  // namespace kb::python
