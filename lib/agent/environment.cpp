#include "agent/environment.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>

#include "agent/shell.h"
#include "agent/tools.h"
#include "build/build.h"
#include "core/clock.h"
#include "eval/eval.h"
#include "eval/session.h"
#include "profile/profile.h"
#include "solution/solution.h"
#include "verify/verify.h"

namespace kb::agent {
namespace fs = std::filesystem;

std::vector<StageResult> Environment::check(const fs::path&) { return {}; }

namespace {

std::string fmtSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

std::string fmtError(double e) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", e);
  return buf;
}

// The stages one call asked of the session, as the agent's stage results:
// compile always, verify and profile when the session ran or kept them.
struct Checked {
  StageResult compile;
  std::optional<StageResult> verify, profile;
};

class LibraryEnvironment : public Environment {
 public:
  explicit LibraryEnvironment(EnvironmentOptions o) : o_(std::move(o)) {
    if (o_.jail.empty()) o_.jail = findJail();
  }

  ShellResult bash(const fs::path& workspace, const std::string& command, double timeout) override {
    ShellResult r = runJailedBash(o_.jail, workspace, command, timeout, o_.shell_output_limit, o_.workspace_limits);
    r.sandbox = jailLayers(o_.jail);
    return r;
  }

  // Static check, then the build (host compiler for CPU tasks, nvcc for CUDA
  // ones), holding a CPU slot.
  StageResult compile(const fs::path& dir) override { return run(dir, false, false).compile; }

  // The built solution against the task's reference (lib/verify), on the
  // rollout's device: for CUDA tasks a GPU taken from the GPU pool for the
  // whole run, for CPU tasks a CPU slot.
  StageResult verify(const fs::path& dir) override {
    Checked c = run(dir, true, false);
    if (c.verify) return *c.verify;
    // A profile asked first failed (it verifies the seeds itself): its verdict stands.
    if (c.profile && c.profile->status != Status::Ok) return notRun("verify", "profile", *c.profile);
    return notRun("verify", "compile", c.compile);
  }

  // kbprof's library (lib/profile) on a GPU leased from the pool: verify
  // (unless the session has), time against eager and torch.compile
  // (baselines from the cache after the first time), provenance. CPU tasks
  // have nothing to time against.
  StageResult profile(const fs::path& dir) override {
    if (!o_.cuda) return profileNotAvailable();
    Checked c = run(dir, false, true);
    if (c.profile) return *c.profile;
    if (c.verify && c.verify->status != Status::Ok) return notRun("profile", "verify", *c.verify);
    return notRun("profile", "compile", c.compile);
  }

  // Every stage, as far as they pass (the session stops at the first failure).
  std::vector<StageResult> check(const fs::path& dir) override {
    Checked c = run(dir, true, o_.cuda);
    std::vector<StageResult> out{c.compile};
    if (c.verify) out.push_back(*c.verify);
    if (c.profile) out.push_back(*c.profile);
    else if (!o_.cuda && c.verify && c.verify->status == Status::Ok) out.push_back(profileNotAvailable());
    return out;
  }

 private:
  // The session's request: every stage this environment offers, its options.
  eval::Request request() const {
    eval::Request q;
    q.task_dir = o_.task_dir;
    // All four: the task is opened when verify or profile first needs it.
    q.stages = {.static_check = true, .build = true, .verify = true, .profile = true};
    q.static_checker = &static_checker_;
    q.build.target = o_.cuda ? build::BuildTarget::Cuda : build::BuildTarget::Cpu;
    q.build.arch = o_.arch;
    q.build.cache_dir = o_.build_cache_dir;
    q.verify.hidden_dirs = q.profile.hidden_dirs = o_.hidden_dirs;
    q.verify.hide_private_dirs = q.profile.hide_private_dirs = o_.hide_private_dirs;
    q.verify.scratch_dir = q.profile.scratch_dir = o_.scratch_dir;
    q.profile.arch = o_.arch;
    q.profile.budget_seconds = o_.profile_budget_seconds;
    q.profile.compile_baseline_mode = o_.compile_baseline;
    q.profile.build_compiled = o_.build_compiled;
    q.stage_errors_as_infra = true;
    return q;
  }

  // The solution in `dir` through the session (a new one when it changed):
  // static and build on a CPU slot, then what is asked of verify and
  // profile on the task's device. A slot is taken only for what the session
  // has not kept.
  Checked run(const fs::path& dir, bool verify, bool profile) {
    std::lock_guard<std::mutex> g(mu_);
    Checked out;
    StageResult& c = out.compile;
    c.stage = "compile";
    auto start = Clock::now();
    solution::Solution sol;
    try {
      sol = solution::loadSolution(dir);
    } catch (const UsageError& e) {
      // No forward.cpp, a binary or oversized source: the solution's fault.
      c.status = Status::CompileError;
      c.text = std::string("compile_error: ") + e.what();
      c.report = {{"static", {{"status", "compile_error"}, {"message", e.what()}}}};
      c.seconds = since(start);
      return out;
    }
    if (!session_ || session_->solutionHash() != sol.hash)
      session_ = std::make_unique<eval::Session>(request(), std::move(sol));
    eval::Session& s = *session_;

    const bool compiled = s.kept("static") && s.kept("build");
    {
      std::optional<ResourcePool::Lease> lease;
      if (!compiled && o_.cpu_pool) lease.emplace(o_.cpu_pool->acquire(o_.task_id + " compile"));
      if (lease) c.resources = lease->record();
      s.run({.static_check = true, .build = true});
    }
    compileStage(s.result(), c);
    if (compiled) c.report["reused"] = true;  // same solution as the last check: not redone
    c.seconds = since(start);
    if (c.status != Status::Ok || (!verify && !profile)) return out;

    auto t1 = Clock::now();
    const bool verified = s.kept("verify"), profiled = s.kept("profile");
    Json resources = Json::object();
    {
      std::optional<ResourcePool::Lease> lease;
      std::shared_ptr<void> alone;  // (declared after the lease: given back before it)
      std::string device = o_.cuda ? "cuda" : "cpu";
      if ((verify && !verified) || (profile && !profiled)) {
        const char* what = verify ? " verify" : " profile";
        if (o_.cuda && o_.gpu_pool) lease.emplace(o_.gpu_pool->acquire(o_.task_id + what));
        else if (!o_.cuda && o_.cpu_pool) lease.emplace(o_.cpu_pool->acquire(o_.task_id + what));
        if (lease && o_.cuda) device = "cuda:" + lease->slot();
        if (lease && o_.cuda && o_.gpu_exclusive) alone = o_.gpu_exclusive(lease->slot());
      }
      if (lease) resources = lease->record();
      s.request().verify.device = s.request().profile.device = device;
      s.run({.static_check = true, .build = true, .verify = verify, .profile = profile});
    }
    const eval::Result& r = s.result();
    if (r.verify && !r.stage("verify").skipped) {
      out.verify = verifyStage(r, verified);
      if (!verified) out.verify->resources = resources;
      out.verify->seconds = verified ? 0.0 : r.stage("verify").seconds;
    }
    if (r.profile && !r.stage("profile").skipped) {  // also when kept from an earlier call
      out.profile = profileStage(*r.profile, profiled);
      if (!profiled) out.profile->resources = resources;
      out.profile->seconds = profiled ? 0.0 : r.stage("profile").seconds;
    }
    if (!out.verify && !out.profile) out.compile.seconds += since(t1);
    return out;
  }

  // The compile stage (static check, then build) from the session's result.
  void compileStage(const eval::Result& e, StageResult& r) const {
    const std::string hash = e.header.solution_hash;
    std::string text;  // the static findings, for the model
    std::string static_note;
    if (e.static_check && e.static_check->available) {
      const analyze::StaticResult& s = e.static_check->result;
      Json findings = Json::array();
      for (const analyze::Finding& f : s.findings) {
        std::string sev = f.severity == analyze::Severity::Error     ? "error"
                          : f.severity == analyze::Severity::Warning ? "warning"
                                                                     : "note";
        findings.push_back({{"rule", f.rule}, {"severity", sev}, {"file", f.file}, {"line", f.line},
                            {"column", f.column}, {"message", f.message}});
        text += f.file + ":" + std::to_string(f.line) + ":" + std::to_string(f.column) + ": " + sev +
                ": [" + f.rule + "] " + f.message + "\n";
      }
      for (const std::string& pe : s.parse_errors) text += pe + (pe.empty() || pe.back() == '\n' ? "" : "\n");
      // A source Clang could not parse is a parser-limit note, not a failure
      // (docs/rules/parser-limit.md): the build decides whether it compiles.
      r.status = e.static_check->status;
      r.report = {{"solution_hash", hash},
                  {"static", {{"status", std::string(statusName(r.status))},
                              {"findings", findings},
                              {"compile_errors", s.parse_errors},
                              {"translation_units", s.translation_units},
                              {"seconds", s.seconds},
                              {"infra_message", s.infra_message}}},
                  {"build", nullptr}};
      if (r.status != Status::Ok) {
        std::size_t errors = 0;
        for (const analyze::Finding& f : s.findings) errors += f.severity == analyze::Severity::Error;
        std::string head;
        if (r.status == Status::InfraError)
          head = "infra_error (not your fault): " + s.infra_message;
        else if (r.status == Status::StaticViolation)
          head = "static_violation: " + std::to_string(errors) + " policy error(s)";
        else
          head = "compile_error: a source did not parse (Clang)";
        r.text = head + (text.empty() ? "" : "\n" + text);
      }
      static_note = "static check passed (" + std::to_string(s.translation_units) + " parses, no error)";
    } else {
      // The GPU machine has no Clang: the static check is skipped, and said so.
      r.status = Status::Ok;
      r.report = {{"solution_hash", hash},
                  {"static", {{"available", false}, {"reason", "built without the Clang checker"}}},
                  {"build", nullptr}};
      static_note = "static check skipped (this build has no Clang checker)";
    }
    if (r.status == Status::Ok && e.build) {
      const build::BuildResult& br = *e.build;
      r.status = br.status;
      r.report["build"] = br.toJson();
      std::string where = o_.cuda ? "for CUDA " + o_.arch + " (nvcc)" : "for the host CPU (C++ compiler)";
      if (br.status == Status::Ok) {
        r.text = "ok: " + static_note + "; built " + where + " in " + fmtSeconds(br.build_seconds) +
                 (br.cached ? " (unchanged since an earlier build, from the cache)" : "") +
                 (text.empty() ? "" : "\nwarnings:\n" + text);
      } else if (br.status == Status::InfraError) {
        r.text = "infra_error (not your fault): the build could not run: " + br.message;
      } else {
        r.text = "compile_error: " + br.message + "\n" + br.diagnostics;
        if (br.diagnostics_truncated) r.text += "\n[compiler output cut after the first errors]";
      }
    }
  }

  static StageResult verifyStage(const eval::Result& e, bool reused) {
    StageResult r;
    r.stage = "verify";
    r.status = e.verify->status;
    r.report = {{"solution_hash", e.header.solution_hash}, {"verify", e.verify->toJson()}};
    if (reused) r.report["reused"] = true;  // this solution's verdict, kept: not verified again
    r.text = renderVerdict(*e.verify);
    return r;
  }

  static StageResult profileStage(const profile::ProfileResult& p, bool reused) {
    StageResult r;
    r.stage = "profile";
    r.status = p.status;
    r.timings = eval::rewardTimings(p);
    r.report = p.toJson();
    r.report.erase("worker");  // kept short in the trajectory; the status and message say how it ended
    if (reused) r.report["reused"] = true;
    r.text = profile::renderProfileText(p, 8);
    return r;
  }

  // `stage` not run because `before` (the stage `why` names) did not pass.
  static StageResult notRun(const std::string& stage, const std::string& why, const StageResult& before) {
    StageResult r;
    r.stage = stage;
    r.status = before.status;
    r.text = std::string(statusName(r.status)) + ": not " + (stage == "verify" ? "verified" : "profiled") +
             ", the solution does not pass " + why + "; " + why + " says:\n" + before.text;
    if (stage == "verify")
      r.report = {{"solution_hash", before.report.value("solution_hash", Json(nullptr))}, {"verify", nullptr}};
    r.report["not_run"] = why + " did not pass";
    r.report[why + "_status"] = std::string(statusName(r.status));
    r.seconds = before.seconds;
    return r;
  }

  static StageResult profileNotAvailable() {
    StageResult r;
    r.stage = "profile";
    r.available = false;
    r.text = "profile is not available for a CPU task: kbprof times on a GPU";
    r.report = {{"available", false}, {"reason", "cpu task"}};
    return r;
  }

  // Short, for the model: the status with lib/verify's one-line message (for
  // `incorrect` it names the worst element, with the candidate's and the
  // reference's value there, as kbcheck prints it), each seed's largest
  // error, and the first failing seed's message. No output tensor is shown.
  static std::string renderVerdict(const verify::VerifyResult& v) {
    std::string t = std::string(statusName(v.status));
    if (v.status == Status::Ok)
      t += ": outputs match the reference on " + std::to_string(v.seeds.size()) + " seed(s) (atol " +
           fmtError(v.atol) + ", rtol " + fmtError(v.rtol) + ") on " + v.device;
    else if (v.status == Status::InfraError)
      t += " (not your fault): " + v.message;
    else
      t += ": " + v.message;
    t += "\n";
    std::string first_failure;
    for (const verify::SeedCheck& sd : v.seeds) {
      double worst = 0;
      for (const verify::OutputCheck& oc : sd.outputs) worst = std::max(worst, oc.max_abs_error);
      t += "seed " + std::to_string(sd.seed) + ": " + std::string(statusName(sd.status)) +
           ", max abs error " + fmtError(worst) + "\n";
      if (first_failure.empty() && sd.status != Status::Ok && !sd.message.empty())
        first_failure = "seed " + std::to_string(sd.seed) + ": " + sd.message;
    }
    if (!first_failure.empty() && first_failure.find(v.message) == std::string::npos)
      t += "first failure: " + first_failure + "\n";
    return t;
  }

  EnvironmentOptions o_;
  eval::StaticChecker static_checker_;  // the default policy, read once for all of this environment's rollouts
  std::mutex mu_;                       // one call at a time on the session
  std::unique_ptr<eval::Session> session_;  // the solution last seen
};

}  // namespace

std::unique_ptr<Environment> makeLibraryEnvironment(const EnvironmentOptions& options) {
  return std::make_unique<LibraryEnvironment>(options);
}

}  // namespace kb::agent
