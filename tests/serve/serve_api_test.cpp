// kbserve's API against a real server on loopback (docs/kbserve.md): the
// contract, the errors, idempotency, streaming, cancellation, backpressure,
// sessions, the engines' reward shapes, and the faults: a worker killed
// mid-evaluation, a client that leaves, kill -9 and a restart from the
// journal, SIGTERM's drain.
#include <dirent.h>

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "server_process.h"

using kb::Json;
using kbtest::evaluationBody;
using kbtest::parse;
using kbtest::ServerProcess;
using kbtest::solutionSource;
namespace fs = std::filesystem;

namespace {

const std::string kTask = "testdata/linear_relu";

fs::path freshState(const std::string& name) {
  fs::path p = fs::path(KB_TEST_WORK_DIR) / name;
  fs::remove_all(p);
  return p / "state";
}

Json submit(httplib::Client& c, const Json& body, const std::string& query = "?wait=true") {
  auto r = c.Post(("/v1/evaluations" + query).c_str(), body.dump(), "application/json");
  return parse(r);
}

// The server's children whose command name starts with `prefix`.
std::vector<pid_t> childrenNamed(pid_t parent, const std::string& prefix) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::string stat = kbtest::readText("/proc/" + std::to_string(pid) + "/stat");
    auto open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::string comm = stat.substr(open + 1, close - open - 1);
    int ppid = std::atoi(stat.substr(close + 4).c_str());
    if (ppid == parent && comm.rfind(prefix, 0) == 0) out.push_back(pid);
  }
  closedir(d);
  return out;
}

}  // namespace

TEST(ServeApi, HealthReadyTasksMetrics) {
  ServerProcess s(freshState("health"));
  auto c = s.client();
  auto h = c.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(c.Get("/readyz")->status, 200);
  Json tasks = parse(c.Get("/v1/tasks"));
  bool found = false;
  for (const Json& t : tasks["tasks"]) found |= t["id"] == kTask && t["content_hash"].get<std::string>().rfind("sha256:", 0) == 0;
  EXPECT_TRUE(found) << tasks.dump();
  Json one = parse(c.Get(("/v1/tasks/" + kTask).c_str()));
  EXPECT_EQ(one["task"]["id"], kTask);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("# TYPE kbserve_queue_depth gauge"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("kbserve_running 0"), std::string::npos);
  EXPECT_NE(m->body.find("kbserve_held_profiles 0"), std::string::npos);
  EXPECT_NE(m->get_header_value("Content-Type").find("text/plain"), std::string::npos);
}

TEST(ServeApi, VerdictsAreKbchecks) {
  ServerProcess s(freshState("verdicts"), {"--allow-no-static"});
  auto c = s.client();
  Json ok = submit(c, evaluationBody(kTask, solutionSource("ok_linear_relu"), {{"reward", "correctness"}}));
  EXPECT_EQ(ok["state"], "done");
  EXPECT_EQ(ok["status"], "ok") << ok.dump();
  EXPECT_EQ(ok["reward"]["value"], 1.0);
  EXPECT_EQ(ok["report"]["stages"]["verify"]["status"], "ok");
  EXPECT_EQ(ok["report"]["tool"], "kbcheck");
  Json wrong = submit(c, evaluationBody(kTask, solutionSource("wrong_result"), {{"reward", "correctness"}}));
  EXPECT_EQ(wrong["status"], "incorrect") << wrong.dump();
  EXPECT_EQ(wrong["reward"]["value"], -1.0);
  Json fork = submit(c, evaluationBody(kTask, solutionSource("fork_attempt")));
  EXPECT_EQ(fork["status"], "static_violation") << fork.dump();
  // Without the static stage (this server allows it), the sandbox catches it at run time.
  Json fork_run = submit(c, evaluationBody(kTask, solutionSource("fork_attempt"), {{"stages", {"build", "verify"}}}));
  EXPECT_EQ(fork_run["status"], "hack_detected") << fork_run.dump();
  EXPECT_EQ(fork_run["solution_hash"], fork["report"]["solution_hash"]);
  Json broken = submit(c, evaluationBody(kTask, "this is not C++ {"));
  EXPECT_EQ(broken["status"], "compile_error") << broken.dump();
  // GET answers the same evaluation later.
  Json again = parse(c.Get(("/v1/evaluations/" + ok["id"].get<std::string>()).c_str()));
  EXPECT_EQ(again["status"], "ok");
  EXPECT_EQ(again["id"], ok["id"]);
}

TEST(ServeApi, BadInputIsRefusedBeforeAnyWork) {
  ServerProcess s(freshState("bad-input"), {"--max-request-mib", "2"});
  auto c = s.client();
  auto code = [&](const std::string& body) {
    auto r = c.Post("/v1/evaluations", body, "application/json");
    EXPECT_TRUE(r);
    EXPECT_FALSE(Json::parse(r->body).value("error", "").empty()) << r->body;
    return r->status;
  };
  EXPECT_EQ(code("{not json"), 400);
  EXPECT_EQ(code(R"({"files": {"forward.cpp": "x"}})"), 400);
  EXPECT_EQ(code(R"({"task": "no/such/task", "files": {"forward.cpp": "x"}})"), 404);
  EXPECT_EQ(code(Json({{"task", kTask}, {"files", {{"../escape.cpp", "x"}, {"forward.cpp", "x"}}}}).dump()), 422);
  EXPECT_EQ(code(Json({{"task", kTask}, {"files", {{"/abs.cpp", "x"}, {"forward.cpp", "x"}}}}).dump()), 422);
  EXPECT_EQ(code(Json({{"task", kTask}, {"files", {{"kernels/a.cu", "x"}}}}).dump()), 422);  // no forward.cpp
  EXPECT_EQ(code(Json({{"task", kTask}, {"device", "tpu"}, {"files", {{"forward.cpp", "x"}}}}).dump()), 422);
  EXPECT_EQ(code(Json({{"task", kTask}, {"device", "cuda"}, {"files", {{"forward.cpp", "x"}}}}).dump()), 422);  // no GPU here
  EXPECT_EQ(code(Json({{"task", kTask}, {"surprise", 1}, {"files", {{"forward.cpp", "x"}}}}).dump()), 400);
  EXPECT_EQ(code(Json({{"task", kTask}, {"files", {{"forward.cpp", std::string(1100000, 'a')}}}}).dump()), 413);
  EXPECT_EQ(code(Json({{"task", kTask}, {"reward", "best"}, {"files", {{"forward.cpp", "x"}}}}).dump()), 422);
  // Over the body limit: httplib's own 413.
  auto big = c.Post("/v1/evaluations", std::string(3 << 20, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(c.Get("/v1/evaluations/ev-0000000000000000")->status, 404);
  EXPECT_EQ(c.Get("/v2/nothing")->status, 404);
}

TEST(ServeApi, TokenIsRequiredWhenSet) {
  fs::path state = freshState("token");
  fs::create_directories(state.parent_path());
  std::ofstream(state.parent_path() / "token") << "0123456789abcdef-secret\n";
  ServerProcess s(state, {"--token-file", (state.parent_path() / "token").string()});
  auto c = s.client();
  EXPECT_EQ(c.Get("/healthz")->status, 200);  // probes stay open
  EXPECT_EQ(c.Get("/v1/tasks")->status, 401);
  c.set_bearer_token_auth("wrong-token-wrong-token");
  EXPECT_EQ(c.Get("/v1/tasks")->status, 401);
  c.set_bearer_token_auth("0123456789abcdef-secret");
  EXPECT_EQ(c.Get("/v1/tasks")->status, 200);
}

TEST(ServeApi, NonLoopbackWithoutTokenIsRefusedAtStart) {
  const char* bin = std::getenv("KBSERVE_BIN");
  ASSERT_NE(bin, nullptr);
  std::string cmd = std::string(bin) + " --listen 0.0.0.0:0 --gpus none --tasks " + kbtest::sourceRoot() +
                    "/testdata/tasks --state-dir " + freshState("open").string() + " 2>/dev/null";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
}

TEST(ServeApi, IdempotencyKeyGivesTheSameEvaluation) {
  ServerProcess s(freshState("idempotency"));
  auto c = s.client();
  Json body = evaluationBody(kTask, solutionSource("ok_linear_relu"), {{"idempotency_key", "run7-sample3"}});
  auto first = c.Post("/v1/evaluations", body.dump(), "application/json");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 202);
  auto second = c.Post("/v1/evaluations?wait=true", body.dump(), "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->get_header_value("Idempotent-Replayed"), "true");
  EXPECT_EQ(Json::parse(first->body)["id"], Json::parse(second->body)["id"]);
  Json other = evaluationBody(kTask, solutionSource("wrong_result"), {{"idempotency_key", "run7-sample3"}});
  auto conflict = c.Post("/v1/evaluations", other.dump(), "application/json");
  ASSERT_TRUE(conflict);
  EXPECT_EQ(conflict->status, 409);
}

TEST(ServeApi, EventsStreamTheStages) {
  ServerProcess s(freshState("events"));
  auto c = s.client();
  Json ev = submit(c, evaluationBody(kTask, solutionSource("ok_linear_relu")), "");
  std::string id = ev["id"].get<std::string>();
  std::string text;
  auto r = c.Get(("/v1/evaluations/" + id + "/events").c_str(), [&](const char* data, size_t n) {
    text.append(data, n);
    return true;
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_NE(text.find("event: state\ndata: {\"state\":\"queued\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("\"stage\":\"build\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"stage\":\"verify\""), std::string::npos) << text;
  EXPECT_NE(text.find("event: done"), std::string::npos) << text;
  // Resuming after an event id gives only what followed.
  std::string rest;
  httplib::Headers h = {{"Last-Event-ID", "1"}};
  c.Get(("/v1/evaluations/" + id + "/events").c_str(), h, [&](const char* data, size_t n) {
    rest.append(data, n);
    return true;
  });
  EXPECT_EQ(rest.find("\"queued\""), std::string::npos) << rest;
  EXPECT_NE(rest.find("event: done"), std::string::npos) << rest;
}

TEST(ServeApi, CancelQueueFullAndDeadline) {
  ServerProcess s(freshState("cancel"), {"--cpu-slots", "1", "--queue-limit", "3", "--verify-timeout", "4"});
  auto c = s.client();
  // One slot, held by a solution that loops until the worker's time limit.
  Json busy = submit(c, evaluationBody(kTask, solutionSource("infinite_loop")), "");
  Json queued = submit(c, evaluationBody(kTask, solutionSource("ok_linear_relu")), "");
  Json late = submit(c, evaluationBody(kTask, solutionSource("ok_linear_relu"), {{"deadline_s", 0.5}}), "");
  auto full = c.Post("/v1/evaluations", evaluationBody(kTask, solutionSource("ok_linear_relu")).dump(), "application/json");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 429) << full->body;
  EXPECT_FALSE(full->get_header_value("Retry-After").empty());
  EXPECT_EQ(c.Get("/readyz")->status, 503);
  Json cancelled = parse(c.Post(("/v1/evaluations/" + queued["id"].get<std::string>() + "/cancel").c_str(), "", "application/json"));
  EXPECT_EQ(cancelled["state"], "cancelled") << cancelled.dump();
  EXPECT_TRUE(cancelled["status"].is_null());
  Json b = parse(c.Get(("/v1/evaluations/" + busy["id"].get<std::string>() + "?wait=true").c_str()));
  EXPECT_EQ(b["status"], "timeout") << b.dump();
  Json l = parse(c.Get(("/v1/evaluations/" + late["id"].get<std::string>() + "?wait=true").c_str()));
  EXPECT_EQ(l["status"], "infra_error") << l.dump();  // never scored
  EXPECT_NE(l["message"].get<std::string>().find("deadline"), std::string::npos);
  auto m = c.Get("/metrics");
  EXPECT_NE(m->body.find("kbserve_rejected_total{reason=\"queue_full\"} 1"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("kbserve_evaluations_total{status=\"cancelled\"} 1"), std::string::npos) << m->body;
}

TEST(ServeApi, WorkerKilledMidEvaluationDoesNotTakeTheServerDown) {
  ServerProcess s(freshState("worker-killed"), {"--verify-timeout", "30"});
  auto c = s.client();
  Json ev = submit(c, evaluationBody(kTask, solutionSource("infinite_loop")), "");
  // The candidate's worker: the reference worker (same name) may start first.
  auto candidates = [&] {
    std::vector<pid_t> out;
    for (pid_t w : childrenNamed(s.pid(), "kbcheck-worker")) {
      std::string argv = kbtest::readText("/proc/" + std::to_string(w) + "/cmdline");
      if (argv.find(std::string("\0candidate\0", 11)) != std::string::npos) out.push_back(w);
    }
    return out;
  };
  std::vector<pid_t> workers;
  for (int i = 0; i < 200 && workers.empty(); ++i) {
    workers = candidates();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(workers.empty()) << "no candidate worker process appeared";
  for (pid_t w : workers) ::kill(w, SIGKILL);
  Json done = parse(c.Get(("/v1/evaluations/" + ev["id"].get<std::string>() + "?wait=true").c_str()));
  EXPECT_EQ(done["state"], "done") << done.dump();
  EXPECT_TRUE(done["status"] == "crash" || done["status"] == "infra_error") << done.dump();
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  Json next = submit(c, evaluationBody(kTask, solutionSource("ok_linear_relu")));
  EXPECT_EQ(next["status"], "ok") << next.dump();
}

TEST(ServeApi, AClientThatLeavesLosesNothing) {
  ServerProcess s(freshState("client-leaves"));
  auto impatient = s.client(0.05);
  auto r = impatient.Post("/v1/evaluations?wait=true",
                          evaluationBody(kTask, solutionSource("ok_linear_relu"), {{"idempotency_key", "leaver"}}).dump(),
                          "application/json");
  EXPECT_FALSE(r);  // it hung up before the answer
  auto c = s.client();
  // The same key finds the evaluation it started.
  Json again = submit(c, evaluationBody(kTask, solutionSource("ok_linear_relu"), {{"idempotency_key", "leaver"}}));
  EXPECT_EQ(again["status"], "ok") << again.dump();
  auto m = c.Get("/metrics");
  EXPECT_NE(m->body.find("kbserve_evaluations_accepted_total 1\n"), std::string::npos) << m->body;
}

TEST(ServeApi, KillNineAndRestartAnswersEveryAcceptedEvaluation) {
  fs::path state = freshState("kill9");
  std::vector<std::string> ids;
  {
    ServerProcess s(state, {"--cpu-slots", "1", "--verify-timeout", "20"});
    auto c = s.client();
    ids.push_back(submit(c, evaluationBody(kTask, solutionSource("infinite_loop")), "")["id"]);
    for (int i = 0; i < 4; ++i)
      ids.push_back(submit(c, evaluationBody(kTask, solutionSource(i % 2 ? "wrong_result" : "ok_linear_relu")), "")["id"]);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    s.kill9();
  }
  ServerProcess s(state, {"--cpu-slots", "2", "--verify-timeout", "3"});
  auto c = s.client();
  std::set<std::string> statuses;
  for (const std::string& id : ids) {
    Json ev = parse(c.Get(("/v1/evaluations/" + id + "?wait=true").c_str()));
    EXPECT_EQ(ev["state"], "done") << id << " " << ev.dump();
    ASSERT_TRUE(ev["status"].is_string()) << ev.dump();
    statuses.insert(ev["status"].get<std::string>());
  }
  EXPECT_TRUE(statuses.count("ok"));
  EXPECT_TRUE(statuses.count("incorrect"));
  auto m = c.Get("/metrics");
  EXPECT_NE(m->body.find("kbserve_journal_recovered_total{outcome=\"requeued\"} 5"), std::string::npos) << m->body;
}

TEST(ServeApi, SigtermDrainsTheAcceptedWork) {
  fs::path state = freshState("drain");
  std::string id;
  {
    ServerProcess s(state, {"--cpu-slots", "1"});
    auto c = s.client();
    id = submit(c, evaluationBody(kTask, solutionSource("ok_linear_relu")), "")["id"];
    EXPECT_EQ(s.terminate(60), 143) << s.log();
    EXPECT_NE(s.log().find("drained"), std::string::npos) << s.log();
  }
  ServerProcess s(state);
  auto c = s.client();
  Json ev = parse(c.Get(("/v1/evaluations/" + id).c_str()));
  EXPECT_EQ(ev["status"], "ok") << ev.dump();  // finished before the exit, read back from the journal
}

// Nobody else's data: a candidate whose worker looks for the journal (every
// client's files) two directories up answers wrongly when it can open it.
// With the state hidden it cannot (ok); the control, with hiding off, shows
// the probe would have found it (incorrect).
TEST(ServeApi, CandidatesCannotReadTheServersState) {
  std::string probe = kbtest::readText(fs::path(kbtest::sourceRoot()) / "testdata/serve/read_other_clients/forward.cpp");
  {
    ServerProcess s(freshState("hidden"), {"--allow-no-static"});
    auto c = s.client();
    Json ev = submit(c, evaluationBody(kTask, probe, {{"stages", {"build", "verify"}}}));
    EXPECT_EQ(ev["status"], "ok") << ev.dump();
    std::string confinement = ev["report"]["stages"]["verify"]["report"]["worker"].value("confinement", "");
    EXPECT_NE(confinement.find("landlock-hidden"), std::string::npos) << ev["report"]["stages"]["verify"].dump();
  }
  ServerProcess open(freshState("not-hidden"), {"--no-hide-state", "--allow-no-static"});
  auto c = open.client();
  Json ev = submit(c, evaluationBody(kTask, probe, {{"stages", {"build", "verify"}}}));
  EXPECT_EQ(ev["status"], "incorrect") << ev.dump();
}

// A client cannot leave the static stage out unless the server allows it
// (--allow-no-static): the compilers read what the sources name (an
// `.incbin` of the journal) with the server's own file access.
TEST(ServeApi, StaticCannotBeLeftOut) {
  ServerProcess s(freshState("static-kept"));
  auto c = s.client();
  Json ev = submit(c, evaluationBody(kTask, solutionSource("fork_attempt"), {{"stages", {"build", "verify"}}}));
  EXPECT_EQ(ev["status"], "static_violation") << ev.dump();
  EXPECT_TRUE(ev["report"]["stages"].contains("static")) << ev.dump();
}

TEST(ServeApi, BatchSubmitsTogether) {
  ServerProcess s(freshState("batch"));
  auto c = s.client();
  Json body = {{"evaluations", {evaluationBody(kTask, solutionSource("ok_linear_relu")),
                                evaluationBody(kTask, solutionSource("off_by_one"))}}};
  Json out = parse(c.Post("/v1/batches?wait=true", body.dump(), "application/json"));
  ASSERT_EQ(out["evaluations"].size(), 2u) << out.dump();
  EXPECT_EQ(out["evaluations"][0]["status"], "ok");
  EXPECT_EQ(out["evaluations"][1]["status"], "incorrect");
  Json bad = {{"evaluations", {evaluationBody(kTask, solutionSource("ok_linear_relu")), Json::object()}}};
  EXPECT_EQ(c.Post("/v1/batches", bad.dump(), "application/json")->status, 400);  // refused whole
}

TEST(ServeApi, SessionIsAnAgentEpisode) {
  ServerProcess s(freshState("session"));
  auto c = s.client();
  Json reset = parse(c.Post("/v1/sessions", Json({{"task", kTask}}).dump(), "application/json"));
  std::string sid = reset["session_id"];
  EXPECT_NE(reset["observation"]["prompt"].get<std::string>().find("class Model"), std::string::npos);
  std::set<std::string> tools;
  for (const Json& t : reset["observation"]["tools"]) tools.insert(t["function"]["name"].get<std::string>());
  EXPECT_TRUE(tools.count("write_file") && tools.count("verify") && tools.count("finish"));
  auto step = [&](const Json& call) {
    return parse(c.Post(("/v1/sessions/" + sid + "/step").c_str(), Json({{"tool_call", call}}).dump(), "application/json"));
  };
  Json w = step({{"name", "write_file"}, {"arguments", {{"path", "solution/forward.cpp"}, {"content", solutionSource("ok_linear_relu")}}}});
  EXPECT_TRUE(w["observation"]["ok"].get<bool>()) << w.dump();
  EXPECT_FALSE(w["done"].get<bool>());
  Json refused = step({{"name", "read_file"}, {"arguments", {{"path", "../../etc/passwd"}}}});
  EXPECT_FALSE(refused["observation"]["ok"].get<bool>());
  Json v = step({{"name", "verify"}, {"arguments", Json::object()}});
  EXPECT_NE(v["observation"]["text"].get<std::string>().find("ok"), std::string::npos) << v.dump();
  Json f = step({{"name", "finish"}, {"arguments", Json::object()}});
  EXPECT_TRUE(f["done"].get<bool>());
  EXPECT_EQ(f["reward"], 1.0) << f.dump();  // correctness on a CPU task
  EXPECT_EQ(f["info"]["status"], "ok");
  EXPECT_EQ(c.Post(("/v1/sessions/" + sid + "/step").c_str(), Json({{"tool_call", {{"name", "finish"}}}}).dump(), "application/json")->status, 409);
  EXPECT_EQ(c.Delete(("/v1/sessions/" + sid).c_str())->status, 200);
  EXPECT_EQ(c.Delete(("/v1/sessions/" + sid).c_str())->status, 404);
}

TEST(ServeApi, EngineRewardShapes) {
  ServerProcess s(freshState("engine-rewards"));
  auto c = s.client();
  std::string good = "Done.\n<tool_call>\n" +
                     Json({{"name", "write_file"}, {"arguments", {{"path", "solution/forward.cpp"}, {"content", solutionSource("ok_linear_relu")}}}}).dump() +
                     "\n</tool_call>";
  std::string fenced = "```cpp\n// file: forward.cpp\n" + solutionSource("wrong_result") + "```\n";
  Json body = {{"query", {"PROMPT" + good, "PROMPT" + fenced, "PROMPT nothing"}},
               {"prompts", {"PROMPT", "PROMPT", "PROMPT"}},
               {"labels", {kTask, kTask, kTask}}};
  Json out = parse(c.Post("/v1/reward/openrlhf", body.dump(), "application/json"));
  ASSERT_EQ(out["rewards"].size(), 3u) << out.dump();
  EXPECT_EQ(out["rewards"][0], 1.0);
  EXPECT_EQ(out["rewards"][1], -1.0);
  EXPECT_EQ(out["rewards"][2], -1.0);
  EXPECT_EQ(out["scores"], out["rewards"]);
  EXPECT_EQ(out["extra_logs"]["correct"][0], 1.0);
  auto slime = c.Post("/v1/reward/slime", Json({{"prompt", "p"}, {"response", good}, {"label", kTask}}).dump(), "application/json");
  ASSERT_TRUE(slime);
  EXPECT_EQ(Json::parse(slime->body), 1.0) << slime->body;
  EXPECT_EQ(c.Post("/v1/reward/slime", Json({{"response", good}, {"label", "nope"}}).dump(), "application/json")->status, 404);
  // A long response (a 600 KB block) is read in one pass: the server
  // answers and stays up (std::regex here once overflowed the stack).
  std::string huge = "```cpp\n// file: forward.cpp\n" + std::string(600000, 'x') + "\n```\n";
  auto big = c.Post("/v1/reward/slime", Json({{"prompt", "p"}, {"response", huge}, {"label", kTask}}).dump(), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(Json::parse(big->body), -1.0) << big->body;  // not C++: compile_error
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  // curl -d without a Content-Type: cpp-httplib's 8 KiB cap on form bodies, said plainly.
  auto form = c.Post("/v1/evaluations", std::string(20000, 'x'), "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 413);
  EXPECT_NE(form->body.find("application/json"), std::string::npos) << form->body;
}
