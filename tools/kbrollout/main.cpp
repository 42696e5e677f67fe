// kbrollout: multi-turn agent rollouts (docs/kbrollout.md). A thin driver over
// lib/agent: flags in, runRolloutCommand() (agent/command.h), trajectories out.
#include <csignal>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "agent/command.h"
#ifdef KB_HAVE_LOCAL_POLICY
#include "llm/policy.h"
#endif
#include "chat/client.h"
#include "core/error.h"
#include "kb_config.h"
#include "reward/reward.h"

using namespace kb;
using namespace kb::agent;

namespace {

void onSignal(int) { chat::requestStop(); }

struct Flags : RolloutCommand {
  std::string old_flag;  // a renamed flag that was given (refused with its new name)
};

// --policy-device: cpu, cuda or cuda:N.
const CLI::Validator kTorchDevice(
    [](std::string& v) -> std::string {
      if (v == "cpu" || v == "cuda") return "";
      if (v.rfind("cuda:", 0) == 0 && v.size() > 5 && v.find_first_not_of("0123456789", 5) == std::string::npos)
        return "";
      return "must be cpu, cuda or cuda:N, not \"" + v + "\"";
    },
    "cpu|cuda|cuda:N", "torch device");

void addCommon(CLI::App* app, Flags& f, bool eval) {
  app->add_option("--tasks", f.tasks, "a task directory (holding model.py) or a directory of them")
      ->required();
  CLI::Option* policy = app->add_option(
      "--policy", f.policy_url, "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (default $OPENAI_BASE_URL)");
  CLI::Option* model = app->add_option("--model", f.model, "model name the server serves (default $KB_MODEL)");
  CLI::Option* local = app->add_option(
      "--local-model", f.local_model,
      "a checkpoint directory (config.json, safetensors, tokenizer.json) to run in this process "
      "with lib/llm instead of an HTTP server; token ids and log-probs are recorded");
  app->add_option("--replay", f.replay,
                  "a folder of known solutions, DIR/<task name>/ (forward.cpp, kernels/; or variants v0/ v1/ ...), "
                  "submitted through the agent loop's tools instead of asking a model; a task without one "
                  "finishes at once")
      ->check(tools::readablePath())
      ->excludes(policy)
      ->excludes(model)
      ->excludes(local);
  app->add_option("--policy-device", f.local_device, "--local-model's device: cpu, cuda, cuda:N")
      ->check(kTorchDevice)
      ->capture_default_str();
  app->add_option("--dtype", f.local_dtype, "--local-model's dtype: auto, float32, bfloat16")
      ->check(CLI::IsMember({"auto", "float32", "bfloat16"}))
      ->capture_default_str();
  app->add_option("--api-key-env", f.api_key_env, "environment variable holding the API key")
      ->capture_default_str();
  app->add_option("--samples", f.samples, "rollouts per task")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app->add_option("-j,--jobs", f.parallel, "rollouts at once")->check(CLI::Range(1, 4096))->capture_default_str();
  app->add_option("--work-dir", f.work_dir, "where workspaces go (default: <output>.work)");
  app->add_option("--max-turns", f.max_turns,
                  eval ? "policy calls per rollout (default 200, the paper's evaluation)"
                       : "policy calls per rollout (default 150, the paper's training)");
  app->add_option("--context-tokens", f.context_tokens, "context budget: prompt + max-tokens")
      ->capture_default_str();
  app->add_option("--wall-s", f.wall_s, "wall-clock budget per rollout, seconds")->capture_default_str();
  app->add_option("--temperature", f.temperature, "sampling temperature")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  app->add_option("--top-p", f.top_p, "nucleus sampling: keep the smallest token set of this probability")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app->add_option("--max-tokens", f.max_tokens, "per response")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  app->add_option("--seed", f.seed,
                  "run seed S: sample k of task T is sent the seed derived from (S, T, k), so a run repeats "
                  "and the samples of a task differ (default: no seed sent)")
      ->check(CLI::Range(int64_t{0}, int64_t{9007199254740991}));
  app->add_flag("--same-seed", f.same_seed, "send S itself in every sample (identical samples on a deterministic server)");
  app->add_option("--timeout", f.timeout_s, "seconds per policy request")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  app->add_option("--retries", f.retries, "attempts per policy request (429, 5xx, transport, bad body)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app->add_option("--backoff-s", f.backoff_s, "first back-off, doubled per retry")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--extra-body", f.extra_body, "JSON object merged into every request body");
  app->add_flag("--vllm-token-ids", f.vllm_token_ids,
                "ask vLLM for token ids (return_token_ids, return_tokens_as_token_ids)");
  app->add_flag("--no-logprobs", f.no_logprobs, "do not ask for log-probabilities");
  app->add_option("--device", f.device,
                  "where tasks without a \"device\" in task.json run: auto, cuda, cpu (auto: cuda when this "
                  "machine has an NVIDIA GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  app->add_option("--gpus", f.gpus, "GPU ordinals for verify/profile jobs, e.g. 0,1,2,3 (default $KB_GPUS or 0)");
  app->add_option("--cpu-workers", f.cpu_workers, "concurrent compile jobs (default: cores)");
  app->add_option("--guide", f.guide, "the instruction document (default docs/agent-guide.md)");
  std::string schemes;
  for (const std::string& n : reward::schemeNames()) schemes += (schemes.empty() ? "" : ", ") + n;
  app->add_option("--scheme", f.reward_scheme, "reward scheme (docs/kbreward.md): " + schemes)
      ->check(CLI::IsMember(reward::schemeNames()))
      ->capture_default_str();
  // Renamed flags (docs/cli.md): refused with their new name, not taken silently.
  for (const char* old : {"--reward", "--parallel", "--timeout-s", "--task-device"})
    app->add_option_function<std::string>(old, [&f, old](const std::string&) { f.old_flag = old; })->group("");
  app->add_option("--json", f.json,
                  "the run's summary (rollouts done, resumed, failed, infra_error, mean reward) as JSON to FILE, "
                  "'-' for one line on stdout")
      ->type_name("FILE");
  app->add_flag("--no-progress", f.no_progress, "no progress line on stderr");
  app->add_flag("--remove-workspaces", f.remove_workspaces, "delete each workspace once written");
}

const char* renamedTo(const std::string& old) {
  if (old == "--reward") return "--scheme";
  if (old == "--parallel") return "-j/--jobs";
  if (old == "--timeout-s") return "--timeout";
  return "--device";  // --task-device; the local model's device is now --policy-device
}

int run(Flags& f) {
  // From the start: a stop during set-up (loading a local model) ends the
  // run before any rollout, with the message below, not by the signal.
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  if (!f.old_flag.empty())
    throw UsageError(f.old_flag + " was renamed " + renamedTo(f.old_flag) + " (docs/cli.md)");
  if (f.eval) tools::checkWritableDir(f.out.empty() ? "eval-out" : f.out, "-o/--out");  // exit 2 before any work
  if (!f.work_dir.empty()) tools::checkWritableDir(f.work_dir, "--work-dir");
  tools::checkWritableFile(f.json, "--json");
  LocalPolicyLoader load_local;
#ifdef KB_HAVE_LOCAL_POLICY
  load_local = [](const std::string& dir, const std::string& device, const std::string& dtype) {
    return kb::llm::loadLocalPolicy({.model_dir = dir, .device = device, .dtype = dtype});
  };
#endif
  return runRolloutCommand(f, load_local);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kbrollout: run an LLM agent in a CUDA workspace (compile, verify, profile tools) and write "
      "its trajectories as JSONL.\n\n"
      "  kbrollout run  --tasks DIR --out traj.jsonl --policy URL --model NAME [-j N] [--samples K]\n"
      "  kbrollout eval --tasks DIR --policy URL --model NAME [--out DIR]\n"
      "  kbrollout eval --tasks DIR --replay SOLUTIONS [--out DIR]\n\n"
      "Each rollout gets its own workspace (model.py, AGENT.md, solution/ skeleton); the model works "
      "with the tools until it calls finish or a budget runs out; then its solution is checked and "
      "the reward attached. Re-running the same command resumes: finished rollouts are not redone. "
      "See docs/kbrollout.md and docs/trajectory-format.md."};
  app.require_subcommand(1);
  Flags f;
  CLI::App* run_cmd = app.add_subcommand("run", "rollouts for training (150 turns by default)");
  addCommon(run_cmd, f, false);
  run_cmd->add_option("-o,--out", f.out,
                      "trajectory JSONL file (appended under an exclusive lock; resume skips what it holds)");
  CLI::App* eval_cmd = app.add_subcommand(
      "eval", "the paper's evaluation protocol over a task set (200 turns, one sample per task); writes "
              "DIR/trajectories.jsonl and DIR/results.jsonl for `kbreward report`");
  addCommon(eval_cmd, f, true);
  eval_cmd->add_option("-o,--out", f.out, "output directory (default eval-out)");
  tools::setVersionFlag(app, "kbrollout");
  tools::durationFlags(app, {"--timeout", "--wall-s", "--backoff-s"});
  if (auto rc = tools::parseOrExit(app, argc, argv, "kbrollout")) return *rc;
  f.eval = eval_cmd->parsed();
  return tools::runGuarded("kbrollout", [&] { return run(f); });  // UsageError 2, others 3
}
