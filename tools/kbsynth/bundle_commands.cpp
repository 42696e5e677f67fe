#include "bundle_commands.h"

#include <filesystem>

#include "../cli_parse.h"
#include "core/error.h"
#include "core/report.h"
#include "task/task.h"

namespace fs = std::filesystem;

namespace kb {
namespace {

std::string deviceArg(const std::string& d) {
  if (d == "none" || d == "cpu" || d == "cuda" || d.rfind("cuda:", 0) == 0) return d;
  throw UsageError("--device/--compiled must be none, cpu, cuda or cuda:N, not \"" + d + "\"");
}

int stopSignal() { return tools::StopSignals::signal(); }

}  // namespace

void addBundleCommands(CLI::App& app, BundleCli& b) {
  b.import = app.add_subcommand("import",
      "Turn existing problems into task bundles OUT/<id>/: a KernelBench checkout or levelN/ folder "
      "(ids kernelbench/levelN/<name>, kernelbench-<version>/levelN/<name> for an older set), JSONL or Parquet rows with a `code` column (CUDA-Agent-Ops-6K "
      "layout; ids <prefix>/<row>), or single model.py files (id file/<name>). Each program is run under "
      "PyTorch and captured; bad ones are reported with a reason and skipped. Prints one JSON line per task, "
      "writes OUT/import-report.json.");
  b.import->add_option("sources", b.sources, "KernelBench folders, .jsonl/.parquet datasets, .py files")
      ->required()
      ->check(tools::readablePath());
  b.import->add_option("-o,--out", b.out_dir, "Folder that receives the bundles")->required();
  b.import->add_option("--compiled", b.co.compiled, "Also build the torch.compile baseline for: none (default), cpu, cuda, cuda:N")
      ->check(CLI::IsMember({"none"}) | tools::deviceValidator());
  b.import->add_option("--weights", b.co.weights, "Compiled baseline weights: external (default; supplied at load) or in_package")
      ->check(CLI::IsMember({"external", "in_package"}));
  b.import->add_option("--id", b.io.id, "Task id for a single .py source");
  b.import->add_option("--id-prefix", b.io.id_prefix, "Id prefix for dataset rows and plain folders (default: the file or folder name)");
  b.import->add_option("--kernelbench-version", b.io.kernelbench_version,
                       "The KernelBench problem set's version, in every task id (kernelbench-<V>/levelN/<name>), "
                       "e.g. v0 for the original release's shapes; default: the kernelbench-version.json manifest "
                       "beside the level folders (scripts/kernelbench-extract.sh), else none (kernelbench/levelN/...)")
      ->type_name("V");
  b.import->add_option("--init-seed", b.co.init_seed, "torch.manual_seed before Model(*get_init_inputs()) (default 42)");
  b.import->add_option("--report", b.co.report, "Where to write the JSON report (default OUT/import-report.json)");
  b.import->add_flag("--strict", b.co.strict, "Exit 1 when any task failed (without it: only when none was imported)");
  auto captureFlags = [&b](CLI::App* sub) {
    sub->add_option("-j,--jobs", b.co.jobs, "Capture workers at once, one Python each (default: one per two cores, at most 8)")
        ->check(CLI::Range(1, 256));
    sub->add_option("--memory-budget", b.co.memory_budget_gib,
                    "Host memory in GiB for all capture workers together (default: 80% of what is available); "
                    "over it the largest worker's task runs again alone, and a task over it alone fails out_of_memory")
        ->check(CLI::Range(0.1, 1e6));
    sub->add_option("--timeout", b.co.timeout_s, "Seconds per task's capture (default $KB_CAPTURE_TIMEOUT, else 300)")
        ->check(CLI::Range(1.0, 1e6));
    sub->add_option("--capture-device", b.co.capture_device,
                    "Where capture draws the weights and runs the model's forwards, checks and trace: cpu, cuda, "
                    "cuda:N, or auto (cuda when torch sees a GPU, else cpu). Default $KB_CAPTURE_DEVICE, else auto "
                    "on a machine with an NVIDIA GPU and cpu on one without. On a GPU the checks' inputs are made "
                    "there too; the bundle's inputs stay the CPU generator's, and its weights are reference.pt's "
                    "(task.json init.device says where they were drawn)")
        ->check(CLI::IsMember({"auto"}) | tools::deviceValidator());
    sub->add_option("--baseline-jobs", b.co.baseline_jobs,
                    "With --compiled: baselines built at once, one baseline.py each with its share of the cores "
                    "(default: a quarter of the cores, 1 to 8)")
        ->check(CLI::Range(1, 64));
  };
  captureFlags(b.import);
  b.import->add_flag("--skip-existing", b.co.skip_existing,
                "Keep bundles in OUT already captured from the same model.py instead of capturing them again "
                "(resumes an interrupted import)");

  b.exp = app.add_subcommand("export",
      "(Re)capture bundles from their model.py: reference.pt (torch.jit.script, else torch.jit.trace; weights "
      "from the init seed), the input generator (inputs.pt or a recorded spec) and task.json. Id, provenance, "
      "tolerances and seeds of an existing task.json are kept.");
  b.exp->add_option("bundles", b.bundles, "Bundle folders holding model.py")->required()->check(tools::readablePath());
  b.exp->add_option("--id", b.export_id, "Task id (one bundle; default: from task.json, else file/<folder>)");
  b.exp->add_option("--compiled", b.co.compiled, "Also build the torch.compile baseline for: none (default), cpu, cuda, cuda:N")
      ->check(CLI::IsMember({"none"}) | tools::deviceValidator());
  b.exp->add_option("--weights", b.co.weights, "Compiled baseline weights: external (default) or in_package")
      ->check(CLI::IsMember({"external", "in_package"}));
  b.exp->add_option("--init-seed", b.co.init_seed, "Init seed (default: task.json's, else 42)");
  b.exp->add_option("--report", b.co.report, "Also write a JSON report here");
  b.exp->add_flag("--strict", b.co.strict, "Exit 1 when any task failed");
  captureFlags(b.exp);

  b.baseline = app.add_subcommand("baseline",
      "Build the torch.compile baseline compiled/<arch>.pt2 (torch.export + AOTInductor) for a device, unless "
      "a current one is cached. Run on the machine whose device it is for (cuda on the GPU machine).");
  b.baseline->add_option("bundles", b.bundles, "Bundle folders")->required()->check(tools::readablePath());
  b.baseline->add_option("--device", b.device, "cpu (default), cuda or cuda:N")->check(tools::deviceValidator());
  b.baseline->add_flag("--force", b.force, "Rebuild even when a current package exists");
  b.baseline->add_option("-j,--jobs", b.baseline_jobs,
                         "Bundles built at once, one baseline.py each with its share of the cores for AOTInductor's "
                         "compile workers (default: a quarter of the cores, 1 to 8); a crash fails its bundle alone")
      ->check(CLI::Range(1, 64));
  b.baseline->add_option("--weights", b.weights, "external (default; weights out of the package, supplied at load) or in_package")
      ->check(CLI::IsMember({"external", "in_package"}));

  b.check = app.add_subcommand("check",
      "Check that C++ reproduces Python: for each seed, the inputs lib/task makes, the reference.pt outputs and "
      "the compiled baseline outputs against the original model.py run by Python. Prints max abs diffs (and "
      "with --time, C++ vs Python milliseconds per call) as one JSON line per bundle; exit 1 if any exceeds "
      "--max-diff.");
  b.check->add_option("bundles", b.bundles, "Bundle folders")->required()->check(tools::readablePath());
  b.check->add_option("--device", b.ck.device, "cpu (default), cuda or cuda:N")->check(tools::deviceValidator());
  b.check->add_option("--seeds", b.seeds, "Seeds, comma-separated (default 0,1,2)")->type_name("LIST");
  b.check->add_flag("--no-compiled", b.no_compiled, "Skip the compiled baseline");
  b.check->add_option("--max-diff", b.ck.max_diff, "Largest max abs diff accepted (default 1e-5)")->check(CLI::Range(0.0, 1e30));
  b.check->add_option("--time", b.ck.time_iters, "Also time eager and compiled with ITERS calls per round (0: off)")
      ->check(CLI::Range(0, 100000000));
  b.check->add_option("--warmup", b.ck.warmup, "Untimed calls before timing (default 10)")->check(CLI::Range(0, 100000000));
  b.check->add_option("--repeats", b.ck.repeats, "Timed rounds; the median is reported (default 5)")->check(CLI::Range(1, 100000));

  b.info = app.add_subcommand("info", "Validate bundles (files present and unchanged, format version, compiled "
                                          "packages) and print one JSON summary line each.");
  b.info->add_option("bundles", b.bundles, "Bundle folders")->required()->check(tools::readablePath());

}

std::optional<int> runBundleCommands(BundleCli& b, const std::string& python) {
  b.co.python = python;
  b.io.python = python;
  b.ck.python = python;
  b.co.torch_version = task::torchVersion();
  b.co.stop_signal = stopSignal;
  b.ck.stop_signal = stopSignal;
  if (*b.import) {
    b.co.compiled = deviceArg(b.co.compiled);
    b.co.started_at = nowIso8601();
    if (b.out_dir.empty()) throw UsageError("import needs -o OUT (the folder that receives the bundles)");
    // Outputs before any work: an unwritable OUT or --report is bad input.
    tools::checkWritableDir(b.out_dir, "-o/--out");
    tools::checkWritableFile(b.co.report, "--report");
    std::vector<synth::ImportItem> items = synth::findImportItems(b.sources, b.io);
    fs::path out = fs::absolute(b.out_dir).lexically_normal();
    fs::create_directories(out);
    tools::OutputLock lock = tools::OutputLock::directory(out, "-o/--out " + b.out_dir);
    tools::StopSignals stop;  // SIGINT: capture.py stops, the report says what was done
    return synth::runImport(items, out, b.co);
  }
  if (*b.exp) {
    b.co.compiled = deviceArg(b.co.compiled);
    b.co.started_at = nowIso8601();
    if (!b.export_id.empty() && b.bundles.size() != 1) throw UsageError("--id needs exactly one bundle");
    tools::checkWritableFile(b.co.report, "--report");
    tools::StopSignals stop;
    return synth::runExport(b.bundles, b.export_id, b.co);
  }
  if (*b.baseline) {
    std::string device = deviceArg(b.device);
    tools::StopSignals stop(true, SIGTERM);  // baseline.py has no quiet SIGINT handler
    return synth::buildBaselines(b.bundles, device, b.force, b.weights, python, b.baseline_jobs, stopSignal);
  }
  if (*b.check) {
    b.ck.seeds = tools::parseSeedList(b.seeds);
    b.ck.compiled = !b.no_compiled;
    deviceArg(b.ck.device);
    if (b.ck.device == "none") throw UsageError("check needs a device: cpu, cuda or cuda:N");
    tools::StopSignals stop(true, SIGTERM);  // expected.py has no quiet SIGINT handler
    return synth::checkBundles(b.bundles, b.ck);
  }
  if (*b.info) return synth::printBundleInfo(b.bundles);
  return std::nullopt;
}

}  // namespace kb
