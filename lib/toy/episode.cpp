#include "toy/episode.h"

#include "agent/presampled_policy.h"
#include "agent/rollout.h"
#include "core/error.h"

namespace kb::toy {

std::vector<chat::Message> ToyEpisode::prompt() {
  std::vector<chat::Message> out;
  for (const Json& m : toyPromptMessages(task_)) out.push_back(chat::messageFromJson(m));
  return out;
}

agent::Observation ToyEpisode::call(const chat::ToolCall& c) {
  agent::Observation o;
  o.ok = false;
  o.error_kind = "unknown_tool";
  o.text = "error: the toy family has no tools (" + c.name + ")";
  return o;
}

std::optional<std::string> ToyEpisode::replyWithoutTools(const chat::Completion& reply) {
  answer_ = reply.content;
  return std::nullopt;  // the reply is the answer
}

void ToyEpisode::judge(Json& record, const agent::RolloutOptions&) {
  // The environment's check (compile, then verify if it compiled); the last
  // stage run decides.
  Json stages = Json::object();
  agent::StageResult last;
  try {
    const std::filesystem::path dir = env_.writeAnswer(task_, answer_);
    for (const agent::StageResult& s : env_.check(dir)) {
      stages[s.stage] = agent::stageToJson(s);
      last = s;
    }
    if (last.stage.empty()) throw Error("the toy environment ran no stage");
  } catch (const std::exception& e) {  // the environment failed, not the answer
    last = toyStage(last.stage.empty() ? "compile" : last.stage, Status::InfraError, "infra_error", e.what());
  }
  const bool correct = last.status == Status::Ok, excluded = last.status == Status::InfraError;
  const std::string status(statusName(last.status));
  const std::string message = last.report.value("message", "");
  record["status"] = status;
  record["final"] = {{"status", status}, {"check", last.report.value("reason", status)}};
  if (!message.empty()) record["final"]["message"] = message;
  record["final"]["stages"] = stages;
  record["reward"] = {{"scheme", {{"name", "toy"}}},
                      {"value", excluded ? Json(nullptr) : Json(correct ? 1.0 : -1.0)},
                      {"excluded", excluded ? Json("infra_error") : Json(nullptr)},
                      {"correct", correct}};
}

agent::RolloutOptions toyRolloutOptions(const chat::SamplingParams& sampling, const std::string& mode) {
  agent::RolloutOptions o;
  o.limits.max_turns = 1;  // one answer
  o.sampling = sampling;
  o.same_seed = true;      // the batch was sampled with this seed
  o.mode = mode;
  return o;
}

Json runToyEpisode(const ToyTask& task, int sample, const chat::Completion& reply, const Json& policy,
                   ToyEnvironment& env, const agent::RolloutOptions& options) {
  ToyEpisode episode(task, env);
  agent::PresampledPolicy presampled({reply}, policy);
  return agent::runEpisode({.tool = "kbtrain-toy", .task_id = task.id, .sample = sample, .workspace = ""}, episode,
                           presampled, options);
}

}  // namespace kb::toy
