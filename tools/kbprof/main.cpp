// kbprof: times a solution against the eager reference and torch.compile on
// one GPU, checks what it launched, and says by how much it is faster. A
// thin driver: it parses flags and calls lib/eval (build, then lib/profile).
#include <iostream>

#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "core/error.h"
#include "core/policy_file.h"
#include "eval/eval.h"
#include "kb_config.h"

namespace {

struct Flags {
  std::string task, solution, device = "cuda", json, arch, cache_dir, baseline_cache, python, precision, policy;
  std::string compile_baseline = "auto";
  bool quiet = false, no_verify = false, no_compile = false, no_baseline_cache = false, keep_workdir = false,
       late_start = false, cache_cpu_baselines = false, no_aoti_build = false;
  double target_ci = 0.01, budget = 10.0, timeout = 300.0, head_start_us = 200.0;
  int warmup = 3, min_rounds = 10, max_rounds = 100, kernels = 10, check_rounds = 10, null_calls = 10;
  double keep_gib = 4.0, check_tolerance = 0.05;
};

// The stop after SIGINT / SIGTERM: the timings were cut short, so nothing is
// printed or written (docs/cli.md).
int interrupted() {
  kb::tools::printError("kbprof", "interrupted: no report written; run the same command again");
  return kb::tools::StopSignals::exitCode();
}

kb::profile::ProfileOptions options(const Flags& f, const std::string& device, const std::string& arch);

// Build and profile through lib/eval (the workers start before the build and
// leave before any candidate code when it fails), then print.
int run(const Flags& f) {
  const bool cpu = f.device == "cpu";
  std::string arch = cpu ? "cpu" : f.arch.empty() ? kb::profile::detectGpuArch(f.device == "cuda" ? "cuda:0" : f.device) : f.arch;
  kb::eval::Request q;
  q.tool = "kbprof";
  q.task_dir = f.task;
  q.solution_dir = f.solution;  // empty: the baselines only
  q.stages.build = !f.solution.empty();
  q.stages.profile = true;
  q.profile = options(f, f.device, arch);
  q.build.target = cpu ? kb::build::BuildTarget::Cpu : kb::build::BuildTarget::Cuda;
  q.build.arch = cpu || arch.empty() ? "sm_90" : arch;
  if (!f.cache_dir.empty()) q.build.cache_dir = f.cache_dir;
  kb::eval::Result r = kb::eval::evaluate(q);
  if (kb::tools::StopSignals::stopRequested()) return interrupted();
  kb::Json j = kb::eval::profileReportJson(r);
  if (!r.profile) {  // the build failed: nothing reached the GPU
    kb::tools::writeJsonOutput(f.json, j);
    if (!f.quiet && f.json != "-")
      std::cout << "kbprof: " << kb::statusName(r.build->status) << ": " << r.build->message << "\n"
                << r.build->diagnostics;
    return kb::tools::verdictExit("kbprof", r.status(), r.message);
  }
  if (f.json == "-") {
    kb::tools::printJsonLine(j);
  } else {
    kb::tools::writeJsonOutput(f.json, j);
    if (!f.quiet) std::cout << kb::profile::renderProfileText(*r.profile, static_cast<std::size_t>(f.kernels));
  }
  return kb::tools::verdictExit("kbprof", r.status(), r.message);
}

kb::profile::ProfileOptions options(const Flags& f, const std::string& device, const std::string& arch) {
  kb::profile::ProfileOptions o;
  o.device = device;
  o.verify = !f.no_verify;
  o.compile_baseline = !f.no_compile;
  o.compile_baseline_mode = f.compile_baseline;
  o.build_compiled = !f.no_aoti_build;
  o.torch_ops_allowed = kb::policyAllowsTorchOps(f.policy);
  o.use_baseline_cache = !f.no_baseline_cache;
  if (!f.baseline_cache.empty()) o.baseline_cache_dir = f.baseline_cache;
  o.target_ci = f.target_ci;
  o.budget_seconds = f.budget;
  o.warmup = f.warmup;
  o.head_start_us = f.head_start_us;
  o.min_rounds = f.min_rounds;
  o.max_rounds = f.max_rounds;
  o.null_calls = f.null_calls;
  if (!f.precision.empty()) o.precision = f.precision;
  o.check_rounds = f.check_rounds;
  o.check_tolerance = f.check_tolerance;
  o.cache_cpu_baselines = f.cache_cpu_baselines;
  o.keep_bytes = static_cast<uint64_t>(f.keep_gib * double(1ull << 30));
  o.limits.wall_seconds = f.timeout;
  o.limits.cpu_seconds = static_cast<uint64_t>(f.timeout) * 2 + 1;
  o.python = f.python;
  o.keep_worker_dir = f.keep_workdir;
  o.arch = arch;
  o.start_workers_early = !f.late_start;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kbprof " KB_VERSION " -- time a solution against eager PyTorch and torch.compile on one GPU\n\n"
      "  kbprof TASK SOLUTION_DIR [--json FILE]\n"
      "  kbprof TASK                  time the baselines only and store them in the baseline cache\n\n"
      "Builds the solution (cached), runs it in a sandboxed worker beside the task's eager reference and its\n"
      "torch.compile baseline (an AOTInductor package, built on first need), all three interleaved on one\n"
      "stream: L2 flushed before each call, CUDA events around it, CUPTI recording every kernel, memcpy and\n"
      "memset, until the 95% interval of each median is within --target-ci or --budget-s is spent. Baseline\n"
      "timings are cached per task, GPU, driver and torch, so a changed candidate costs only its own runs.\n"
      "The task's correctness seeds run first, and a random sample of timed calls is checked against the\n"
      "reference too. Work from outside the solution (ATen, Triton, a library its op class does not allow),\n"
      "off the given stream, still running after the call, or timings that are physically implausible end\n"
      "as hack_detected with the evidence.\n\n"
      "Output: a table (median / mean / min / device time / interval per participant) and the candidate's\n"
      "kernels (name, launches, total and mean time, share): what to optimise next. --json writes the\n"
      "report (docs/kbprof.md), which kbreward reads.\n\n"
      "Exit status: 0 ok, 1 the solution failed (compile_error, runtime_error, timeout, crash, incorrect,\n"
      "hack_detected), 2 bad usage or input (before any work), 3 infra_error, 130 stopped by SIGINT\n"
      "(no report). See docs/cli.md.",
      "kbprof"};
  Flags f;
  app.add_option("TASK", f.task, "Task bundle directory (task.json, model.py, reference.pt)")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("SOLUTION_DIR", f.solution,
                 "Solution directory (forward.cpp, kernels/; or model_new.py) or one KernelBench .py file; "
                 "without it, only the baselines are timed (and stored in the baseline cache)")
      ->check(kb::tools::solutionPathValidator());
  app.add_option("--device", f.device,
                 "cuda or cuda:N; cpu times a CPU solution with the host clock (no CUPTI, no L2 flush: "
                 "for CPU tasks and the harness's own tests, not GPU speed-ups)")
      ->capture_default_str()
      ->check(kb::tools::deviceValidator());
  app.add_option("--json", f.json, "Write the JSON report to FILE ('-': one line on stdout instead of the table)")
      ->type_name("FILE");
  app.add_flag("-q,--quiet", f.quiet, "No table on stdout");
  app.add_option("--arch", f.arch, "GPU architecture for the build and the compiled baseline (default: asked of nvidia-smi)")
      ->check(kb::tools::archValidator());
  app.add_option("--cache-dir", f.cache_dir, "Build cache directory (default: kbcheck's)");
  app.add_option("--baseline-cache", f.baseline_cache,
                 "Baseline timing cache (default: $KB_BASELINE_CACHE or ~/.cache/kernelbench-rl/baselines)");
  app.add_flag("--no-baseline-cache", f.no_baseline_cache, "Time eager and torch.compile again, and do not store them");
  app.add_flag("--no-verify", f.no_verify, "Skip the correctness seeds (sampled timed calls are still checked)");
  app.add_flag("--no-compile", f.no_compile, "Do not time torch.compile (no AOTInductor build)");
  app.add_option("--policy", f.policy,
                 "The policy a Python-format solution is judged by at run time: a file, or a name: paper (the "
                 "default: only its own extension kernels may run) or kernelbench (torch operations' ATen, cuBLAS "
                 "and cuDNN kernels too); $KB_POLICY sets the default")
      ->type_name("POLICY");
  app.add_option("--compile-baseline", f.compile_baseline,
                 "Which torch.compile figure: auto (a Python-format solution: torch.compile in Python, eager in "
                 "Python too; otherwise the AOTInductor package, or torch.compile in Python on a GPU where the "
                 "package cannot be built), aoti, python, none")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "aoti", "python", "none"}));
  app.add_flag("--no-aoti-build", f.no_aoti_build,
               "Never build AOTInductor's package for a task without one (as kbserve): no aoti figure then "
               "(auto: torch.compile in Python on a GPU)");
  app.add_option("--target-ci", f.target_ci, "Stop when every median's 95% interval is within ± this fraction")
      ->capture_default_str()
      ->check(CLI::Range(0.0001, 0.5));
  app.add_option("--budget,--budget-s", f.budget, "... or when the timed rounds took this many seconds")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 3600.0));
  app.add_option("--warmup", f.warmup, "Untimed calls of each participant first")->capture_default_str()->check(CLI::Range(0, 1000));
  app.add_option("--head-start-us", f.head_start_us,
                 "GPU spin queued before each timed call's start event, so that the events do not see the "
                 "host's launch latency (0: none; baselines cached with another value are timed again)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100000.0));
  app.add_option("--min-rounds", f.min_rounds, "Timed rounds before the stopping rule applies")
      ->capture_default_str()
      ->check(CLI::Range(3, 100000));
  app.add_option("--max-rounds", f.max_rounds,
                 "At most this many timed rounds (every timed call's outputs are checked against the reference)")->capture_default_str()->check(CLI::Range(3, 1000000));
  app.add_option("--null-calls", f.null_calls,
                 "Null calls (the timed call's harness steps, nothing inside) timed by kbprof's own clock "
                 "before the candidate loads; the longest bounds every timed call from below")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--precision", f.precision,
                 "Judge by this precision contract instead of the task's: strict (atol = rtol = 1e-4, no "
                 "reduced-precision library kernels) or paper (1e-2, any math)")
      ->check(CLI::IsMember({"strict", "paper"}));
  app.add_option("--keep-gib", f.keep_gib,
                 "The timed calls' outputs sent to the reference worker, every one checked (GiB); the loop "
                 "stops when the next call's would not fit")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1024.0));
  app.add_option("--check-rounds", f.check_rounds,
                 "Eager calls that re-check cached baselines before they are used (a disagreement "
                 "measures both again and replaces the cache)")
      ->capture_default_str()
      ->check(CLI::Range(3, 10000));
  app.add_option("--check-tolerance", f.check_tolerance,
                 "A cached baseline stands when the re-check's eager median is within max(this fraction, 3 x "
                 "its 95% interval) of the cached one")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 10.0));
  app.add_flag("--cache-cpu-baselines", f.cache_cpu_baselines,
               "With --device cpu, read and write the baseline cache too (host-clock times vary with the "
               "machine's load: for the harness's own tests)");
  app.add_option("--timeout", f.timeout, "Wall-clock limit of the worker, start-up and baselines included (s)")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  app.add_flag("--keep-workdir", f.keep_workdir, "Keep the worker's directory (request, result channel)");
  app.add_flag("--late-start", f.late_start,
               "Start the candidate's worker after the build and the reference worker after it, instead of both "
               "beside the build (slower; for comparing the two)");
  app.add_option("--python", f.python, "Python with torch, for building the compiled baseline");
  app.add_option("--kernels", f.kernels, "Kernels listed in the breakdown")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  kb::tools::setVersionFlag(app, "kbprof");
  kb::tools::durationFlags(app, {"--timeout", "--budget"});
  if (auto rc = kb::tools::parseOrExit(app, argc, argv, "kbprof")) return *rc;
  return kb::tools::runGuarded("kbprof", [&] {
    if (f.max_rounds < f.min_rounds) throw kb::UsageError("--max-rounds is below --min-rounds");
    kb::tools::checkWritableFile(f.json, "--json");  // before any work: an unwritable output is exit 2
    kb::tools::StopSignals stop;
    return run(f);
  });
}
