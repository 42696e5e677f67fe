#include "agent/environment.h"

#include <chrono>
#include <mutex>

#include "agent/shell.h"
#include "agent/tools.h"
#include "solution/solution.h"

#ifdef KB_HAVE_CLANG
#include "analyze/analyze.h"
#endif

namespace kb::agent {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class LibraryEnvironment : public Environment {
 public:
  explicit LibraryEnvironment(EnvironmentOptions o) : o_(std::move(o)) {
    if (o_.jail.empty()) o_.jail = findJail();
  }

  ShellResult bash(const fs::path& workspace, const std::string& command, double timeout) override {
    ShellResult r = runJailedBash(o_.jail, workspace, command, timeout, o_.shell_output_limit);
    r.sandbox = jailLayers(o_.jail);
    return r;
  }

  StageResult compile(const fs::path& dir) override {
    StageResult r;
    r.stage = "compile";
    auto start = Clock::now();
    std::optional<ResourcePool::Lease> lease;
    if (o_.cpu_pool) lease.emplace(o_.cpu_pool->acquire(o_.task_id + " compile"));
    if (lease) r.resources = lease->record();
    Solution sol;
    try {
      sol = loadSolution(dir);
    } catch (const UsageError& e) {
      // No forward.cpp, a binary or oversized source: the solution's fault.
      r.status = Status::CompileError;
      r.text = std::string("compile_error: ") + e.what();
      r.report = {{"static", {{"status", "compile_error"}, {"message", e.what()}}}};
      r.seconds = since(start);
      return r;
    }
#ifdef KB_HAVE_CLANG
    analyze::StaticResult s;
    try {
      s = analyze::checkSolution(sol, policy(), analyze::defaultCheckOptions());
    } catch (const std::exception& e) {
      s.infra_failed = true;
      s.infra_message = e.what();
    }
    Json findings = Json::array();
    std::string text;
    for (const analyze::Finding& f : s.findings) {
      std::string sev = f.severity == analyze::Severity::Error ? "error" : "warning";
      findings.push_back({{"rule", f.rule}, {"severity", sev}, {"file", f.file}, {"line", f.line},
                          {"column", f.column}, {"message", f.message}});
      text += f.file + ":" + std::to_string(f.line) + ":" + std::to_string(f.column) + ": " + sev +
              ": [" + f.rule + "] " + f.message + "\n";
    }
    for (const std::string& e : s.parse_errors) text += e + (e.empty() || e.back() == '\n' ? "" : "\n");
    if (s.infra_failed) r.status = Status::InfraError;
    else if (s.errorCount() > 0) r.status = Status::StaticViolation;
    else if (!s.parsed) r.status = Status::CompileError;
    else r.status = Status::Ok;
    r.report = {{"solution_hash", sol.hash},
                {"static", {{"status", std::string(statusName(r.status))},
                            {"findings", findings},
                            {"compile_errors", s.parse_errors},
                            {"translation_units", s.translation_units},
                            {"seconds", s.seconds},
                            {"infra_message", s.infra_message}}},
                {"build", {{"available", false},
                           {"reason", "the nvcc/host build (lib/build) is not wired into kbrollout yet; "
                                      "compile is the Clang static check alone"}}}};
    std::string head = std::string(statusName(r.status));
    if (r.status == Status::Ok)
      head = "ok: static check passed (" + std::to_string(s.translation_units) +
             " parses, no error). Note: this build of kbrollout checks and parses your code with "
             "Clang but does not run nvcc yet.";
    else if (r.status == Status::InfraError)
      head = "infra_error (not your fault): " + s.infra_message;
    else if (r.status == Status::StaticViolation)
      head = "static_violation: " + std::to_string(s.errorCount()) + " policy error(s)";
    else
      head = "compile_error: a source did not parse";
    r.text = head + (text.empty() ? "" : "\n" + text);
#else
    r.status = Status::InfraError;
    r.text = "infra_error (not your fault): this kbrollout was built without the Clang checker";
    r.report = {{"solution_hash", sol.hash}, {"static", {{"available", false}}}};
#endif
    r.seconds = since(start);
    return r;
  }

  StageResult verify(const fs::path&) override {
    StageResult r;
    r.stage = "verify";
    r.available = false;
    r.text = "verify is not available yet in this toolchain (lib/verify has not landed in "
             "kbrollout); only compile can check your code for now";
    r.report = {{"available", false}, {"reason", "lib/verify not wired yet"}};
    return r;
  }

  StageResult profile(const fs::path&) override {
    StageResult r;
    r.stage = "profile";
    r.available = false;
    r.text = "profile is not available yet: kbprof (timing against eager PyTorch and "
             "torch.compile) does not exist yet, so no timings can be given";
    r.report = {{"available", false}, {"reason", "kbprof does not exist yet"}};
    return r;
  }

 private:
#ifdef KB_HAVE_CLANG
  const analyze::Policy& policy() {
    std::call_once(policy_once_, [&] { policy_ = analyze::loadPolicy(analyze::defaultPolicyPath()); });
    return policy_;
  }
  std::once_flag policy_once_;
  analyze::Policy policy_;
#endif
  EnvironmentOptions o_;
};

}  // namespace

std::unique_ptr<Environment> makeLibraryEnvironment(const EnvironmentOptions& options) {
  return std::make_unique<LibraryEnvironment>(options);
}

}  // namespace kb::agent
