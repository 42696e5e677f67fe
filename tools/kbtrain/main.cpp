// kbtrain: RFT, value pretraining, PPO and GRPO over trajectory JSONL
// (docs/kbtrain.md). A thin driver over lib/rl: flags in, a stage function
// called, its summary printed as JSON on stdout.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "core/error.h"
#include "kb_config.h"
#include "rl/checkpoint_diff.h"
#include "rl/plot.h"
#include "rl/toy_rollout.h"
#include "rl/trainer.h"

namespace fs = std::filesystem;
using namespace kb;
using namespace kb::rl;

namespace {

void addTrain(CLI::App* app, TrainOptions& o, const std::string& model_help) {
  app->add_option("trajectories", o.trajectories, "trajectory JSONL files (kbrollout's output, docs/trajectory-format.md)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--model", o.model, model_help)->required();
  app->add_option("-o,--out", o.out,
                  "checkpoint directory to write (config.json + model.safetensors + tokenizer files); locked "
                  "while the run lasts (a second run into it is refused)")
      ->required();
  app->add_option("--tokenizer", o.tokenizer, "tokenizer.json (default: <model>/tokenizer.json)");
  app->add_option("--metrics", o.metrics, "metrics JSONL, one record per optimizer step (default: <out>/metrics.jsonl)");
  app->add_option("--device", o.device,
                  "cpu, cuda (with WORLD_SIZE > 1 each process takes cuda:LOCAL_RANK) or cuda:N")
      ->capture_default_str()
      ->check(kb::tools::deviceValidator());
  app->add_option("--dtype", o.dtype, "auto (the checkpoint's), float32 or bfloat16; the optimizer keeps float32 "
                                      "master weights for bfloat16")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "float32", "bfloat16", "float16"}));
  app->add_option("--backend", o.backend, "data-parallel backend: auto (nccl on cuda, gloo on cpu), gloo, nccl")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  app->add_option("--lr", o.lr, "AdamW learning rate (peak, after warm-up)")->capture_default_str();
  app->add_option("--warmup-steps", o.warmup_steps, "linear warm-up from 0 over this many steps")->capture_default_str();
  app->add_option("--weight-decay", o.weight_decay, "AdamW decoupled weight decay")->capture_default_str();
  app->add_option("--beta1", o.beta1, "AdamW first-moment decay")->capture_default_str();
  app->add_option("--beta2", o.beta2, "AdamW second-moment decay")->capture_default_str();
  app->add_option("--adam-eps", o.adam_eps, "AdamW epsilon (added to the root of the second moment)")
      ->capture_default_str();
  app->add_option("--max-grad-norm", o.max_grad_norm, "clip the global gradient norm to this (0: no clipping)")
      ->capture_default_str();
  app->add_option("--batch-size", o.batch_size, "trajectories per optimizer step, all processes together")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app->add_option("--micro-batch", o.micro_batch,
                  "sequences per forward/backward pass in each process; gradients accumulate over them")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app->add_option("--epochs", o.epochs, "passes over the trajectories")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app->add_option("--max-steps", o.max_steps, "stop after this many optimizer steps (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app->add_option("--checkpoint-every", o.checkpoint_every,
                  "write <out>/checkpoint after every N optimizer steps (0: only when stopped by SIGINT/SIGTERM)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app->add_flag("--resume", o.resume,
                "continue the stopped run whose checkpoint is in <out>/checkpoint (weights, optimizer state, step); "
                "give the same trajectories and options");
  app->add_option("--seed", o.seed, "shuffling seed (the same on every process)")->capture_default_str();
  app->add_option("--shards", o.shards,
                  "episode e goes to shard e % shards, shard s to process s % WORLD_SIZE; micro-batches stay "
                  "within a shard, so runs with the same --shards give the same weights for any WORLD_SIZE "
                  "dividing it (0: WORLD_SIZE)")
      ->capture_default_str();
  app->add_option("--grad-dtype", o.grad_dtype,
                  "gradient accumulation buffers: auto (float64 for float32 models, else float32), float64, float32")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "float64", "float32"}));
  app->add_flag("!--no-shuffle", o.shuffle, "keep the file order");
  app->add_option("--max-length", o.max_length, "cut sequences longer than this many tokens (0: no limit)")
      ->capture_default_str();
  app->add_flag("!--retokenize", o.use_recorded_tokens,
                "ignore recorded token ids and encode every conversation with the chat template");
  app->add_flag("!--no-progress", o.progress, "no per-step line on stderr");
  app->add_option("--unprofiled-correct-reward", o.unprofiled_correct_reward,
                  "reward for a correct solution that could not be timed (reward.value null, excluded "
                  "profile_not_available); unset: such trajectories have no reward");
}

void addPolicyGradient(CLI::App* app, PolicyGradientOptions& p, bool ppo) {
  app->add_option("--eps-low", p.eps_low, "clip ratio below at 1 - eps_low")->capture_default_str();
  app->add_option("--eps-high", p.eps_high, "clip ratio above at 1 + eps_high (clip-higher, DAPO)")
      ->capture_default_str();
  app->add_option("--kl-coef", p.kl_coef, "weight of the k3 KL to --reference in the loss (0: no KL term)")
      ->capture_default_str();
  app->add_option("--reference", p.reference, "reference policy checkpoint for the KL term (e.g. the RFT model)");
  app->add_option("--old-logprobs", p.old_logprobs,
                  "recompute: log pi_old from the model before any update (exact on-policy start); recorded: the "
                  "rollout's sampled log-probs (ratios then include the rollout/trainer mismatch)")
      ->capture_default_str()
      ->check(CLI::IsMember({"recompute", "recorded"}));
  if (ppo) {
    app->add_option("--critic", p.critic, "critic checkpoint (value-pretrain's --out; a policy checkpoint starts "
                                          "the value head at 0)")
        ->required();
    app->add_option("--critic-out", p.critic_out, "where the updated critic goes (default <out>/critic)");
    app->add_option("--critic-lr", p.critic_lr, "critic learning rate (0: --lr)")->capture_default_str();
    app->add_option("--gamma", p.gamma, "GAE discount")->capture_default_str();
    app->add_option("--lambda", p.lambda, "GAE lambda")->capture_default_str();
    app->add_option("--value-clip", p.value_clip, "clip V around the rollout's value by this (<= 0: no clipping)")
        ->capture_default_str();
    app->add_flag("!--no-whiten", p.whiten_advantages, "keep GAE advantages unnormalised");
  } else {
    app->add_flag("!--no-std", p.grpo_scale_by_std, "advantage = reward - group mean, not divided by the group std");
  }
}

// One compact JSON object per stdout line (docs/cli.md).
void printJson(const Json& j) { kb::tools::printJsonLine(j); }

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

// A training stage under SIGINT/SIGTERM: the step in progress finishes, a
// checkpoint is written, and the run ends 128 + signal with the command that
// resumes it.
int runStage(TrainOptions& o, const std::function<Json()>& stage, int argc, char** argv) {
  kb::tools::OutputLock lock = claimOutput(o);
  kb::tools::StopSignals signals;
  o.stop_requested = [] { return kb::tools::StopSignals::stopRequested(); };
  const Json summary = stage();
  printJson(summary);
  if (!summary.value("stopped", false)) return kb::tools::kExitOk;
  const int sig = kb::tools::StopSignals::signal();
  std::string cmd;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--resume") continue;
    cmd += (i ? " " : "") + (a.find_first_of(" '\"$") == std::string::npos ? a : "'" + a + "'");
  }
  const Json ck = summary.value("checkpoint", Json());
  kb::tools::printError(
      "kbtrain", std::string("stopped by ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + " after step " +
                     std::to_string(summary.value("completed_steps", 0)) + " of " +
                     std::to_string(summary.value("steps", 0)) +
                     (ck.is_string() ? "; checkpoint in " + ck.get<std::string>() + "; resume with: " + cmd + " --resume"
                                     : "; no step was done, nothing to resume"));
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
      "Every stage writes a checkpoint that lib/policy (kbpolicy, kbrollout --local-model) loads, "
      "<out>/metrics.jsonl (one record per optimizer step) and <out>/train_summary.json, and prints the "
      "summary on stdout; progress goes to stderr. Data parallel: start N copies with RANK, WORLD_SIZE, "
      "LOCAL_RANK, MASTER_ADDR, MASTER_PORT set (as torchrun does); runs with the same --shards give the "
      "same weights as one process on the whole batch. Stopping: SIGINT/SIGTERM finish the current step, write "
      "<out>/checkpoint and exit 130/143; --resume continues. Exit status (docs/cli.md): 0 done, 2 bad usage or "
      "input (before any work; also an --out in use by another run), 1 data judged unusable, 3 infrastructure "
      "fault, 130/143 stopped by a signal."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kbtrain ") + KB_VERSION, "Print the version and exit");

  RftOptions rft;
  CLI::App* rft_cmd = app.add_subcommand(
      "rft",
      "rejection fine-tuning: keep trajectories with reward > --min-reward and no invalid tool calls, loops or "
      "malformed turns (each rejection counted by reason in the summary), then minimise the NLL of their "
      "assistant tokens");
  addTrain(rft_cmd, rft.train, "policy checkpoint to fine-tune");
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
  addTrain(vp_cmd, vp.train, "critic checkpoint, or a policy checkpoint (usually the RFT model; the head starts at 0)");
  vp_cmd->add_option("--gamma", vp.gamma, "GAE discount")->capture_default_str();
  vp_cmd->add_option("--lambda", vp.lambda, "GAE lambda")->capture_default_str();
  vp_cmd->add_option("--value-clip", vp.value_clip, "clip V around the epoch's starting values (0: none)")
      ->capture_default_str();

  PolicyGradientOptions ppo;
  CLI::App* ppo_cmd = app.add_subcommand(
      "ppo",
      "PPO: token-level clipped surrogate with asymmetric clip (0.2 / 0.28), GAE advantages from the critic, "
      "clipped value loss, optional k3 KL to a reference; the actor and the critic are both updated");
  addTrain(ppo_cmd, ppo.train, "actor checkpoint (the policy that sampled the trajectories)");
  addPolicyGradient(ppo_cmd, ppo, true);

  PolicyGradientOptions grpo;
  grpo.estimator = "grpo";
  CLI::App* grpo_cmd = app.add_subcommand(
      "grpo",
      "GRPO: the same clipped objective with group-normalised advantages ((R - mean) / std over the "
      "trajectories of the same task_id); no critic. Give several samples per task");
  addTrain(grpo_cmd, grpo.train, "actor checkpoint (the policy that sampled the trajectories)");
  addPolicyGradient(grpo_cmd, grpo, false);

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

  CLI::App* toy_cmd = app.add_subcommand(
      "toy", "the toy task family of the learning demonstration (docs/kbtrain.md \"The toy task family\")");
  toy_cmd->require_subcommand(1);
  uint64_t toy_first = 0, toy_last = 63;
  fs::path toy_out;
  CLI::App* demos_cmd = toy_cmd->add_subcommand("demos", "write one demonstration trajectory per task seed");
  demos_cmd->add_option("--first-seed", toy_first, "first task seed")->capture_default_str();
  demos_cmd->add_option("--last-seed", toy_last, "last task seed (inclusive)")->capture_default_str();
  demos_cmd->add_option("-o,--out", toy_out, "trajectory JSONL")->required();
  CLI::App* tasks_cmd = toy_cmd->add_subcommand(
      "tasks", "write the tasks first..last as KernelBench programs DIR/toy-<seed>.py; `kbsynth import DIR -o OUT` "
               "makes the bundles that --env kbcheck verifies against (OUT/<DIR's name>/toy-<seed>)");
  tasks_cmd->add_option("--first-seed", toy_first, "first task seed")->capture_default_str();
  tasks_cmd->add_option("--last-seed", toy_last, "last task seed (inclusive)")->capture_default_str();
  tasks_cmd->add_option("-o,--out", toy_out, "directory for the .py files")->required();
  ToyRolloutOptions tr;
  CLI::App* roll_cmd = toy_cmd->add_subcommand(
      "rollout", "sample answers with the local policy, score them, write trajectories; prints mean reward");
  roll_cmd->add_option("--model", tr.model, "policy checkpoint")->required();
  roll_cmd->add_option("-o,--out", tr.out, "trajectory JSONL (overwritten)")->required();
  roll_cmd->add_option("--first-seed", tr.first_seed, "first task seed")->capture_default_str();
  roll_cmd->add_option("--last-seed", tr.last_seed, "last task seed (inclusive)")->capture_default_str();
  roll_cmd->add_option("--samples", tr.samples, "answers per task")->capture_default_str();
  roll_cmd->add_option("--temperature", tr.temperature, "0: greedy")->capture_default_str();
  roll_cmd->add_option("--max-new-tokens", tr.max_new_tokens, "tokens per answer at most")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  roll_cmd->add_option("--device", tr.device, "where the policy runs: cpu, cuda or cuda:N")
      ->capture_default_str()
      ->check(kb::tools::deviceValidator());
  roll_cmd->add_option("--dtype", tr.dtype, "the policy's dtype: auto (the checkpoint's), float32, bfloat16, float16")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "float32", "bfloat16", "float16"}));
  roll_cmd->add_option("--sampling-seed", tr.sampling_seed, "seed of the sampler")->capture_default_str();
  roll_cmd->add_option("--mode", tr.mode, "recorded in each trajectory (train / eval)")->capture_default_str();
  roll_cmd->add_option("--env", tr.env,
                       "scoring: expr (the expression evaluator) or kbcheck (build + verify each answer against "
                       "its task bundle)")
      ->capture_default_str()
      ->check(CLI::IsMember({"expr", "kbcheck"}));
  roll_cmd->add_option("--bundles", tr.env_options.bundles,
                       "--env kbcheck: directory of task bundles named by task id (kbtrain toy tasks, then kbsynth import)");
  roll_cmd->add_option("--env-device", tr.env_options.device, "--env kbcheck: where answers are built for and verified: cpu, cuda[:N], or a comma list of CUDA "
                       "devices the jobs are spread over (cuda:0,cuda:1)")
      ->capture_default_str();
  roll_cmd->add_option("--env-jobs", tr.env_options.jobs, "--env kbcheck: tasks whose answers are built and verified at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  roll_cmd->add_option("--arch", tr.env_options.arch, "--env kbcheck: nvcc's target")->capture_default_str();
  roll_cmd->add_option("--env-verdict-cache", tr.env_options.verdict_cache,
                       "--env kbcheck: JSONL of verdicts kept across runs; a (task, answer) scored before is not "
                       "built or verified again");
  roll_cmd->add_option("--env-work-dir", tr.env_options.work_dir,
                       "--env kbcheck: keep the solution directories here (default: a temporary directory)");

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
      printJson(checkpointDiff(diff_a, diff_b));
    } else if (demos_cmd->parsed()) {
      kb::tools::checkWritableFile(toy_out.string(), "--out");
      printJson(writeToyDemonstrations(toy_first, toy_last, toy_out));
    } else if (tasks_cmd->parsed()) {
      kb::tools::checkWritableDir(toy_out.string(), "--out");
      printJson(writeToyPrograms(toy_first, toy_last, toy_out));
    } else if (roll_cmd->parsed()) {
      kb::tools::checkWritableFile(tr.out.string(), "--out");
      printJson(runToyRollout(tr));
    }
    return kb::tools::kExitOk;
  } catch (const UsageError& e) {
    kb::tools::printError("kbtrain", e.what());
    return kb::tools::kExitUsage;
  } catch (const Json::exception& e) {
    kb::tools::printError("kbtrain", std::string("bad JSON input: ") + e.what());
    return kb::tools::kExitUsage;
  } catch (const Error& e) {
    kb::tools::printError("kbtrain", e.what());
    return kb::tools::kExitFailed;
  } catch (const std::exception& e) {
    kb::tools::printError("kbtrain", std::string("internal error: ") + e.what());
    return kb::tools::kExitInfra;
  }
}
