// kbsynth: task bundles and task synthesis. A thin CLI11 driver (docs/kbsynth.md
// is its manual): bundle_commands.cpp defines import/export/baseline/check/info
// over lib/synth/import_run.h and lib/synth/check_bundle.h, synth_commands.cpp
// the synthesis subcommands over lib/synth/pipeline.h. PyTorch's Python side
// is reached only through the scripts in scripts/ (capture.py, baseline.py,
// expected.py, read_rows.py).
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "bundle_commands.h"
#include "core/error.h"
#include "kb_config.h"
#include "synth_commands.h"
#include "task/task.h"

namespace {

const char* kIntro = R"(kbsynth: task bundles (DESIGN.md §4) for the kernelbench-rl toolchain.

A task bundle is a folder: model.py (the PyTorch reference), task.json (id,
provenance, inputs, outputs, tolerances), reference.pt (TorchScript, weights
from a fixed init seed), inputs.pt (scripted get_inputs, when it scripts) and
compiled/<arch>.pt2 (the torch.compile baseline as an AOTInductor package).

  kbsynth import  KernelBench folders, dataset rows, model.py files -> bundles
  kbsynth export  (re)capture bundles from their model.py
  kbsynth baseline  build compiled/<arch>.pt2 for a device (cached)
  kbsynth check   C++ reference/compiled vs Python outputs (and timings)
  kbsynth info    validate bundles and summarise them

Synthesis (DESIGN.md §1; docs/kbsynth-synthesis.md):
  kbsynth seeds   the seed operator catalog (torch, transformers)
  kbsynth compose sample 1-5 seed operators per task into KernelBench programs
  kbsynth filter  execution filters and decontamination; funnel in the manifest
  kbsynth stats   op-count mix, filter funnel, similarity histogram
  kbsynth similarity  Python-AST similarity of programs to a reference set

Examples:
  kbsynth import KernelBench/ -o tasks --compiled cpu
  kbsynth import ops6k.parquet -o tasks --id-prefix ops6k
  kbsynth check tasks/kernelbench/level1/* --device cpu --seeds 0,1,2
  kbsynth compose -n 300 --seed 1 -o run && kbsynth filter run --device cuda --reference KernelBench/

Python (with torch) runs from --python, $KB_PYTHON or /opt/kb-venv/bin/python3.
Exit status: 0 done, 1 some task failed (import: none imported, or any with
--strict; export with --strict; check; baseline; similarity), 2 bad usage or
input, found before any work (one line on stderr), 3 infrastructure failure,
130 / 143 stopped cleanly by SIGINT / SIGTERM (what was done is kept and
reported). See docs/cli.md, docs/kbsynth.md and docs/task-format.md.)";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kIntro, "kbsynth"};
  kb::tools::setVersionFlag(app, "kbsynth");
  app.require_subcommand(1);
  app.fallthrough();  // --python may follow the subcommand

  std::string python;
  app.add_option("--python", python, "Python interpreter with torch (default $KB_PYTHON, /opt/kb-venv/bin/python3)");

  kb::BundleCli bundles;
  kb::addBundleCommands(app, bundles);

  kb::SynthCli synth;
  kb::addSynthCommands(app, synth);
  kb::tools::durationFlags(app, {"--timeout", "--llm-timeout", "--llm-backoff", "--task-timeout", "--time-limit"});

  if (auto rc = kb::tools::parseOrExit(app, argc, argv, "kbsynth")) return *rc;

  try {
    if (auto rc = kb::runBundleCommands(bundles, python)) return *rc;
    if (auto rc = kb::runSynthCommands(synth, python)) return *rc;
  } catch (const kb::UsageError& e) {
    kb::tools::printError("kbsynth", e.what());
    return kb::tools::kExitUsage;
  } catch (const c10::Error& e) {
    kb::tools::printError("kbsynth", std::string("torch: ") + e.what_without_backtrace());
    return kb::tools::kExitInfra;
  } catch (const std::exception& e) {
    kb::tools::printError("kbsynth", e.what());
    return kb::tools::kExitInfra;
  }
  return 0;
}
