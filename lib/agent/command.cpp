#include "agent/command.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/client.h"
#include "agent/replay_policy.h"
#include "agent/runner.h"
#include "agent/trajectory.h"
#include "core/error.h"
#include "core/file.h"
#include "core/gpu_info.h"
#include "core/paths.h"
#include "kb_config.h"

namespace fs = std::filesystem;

namespace kb::agent {
namespace {

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ','))
    if (!part.empty()) out.push_back(part);
  return out;
}

// --json's summary (docs/kbrollout.md "The run's summary"): what this run did,
// in the counts of the progress line, and how it ended.
Json runSummaryJson(const RolloutCommand& f, const RunOptions& o, const fs::path& results, const RunSummary& s,
                    const char* status) {
  Json j;
  j["tool"] = "kbrollout";
  j["stage"] = f.eval ? "eval" : "run";
  j["version"] = KB_VERSION;
  j["status"] = status;
  j["trajectories"] = o.output.string();
  j["results"] = results.empty() ? Json(nullptr) : Json(results.string());
  j["rollouts"] = s.total;
  j["resumed"] = s.skipped;
  j["done"] = s.done;
  j["failed"] = s.failed;
  j["infra_error"] = s.infra;
  j["not_written"] = s.errors.size();
  j["interrupted"] = s.interrupted;
  j["rewarded"] = s.rewarded;
  j["mean_reward"] = s.rewarded ? Json(s.reward_sum / s.rewarded) : Json(nullptr);
  return j;
}

}  // namespace

int runRolloutCommand(const RolloutCommand& f, const LocalPolicyLoader& load_local) {
  const bool eval = f.eval;
  RunOptions o;
  if (f.device == "cuda") requireNvidiaGpu("--device cuda");  // at once, not as infra_error per rollout
  bool cuda = f.device == "cuda" || (f.device == "auto" && hasNvidiaGpu());
  o.tasks = findTasks(f.tasks, cuda);
  o.samples = eval && f.samples < 1 ? 1 : f.samples;
  o.parallel = f.parallel;
  fs::path out_dir;
  if (eval) {
    out_dir = f.out.empty() ? fs::path("eval-out") : fs::path(f.out);  // checked writable by the caller
    fs::create_directories(out_dir);
    o.output = out_dir / "trajectories.jsonl";
  } else {
    if (f.out.empty()) throw UsageError("--out FILE is required");
    o.output = f.out;
  }
  o.work_dir = f.work_dir.empty() ? fs::path(o.output.string() + ".work") : fs::path(f.work_dir);
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
  if (!f.local_model.empty() && !load_local)
    throw UsageError("--local-model: this kbrollout was built without LibTorch");
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

  std::unique_ptr<chat::Policy> policy;
  if (replay) policy = std::move(replay);
  else if (!f.local_model.empty()) policy = load_local(f.local_model, f.local_device, f.local_dtype);
  else policy = std::make_unique<OpenAIClient>(cc);

  std::string gpus = f.gpus;
  if (gpus.empty()) gpus = std::getenv("KB_GPUS") ? std::getenv("KB_GPUS") : "0";
  o.gpu_pool = std::make_shared<ResourcePool>("gpu", splitList(gpus));
  int cpus = f.cpu_workers > 0 ? f.cpu_workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> cpu_slots;
  for (int i = 0; i < cpus; ++i) cpu_slots.push_back(std::to_string(i));
  o.cpu_pool = std::make_shared<ResourcePool>("cpu", cpu_slots);

  RunSummary s = runRollouts(o, *policy);
  auto summary = [&](const char* status) {
    writeJsonOutput(f.json, runSummaryJson(f, o, eval ? out_dir / "results.jsonl" : fs::path(), s, status));
  };

  if (eval) {
    writeResults(o.output, out_dir / "results.jsonl");
    Json timeline = {{"gpu", o.gpu_pool->timeline()}, {"cpu", o.cpu_pool->timeline()}};
    writeJsonFile(out_dir / "timeline.json", timeline);
    std::fprintf(stderr, "kbrollout eval: wrote %s and %s (kbreward report %s)\n", o.output.c_str(),
                 (out_dir / "results.jsonl").c_str(), (out_dir / "results.jsonl").c_str());
  }
  for (const std::string& e : s.errors) std::fprintf(stderr, "kbrollout: %s\n", e.c_str());
  if (s.interrupted > 0 || chat::stopRequested()) {
    summary("interrupted");
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
    summary("infra_error");
    std::fprintf(stderr, "kbrollout: no rollout could be made: %d infrastructure fault(s), e.g. %s\n", lost,
                 first.c_str());
    return 3;
  }
  summary("ok");
  if (lost > 0)
    std::fprintf(stderr,
                 "kbrollout: %d of %d rollout(s) ended in an infrastructure fault (recorded as infra_error, "
                 "no reward); run the same command again to redo them\n",
                 lost, lost + s.made());
  return 0;
}

}  // namespace kb::agent
