#include "serve/engine_rewards.h"

#include <optional>
#include <random>
#include <algorithm>

#include "agent/environment.h"
#include "agent/tools.h"
#include "agent/workspace.h"
#include "core/file.h"
#include "llm/chat_template.h"
#include "reward/reward.h"
#include "serve/service.h"

namespace fs = std::filesystem;

namespace kb::serve {

namespace {

// The toolbox's stages are not offered here: only the response's file edits
// are applied, and the service evaluates the result.
class FilesOnlyEnvironment : public agent::Environment {
 public:
  agent::ShellResult bash(const fs::path&, const std::string&, double) override {
    agent::ShellResult r;
    r.message = "not run: a reward request applies file edits only";
    return r;
  }
  agent::StageResult compile(const fs::path&) override { return unavailable("compile"); }
  agent::StageResult verify(const fs::path&) override { return unavailable("verify"); }
  agent::StageResult profile(const fs::path&) override { return unavailable("profile"); }

 private:
  static agent::StageResult unavailable(const std::string& stage) {
    agent::StageResult r;
    r.stage = stage;
    r.available = false;
    r.text = "not run: a reward request applies file edits only";
    return r;
  }
};

constexpr size_t kMaxResponseEdits = 256;

std::string stripSolutionPrefix(std::string name) {
  if (name.rfind("solution/", 0) == 0) name = name.substr(9);
  return name;
}

// ```lang\n// file: NAME\n...``` blocks; an unnamed block is forward.cpp when
// it is the only unnamed one. Read by hand, in one pass: a response is up to
// the body limit, and std::regex recurses per character (a long block would
// overflow the stack of the thread serving it).
std::map<std::string, std::string> fencedFiles(const std::string& text, std::vector<std::string>& notes) {
  std::map<std::string, std::string> files;
  std::vector<std::string> unnamed;
  auto nameChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '/'; };
  size_t pos = 0;
  while ((pos = text.find("```", pos)) != std::string::npos) {
    size_t eol = text.find('\n', pos + 3);
    if (eol == std::string::npos) break;
    std::string lang = text.substr(pos + 3, eol - pos - 3);
    bool fence = std::all_of(lang.begin(), lang.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '_' || c == '-' || c == ' ' || c == '\t';
    });
    if (!fence) {
      pos += 3;
      continue;
    }
    size_t close = text.find("```", eol + 1);
    if (close == std::string::npos) break;
    std::string body = text.substr(eol + 1, close - eol - 1);
    pos = close + 3;
    // "// file: NAME" or "# file: NAME" on the first line names the block.
    size_t first_end = body.find('\n');
    std::string first = body.substr(0, first_end);
    size_t at = first.find("file:");
    std::string lead = at == std::string::npos ? "" : first.substr(0, at);
    lead.erase(std::remove_if(lead.begin(), lead.end(), [](char c) { return c == ' ' || c == '\t'; }), lead.end());
    if (at != std::string::npos && (lead == "//" || lead == "#")) {
      std::string name = first.substr(at + 5);
      name.erase(0, name.find_first_not_of(" \t"));
      name.erase(name.find_last_not_of(" \t\r") + 1);
      if (!name.empty() && std::all_of(name.begin(), name.end(), nameChar)) {
        files[stripSolutionPrefix(name)] = first_end == std::string::npos ? "" : body.substr(first_end + 1);
        continue;
      }
    }
    unnamed.push_back(body);
  }
  if (unnamed.size() == 1 && !files.count("forward.cpp")) files["forward.cpp"] = unnamed[0];
  else if (unnamed.size() > 1) notes.push_back(std::to_string(unnamed.size()) + " code blocks without a \"// file: NAME\" line were ignored");
  return files;
}

}  // namespace

ResponseSolution solutionFromResponse(const std::string& response, const fs::path& task_dir, const fs::path& guide,
                                      const fs::path& interface_header, const fs::path& scratch) {
  ResponseSolution out;
  chat::Message m = llm::parseAssistantMessage(response);
  std::vector<const chat::ToolCall*> edits;
  for (const chat::ToolCall& c : m.tool_calls) {
    if ((c.name == "write_file" || c.name == "edit_file") && edits.size() >= kMaxResponseEdits) {
      out.notes.push_back("more than " + std::to_string(kMaxResponseEdits) + " file edits: the rest ignored");
      break;
    }
    if (c.name == "write_file" || c.name == "edit_file") edits.push_back(&c);
    else out.notes.push_back("tool call \"" + c.name + "\" ignored (only write_file and edit_file are applied)");
  }
  if (edits.empty()) {
    out.files = fencedFiles(m.content.empty() ? response : m.content, out.notes);
    out.source = out.files.empty() ? "none" : "fenced_blocks";
    return out;
  }
  std::random_device rd;
  fs::path root = scratch / ("response-" + std::to_string(rd()) + std::to_string(rd()));
  FilesOnlyEnvironment env;
  agent::Workspace ws = agent::Workspace::create(root, {task_dir, guide, interface_header});
  agent::ToolBox box(ws, env);
  for (const chat::ToolCall* c : edits) {
    agent::Observation obs = box.call(*c);
    if (!obs.ok) out.notes.push_back(c->name + ": " + obs.text.substr(0, 300));
  }
  fs::path sol = ws.solutionDir();
  for (const auto& e : fs::recursive_directory_iterator(sol))
    if (e.is_regular_file() && !e.is_symlink())
      out.files[fs::relative(e.path(), sol).generic_string()] = readFile(e.path());
  std::error_code ec;
  fs::remove_all(root, ec);
  out.source = "tool_calls";
  return out;
}

namespace {

struct Scored {
  double value = 0;
  Json evaluation;
};

// One sample on its way: scored already where the response holds no usable
// solution, else the id of the evaluation submitted for it.
struct PendingSample {
  std::optional<Scored> scored;
  std::string id, task, source;
  std::vector<std::string> notes;
};

// The response's solution submitted to the service (queued, journaled).
// Cheap: a parse and a workspace of edits; the evaluation runs on the
// service's pools, so a batch's samples are submitted from one thread.
PendingSample submitResponse(Service& service, const std::string& response, const std::string& task_id,
                         const EngineRewardOptions& options) {
  auto task = service.tasks().find(task_id);
  if (!task) throw RequestError(404, "no task \"" + task_id + "\" in this server's store (the label must be a task id)");
  std::string scheme = options.scheme.empty() ? (task->cuda ? "milestone" : "correctness") : options.scheme;
  ResponseSolution sol = solutionFromResponse(response, task->dir, options.guide, options.interface_header,
                                              service.options().state_dir / "work");
  EvaluationRequest rq;
  rq.task = task_id;
  rq.device = task->cuda ? "cuda" : "cpu";
  rq.stages = {.static_check = true, .build = true, .verify = true, .profile = task->cuda && scheme != "correctness"};
  rq.reward_scheme = scheme;
  rq.files = sol.files;
  PendingSample out;
  out.task = task_id;
  out.source = sol.source;
  out.notes = sol.notes;
  bool usable = rq.files.count("forward.cpp") > 0;
  try {
    for (const auto& [name, content] : rq.files) checkFileName(name);
  } catch (const RequestError&) {
    usable = false;
  }
  if (!usable) {
    // No solution in the reply: the model's failure, scored as kbrollout
    // scores a rollout that leaves no loadable solution (compile_error).
    reward::Scheme sc;
    sc.kind = *reward::parseSchemeName(scheme);
    out.scored = Scored{sc.fail_value, {{"status", "compile_error"}, {"message", "the response holds no solution (no forward.cpp)"},
                                        {"source", sol.source}, {"notes", sol.notes}}};
    return out;
  }
  out.id = service.submit(rq).evaluation["id"].get<std::string>();
  return out;
}

// The sample's reward once its evaluation is done.
Scored awaitScored(Service& service, PendingSample&& sample, const EngineRewardOptions& options) {
  if (sample.scored) return std::move(*sample.scored);
  std::optional<Json> w = service.wait(sample.id, options.wait_seconds);
  if (!w) throw RetryLater(503, "evaluation " + sample.id + " of task " + sample.task + " was not kept to be scored", 10);
  Json ev = std::move(*w);
  if (ev["state"] != "done" || !ev["reward"].is_object() || !ev["reward"]["value"].is_number()) {
    std::string why = ev["state"] != "done" ? "did not finish in time" : ev.value("message", "");
    if (ev["reward"].is_object() && ev["reward"]["excluded"].is_string()) why += " (" + ev["reward"]["excluded"].get<std::string>() + ")";
    throw RetryLater(503, "evaluation " + sample.id + " of task " + sample.task + " was not scored: " + why, 10);
  }
  Scored s;
  s.value = ev["reward"]["value"].get<double>();
  ev["response_source"] = sample.source;
  ev["response_notes"] = sample.notes;
  s.evaluation = std::move(ev);
  return s;
}

std::string taskOfLabel(const Json& label) {
  if (label.is_string()) {
    std::string t = label.get<std::string>();
    Json j = parseUntrustedJson(t);  // a label may be a JSON object text
    if (j.is_object() && j.contains("task") && j["task"].is_string()) return j["task"].get<std::string>();
    return t;
  }
  if (label.is_object() && label.contains("task") && label["task"].is_string()) return label["task"].get<std::string>();
  throw RequestError(400, "a label must be a task id or {\"task\": ID}");
}

}  // namespace

Json openrlhfReward(Service& service, const Json& body, const EngineRewardOptions& options) {
  if (!body.is_object() || !body.contains("query") || !body["query"].is_array() || !body.contains("labels") ||
      !body["labels"].is_array())
    throw RequestError(400, "OpenRLHF's remote reward body: {\"query\": [...], \"prompts\": [...], \"labels\": [...]}");
  const Json& q = body["query"];
  const Json& labels = body["labels"];
  Json prompts = body.value("prompts", Json::array());
  if (labels.size() != q.size()) throw RequestError(400, "\"labels\" and \"query\" differ in length");
  Json rewards = Json::array(), correct = Json::array(), speedup = Json::array(), ids = Json::array();
  // Every sample is checked, then all are submitted from this thread (they
  // run side by side on the service's pools, bounded by its queue: a full one
  // answers 429), then awaited in order. No thread per sample.
  std::vector<std::pair<std::string, std::string>> samples;  // response, task
  for (size_t i = 0; i < q.size(); ++i) {
    if (!q[i].is_string()) throw RequestError(400, "query " + std::to_string(i) + " is not a string");
    std::string text = q[i].get<std::string>();
    if (i < prompts.size() && prompts[i].is_string()) {
      const std::string& p = prompts[i].get_ref<const std::string&>();
      if (text.rfind(p, 0) == 0) text = text.substr(p.size());  // the response follows its prompt
    }
    samples.emplace_back(std::move(text), taskOfLabel(labels[i]));
  }
  std::vector<PendingSample> submitted;
  for (const auto& [text, task] : samples) submitted.push_back(submitResponse(service, text, task, options));
  std::vector<Scored> scored;
  for (PendingSample& s : submitted) scored.push_back(awaitScored(service, std::move(s), options));
  for (const Scored& s : scored) {
    rewards.push_back(s.value);
    correct.push_back(s.evaluation.value("status", "") == "ok" ? 1.0 : 0.0);
    const Json& r = s.evaluation.contains("reward") ? s.evaluation["reward"] : Json(nullptr);
    speedup.push_back(r.is_object() && r.contains("speedup_eager") && r["speedup_eager"].is_number() ? r["speedup_eager"] : Json(0.0));
    ids.push_back(s.evaluation.value("id", ""));
  }
  return {{"rewards", rewards}, {"scores", rewards},
          {"extra_logs", {{"correct", correct}, {"speedup_eager", speedup}}},
          {"evaluations", ids}};
}

Json slimeReward(Service& service, const Json& body, const EngineRewardOptions& options) {
  if (!body.is_object() || !body.contains("response") || !body["response"].is_string() || !body.contains("label"))
    throw RequestError(400, "slime's remote_rm body: {\"prompt\": ..., \"response\": ..., \"label\": TASK_ID}");
  std::string task = taskOfLabel(body["label"]);
  return awaitScored(service, submitResponse(service, body["response"].get<std::string>(), task, options), options).value;
}

}  // namespace kb::serve
