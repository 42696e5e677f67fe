#include "static_command.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "analyze/analyze.h"
#include "analyze/render.h"
#include "core/error.h"
#include "core/json.h"
#include "core/report.h"
#include "eval/eval.h"
#include "solution/solution.h"
#include "../cli_parse.h"

namespace fs = std::filesystem;

namespace kb::tools {
namespace {

struct StaticFlags {
  std::vector<std::string> paths;
  std::string json_out;
  std::string sarif_out;
  std::string policy;
  std::string arch = "sm_90";
  std::string cuda_path;
  std::string cache_dir;
  unsigned jobs = 0;
  bool quiet = false;
};

std::string taskIdOf(const fs::path& task) {
  if (!fs::is_directory(task)) throw UsageError("task directory not found: " + task.string());
  fs::path meta = task / "task.json";
  if (fs::exists(meta)) {
    Json j = readJsonFile(meta);
    if (j.contains("id") && j["id"].is_string()) return j["id"];
  }
  return fs::canonical(task).filename().string();
}

int runStatic(const StaticFlags& flags) {
  // Outputs first: a path that cannot be written is bad input (exit 2), found
  // before the parses.
  checkOneStdout({{"--json", flags.json_out}, {"--sarif", flags.sarif_out}});
  checkWritableFile(flags.json_out, "--json");
  checkWritableFile(flags.sarif_out, "--sarif");
  fs::path solution_dir = flags.paths.back();
  eval::StaticOptions options;
  if (flags.paths.size() == 2) options.task_id = taskIdOf(flags.paths.front());
  eval::StaticChecker checker(flags.policy);  // empty: the default policy
  checker.policy();                           // read (and judged) before the solution
  solution::Solution solution = solution::loadSolution(solution_dir);
  options.gpu_arch = flags.arch;
  options.jobs = flags.jobs;
  options.cuda_path = flags.cuda_path.empty() ? analyze::defaultCheckOptions().cuda_path : fs::path(flags.cuda_path);
  if (!flags.cache_dir.empty()) options.cache_dir = flags.cache_dir;
  if (!fs::exists(options.cuda_path / "include" / "cuda_runtime.h"))
    throw UsageError("no CUDA toolkit at " + options.cuda_path.string() + " (use --cuda-path)");

  eval::StaticOutcome out = checker.check(solution, options);
  const analyze::StaticResult& result = out.result;

  if (!flags.quiet) {
    std::string shown = solution_dir.string();
    if (!shown.empty() && shown.back() != '/') shown += '/';
    analyze::printDiagnostics(std::cerr, result, shown);
    if (result.infra_failed) std::cerr << "kbcheck: infra_error: " << result.infra_message << '\n';
    // Sources the rules read: .cu/.cpp and, for a Python solution, its .py
    // files (a load_inline string's generated sources are counted in parses).
    std::size_t read = solution.sources().size();
    for (const auto& f : solution.files) read += f.kind == solution::SourceKind::Python;
    std::cerr << "kbcheck static: " << result.errorCount() << " error(s), " << result.warningCount()
              << " warning(s) in " << read << " source(s), "
              << result.translation_units << " parse(s), " << result.seconds << " s: "
              << statusName(out.status) << '\n';
  }
  if (!flags.json_out.empty())
    writeJsonOutput(flags.json_out, out.report);
  if (!flags.sarif_out.empty()) writeJsonOutput(flags.sarif_out, analyze::sarifJson(solution, result));

  switch (out.status) {
    case Status::Ok: return 0;
    case Status::InfraError: return 3;
    default: return 1;
  }
}

}  // namespace

void addStaticCommand(CLI::App& app, std::function<int()>* command) {
  auto flags = std::make_shared<StaticFlags>();
  CLI::App* cmd = app.add_subcommand(
      "static",
      "Parse every source of a solution with Clang (CUDA mode, host and device sides) and "
      "enforce the policy: no torch, no other streams, no threads, processes, files, network, "
      "no interposed symbols, no mutable globals, libraries only as allowed. Writes an "
      "inventory of kernels, launches and library calls.");
  cmd->add_option("paths", flags->paths, "[TASK_DIR] SOLUTION_DIR (the task only names the report)")
      ->required()
      ->expected(1, 2);
  cmd->add_option("--json", flags->json_out, "Write the JSON report to FILE ('-': one line on stdout)")
      ->type_name("FILE");
  cmd->add_option("--sarif", flags->sarif_out, "Write findings as SARIF 2.1.0 to FILE ('-': one line on stdout; not with --json -)")
      ->type_name("FILE");
  cmd->add_option("--policy", flags->policy, "Policy: a file, or a name: paper (the default, policy/default.json) or kernelbench (torch operations allowed in a Python ModelNew); $KB_POLICY sets the default")
      ->type_name("POLICY");
  cmd->add_option("--arch", flags->arch, "GPU architecture of the device-side parse (sm_NN or sm_NNa)")
      ->capture_default_str()
      ->check(archValidator());
  cmd->add_option("--cuda-path", flags->cuda_path, "CUDA toolkit root (default: $KB_CUDA_PATH or the build's)");
  cmd->add_option("--cache-dir", flags->cache_dir, "Where precompiled headers are kept");
  cmd->add_option("-j,--jobs", flags->jobs, "Parallel parses (0: all cores)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1024u));
  cmd->add_flag("-q,--quiet", flags->quiet, "No diagnostics on stderr");
  cmd->footer(
      "Exit status: 0 clean (warnings allowed), 1 violations or sources that do not parse, "
      "2 bad usage, unreadable input or an output that cannot be written (before any parse), "
      "3 the checker itself failed (infra_error).\n"
      "Example: kbcheck static testdata/solutions/gemm_bias_relu --json report.json\n"
      "Rules and the policy format: docs/rules/, docs/policy.md.");
  cmd->callback([flags, command] { *command = [flags] { return runStatic(*flags); }; });
}

}  // namespace kb::tools
