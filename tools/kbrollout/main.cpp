// kbrollout: multi-turn agent rollouts (docs/kbrollout.md). A thin driver over
// lib/agent: flags in, runRollouts(), trajectories out.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "agent/client.h"
#include "agent/replay_policy.h"
#include "agent/runner.h"
#include "agent/trajectory.h"
#ifdef KB_HAVE_LOCAL_POLICY
#include "localagent/local_agent_policy.h"
#endif
#include "core/error.h"
#include "core/gpu_info.h"
#include "core/paths.h"
#include "kb_config.h"
#include "reward/reward.h"

namespace fs = std::filesystem;
using namespace kb;
using namespace kb::agent;

namespace {

void onSignal(int) { requestStop(); }

struct Flags {
  std::string tasks, out, work_dir, policy_url, model, api_key_env = "OPENAI_API_KEY", extra_body;
  std::string guide, gpus, reward_scheme = "milestone";
  std::string device = "auto";
  std::string local_model, local_device = "cpu", local_dtype = "auto";
  std::string replay;  // --replay DIR: the replay policy (replay_policy.h)
  int samples = 1, parallel = 1, max_turns = -1, max_tokens = 8192, retries = 6, cpu_workers = 0;
  int64_t context_tokens = 131072, seed = -1;
  double temperature = 1.0, top_p = 1.0, wall_s = 7200, timeout_s = 600, backoff_s = 1.0;
  bool vllm_token_ids = false, no_progress = false, no_logprobs = false, remove_workspaces = false;
  bool same_seed = false;
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
      "with lib/policy instead of an HTTP server; token ids and log-probs are recorded");
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
  app->add_flag("--no-progress", f.no_progress, "no progress line on stderr");
  app->add_flag("--remove-workspaces", f.remove_workspaces, "delete each workspace once written");
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ','))
    if (!part.empty()) out.push_back(part);
  return out;
}

// One combined record per trajectory (docs/kbreward.md "combined record").
Json resultOf(const Json& t) {
  Json r;
  r["tool"] = "kbrollout";
  r["version"] = t.value("version", "");
  r["task_id"] = t.value("task_id", "");
  r["solution_hash"] = t.contains("solution_hash") ? t["solution_hash"] : Json(nullptr);
  r["status"] = t.contains("status") ? t["status"] : Json(nullptr);
  r["timings"] = t.contains("timings") ? t["timings"] : Json(nullptr);
  r["rollout_id"] = t.value("rollout_id", "");
  r["reward"] = t.contains("reward") ? t["reward"]["value"] : Json(nullptr);
  r["end_reason"] = t.contains("end") ? t["end"]["reason"] : Json(nullptr);
  r["turns"] = t.contains("end") ? t["end"]["turns"] : Json(nullptr);
  return r;
}

const char* renamedTo(const std::string& old) {
  if (old == "--reward") return "--scheme";
  if (old == "--parallel") return "-j/--jobs";
  if (old == "--timeout-s") return "--timeout";
  return "--device";  // --task-device; the local model's device is now --policy-device
}

// eval's results.jsonl: one combined record per rollout, the last record of
// each (a redone infra_error is replaced), written to a temporary and renamed.
void writeResults(const fs::path& trajectories, const fs::path& out) {
  std::vector<Json> recs = readTrajectories(trajectories);
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < recs.size(); ++i) last[recs[i].value("rollout_id", "")] = i;
  fs::path tmp = out.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream res(tmp);
    for (size_t i = 0; i < recs.size(); ++i)
      if (last[recs[i].value("rollout_id", "")] == i) res << resultOf(recs[i]).dump() << '\n';
    if (!res.flush()) throw Error("error writing " + tmp.string());
  }
  fs::rename(tmp, out);
}

int run(Flags& f, bool eval) {
  // From the start: a stop during set-up (loading a local model) ends the
  // run before any rollout, with the message below, not by the signal.
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  if (!f.old_flag.empty())
    throw UsageError(f.old_flag + " was renamed " + renamedTo(f.old_flag) + " (docs/cli.md)");
  RunOptions o;
  bool cuda = f.device == "cuda" || (f.device == "auto" && hasNvidiaGpu());
  o.tasks = findTasks(f.tasks, cuda);
  o.samples = eval && f.samples < 1 ? 1 : f.samples;
  o.parallel = f.parallel;
  fs::path out_dir;
  if (eval) {
    out_dir = f.out.empty() ? fs::path("eval-out") : fs::path(f.out);
    tools::checkWritableDir(out_dir.string(), "-o/--out");  // exit 2 before any work
    fs::create_directories(out_dir);
    o.output = out_dir / "trajectories.jsonl";
  } else {
    if (f.out.empty()) throw UsageError("--out FILE is required");
    o.output = f.out;
  }
  o.work_dir = f.work_dir.empty() ? fs::path(o.output.string() + ".work") : fs::path(f.work_dir);
  if (!f.work_dir.empty()) tools::checkWritableDir(f.work_dir, "--work-dir");
  o.guide = f.guide.empty() ? kb::dataPath("docs/agent-guide.md") : fs::path(f.guide);
  o.interface_header = kb::dataPath("include/kb/solution.h");
  if (!fs::is_regular_file(o.guide)) throw UsageError("agent guide not found: " + o.guide.string());
  {
    std::ifstream in(o.guide);
    std::stringstream ss;
    ss << in.rdbuf();
    o.rollout.guide_text = ss.str();
  }
  o.rollout.mode = eval ? "eval" : "train";
  o.rollout.limits.max_turns = f.max_turns > 0 ? f.max_turns : (eval ? 200 : 150);
  o.rollout.limits.context_tokens = f.context_tokens;
  o.rollout.limits.wall_seconds = f.wall_s;
  o.rollout.sampling.temperature = f.temperature;
  o.rollout.sampling.top_p = f.top_p;
  o.rollout.sampling.max_tokens = f.max_tokens;
  o.rollout.sampling.logprobs = !f.no_logprobs;
  if (f.seed >= 0) o.rollout.sampling.seed = f.seed;
  if (f.same_seed && f.seed < 0) throw UsageError("--same-seed needs --seed S");
  o.rollout.same_seed = f.same_seed;
  o.rollout.reward_scheme = f.reward_scheme;
  o.progress = !f.no_progress;
  o.keep_workspaces = !f.remove_workspaces;

  ClientConfig cc;
  cc.base_url = f.policy_url;
  cc.model = f.model;
  if (const char* k = std::getenv(f.api_key_env.c_str())) cc.api_key = k;
  cc.timeout_seconds = f.timeout_s;
  cc.max_attempts = f.retries;
  cc.backoff_initial_seconds = f.backoff_s;
  if (!f.extra_body.empty()) {
    try {
      cc.extra_body = Json::parse(f.extra_body);
    } catch (const Json::parse_error& e) {
      throw UsageError(std::string("--extra-body is not JSON: ") + e.what());
    }
    if (!cc.extra_body.is_object()) throw UsageError("--extra-body must be a JSON object");
  }
  if (f.vllm_token_ids) {
    cc.extra_body["return_token_ids"] = true;
    cc.extra_body["return_tokens_as_token_ids"] = true;
  }
#ifndef KB_HAVE_LOCAL_POLICY
  if (!f.local_model.empty()) throw UsageError("--local-model: this kbrollout was built without LibTorch");
#endif
  std::unique_ptr<ReplayPolicy> replay;
  if (!f.replay.empty()) {
    replay = std::make_unique<ReplayPolicy>(f.replay);  // not a folder, a bad solution: exit 2 now
    size_t have = 0;
    for (const TaskRef& t : o.tasks) have += replay->find(t.id) ? 1 : 0;
    std::fprintf(stderr, "kbrollout: --replay %s: a solution for %zu of %zu task(s)%s\n", f.replay.c_str(), have,
                 o.tasks.size(), have < o.tasks.size() ? "; the others finish at once (giving up)" : "");
  } else if (f.local_model.empty()) {
    cc = configFromEnvironment(cc);  // no endpoint or model: exit 2 now
  }

  // The output, locked and checked before any work: a second kbrollout on
  // the same file, or a corrupt file, is refused here (exit 2).
  o.writer = std::make_shared<TrajectoryWriter>(o.output);
  if (o.writer->cutPartialLine())
    std::fprintf(stderr, "kbrollout: %s: cut a partial last line (an interrupted run); that rollout is redone\n",
                 o.output.c_str());

  std::unique_ptr<Policy> policy;
  if (replay) {
    policy = std::move(replay);
  } else if (!f.local_model.empty()) {
#ifdef KB_HAVE_LOCAL_POLICY
    policy = makeLocalAgentPolicy({.model_dir = f.local_model, .device = f.local_device, .dtype = f.local_dtype});
#endif
  } else {
    policy = std::make_unique<OpenAIClient>(cc);
  }

  std::string gpus = f.gpus;
  if (gpus.empty()) gpus = std::getenv("KB_GPUS") ? std::getenv("KB_GPUS") : "0";
  o.gpu_pool = std::make_shared<ResourcePool>("gpu", splitList(gpus));
  int cpus = f.cpu_workers > 0 ? f.cpu_workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> cpu_slots;
  for (int i = 0; i < cpus; ++i) cpu_slots.push_back(std::to_string(i));
  o.cpu_pool = std::make_shared<ResourcePool>("cpu", cpu_slots);

  RunSummary s = runRollouts(o, *policy);

  if (eval) {
    writeResults(o.output, out_dir / "results.jsonl");
    Json timeline = {{"gpu", o.gpu_pool->timeline()}, {"cpu", o.cpu_pool->timeline()}};
    writeJsonFile(out_dir / "timeline.json", timeline);
    std::fprintf(stderr, "kbrollout eval: wrote %s and %s (kbreward report %s)\n", o.output.c_str(),
                 (out_dir / "results.jsonl").c_str(), (out_dir / "results.jsonl").c_str());
  }
  for (const std::string& e : s.errors) std::fprintf(stderr, "kbrollout: %s\n", e.c_str());
  if (s.interrupted > 0 || stopRequested()) {
    std::fprintf(stderr, "kbrollout: interrupted; %d rollout(s) not finished; run again to resume\n",
                 s.interrupted);
    return 130;
  }
  // Infrastructure faults (docs/kbrollout.md "Exit status"): recorded as
  // infra_error without a reward, or not written at all.
  int lost = s.infra + static_cast<int>(s.errors.size());
  if (lost > 0 && s.made() == 0) {
    std::string first = !s.first_infra.empty() ? s.first_infra : s.errors.front();
    first = first.substr(0, first.find('\n'));
    std::fprintf(stderr, "kbrollout: no rollout could be made: %d infrastructure fault(s), e.g. %s\n", lost,
                 first.c_str());
    return 3;
  }
  if (lost > 0)
    std::fprintf(stderr,
                 "kbrollout: %d of %d rollout(s) ended in an infrastructure fault (recorded as infra_error, "
                 "no reward); run the same command again to redo them\n",
                 lost, lost + s.made());
  return 0;
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
  app.set_version_flag("--version", KB_VERSION);
  if (auto rc = tools::parseOrExit(app, argc, argv, "kbrollout")) return *rc;
  try {
    return run(f, eval_cmd->parsed());
  } catch (const UsageError& e) {
    std::fprintf(stderr, "kbrollout: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbrollout: %s\n", e.what());
    return 3;
  }
}
