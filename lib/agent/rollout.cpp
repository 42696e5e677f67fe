#include "agent/rollout.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

#include "agent/episode.h"
#include "agent/trajectory.h"
#include "chat/client.h"
#include "core/clock.h"
#include "core/hash.h"
#include "eval/eval.h"
#include "kb_config.h"
#include "reward/reward.h"
#include "solution/solution.h"

namespace kb::agent {
namespace fs = std::filesystem;

namespace {



std::string readText(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t messageChars(const chat::Message& m) {
  size_t n = 16 + m.content.size();  // role and framing, content
  if (!m.tool_calls.empty()) n += chat::messageToJson(m)["tool_calls"].dump().size();
  return n;
}

Json nullIfNegative(int64_t v) { return v < 0 ? Json(nullptr) : Json(v); }

std::string taskMessage(const RolloutSpec& spec, const std::string& model_py) {
  std::string s = "Task: " + spec.task_id +
                  "\n\nThe reference program (model.py in your workspace):\n\n```python\n" + model_py;
  if (!model_py.empty() && model_py.back() != '\n') s += '\n';
  s += "```\n\nWrite a solution in solution/ (forward.cpp and kernels/) that computes the same "
       "outputs as Model.forward and is faster than torch.compile by at least 5%. AGENT.md in "
       "your workspace repeats the rules. Work with the tools; call finish when you are done.";
  return s;
}

}  // namespace

Json stageToJson(const StageResult& r) {
  return {{"available", r.available},
          {"status", r.available ? Json(std::string(statusName(r.status))) : Json(nullptr)},
          {"seconds", r.seconds},
          {"summary", r.text},
          {"resources", r.resources},
          {"report", r.report}};
}

namespace {

// The final check: the environment's (compile, verify, profile as far as
// they pass). Fills record["final"], the top-level status/timings and
// record["reward"].
void finalCheck(Json& record, Environment& env, const fs::path& solution_dir, const fs::path& task_dir,
                const RolloutOptions& options) {
  auto start = Clock::now();
  Json fin;
  std::string hash;
  try {
    hash = solution::loadSolution(solution_dir).hash;
  } catch (const std::exception& e) {
    fin["error"] = e.what();
  }
  fin["solution_hash"] = hash.empty() ? Json(nullptr) : Json(hash);
  std::optional<Status> status;
  Json stages = Json::object();
  Json timings = nullptr;
  std::optional<reward::Timings> typed_timings;  // the profile's, as lib/eval gave them
  bool profile_missing = false;  // correct, but nothing to time on (a CPU task)
  if (hash.empty()) {
    status = Status::CompileError;  // no loadable solution (e.g. forward.cpp deleted)
  } else {
    // The first stage that failed decides; all passing, the verify's ok
    // (none: an environment without verify, no verdict).
    bool failed = false;
    for (const StageResult& s : env.check(solution_dir)) {
      stages[s.stage] = stageToJson(s);
      if (!s.available) {
        profile_missing = profile_missing || s.stage == "profile";
        continue;
      }
      if (!failed && s.status != Status::Ok) {
        status = s.status;
        failed = true;
      }
      if (!failed && s.stage == "verify") status = Status::Ok;
      if (s.stage == "profile") {
        if (s.report.contains("timings")) timings = s.report["timings"];
        typed_timings = s.timings;
      }
    }
  }
  fin["status"] = status ? Json(std::string(statusName(*status))) : Json(nullptr);
  fin["stages"] = stages;
  fin["seconds"] = since(start);

  // The reward, by lib/reward (the paper's milestone scheme by default).
  reward::Scheme scheme;
  scheme.kind = *reward::parseSchemeName(options.reward_scheme);  // checked by runRollout
  if (status == Status::InfraError) {
    // Not the solution's fault: no reward, and the record says where.
    for (const char* stage : {"compile", "verify", "profile"})
      if (stages.contains(stage) && stages[stage]["status"] == "infra_error") {
        record["infra_error"] = {{"stage", stage}, {"message", stages[stage]["summary"]}};
        break;
      }
  }
  // The task's degenerate flag and the contract the verdict was judged
  // under: a task a trivial solution passes gets no reward (reward/degenerate.h).
  Json task_json;
  try {
    task_json = readJsonFile(task_dir / "task.json");
  } catch (const std::exception&) {
    // no task.json: the environment judged nothing of it either
  }
  std::string contract;
  if (stages.contains("verify")) {
    const Json& c = stages["verify"]["report"].is_object() ? stages["verify"]["report"].value("contract", Json())
                                                           : Json();
    if (c.is_object()) contract = c.value("name", "");
  }
  Json reward = eval::rewardJson(record.value("task_id", ""), hash, status, typed_timings, profile_missing, scheme,
                                 task_json, contract);
  record["solution_hash"] = fin["solution_hash"];
  record["status"] = fin["status"];
  record["timings"] = timings;
  record["final"] = fin;
  record["reward"] = reward;
}

}  // namespace

std::string rolloutId(const std::string& task_id, int sample) {
  return task_id + "#" + std::to_string(sample);
}

int64_t estimateTokens(size_t chars, double tokens_per_char) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(chars) * tokens_per_char));
}

int64_t sampleSeed(int64_t run_seed, const std::string& task_id, int sample) {
  Sha256 h;
  h.update("kbrollout-seed-v1\n" + std::to_string(run_seed) + "\n" + task_id + "\n" + std::to_string(sample));
  std::string hex = h.hexDigest();
  uint64_t v = std::stoull(hex.substr(0, 16), nullptr, 16);
  return static_cast<int64_t>((v & 0x7fffffffffffffffULL) % 0x80000000ULL);
}

namespace {

// kbrollout's task family: a workspace with the reference, the agent's tools
// on it, a nudge for a reply without a tool call, and the final check of
// solution/ through the environment.
class WorkspaceEpisode : public Episode {
 public:
  WorkspaceEpisode(const RolloutSpec& spec, Workspace ws, Environment& env, const RolloutOptions& options)
      : spec_(spec), ws_(ws), env_(env), tools_(std::move(ws), env, options.tools), guide_(options.guide_text) {}

  std::vector<chat::Message> prompt() override {
    std::string guide = guide_.empty() ? readText(spec_.guide) : guide_;
    return {{.role = "system", .content = guide},
            {.role = "user", .content = taskMessage(spec_, readText(spec_.task_dir / "model.py"))}};
  }
  std::vector<chat::ToolSpec> tools() override { return tools_.specs(); }
  Observation call(const chat::ToolCall& c) override { return tools_.call(c); }
  std::optional<std::string> replyWithoutTools(const chat::Completion&) override {
    return "No tool was called. Use the tools to work on solution/; call finish when you are done.";
  }
  void judge(Json& record, const RolloutOptions& options) override {
    finalCheck(record, env_, ws_.solutionDir(), spec_.task_dir, options);
  }
  std::string solutionHash() override {
    try {
      return solution::loadSolution(ws_.solutionDir()).hash;
    } catch (const std::exception&) {
      return "";
    }
  }

 private:
  const RolloutSpec& spec_;
  Workspace ws_;
  Environment& env_;
  ToolBox tools_;
  std::string guide_;
};

}  // namespace

std::unique_ptr<Episode> makeWorkspaceEpisode(const RolloutSpec& spec, Workspace ws, Environment& env,
                                              const RolloutOptions& options) {
  return std::make_unique<WorkspaceEpisode>(spec, std::move(ws), env, options);
}

Json runRollout(const RolloutSpec& spec, chat::Policy& policy, Environment& env,
                const RolloutOptions& options) {
  if (!reward::parseSchemeName(options.reward_scheme))
    throw UsageError("unknown reward scheme \"" + options.reward_scheme + "\"");
  WorkspaceSetup setup{spec.task_dir, spec.guide, spec.interface_header};
  Workspace ws = Workspace::create(spec.workspace_dir, setup);
  WorkspaceEpisode episode(spec, ws, env, options);
  return runEpisode({.tool = "kbrollout", .task_id = spec.task_id, .sample = spec.sample,
                     .workspace = ws.root().string()},
                    episode, policy, options);
}

Json runEpisode(const EpisodeInfo& info, Episode& episode, chat::Policy& policy, const RolloutOptions& options_in) {
  if (!reward::parseSchemeName(options_in.reward_scheme))
    throw UsageError("unknown reward scheme \"" + options_in.reward_scheme + "\"");
  RolloutOptions options = options_in;
  if (options.sampling.seed && !options.same_seed)
    options.sampling.seed = sampleSeed(*options_in.sampling.seed, info.task_id, info.sample);
  options.sampling.sample = info.sample;
  const auto start = Clock::now();
  const std::string started_at = nowIso8601();
  const std::vector<chat::ToolSpec> specs = episode.tools();
  const RolloutLimits& lim = options.limits;

  std::vector<chat::Message> messages = episode.prompt();
  const size_t prompt_size = messages.size();
  std::vector<bool> elided(messages.size(), false);
  std::vector<int> turn_of(messages.size(), -1);  // which turn a message belongs to

  size_t tools_chars = 0;
  for (const chat::ToolSpec& t : specs) tools_chars += t.name.size() + t.description.size() + t.parameters.dump().size();

  Json turns = Json::array();
  std::string end_reason, end_message;
  double tokens_per_char = 0.25;  // refined from the server's usage
  int idle = 0;
  int turn = 0;

  for (;; ++turn) {
    if (chat::stopRequested()) throw Interrupted("stopped");
    if (turn >= lim.max_turns) {
      end_reason = "max_turns";
      end_message = "reached " + std::to_string(lim.max_turns) + " turns";
      break;
    }
    if (since(start) >= lim.wall_seconds) {
      end_reason = "wall_clock";
      end_message = "wall-clock budget of " + std::to_string(lim.wall_seconds) + " s spent";
      break;
    }

    // Context budget: elide the oldest tool observations until the prompt and
    // the response fit; never the system or task message, the model's own
    // messages, or the observations of the last keep_recent_turns turns.
    auto promptChars = [&] {
      size_t n = tools_chars;
      for (size_t i = 0; i < messages.size(); ++i)
        n += elided[i] ? 120 : messageChars(messages[i]);
      return n;
    };
    Json newly = Json::array();
    int64_t estimate = estimateTokens(promptChars(), tokens_per_char);
    for (size_t i = prompt_size;
         i < messages.size() && estimate + options.sampling.max_tokens > lim.context_tokens; ++i) {
      if (elided[i] || messages[i].role != "tool") continue;
      if (turn_of[i] >= turn - lim.keep_recent_turns) break;
      elided[i] = true;
      newly.push_back(i);
      estimate = estimateTokens(promptChars(), tokens_per_char);
    }
    if (estimate + options.sampling.max_tokens > lim.context_tokens) {
      end_reason = "context_budget";
      end_message = "the prompt (about " + std::to_string(estimate) + " tokens) and max_tokens " +
                    std::to_string(options.sampling.max_tokens) + " no longer fit in " +
                    std::to_string(lim.context_tokens) + " tokens";
      break;
    }
    std::vector<chat::Message> prompt;
    Json elided_list = Json::array();
    for (size_t i = 0; i < messages.size(); ++i) {
      if (!elided[i]) {
        prompt.push_back(messages[i]);
        continue;
      }
      elided_list.push_back(i);
      chat::Message m = messages[i];
      size_t n = m.content.size();
      m.content = "[elided to fit the context: " + std::to_string(n) +
                  " characters of tool output; run the tool again to see it]";
      prompt.push_back(std::move(m));
    }

    Json t;
    t["turn"] = turn;
    t["started_at"] = nowIso8601();
    t["prompt_messages"] = prompt.size();
    t["elided"] = elided_list;
    t["prompt_tokens_estimate"] = estimate;
    chat::Completion r;
    try {
      r = policy.complete(prompt, specs, options.sampling);
    } catch (const chat::PolicyError& e) {
      if (chat::stopRequested()) throw Interrupted("stopped");
      t["policy_error"] = e.what();
      turns.push_back(t);
      end_reason = "policy_error";
      end_message = e.what();
      break;
    }
    if (r.prompt_tokens > 0) {
      size_t chars = promptChars();
      if (chars > 0) tokens_per_char = static_cast<double>(r.prompt_tokens) / static_cast<double>(chars);
    }
    t["policy_seconds"] = r.seconds;
    t["attempts"] = r.attempts;
    t["retry_errors"] = r.retry_errors;
    Json resp;
    resp["content"] = r.content;
    if (!r.reasoning.empty()) resp["reasoning"] = r.reasoning;
    Json calls = Json::array();
    for (const chat::ToolCall& c : r.tool_calls)
      calls.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
    resp["tool_calls"] = calls;
    resp["finish_reason"] = r.finish_reason;
    resp["token_ids"] = r.token_ids.empty() ? Json(nullptr) : Json(r.token_ids);
    resp["logprobs"] = r.logprobs.empty() ? Json(nullptr) : Json(r.logprobs);
    resp["prompt_token_ids"] = r.prompt_token_ids.empty() ? Json(nullptr) : Json(r.prompt_token_ids);
    resp["usage"] = {{"prompt_tokens", nullIfNegative(r.prompt_tokens)},
                     {"completion_tokens", nullIfNegative(r.completion_tokens)}};
    resp["model"] = r.model;
    t["response"] = resp;

    messages.push_back(chat::assistantMessage(r));
    elided.push_back(false);
    turn_of.push_back(turn);

    Json observations = Json::array();
    bool finished = false;
    std::optional<std::string> nudge;
    if (r.tool_calls.empty()) nudge = episode.replyWithoutTools(r);
    if (r.tool_calls.empty() && !nudge) {
      finished = true;  // the reply is the episode's answer
    } else if (r.tool_calls.empty()) {
      ++idle;
      messages.push_back({.role = "user", .content = *nudge});
      elided.push_back(false);
      turn_of.push_back(turn);
      t["nudge"] = *nudge;
    } else {
      idle = 0;
      for (const chat::ToolCall& c : r.tool_calls) {
        Observation obs;
        if (finished) {
          obs.ok = false;
          obs.error_kind = "after_finish";
          obs.text = "error: not run: finish was called earlier in this turn";
        } else {
          obs = episode.call(c);
        }
        if (obs.finish) finished = true;
        observations.push_back({{"tool_call_id", c.id},
                                {"name", c.name},
                                {"ok", obs.ok},
                                {"error_kind", obs.error_kind.empty() ? Json(nullptr) : Json(obs.error_kind)},
                                {"text", obs.text},
                                {"truncated", obs.truncated},
                                {"seconds", obs.seconds},
                                {"detail", obs.detail}});
        messages.push_back({.role = "tool", .content = obs.text, .tool_call_id = c.id});
        elided.push_back(false);
        turn_of.push_back(turn);
      }
    }
    t["observations"] = observations;
    t["newly_elided"] = newly;
    t["seconds"] = since(start);
    turns.push_back(t);
    if (finished) {
      end_reason = "finish";
      break;
    }
    if (idle >= lim.max_idle_turns) {
      end_reason = "no_tool_call";
      end_message = std::to_string(idle) + " replies in a row without a tool call";
      break;
    }
  }

  Json rec;
  rec["format"] = "kb-trajectory";
  rec["format_version"] = kTrajectoryFormatVersion;
  rec["tool"] = info.tool;
  rec["version"] = KB_VERSION;
  rec["rollout_id"] = rolloutId(info.task_id, info.sample);
  rec["task_id"] = info.task_id;
  rec["sample"] = info.sample;
  rec["mode"] = options.mode;
  rec["policy"] = policy.describe();
  rec["sampling"] = {{"temperature", options.sampling.temperature},
                     {"top_p", options.sampling.top_p},
                     {"max_tokens", options.sampling.max_tokens},
                     {"seed", options.sampling.seed ? Json(*options.sampling.seed) : Json(nullptr)},
                     {"run_seed", options_in.sampling.seed ? Json(*options_in.sampling.seed) : Json(nullptr)},
                     {"same_seed", options.same_seed},
                     {"logprobs", options.sampling.logprobs}};
  rec["limits"] = {{"max_turns", lim.max_turns},
                   {"context_tokens", lim.context_tokens},
                   {"wall_seconds", lim.wall_seconds},
                   {"keep_recent_turns", lim.keep_recent_turns},
                   {"max_idle_turns", lim.max_idle_turns}};
  if (!info.workspace.empty()) rec["workspace"] = info.workspace;
  rec["started_at"] = started_at;
  rec["end"] = {{"reason", end_reason}, {"message", end_message}, {"turns", turns.size()},
                {"seconds", since(start)}};
  Json tool_list = Json::array();
  for (const chat::ToolSpec& s : specs)
    tool_list.push_back({{"name", s.name}, {"description", s.description}, {"parameters", s.parameters}});
  rec["tools"] = tool_list;
  rec["messages"] = chat::messagesToJson(messages);
  rec["turns"] = turns;
  if (end_reason == "policy_error") {
    // The policy could not answer (server unreachable, retries spent, an
    // HTTP error): the episode was cut by the infrastructure, not ended by
    // the model, so it is neither checked nor rewarded; resume redoes it.
    const std::string hash = episode.solutionHash();
    reward::Scheme scheme;
    scheme.kind = *reward::parseSchemeName(options.reward_scheme);
    rec["solution_hash"] = hash.empty() ? Json(nullptr) : Json(hash);
    rec["status"] = "infra_error";
    rec["timings"] = nullptr;
    rec["infra_error"] = {{"stage", "policy"}, {"message", end_message}};
    rec["final"] = {{"solution_hash", rec["solution_hash"]},
                    {"status", "infra_error"},
                    {"stages", Json::object()},
                    {"not_run", "the policy failed: " + end_message},
                    {"seconds", 0.0}};
    rec["reward"] = {{"scheme", reward::schemeToJson(scheme)},
                     {"value", nullptr},
                     {"excluded", "infra_error"},
                     {"correct", false}};
  } else {
    episode.judge(rec, options);
  }
  rec["finished_at"] = nowIso8601();
  rec["duration_s"] = since(start);
  return rec;
}

}  // namespace kb::agent
