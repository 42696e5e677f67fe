#include "build_verify.h"

#include <iostream>
#include <memory>

#include "../cli_parse.h"
#include "core/error.h"
#include "core/report.h"

namespace kb::tools {
namespace {

build::BuildOptions buildOptions(const CheckFlags& c) {
  build::BuildOptions o;
  o.target = c.device == "cpu" ? build::BuildTarget::Cpu : build::BuildTarget::Cuda;
  o.arch = c.arch;
  o.device_only = c.device_only;
  o.jobs = c.jobs;
  o.cache_dir = c.cache_dir;
  o.use_cache = !c.no_cache;
  o.nvcc_flags = c.nvcc_flags;
  o.cxx_flags = c.cxx_flags;
  o.timeout_seconds = c.build_timeout;
  o.max_errors = c.max_errors;
  return o;
}

verify::VerifyOptions verifyOptions(const CheckFlags& c) {
  verify::VerifyOptions o;
  o.device = c.device;
  if (!c.seeds.empty()) o.seeds = parseSeedList(c.seeds);
  o.precision = c.precision;
  if (c.atol >= 0) o.atol = c.atol;
  if (c.rtol >= 0) o.rtol = c.rtol;
  o.limits.wall_seconds = c.timeout;
  o.limits.cpu_seconds = c.cpu_time ? c.cpu_time : static_cast<uint64_t>(c.timeout) + 1;
  o.memory_budget_bytes = c.memory_mib << 20;
  o.max_scratch_bytes = c.scratch_mib << 20;
  o.seccomp = !c.no_seccomp;
  o.landlock = !c.no_landlock;
  o.allow_open_rdwr = c.allow_open_rdwr;
  o.keep_worker_dir = c.keep_workdir;
  return o;
}

// Before any work: the flags' values that CLI11 cannot judge alone, and the
// output path (an unwritable --json is bad input, exit 2, not a fault found
// after the build and the verification).
void checkBeforeWork(const CheckFlags& c) {
  if (!c.seeds.empty()) parseSeedList(c.seeds);
  checkWritableFile(c.json, "--json");
}

// The stop after SIGINT / SIGTERM: what ran was cut short, so no verdict is
// printed or written (it would charge the solution for the interruption).
int interrupted() {
  printError("kbcheck", "interrupted: no verdict written; run the same command again");
  return StopSignals::exitCode();
}

// Prints the report (JSON or text) and writes --json; returns the exit code.
int emit(const CheckFlags& c, const eval::Result& result, const std::string& stage) {
  if (StopSignals::stopRequested()) return interrupted();
  Json j = eval::checkReportJson(result, stage);
  if (c.json == "-") {
    printJsonLine(j);
    return verdictExit("kbcheck", result.status(), result.message);
  }
  if (!c.json.empty()) writeJsonOutput(c.json, j);
  if (!c.quiet) std::cout << eval::renderCheckText(result);
  return verdictExit("kbcheck", result.status(), result.message);
}

// The request every kbcheck command makes: the flags' options, these stages.
eval::Request request(const CheckFlags& c, const eval::Stages& stages) {
  eval::Request q;
  q.task_dir = c.task;
  q.solution_dir = c.solution;
  q.stages = stages;
  q.build = buildOptions(c);
  q.verify = verifyOptions(c);
  q.static_options.gpu_arch = c.arch;
  return q;
}

void positionalTask(CLI::App& cmd, CheckFlags& c) {
  cmd.add_option("TASK", c.task, "Task bundle directory (task.json, model.py, reference.pt)")
      ->required()
      ->check(CLI::ExistingDirectory);
}
void positionalSolution(CLI::App& cmd, CheckFlags& c) {
  cmd.add_option("SOLUTION_DIR", c.solution,
                 "Solution directory (forward.cpp, kernels/; or model_new.py), or one KernelBench .py file")
      ->required()
      ->check(solutionPathValidator());
}

}  // namespace

void addBuildCommand(CLI::App& app, std::function<int()>* command) {
  auto c = std::make_shared<CheckFlags>();
  CLI::App* cmd = app.add_subcommand(
      "build",
      "Compile a solution into a loadable solution.so with nvcc (or, with --device cpu, the host\n"
      "compiler), translation units in parallel, cached by a content key over sources, flags and\n"
      "toolchain versions. --device-only checks the .cu files' device code with NVRTC in\n"
      "milliseconds (nvcc gives the verdict when NVRTC rejects a file).\n"
      "Status: ok, compile_error (diagnostics verbatim, trimmed to the first errors) or infra_error.");
  positionalSolution(*cmd, *c);
  cmd->add_option("--device", c->device, "Target: cuda (nvcc, CUDA libraries) or cpu (host-only solution)")
      ->check(CLI::IsMember({"cuda", "cpu"}))
      ->capture_default_str();
  cmd->add_flag("--device-only", c->device_only, "Only check the device code of the .cu files (NVRTC)");
  addBuildFlags(*cmd, *c);
  addOutputFlags(*cmd, *c);
  cmd->callback([c, command] { *command = [c] {
    checkBeforeWork(*c);
    StopSignals stop;
    eval::Result result = eval::evaluate(request(*c, {.static_check = false, .build = true, .verify = false}));
    return emit(*c, result, "build");
  }; });
}

void addVerifyCommand(CLI::App& app, std::function<int()>* command) {
  auto c = std::make_shared<CheckFlags>();
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Build the solution (from the cache when unchanged), run it in an isolated worker process on\n"
      "fresh inputs for each correctness seed, then run the reference and compare: output count,\n"
      "dtypes, shapes, no aliasing, inputs unchanged, no NaN/Inf where the reference has none,\n"
      "allclose with the task's tolerances. Status: ok, incorrect, runtime_error, timeout, crash,\n"
      "hack_detected, compile_error or infra_error.");
  positionalTask(*cmd, *c);
  positionalSolution(*cmd, *c);
  cmd->add_option("--device", c->device, "cuda, cuda:N or cpu (CPU solutions)")
      ->capture_default_str()
      ->check(deviceValidator());
  addBuildFlags(*cmd, *c);
  addVerifyFlags(*cmd, *c);
  addOutputFlags(*cmd, *c);
  cmd->callback([c, command] { *command = [c] {
    checkBeforeWork(*c);
    StopSignals stop;
    return emit(*c, eval::evaluate(request(*c, {.static_check = false, .build = true, .verify = true})), "verify");
  }; });
}

void addCheckOptions(CLI::App& app, CheckFlags& c) {
  app.add_option("TASK", c.task, "Task bundle directory (with SOLUTION_DIR: static -> build -> verify)")
      ->check(CLI::ExistingDirectory);
  app.add_option("SOLUTION_DIR", c.solution, "Solution directory, or one KernelBench .py file")
      ->check(solutionPathValidator());
  app.add_option("--device", c.device, "cuda, cuda:N or cpu (CPU solutions)")
      ->capture_default_str()
      ->check(deviceValidator());
  app.add_flag("--device-only", c.device_only, "Stop after checking device code with NVRTC");
  app.add_option("--policy", c.policy,
                 "The static stage's policy: a file, or a name: paper (the default) or kernelbench (torch "
                 "operations allowed in a Python ModelNew); $KB_POLICY sets the default")
      ->type_name("POLICY");
  addBuildFlags(app, c);
  addVerifyFlags(app, c);
  addOutputFlags(app, c);
}

int runCheckCommand(const CheckFlags& c) {
  if (c.task.empty() || c.solution.empty())
    throw UsageError("give TASK and SOLUTION_DIR, or a subcommand (see kbcheck --help)");
  checkBeforeWork(c);
  eval::StaticChecker checker(c.policy);  // empty: the default policy; read when the static stage runs
  eval::Request q = request(c, {.static_check = true, .build = true, .verify = true});
  q.static_checker = &checker;
  StopSignals stop;
  return emit(c, eval::evaluate(q), "");
}

}  // namespace kb::tools
