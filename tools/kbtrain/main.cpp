// kbtrain: RFT, value pretraining, PPO and GRPO over trajectory JSONL
// (docs/kbtrain.md). A thin driver over lib/rl: flags in (train_flags.cpp:
// the stages' shared flags; toy_commands.cpp: `kbtrain toy`), a stage
// function called, its summary printed as JSON on stdout.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "core/error.h"
#include "kb_config.h"
#include "rl/checkpoint_diff.h"
#include "rl/commands.h"
#include "rl/plot.h"
#include "rl/random_model.h"
#include "rl/trainer.h"
#include "toy_commands.h"
#include "train_flags.h"

namespace fs = std::filesystem;
using namespace kb;
using namespace kb::rl;
using namespace kb::toy;

namespace {

// This process is rank 0 of a torchrun-style group (or runs alone).
bool isRankZero() {
  const char* r = std::getenv("RANK");
  return !r || std::string(r).empty() || std::string(r) == "0";
}

// Before any work: the output directory and the metrics file can be written,
// and no other run writes into the directory (an exclusive flock on
// <out>/.kbtrain.lock, held until exit; rank 0 only, the other ranks of the
// same run share its --out).
kb::tools::OutputLock claimOutput(const TrainOptions& o) {
  kb::tools::checkWritableDir(o.out.string(), "--out");
  if (!o.metrics.empty()) kb::tools::checkWritableFile(o.metrics.string(), "--metrics");
  if (!isRankZero()) return {};
  return kb::tools::OutputLock(o.out / ".kbtrain.lock", "--out " + o.out.string());
}

// --json FILE: the subcommand's JSON (a stage's summary, diff's report) goes
// to FILE, indented; without it, or with "-", one line on stdout. Of a
// data-parallel group, rank 0 writes the file (the others print their line).
std::string json_out;

void writeJson(const Json& j) {
  kb::tools::writeJsonOutput(json_out.empty() || !isRankZero() ? "-" : json_out, j);
}

// A training stage under SIGINT/SIGTERM: the step in progress finishes, a
// checkpoint is written, and the run ends 128 + signal with the command that
// resumes it.
int runStage(TrainOptions& o, const std::function<Json()>& stage, int argc, char** argv) {
  kb::tools::checkWritableFile(json_out, "--json");
  kb::tools::OutputLock lock = claimOutput(o);
  kb::tools::StopSignals signals;
  o.stop_requested = [] { return kb::tools::StopSignals::stopRequested(); };
  const Json summary = stage();
  writeJson(summary);
  if (!summary.value("stopped", false)) return kb::tools::kExitOk;
  kb::tools::printError("kbtrain", stopMessage(summary, kb::tools::StopSignals::signal(),
                                               std::vector<std::string>(argv, argv + argc)));
  return kb::tools::StopSignals::exitCode();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kbtrain: train the agent on its trajectories (DESIGN.md §1, docs/kbtrain.md).\n\n"
      "The recipe, in order:\n"
      "  kbtrain rft             traj.jsonl --model BASE --out rft/                 # imitate clean successes\n"
      "  kbtrain value-pretrain  traj.jsonl --model rft/ --out critic/            # critic on GAE targets\n"
      "  kbtrain ppo             traj.jsonl --model rft/ --critic critic/ --out ppo1/\n"
      "  kbtrain grpo            traj.jsonl --model rft/ --out grpo1/             # critic-free alternative\n"
      "  kbtrain plot            ppo1/metrics.jsonl ... --out curves.html\n\n"
      "Every stage writes a checkpoint that lib/llm (kbpolicy, kbrollout --local-model) loads, "
      "<out>/metrics.jsonl (one record per optimizer step) and <out>/train_summary.json, and prints the "
      "summary on stdout; progress goes to stderr. Data parallel: start N copies with RANK, WORLD_SIZE, "
      "LOCAL_RANK, MASTER_ADDR, MASTER_PORT set (as torchrun does); runs with the same --shards give the "
      "same weights as one process on the whole batch. Stopping: SIGINT/SIGTERM finish the current step, write "
      "<out>/checkpoint and exit 130/143; --resume continues. Exit status (docs/cli.md): 0 done, 2 bad usage or "
      "input (before any work; also an --out in use by another run), 1 data judged unusable, 3 infrastructure "
      "fault, 130/143 stopped by a signal."};
  app.require_subcommand(1);
  kb::tools::setVersionFlag(app, "kbtrain");

  RftOptions rft;
  CLI::App* rft_cmd = app.add_subcommand(
      "rft",
      "rejection fine-tuning: keep trajectories with reward > --min-reward and no invalid tool calls, loops or "
      "malformed turns (each rejection counted by reason in the summary), then minimise the NLL of their "
      "assistant tokens");
  addTrainFlags(rft_cmd, rft.train, "policy checkpoint to fine-tune");
  rft_cmd->add_option("--min-reward", rft.filters.min_reward, "keep reward > this")->capture_default_str();
  rft_cmd->add_flag("!--keep-no-reward", rft.filters.require_reward, "keep trajectories without a reward (demonstrations)");
  rft_cmd->add_flag("!--keep-invalid-tool-calls", rft.filters.reject_invalid_tool_calls,
                    "do not reject trajectories with unparsable arguments / unknown tools");
  rft_cmd->add_flag("!--keep-loops", rft.filters.reject_loops, "do not reject repeated identical tool calls");
  rft_cmd->add_option("--loop-repeats", rft.filters.loop_repeats,
                      "identical consecutive tool calls that make a loop")
      ->capture_default_str();
  rft_cmd->add_flag("!--keep-malformed", rft.filters.reject_malformed,
                    "do not reject turns cut by the token limit, without a tool call, or failed");

  ValuePretrainOptions vp;
  CLI::App* vp_cmd = app.add_subcommand(
      "value-pretrain",
      "train the critic (the policy architecture + a scalar value head) by MSE toward V_targ = V(s_t) + A_t, "
      "A from GAE over each trajectory's assistant tokens with its reward at the end");
  addTrainFlags(vp_cmd, vp.train, "critic checkpoint, or a policy checkpoint (usually the RFT model; the head starts at 0)");
  vp_cmd->add_option("--gamma", vp.gamma, "GAE discount")->capture_default_str();
  vp_cmd->add_option("--lambda", vp.lambda, "GAE lambda")->capture_default_str();
  vp_cmd->add_option("--value-clip", vp.value_clip, "clip V around the epoch's starting values (0: none)")
      ->capture_default_str();

  PolicyGradientOptions ppo;
  CLI::App* ppo_cmd = app.add_subcommand(
      "ppo",
      "PPO: token-level clipped surrogate with asymmetric clip (0.2 / 0.28), GAE advantages from the critic, "
      "clipped value loss, optional k3 KL to a reference; the actor and the critic are both updated");
  addTrainFlags(ppo_cmd, ppo.train, "actor checkpoint (the policy that sampled the trajectories)");
  addPolicyGradientFlags(ppo_cmd, ppo, true);

  PolicyGradientOptions grpo;
  grpo.estimator = "grpo";
  CLI::App* grpo_cmd = app.add_subcommand(
      "grpo",
      "GRPO: the same clipped objective with group-normalised advantages ((R - mean) / std over the "
      "trajectories of the same task_id); no critic. Give several samples per task");
  addTrainFlags(grpo_cmd, grpo.train, "actor checkpoint (the policy that sampled the trajectories)");
  addPolicyGradientFlags(grpo_cmd, grpo, false);

  std::vector<fs::path> plot_files;
  fs::path plot_out;
  std::string plot_title = "kbtrain metrics";
  CLI::App* plot_cmd = app.add_subcommand(
      "plot", "render metrics JSONL files (in order, e.g. the loop's iterations) as one HTML page of curves "
              "(inline SVG, self-contained)");
  plot_cmd->add_option("metrics", plot_files, "metrics.jsonl files")->required()->check(CLI::ExistingFile);
  plot_cmd->add_option("-o,--out", plot_out, "HTML file to write")->required();
  plot_cmd->add_option("--title", plot_title, "page title (default: kbtrain metrics)");

  fs::path init_config, init_tokenizer, init_out;
  std::string init_dtype = "float32";
  uint64_t init_seed = 0;
  CLI::App* init_cmd = app.add_subcommand(
      "init-model", "write a randomly initialised checkpoint of a config.json's shape (benchmarks, toy runs)");
  init_cmd->add_option("--config", init_config, "config.json (Qwen2 / Llama)")->required()->check(CLI::ExistingFile);
  init_cmd->add_option("--tokenizer-from", init_tokenizer, "directory whose tokenizer files are copied")->required();
  init_cmd->add_option("-o,--out", init_out, "checkpoint directory")->required();
  init_cmd->add_option("--dtype", init_dtype, "dtype of the saved weights")
      ->capture_default_str()
      ->check(CLI::IsMember({"float32", "bfloat16", "float16"}));
  init_cmd->add_option("--seed", init_seed, "seed of the random weights")->capture_default_str();

  fs::path diff_a, diff_b;
  CLI::App* diff_cmd = app.add_subcommand(
      "diff", "largest absolute weight difference between two checkpoints, per safetensors file (JSON)");
  diff_cmd->add_option("a", diff_a, "checkpoint directory")->required()->check(CLI::ExistingDirectory);
  diff_cmd->add_option("b", diff_b, "checkpoint directory")->required()->check(CLI::ExistingDirectory);

  ToyCli toy;
  addToyCommands(app, toy);

  // --json FILE (docs/cli.md): where a subcommand has a JSON report; the
  // others refuse it with one line.
  for (CLI::App* cmd : {rft_cmd, vp_cmd, ppo_cmd, grpo_cmd, diff_cmd})
    cmd->add_option("--json", json_out,
                    cmd == diff_cmd ? "write the differences (JSON) to FILE instead of stdout ('-': stdout)"
                                    : "write the summary (JSON, as <out>/train_summary.json) to FILE instead of "
                                      "stdout ('-': stdout)")
        ->type_name("FILE");
  kb::tools::refuseJsonFlag(plot_cmd, "plot writes an HTML page (-o) and has no JSON report");
  kb::tools::refuseJsonFlag(init_cmd, "init-model writes a checkpoint (-o) and has no JSON report");
  for (CLI::App* cmd : {toy.demos, toy.tasks, toy.rollout})
    kb::tools::refuseJsonFlag(cmd, "the toy subcommands print their summary as one JSON line on stdout (> FILE); "
                                   "they take no --json yet");

  if (auto rc = kb::tools::parseOrExit(app, argc, argv, "kbtrain")) return *rc;
  try {
    if (rft_cmd->parsed()) {
      return runStage(rft.train, [&] { return runRft(rft); }, argc, argv);
    } else if (vp_cmd->parsed()) {
      return runStage(vp.train, [&] { return runValuePretrain(vp); }, argc, argv);
    } else if (ppo_cmd->parsed()) {
      return runStage(ppo.train, [&] { return runPolicyGradient(ppo); }, argc, argv);
    } else if (grpo_cmd->parsed()) {
      return runStage(grpo.train, [&] { return runPolicyGradient(grpo); }, argc, argv);
    } else if (plot_cmd->parsed()) {
      kb::tools::checkWritableFile(plot_out.string(), "--out");
      kb::tools::writeFileAtomic(plot_out, metricsHtml(plot_files, plot_title));
      std::fprintf(stderr, "kbtrain plot: wrote %s\n", plot_out.c_str());
    } else if (init_cmd->parsed()) {
      kb::tools::checkWritableDir(init_out.string(), "--out");
      writeRandomModel(init_config, init_tokenizer, init_out, init_dtype, init_seed);
      std::fprintf(stderr, "kbtrain init-model: wrote %s\n", init_out.c_str());
    } else if (diff_cmd->parsed()) {
      kb::tools::checkWritableFile(json_out, "--json");
      try {
        writeJson(checkpointDiff(diff_a, diff_b));
      } catch (const UsageError&) {
        throw;
      } catch (const Error& e) {  // the checkpoints differ in their tensors: judged, exit 1
        kb::tools::printError("kbtrain", e.what());
        return kb::tools::kExitFailed;
      }
    } else if (auto rc = runToyCommands(toy)) {
      return *rc;
    }
    return kb::tools::kExitOk;
  } catch (const UsageError& e) {
    kb::tools::printError("kbtrain", e.what());
    return kb::tools::kExitUsage;
  } catch (const Json::exception& e) {
    kb::tools::printError("kbtrain", std::string("bad JSON input: ") + e.what());
    return kb::tools::kExitUsage;
  } catch (const Error& e) {
    // A fault of the machine (a full disk, a file that cannot be written):
    // exit 3, as in every tool (docs/cli.md), not "judged and failed".
    kb::tools::printError("kbtrain", e.what());
    return kb::tools::kExitInfra;
  } catch (const std::exception& e) {
    kb::tools::printError("kbtrain", std::string("internal error: ") + e.what());
    return kb::tools::kExitInfra;
  }
}
