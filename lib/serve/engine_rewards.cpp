#include "serve/engine_rewards.h"

#include <future>
#include <random>
#include <regex>

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

std::string stripSolutionPrefix(std::string name) {
  if (name.rfind("solution/", 0) == 0) name = name.substr(9);
  return name;
}

// ```lang\n// file: NAME\n...``` blocks; an unnamed block is forward.cpp when
// it is the only unnamed one.
std::map<std::string, std::string> fencedFiles(const std::string& text, std::vector<std::string>& notes) {
  std::map<std::string, std::string> files;
  static const std::regex block(R"(```[A-Za-z0-9+_-]*[ \t]*\n([\s\S]*?)```)");
  static const std::regex named(R"(^\s*(?://|#)\s*file:\s*([A-Za-z0-9._/-]+)\s*\n)");
  std::vector<std::string> unnamed;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), block); it != std::sregex_iterator(); ++it) {
    std::string body = (*it)[1].str();
    std::smatch m;
    if (std::regex_search(body, m, named)) files[stripSolutionPrefix(m[1].str())] = body.substr(m[0].length());
    else unnamed.push_back(body);
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

// One sample: the response's solution evaluated by the service, its reward.
Scored scoreResponse(Service& service, const std::string& response, const std::string& task_id,
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
  Scored s;
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
    s.value = sc.fail_value;
    s.evaluation = {{"status", "compile_error"}, {"message", "the response holds no solution (no forward.cpp)"},
                    {"source", sol.source}, {"notes", sol.notes}};
    return s;
  }
  Json ev = service.submit(rq).evaluation;
  ev = *service.wait(ev["id"].get<std::string>(), options.wait_seconds);
  if (ev["state"] != "done" || !ev["reward"].is_object() || !ev["reward"]["value"].is_number()) {
    std::string why = ev["state"] != "done" ? "did not finish in time" : ev.value("message", "");
    if (ev["reward"].is_object() && ev["reward"]["excluded"].is_string()) why += " (" + ev["reward"]["excluded"].get<std::string>() + ")";
    throw RetryLater(503, "evaluation " + ev["id"].get<std::string>() + " of task " + task_id + " was not scored: " + why, 10);
  }
  s.value = ev["reward"]["value"].get<double>();
  ev["response_source"] = sol.source;
  ev["response_notes"] = sol.notes;
  s.evaluation = ev;
  return s;
}

std::string taskOfLabel(const Json& label) {
  if (label.is_string()) {
    std::string t = label.get<std::string>();
    Json j = Json::parse(t, nullptr, false);  // a label may be a JSON object text
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
  // Submitted together so that they run side by side, then awaited in order.
  std::vector<std::future<Scored>> futures;
  for (size_t i = 0; i < q.size(); ++i) {
    if (!q[i].is_string()) throw RequestError(400, "query " + std::to_string(i) + " is not a string");
    std::string text = q[i].get<std::string>();
    if (i < prompts.size() && prompts[i].is_string()) {
      const std::string& p = prompts[i].get_ref<const std::string&>();
      if (text.rfind(p, 0) == 0) text = text.substr(p.size());  // the response follows its prompt
    }
    std::string task = taskOfLabel(labels[i]);
    futures.push_back(std::async(std::launch::async, [&service, text, task, &options] {
      return scoreResponse(service, text, task, options);
    }));
  }
  std::vector<Scored> scored;
  for (auto& f : futures) scored.push_back(f.get());  // rethrows a sample's RequestError
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
  return scoreResponse(service, body["response"].get<std::string>(), taskOfLabel(body["label"]), options).value;
}

}  // namespace kb::serve
