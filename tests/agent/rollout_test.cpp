// End-to-end rollouts: a real HTTP server (scripted_server.h) replays model
// turns; the rollout runs with the real environment (Clang static check and
// host build as compile, lib/verify against the task's reference as verify,
// the jailed bash) on a real CPU task bundle (testdata/tasks/linear_relu),
// and the trajectory is checked field by field.
#include <unistd.h>

#include <fstream>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "agent/client.h"
#include "agent/replay_policy.h"
#include "agent/rollout.h"
#include "agent/runner.h"
#include "agent/trajectory.h"
#include "scripted_server.h"

namespace fs = std::filesystem;
using namespace kb;
using namespace kb::agent;
using kb::test::ScriptedServer;

namespace {

const fs::path kSource = KB_SOURCE_ROOT_FOR_TESTS;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

fs::path tempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kb-agent-e2e-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

Json call(const std::string& name, Json args) {
  return {{"content", "next: " + name}, {"tool_calls", Json::array({{{"name", name}, {"arguments", args}}})}};
}

const fs::path kTask = kSource / "testdata/tasks/linear_relu";
const std::string kTaskId = "testdata/linear_relu";
const std::string kGood = slurp(kSource / "testdata/solutions-cpu/ok_linear_relu/forward.cpp");
const std::string kWrong = slurp(kSource / "testdata/solutions-cpu/wrong_result/forward.cpp");

struct Fixture {
  explicit Fixture(Json script, WorkspaceLimits limits = {}) : server(std::move(script)) {
    ClientConfig c;
    c.base_url = server.baseUrl();
    c.model = "scripted";
    c.timeout_seconds = 2.0;
    c.max_attempts = 5;
    c.backoff_initial_seconds = 0.01;
    c.backoff_max_seconds = 0.05;
    client = std::make_unique<OpenAIClient>(c);
    EnvironmentOptions eo;
    eo.task_dir = kTask;
    eo.task_id = kTaskId;
    eo.workspace_limits = limits;
    env = makeLibraryEnvironment(eo);
    options.limits.max_turns = 20;
    options.sampling.max_tokens = 1024;
  }
  Json run(const std::string& name) {
    RolloutSpec spec{kTaskId, kTask, 0,
                     tempDir(name) / "ws", kSource / "docs/agent-guide.md",
                     kSource / "include/kb/solution.h"};
    return runRollout(spec, *client, *env, options);
  }
  ScriptedServer server;
  std::unique_ptr<OpenAIClient> client;
  std::unique_ptr<Environment> env;
  RolloutOptions options;
};

const Json& obs(const Json& t, int turn, int i = 0) { return t["turns"][turn]["observations"][i]; }

// A copy of the linear_relu bundle under `dir`/`name`, with task.json's id
// set to `name`: a real task (verify runs against its reference), so that the
// final check ends in the solution's own status, not infra_error.
void copyTask(const fs::path& dir, const std::string& name) {
  fs::remove_all(dir / name);
  fs::create_directories(dir);
  fs::copy(kTask, dir / name, fs::copy_options::recursive);
  Json j = readJsonFile(dir / name / "task.json");
  j["id"] = name;
  std::ofstream(dir / name / "task.json", std::ios::trunc) << j.dump(2) << "\n";
}

}  // namespace

TEST(Rollout, CorrectSolutionAfterACompileError) {
  std::string broken = kGood;
  broken.replace(broken.find("Y[i * n + j] = "), 15, "Y[i * n + j] = = ");
  Fixture f(Json::array({call("read_file", {{"path", "model.py"}}),
                         call("write_file", {{"path", "solution/forward.cpp"}, {"content", broken}}),
                         call("compile", Json::object()),
                         call("edit_file", {{"path", "solution/forward.cpp"}, {"old_string", "= = "}, {"new_string", "= "}}),
                         call("compile", Json::object()),
                         call("verify", Json::object()),
                         call("profile", Json::object()),
                         call("finish", {{"summary", "host ReLU"}})}));
  Json t = f.run("good");
  // Identity and end.
  EXPECT_EQ(t["format"], "kb-trajectory");
  EXPECT_EQ(t["format_version"], 1);
  EXPECT_EQ(t["tool"], "kbrollout");
  EXPECT_EQ(t["rollout_id"], "testdata/linear_relu#0");
  EXPECT_EQ(t["task_id"], "testdata/linear_relu");
  EXPECT_EQ(t["mode"], "train");
  EXPECT_EQ(t["policy"]["kind"], "openai");
  EXPECT_EQ(t["policy"]["model"], "scripted");
  EXPECT_EQ(t["end"]["reason"], "finish");
  EXPECT_EQ(t["end"]["turns"], 8);
  ASSERT_EQ(t["turns"].size(), 8u);
  // Messages: system (the guide), task, then assistant + tool per turn.
  ASSERT_EQ(t["messages"].size(), 2u + 8 * 2);
  EXPECT_EQ(t["messages"][0]["role"], "system");
  EXPECT_EQ(t["messages"][0]["content"], slurp(kSource / "docs/agent-guide.md"));
  EXPECT_NE(t["messages"][1]["content"].get<std::string>().find("torch.relu(self.linear(x))"), std::string::npos);
  EXPECT_EQ(t["messages"][2]["role"], "assistant");
  EXPECT_EQ(t["messages"][3]["role"], "tool");
  EXPECT_EQ(t["messages"][3]["tool_call_id"], "call_0_0");
  // Turn 0: read_file, with token ids and log-probs from the server.
  const Json& t0 = t["turns"][0];
  EXPECT_EQ(t0["turn"], 0);
  EXPECT_EQ(t0["attempts"], 1);
  EXPECT_EQ(t0["prompt_messages"], 2);
  EXPECT_EQ(t0["response"]["tool_calls"][0]["name"], "read_file");
  std::vector<int64_t> ids = ScriptedServer::tokenIds(call("read_file", {{"path", "model.py"}}));
  EXPECT_EQ(t0["response"]["token_ids"].get<std::vector<int64_t>>(), ids);
  EXPECT_EQ(t0["response"]["logprobs"].size(), ids.size());
  EXPECT_TRUE(t0["response"]["usage"]["prompt_tokens"].is_number());
  EXPECT_TRUE(obs(t, 0)["ok"]);
  EXPECT_NE(obs(t, 0)["text"].get<std::string>().find("torch.relu"), std::string::npos);
  EXPECT_TRUE(obs(t, 1)["ok"]);
  // The compile error, then ok.
  EXPECT_EQ(obs(t, 2)["name"], "compile");
  EXPECT_EQ(obs(t, 2)["detail"]["status"], "compile_error");
  EXPECT_NE(obs(t, 2)["text"].get<std::string>().find("compile_error"), std::string::npos);
  EXPECT_EQ(obs(t, 3)["detail"]["replacements"], 1);
  // Clang's parse error is a parser-limit note; the build says compile_error.
  EXPECT_EQ(obs(t, 2)["detail"]["report"]["static"]["status"], "ok");
  EXPECT_EQ(obs(t, 2)["detail"]["report"]["build"]["status"], "compile_error");
  EXPECT_EQ(obs(t, 3)["detail"]["replacements"], 1);
  // compile: the static check, then the host build.
  EXPECT_EQ(obs(t, 4)["detail"]["status"], "ok") << obs(t, 4)["text"];
  EXPECT_NE(obs(t, 4)["text"].get<std::string>().find("built for the host CPU"), std::string::npos)
      << obs(t, 4)["text"];
  EXPECT_EQ(obs(t, 4)["detail"]["report"]["static"]["status"], "ok");
  EXPECT_EQ(obs(t, 4)["detail"]["report"]["build"]["status"], "ok");
  EXPECT_EQ(obs(t, 4)["detail"]["report"]["build"]["target"], "cpu");
  // verify: the built solution against the reference, on the CPU.
  EXPECT_EQ(obs(t, 5)["name"], "verify");
  EXPECT_TRUE(obs(t, 5)["ok"]) << obs(t, 5)["text"];
  EXPECT_EQ(obs(t, 5)["detail"]["status"], "ok") << obs(t, 5)["text"];
  EXPECT_EQ(obs(t, 5)["text"].get<std::string>().rfind("ok: outputs match the reference", 0), 0u)
      << obs(t, 5)["text"];
  EXPECT_NE(obs(t, 5)["text"].get<std::string>().find("max abs error"), std::string::npos);
  EXPECT_EQ(obs(t, 5)["detail"]["report"]["verify"]["status"], "ok");
  EXPECT_EQ(obs(t, 5)["detail"]["report"]["verify"]["device"], "cpu");
  EXPECT_GE(obs(t, 5)["detail"]["report"]["verify"]["seeds"].size(), 1u);
  // profile says honestly that it is not there yet.
  EXPECT_EQ(obs(t, 6)["error_kind"], "not_available");
  EXPECT_NE(obs(t, 6)["text"].get<std::string>().find("kbprof"), std::string::npos);
  EXPECT_TRUE(obs(t, 7)["detail"]["summary"] == "host ReLU");
  // Final check: compile, verify ok; no profiler, so status ok and no reward made up.
  EXPECT_EQ(t["final"]["stages"]["compile"]["status"], "ok");
  EXPECT_EQ(t["final"]["stages"]["verify"]["status"], "ok");
  EXPECT_EQ(t["final"]["stages"]["profile"]["available"], false);
  EXPECT_EQ(t["final"]["status"], "ok");
  EXPECT_EQ(t["status"], "ok");
  EXPECT_TRUE(t["timings"].is_null());
  EXPECT_EQ(t["solution_hash"].get<std::string>().rfind("sha256:", 0), 0u);
  EXPECT_EQ(t["final"]["solution_hash"], t["solution_hash"]);
  EXPECT_TRUE(t["reward"]["value"].is_null());
  EXPECT_EQ(t["reward"]["excluded"], "profile_not_available");
  EXPECT_EQ(t["reward"]["correct"], true);
  EXPECT_EQ(t["reward"]["scheme"]["name"], "milestone");
  // The workspace holds the fixed solution.
  EXPECT_EQ(slurp(fs::path(t["workspace"].get<std::string>()) / "solution/forward.cpp"), kGood);
}

TEST(Rollout, StaticViolationScoresMinusOne) {
  std::string bad = "#include <kb/solution.h>\n#include <cstdlib>\nKB_FORWARD(ctx) { std::system(\"true\"); }\n";
  Fixture f(Json::array({call("write_file", {{"path", "solution/forward.cpp"}, {"content", bad}}),
                         call("finish", Json::object())}));
  Json t = f.run("violation");
  EXPECT_EQ(t["end"]["reason"], "finish");
  EXPECT_EQ(t["final"]["status"], "static_violation");
  EXPECT_EQ(t["status"], "static_violation");
  EXPECT_EQ(t["reward"]["value"], -1);
  EXPECT_TRUE(t["reward"]["excluded"].is_null());
  EXPECT_EQ(t["reward"]["correct"], false);
  EXPECT_FALSE(t["final"]["stages"].contains("verify"));
}

TEST(Rollout, BuildErrorThenWrongResultScoresMinusOne) {
  // Clang (the static check) accepts it, the host compiler (g++, which has no
  // __builtin_assume) does not: the build's own diagnostics come back.
  std::string unlinked = "#include <kb/solution.h>\n"
                         "KB_FORWARD(ctx) { __builtin_assume(ctx.num_inputs() > 0); ctx.fail(\"todo\"); }\n";
  Fixture f(Json::array({call("write_file", {{"path", "solution/forward.cpp"}, {"content", unlinked}}),
                         call("compile", Json::object()),
                         call("verify", Json::object()),
                         call("write_file", {{"path", "solution/forward.cpp"}, {"content", kWrong}}),
                         call("verify", Json::object()),
                         call("finish", Json::object())}));
  Json t = f.run("wrong");
  EXPECT_EQ(t["end"]["reason"], "finish");
  EXPECT_EQ(obs(t, 1)["detail"]["status"], "compile_error") << obs(t, 1)["text"];
  EXPECT_EQ(obs(t, 1)["detail"]["report"]["static"]["status"], "ok");
  EXPECT_EQ(obs(t, 1)["detail"]["report"]["build"]["status"], "compile_error");
  EXPECT_NE(obs(t, 1)["text"].get<std::string>().find("__builtin_assume"), std::string::npos)
      << obs(t, 1)["text"];
  // verify on a solution that does not build: not run, says why.
  EXPECT_EQ(obs(t, 2)["detail"]["status"], "compile_error");
  EXPECT_TRUE(obs(t, 2)["detail"]["report"]["verify"].is_null());
  // The wrong result: incorrect, with the seeds' errors and the first failure.
  EXPECT_EQ(obs(t, 4)["detail"]["status"], "incorrect") << obs(t, 4)["text"];
  EXPECT_EQ(obs(t, 4)["text"].get<std::string>().rfind("incorrect: ", 0), 0u) << obs(t, 4)["text"];
  EXPECT_NE(obs(t, 4)["text"].get<std::string>().find("differ by more than"), std::string::npos)
      << obs(t, 4)["text"];
  EXPECT_NE(obs(t, 4)["text"].get<std::string>().find("max abs error"), std::string::npos);
  // Final check: incorrect, -1; no profile stage.
  EXPECT_EQ(t["final"]["stages"]["compile"]["status"], "ok");
  EXPECT_EQ(t["final"]["stages"]["verify"]["status"], "incorrect");
  EXPECT_FALSE(t["final"]["stages"].contains("profile"));
  EXPECT_EQ(t["final"]["status"], "incorrect");
  EXPECT_EQ(t["status"], "incorrect");
  EXPECT_EQ(t["reward"]["value"], -1);
  EXPECT_TRUE(t["reward"]["excluded"].is_null());
  EXPECT_EQ(t["reward"]["correct"], false);
}

TEST(Rollout, BadArgumentsMalformedResponsesAndServerErrorsDoNotEndIt) {
  Fixture f(Json::array({
      {{"content", ""}, {"tool_calls", Json::array({{{"name", "read_file"}, {"arguments", "{\"path\": "}}})}},
      {{"raw", "<html>502 Bad Gateway</html>"}},
      {{"status", 500}},
      {{"delay_s", 4}, {"content", "too late"}},
      call("read_file", {{"path", "model.py"}, {"offset", "two"}}),
      call("no_such_tool", Json::object()),
      call("finish", Json::object())}));
  Json t = f.run("errors");
  EXPECT_EQ(t["end"]["reason"], "finish");
  ASSERT_EQ(t["turns"].size(), 4u);
  EXPECT_EQ(obs(t, 0)["ok"], false);
  EXPECT_EQ(obs(t, 0)["error_kind"], "bad_arguments");
  EXPECT_EQ(t["turns"][0]["response"]["tool_calls"][0]["arguments"], "{\"path\": ");
  // Turn 1 needed 4 requests: malformed body, 500, timeout, then the answer.
  EXPECT_EQ(t["turns"][1]["attempts"], 4);
  ASSERT_EQ(t["turns"][1]["retry_errors"].size(), 3u);
  EXPECT_NE(t["turns"][1]["retry_errors"][0].get<std::string>().find("not JSON"), std::string::npos);
  EXPECT_NE(t["turns"][1]["retry_errors"][1].get<std::string>().find("HTTP 500"), std::string::npos);
  EXPECT_NE(t["turns"][1]["retry_errors"][2].get<std::string>().find("transport"), std::string::npos);
  EXPECT_EQ(obs(t, 1)["error_kind"], "bad_arguments");
  EXPECT_NE(obs(t, 1)["text"].get<std::string>().find("'offset' must be a number"), std::string::npos);
  EXPECT_EQ(obs(t, 2)["error_kind"], "unknown_tool");
  // The model saw the error text as the tool result.
  EXPECT_EQ(t["messages"][3]["content"], obs(t, 0)["text"]);
}

TEST(Rollout, WorkspaceCannotBeEscaped) {
  fs::path marker = tempDir("escape-target") / "marker.txt";
  std::ofstream(marker) << "outside\n";
  Fixture f(Json::array({
      call("write_file", {{"path", "../x.txt"}, {"content", "pwned"}}),
      call("write_file", {{"path", marker.string()}, {"content", "pwned"}}),
      call("bash", {{"command", "ln -s / rootlink && ln -s " + marker.parent_path().string() + " out && echo linked"}}),
      call("read_file", {{"path", "rootlink/etc/passwd"}}),
      call("write_file", {{"path", "out/marker.txt"}, {"content", "pwned"}}),
      call("bash", {{"command", "curl -sS -m 5 https://example.com/"}}),
      call("bash", {{"command", "echo pwned > " + marker.string()}}),
      call("bash", {{"command", "cat " + marker.string()}}),
      call("bash", {{"command", "echo inside > solution/note.txt && cat solution/note.txt"}}),
      call("finish", Json::object())}));
  Json t = f.run("escape");
  EXPECT_EQ(t["end"]["reason"], "finish");
  EXPECT_EQ(obs(t, 0)["error_kind"], "path_refused");
  EXPECT_NE(obs(t, 0)["text"].get<std::string>().find("'..' refused"), std::string::npos);
  EXPECT_EQ(obs(t, 1)["error_kind"], "path_refused");
  EXPECT_NE(obs(t, 1)["text"].get<std::string>().find("absolute path refused"), std::string::npos);
  EXPECT_TRUE(obs(t, 2)["ok"]) << obs(t, 2)["text"];  // making links inside is allowed ...
  EXPECT_EQ(obs(t, 3)["error_kind"], "path_refused");  // ... following them is not
  EXPECT_NE(obs(t, 3)["text"].get<std::string>().find("symbolic link"), std::string::npos);
  EXPECT_EQ(obs(t, 4)["error_kind"], "path_refused");
  // No network in bash: both curls fail.
  EXPECT_EQ(obs(t, 5)["ok"], false);
  EXPECT_NE(obs(t, 5)["detail"]["exit_code"], 0);
  EXPECT_NE(obs(t, 5)["detail"]["sandbox"].get<std::string>().find("netns"), std::string::npos);
  // bash cannot write or read outside the workspace.
  EXPECT_EQ(obs(t, 6)["ok"], false) << obs(t, 6)["text"];
  EXPECT_EQ(obs(t, 7)["ok"], false) << obs(t, 7)["text"];
  EXPECT_EQ(obs(t, 8)["ok"], true) << obs(t, 8)["text"];
  EXPECT_EQ(slurp(marker), "outside\n");
  EXPECT_FALSE(fs::exists(fs::path(t["workspace"].get<std::string>()).parent_path() / "x.txt"));
}

// Nothing of the machine's other processes: not the server that runs the
// rollout (its environment, command line, maps), not other sessions' shells
// or candidate workers. bash runs as its PID namespace's init with its own
// /proc, no capabilities, and what it leaves running dies with it.
TEST(Rollout, BashSeesNoOtherProcess) {
  const std::string me = std::to_string(::getpid());
  Fixture f(Json::array({
      call("bash", {{"command", "echo pid=$$; cat /proc/" + me + "/environ /proc/" + me +
                                    "/cmdline >/dev/null 2>&1 && echo SEEN || echo hidden"}}),
      call("bash", {{"command", "ls /proc | grep -c '^[0-9]'"}}),
      call("bash", {{"command", "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status"}}),
      call("bash", {{"command", "(sleep 1; echo late > solution/late.txt) >/dev/null 2>&1 & echo started"}}),
      call("finish", Json::object())}));
  Json t = f.run("procs");
  if (obs(t, 0)["detail"]["sandbox"].get<std::string>().find("pidns") == std::string::npos)
    GTEST_SKIP() << "no PID namespace on this kernel: " << obs(t, 0)["detail"]["sandbox"];
  EXPECT_NE(obs(t, 0)["text"].get<std::string>().find("pid=1\n"), std::string::npos) << obs(t, 0)["text"];
  EXPECT_NE(obs(t, 0)["text"].get<std::string>().find("hidden"), std::string::npos) << obs(t, 0)["text"];
  // bash, ls and grep at most: nothing of the test process's.
  EXPECT_LE(std::stoi(obs(t, 1)["text"].get<std::string>()), 3) << obs(t, 1)["text"];
  const std::string caps = obs(t, 2)["text"].get<std::string>();
  EXPECT_NE(caps.find("CapEff:\t0000000000000000"), std::string::npos) << caps;
  EXPECT_NE(caps.find("CapBnd:\t0000000000000000"), std::string::npos) << caps;
  EXPECT_NE(obs(t, 0)["detail"]["sandbox"].get<std::string>().find("caps-dropped"), std::string::npos);
  EXPECT_TRUE(obs(t, 3)["ok"]) << obs(t, 3)["text"];
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(fs::exists(fs::path(t["workspace"].get<std::string>()) / "solution" / "late.txt"));
}

// A shared server's disk: bash is stopped once the workspace passes its
// bound, and a step that starts past it writes no file data until files are
// removed (a review by attack filled 1.5 GB from one session).
TEST(Rollout, BashCannotFillTheDisk) {
  WorkspaceLimits limits;
  limits.bytes = 8ull << 20;
  limits.entries = 1000;
  Fixture f(Json::array({
                call("bash", {{"command", "for i in $(seq 1 100); do head -c 1M /dev/zero > f$i; sleep 0.05; done; echo all"}}),
                call("bash", {{"command", "head -c 1M /dev/zero > more.bin; stat -c size=%s more.bin"}}),
                call("bash", {{"command", "echo files=$(ls f* | wc -l); rm -f f* more.bin && echo cleaned"}}),
                call("bash", {{"command", "head -c 1M /dev/zero > ok.bin && echo fine"}}),
                call("bash", {{"command", "mkdir d && cd d && for i in $(seq 1 3000); do : > e$i; done; echo made"}}),
                call("finish", Json::object())}),
            limits);
  Json t = f.run("disk");
  EXPECT_EQ(obs(t, 0)["error_kind"], "workspace_limit") << obs(t, 0)["text"];
  EXPECT_EQ(obs(t, 0)["detail"]["workspace_limit"].get<std::string>().rfind("stopped: the workspace holds", 0), 0u)
      << obs(t, 0)["detail"];
  EXPECT_EQ(obs(t, 0)["text"].get<std::string>().find("all\n"), std::string::npos);  // it did not run to its end
  // Started over the bound: no file data written.
  EXPECT_EQ(obs(t, 1)["ok"], false) << obs(t, 1)["text"];
  EXPECT_NE(obs(t, 1)["text"].get<std::string>().find("it started over them"), std::string::npos) << obs(t, 1)["text"];
  const std::string more = obs(t, 1)["text"].get<std::string>();
  EXPECT_TRUE(more.find("size=0\n") != std::string::npos || more.find("size=1\n") != std::string::npos) << more;
  EXPECT_TRUE(obs(t, 2)["ok"]) << obs(t, 2)["text"];
  const std::string files = obs(t, 2)["text"].get<std::string>();  // stopped near 8 of its 100 files
  EXPECT_LT(std::stoi(files.substr(files.find("files=") + 6)), 40) << files;
  EXPECT_TRUE(obs(t, 3)["ok"]) << obs(t, 3)["text"];
  EXPECT_EQ(obs(t, 4)["error_kind"], "workspace_limit") << obs(t, 4)["text"];
  EXPECT_NE(obs(t, 4)["text"].get<std::string>().find("entries"), std::string::npos) << obs(t, 4)["text"];
}

TEST(Rollout, CurlToTheLoopbackServerIsRefused) {
  Fixture f(Json::array({call("finish", Json::object())}));
  Json script = Json::array({call("bash", {{"command", "curl -sS -m 5 http://127.0.0.1:" +
                                                           std::to_string(f.server.port()) + "/v1/chat/completions"}}),
                             call("finish", Json::object())});
  ScriptedServer server2(script);
  ClientConfig c;
  c.base_url = server2.baseUrl();
  c.model = "scripted";
  c.backoff_initial_seconds = 0.01;
  f.client = std::make_unique<OpenAIClient>(c);
  Json t = f.run("curl");
  EXPECT_EQ(obs(t, 0)["ok"], false);
  EXPECT_NE(obs(t, 0)["text"].get<std::string>().find("curl: ("), std::string::npos) << obs(t, 0)["text"];
  EXPECT_EQ(f.server.requests().size(), 0u);  // the first server never heard from bash
}

TEST(Rollout, BudgetsEndIt) {
  {
    Fixture f(Json::array({call("glob", {{"pattern", "*"}}), call("glob", {{"pattern", "*"}}),
                           call("glob", {{"pattern", "*"}})}));
    f.options.limits.max_turns = 2;
    Json t = f.run("turns");
    EXPECT_EQ(t["end"]["reason"], "max_turns");
    EXPECT_EQ(t["turns"].size(), 2u);
    EXPECT_EQ(t["limits"]["max_turns"], 2);
    EXPECT_EQ(t["final"]["stages"]["compile"]["status"], "ok");  // the skeleton compiles ...
    EXPECT_EQ(t["final"]["status"], "runtime_error");            // ... and fails at run time
    EXPECT_EQ(t["reward"]["value"], -1);
  }
  {
    Fixture f(Json::array({{{"content", "thinking"}}, {{"content", "still"}}, {{"content", "more"}}}));
    Json t = f.run("idle");
    EXPECT_EQ(t["end"]["reason"], "no_tool_call");
    EXPECT_EQ(t["turns"].size(), 3u);
    EXPECT_EQ(t["messages"][3]["role"], "user");  // the nudge
  }
  {
    Fixture f(Json::array({call("glob", {{"pattern", "*"}})}));
    f.options.limits.wall_seconds = 0;
    Json t = f.run("wall");
    EXPECT_EQ(t["end"]["reason"], "wall_clock");
    EXPECT_EQ(t["turns"].size(), 0u);
  }
  {
    Fixture f(Json::array({call("finish", Json::object())}));
    f.options.limits.context_tokens = 500;
    Json t = f.run("context");
    EXPECT_EQ(t["end"]["reason"], "context_budget");
  }
}

TEST(Rollout, OldObservationsAreElidedToFitTheContext) {
  Json script = Json::array();
  for (int i = 0; i < 6; ++i) script.push_back(call("read_file", {{"path", "AGENT.md"}}));
  script.push_back(call("finish", Json::object()));
  Fixture f(script);
  size_t guide = slurp(kSource / "docs/agent-guide.md").size();
  // Room for the prompt plus about three guide-sized observations.
  f.options.limits.context_tokens = static_cast<int64_t>((guide * 6) / 4) + 1024 + 2000;
  f.options.limits.keep_recent_turns = 1;
  Json t = f.run("elide");
  EXPECT_EQ(t["end"]["reason"], "finish");
  bool any = false;
  for (const Json& turn : t["turns"]) {
    for (const Json& i : turn["elided"]) {
      any = true;
      EXPECT_EQ(t["messages"][i.get<size_t>()]["role"], "tool");
    }
  }
  EXPECT_TRUE(any);
  // What the server saw for an elided message is the placeholder.
  auto reqs = f.server.requests();
  const Json& last = t["turns"].back();
  size_t first_elided = last["elided"][0];
  EXPECT_NE(reqs.back()["messages"][first_elided]["content"].get<std::string>().find("[elided to fit"),
            std::string::npos);
  EXPECT_EQ(reqs.back()["messages"].size(), last["prompt_messages"].get<size_t>());
}

// A policy that stops answering cuts the episode: that is the
// infrastructure's doing, never a reward (issue 18: it used to be -1).
TEST(Rollout, PolicyFailureIsAnInfraErrorWithoutAReward) {
  Fixture f(Json::array({call("write_file", {{"path", "solution/forward.cpp"}, {"content", "int x = ;\n"}})}));
  Json t = f.run("policy-error");
  EXPECT_EQ(t["end"]["reason"], "policy_error");
  EXPECT_NE(t["end"]["message"].get<std::string>().find("script exhausted"), std::string::npos);
  EXPECT_EQ(t["turns"].size(), 2u);
  EXPECT_TRUE(t["turns"][1].contains("policy_error"));
  EXPECT_EQ(t["status"], "infra_error");
  EXPECT_EQ(t["final"]["status"], "infra_error");
  EXPECT_EQ(t["final"]["stages"], Json::object());  // not checked: the episode was cut
  EXPECT_EQ(t["infra_error"]["stage"], "policy");
  EXPECT_NE(t["infra_error"]["message"].get<std::string>().find("script exhausted"), std::string::npos);
  EXPECT_TRUE(t["reward"]["value"].is_null());
  EXPECT_EQ(t["reward"]["excluded"], "infra_error");
  EXPECT_EQ(t["solution_hash"].get<std::string>().rfind("sha256:", 0), 0u);
}

TEST(Rollout, NoPolicyServerIsAnInfraError) {
  Fixture f(Json::array());
  ClientConfig c;
  c.base_url = "http://127.0.0.1:9/v1";  // nothing listens on the discard port
  c.model = "m";
  c.max_attempts = 2;
  c.backoff_initial_seconds = 0.01;
  f.client = std::make_unique<OpenAIClient>(c);
  Json t = f.run("no-server");
  EXPECT_EQ(t["end"]["reason"], "policy_error");
  EXPECT_EQ(t["status"], "infra_error");
  EXPECT_EQ(t["infra_error"]["stage"], "policy");
  EXPECT_TRUE(t["reward"]["value"].is_null());
  EXPECT_EQ(t["reward"]["excluded"], "infra_error");
}

TEST(Rollout, UnknownRewardSchemeIsRefused) {
  Fixture f(Json::array({call("finish", Json::object())}));
  f.options.reward_scheme = "log_speedup";  // lib/reward spells it log-speedup
  EXPECT_THROW(f.run("scheme"), UsageError);
  EXPECT_TRUE(f.server.requests().empty());
  f.options.reward_scheme = "log-speedup";
  Json t = f.run("scheme-ok");
  EXPECT_EQ(t["reward"]["scheme"]["name"], "log-speedup");
}

TEST(Runner, ParallelRolloutsAndResume) {
  fs::path dir = tempDir("runner");
  // Two tasks (the same model.py under two ids), two samples each.
  for (const char* name : {"t1", "t2"}) copyTask(dir / "tasks", name);
  Json script = Json::array();
  for (int i = 0; i < 8; ++i) script.push_back(call("finish", Json::object()));
  ScriptedServer server(script);
  ClientConfig c;
  c.base_url = server.baseUrl();
  c.model = "scripted";
  OpenAIClient client(c);
  RunOptions o;
  o.tasks = findTasks(dir / "tasks");
  ASSERT_EQ(o.tasks.size(), 2u);
  EXPECT_EQ(o.tasks[0].id, "t1");
  o.samples = 2;
  o.parallel = 3;
  o.output = dir / "out.jsonl";
  o.work_dir = dir / "work";
  o.guide = kSource / "docs/agent-guide.md";
  o.interface_header = kSource / "include/kb/solution.h";
  o.progress = false;
  o.cpu_pool = std::make_shared<ResourcePool>("cpu", std::vector<std::string>{"0", "1"});
  RunSummary s = runRollouts(o, client);
  EXPECT_EQ(s.total, 4);
  EXPECT_EQ(s.done, 4);
  EXPECT_EQ(s.skipped, 0);
  EXPECT_EQ(s.failed, 0);
  EXPECT_EQ(s.infra, 0);  // real bundles: the skeleton fails verify (runtime_error), not the environment
  auto recs = readTrajectories(o.output);
  ASSERT_EQ(recs.size(), 4u);
  std::set<std::string> ids;
  for (const Json& r : recs) ids.insert(r["rollout_id"].get<std::string>());
  EXPECT_EQ(ids, (std::set<std::string>{"t1#0", "t1#1", "t2#0", "t2#1"}));
  EXPECT_LE(o.cpu_pool->maxConcurrent(), 2u);
  EXPECT_GE(o.cpu_pool->timeline().size(), 4u);  // each final compile took a CPU slot

  // Resume: nothing is redone.
  s = runRollouts(o, client);
  EXPECT_EQ(s.skipped, 4);
  EXPECT_EQ(s.done, 0);
  EXPECT_EQ(server.requests().size(), 4u);

  // Drop one finished line and leave a partial one: exactly that rollout is redone.
  std::string text = slurp(o.output);
  size_t cut = text.rfind('\n', text.size() - 2);
  std::string dropped = Json::parse(text.substr(cut + 1))["rollout_id"];
  std::ofstream(o.output, std::ios::trunc) << text.substr(0, cut + 1) << "{\"rollout_id\": \"partial";
  s = runRollouts(o, client);
  EXPECT_EQ(s.skipped, 3);
  EXPECT_EQ(s.done, 1);
  recs = readTrajectories(o.output);
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs.back()["rollout_id"], dropped);
}

namespace {

RunOptions runnerOptions(const fs::path& dir, int samples) {
  copyTask(dir / "tasks", "t1");
  RunOptions o;
  o.tasks = findTasks(dir / "tasks");
  o.samples = samples;
  o.parallel = 1;
  o.output = dir / "out.jsonl";
  o.work_dir = dir / "work";
  o.guide = kSource / "docs/agent-guide.md";
  o.interface_header = kSource / "include/kb/solution.h";
  o.progress = false;
  o.cpu_pool = std::make_shared<ResourcePool>("cpu", std::vector<std::string>{"0"});
  return o;
}

}  // namespace

// --seed S --samples K: each sample is sent its own seed (GRPO needs the
// group to differ); the same seed only when asked for.
TEST(Runner, SamplesGetDistinctDerivedSeeds) {
  fs::path dir = tempDir("seeds");
  Json script = {{"per_conversation", Json::array({call("finish", Json::object())})}};
  ScriptedServer server(script);
  ClientConfig c;
  c.base_url = server.baseUrl();
  c.model = "scripted";
  OpenAIClient client(c);
  RunOptions o = runnerOptions(dir, 3);
  o.rollout.sampling.seed = 1;
  RunSummary s = runRollouts(o, client);
  EXPECT_EQ(s.done, 3);
  std::set<int64_t> sent;
  for (const Json& r : server.requests()) sent.insert(r["seed"].get<int64_t>());
  EXPECT_EQ(sent, (std::set<int64_t>{sampleSeed(1, "t1", 0), sampleSeed(1, "t1", 1), sampleSeed(1, "t1", 2)}));
  for (const Json& t : readTrajectories(o.output)) {
    EXPECT_EQ(t["sampling"]["seed"], sampleSeed(1, "t1", t["sample"].get<int>()));
    EXPECT_EQ(t["sampling"]["run_seed"], 1);
    EXPECT_EQ(t["sampling"]["same_seed"], false);
  }

  fs::path dir2 = tempDir("same-seed");
  ScriptedServer server2(script);
  c.base_url = server2.baseUrl();
  OpenAIClient client2(c);
  RunOptions o2 = runnerOptions(dir2, 3);
  o2.rollout.sampling.seed = 1;
  o2.rollout.same_seed = true;
  runRollouts(o2, client2);
  ASSERT_EQ(server2.requests().size(), 3u);
  for (const Json& r : server2.requests()) EXPECT_EQ(r["seed"], 1);
}

TEST(Runner, InfraErrorsAreRecordedWithoutRewardAndRedoneOnResume) {
  fs::path dir = tempDir("infra");
  RunOptions o = runnerOptions(dir, 2);
  {
    ClientConfig c;
    c.base_url = "http://127.0.0.1:9/v1";
    c.model = "m";
    c.max_attempts = 1;
    OpenAIClient client(c);
    RunSummary s = runRollouts(o, client);
    EXPECT_EQ(s.done, 2);
    EXPECT_EQ(s.infra, 2);
    EXPECT_EQ(s.made(), 0);
    EXPECT_EQ(s.rewarded, 0);
    EXPECT_NE(s.first_infra.find("t1#0: policy: "), std::string::npos) << s.first_infra;
    for (const Json& t : readTrajectories(o.output)) {
      EXPECT_EQ(t["status"], "infra_error");
      EXPECT_TRUE(t["reward"]["value"].is_null());
    }
  }
  // The server is back: resume redoes both, and the later records count.
  Json script = {{"per_conversation", Json::array({call("finish", Json::object())})}};
  ScriptedServer server(script);
  ClientConfig c;
  c.base_url = server.baseUrl();
  c.model = "scripted";
  OpenAIClient client(c);
  RunSummary s = runRollouts(o, client);
  EXPECT_EQ(s.skipped, 0);
  EXPECT_EQ(s.done, 2);
  EXPECT_EQ(s.infra, 0);
  EXPECT_EQ(s.made(), 2);
  EXPECT_EQ(readTrajectories(o.output).size(), 4u);
  EXPECT_TRUE(finishedRollouts(o.output) == (std::set<std::string>{"t1#0", "t1#1"}));
  s = runRollouts(o, client);
  EXPECT_EQ(s.skipped, 2);
}

TEST(Runner, ResumeRefusesACorruptOutputAndALockedOne) {
  fs::path dir = tempDir("corrupt-resume");
  RunOptions o = runnerOptions(dir, 1);
  ScriptedServer server(Json::array({call("finish", Json::object())}));
  ClientConfig c;
  c.base_url = server.baseUrl();
  c.model = "scripted";
  OpenAIClient client(c);
  std::ofstream(o.output) << "{\"rollout_id\": \"t1#0\"}{\"rollout_id\n";
  std::ofstream(o.output, std::ios::app) << "{\"rollout_id\": \"t1#1\"}\n";
  EXPECT_THROW(runRollouts(o, client), CorruptOutput);
  fs::remove(o.output);
  auto holder = std::make_shared<TrajectoryWriter>(o.output);
  EXPECT_THROW(runRollouts(o, client), OutputBusy);
  EXPECT_TRUE(server.requests().empty());
  o.writer = holder;  // the caller's own writer is used, not a second one
  RunSummary s = runRollouts(o, client);
  EXPECT_EQ(s.done, 1);
}

TEST(Runner, UnknownSchemeIsRefusedBeforeAnyWork) {
  fs::path dir = tempDir("scheme");
  RunOptions o = runnerOptions(dir, 1);
  o.rollout.reward_scheme = "bogus";
  ScriptedServer server(Json::array({call("finish", Json::object())}));
  ClientConfig c;
  c.base_url = server.baseUrl();
  c.model = "scripted";
  OpenAIClient client(c);
  EXPECT_THROW(runRollouts(o, client), UsageError);
  EXPECT_TRUE(server.requests().empty());
  EXPECT_FALSE(fs::exists(o.output));
}

// The replay policy's variants (replay_policy.h): sample k replays v(k mod
// n), two rollouts at once sharing one policy. v0 is the correct solution in
// two files (forward.cpp includes kernels/relu.h), v1 the wrong one.
TEST(Runner, ReplayVariantsBySample) {
  fs::path dir = tempDir("replay-variants");
  RunOptions o = runnerOptions(dir, 3);
  o.parallel = 2;
  o.cpu_pool = std::make_shared<ResourcePool>("cpu", std::vector<std::string>{"0", "1"});
  std::string good = kGood;
  good.replace(good.find("#include <kb/solution.h>\n"), 25, "#include <kb/solution.h>\n#include \"kernels/relu.h\"\n");
  good.replace(good.find("acc > 0.0f ? acc : 0.0f"), 23, "replay_relu(acc)");
  const std::string header = "#pragma once\nstatic inline float replay_relu(float v) { return v > 0.0f ? v : 0.0f; }\n";
  fs::create_directories(dir / "solutions/t1/v0/kernels");
  fs::create_directories(dir / "solutions/t1/v1");
  std::ofstream(dir / "solutions/t1/v0/forward.cpp") << good;
  std::ofstream(dir / "solutions/t1/v0/kernels/relu.h") << header;
  std::ofstream(dir / "solutions/t1/v1/forward.cpp") << kWrong;
  ReplayPolicy policy(dir / "solutions");
  RunSummary s = runRollouts(o, policy);
  EXPECT_EQ(s.done, 3);
  EXPECT_EQ(s.infra, 0);
  std::map<int, Json> by_sample;
  for (const Json& t : readTrajectories(o.output)) by_sample[t["sample"].get<int>()] = t;
  ASSERT_EQ(by_sample.size(), 3u);
  auto called = [](const Json& t) {
    std::vector<std::string> out;
    for (const Json& turn : t["turns"]) out.push_back(turn["response"]["tool_calls"][0]["name"]);
    return out;
  };
  for (int k : {0, 2}) {
    const Json& t = by_sample[k];
    EXPECT_EQ(called(t), (std::vector<std::string>{"write_file", "write_file", "compile", "verify", "finish"}))
        << "sample " << k;
    EXPECT_EQ(obs(t, 1)["detail"]["path"], "solution/kernels/relu.h");
    EXPECT_EQ(obs(t, 2)["detail"]["status"], "ok") << obs(t, 2)["text"];
    EXPECT_EQ(t["status"], "ok") << "sample " << k;
    EXPECT_EQ(t["reward"]["correct"], true);
    EXPECT_EQ(obs(t, 4)["detail"]["summary"], "replayed t1/v0");
    EXPECT_EQ(slurp(fs::path(t["workspace"].get<std::string>()) / "solution/kernels/relu.h"), header);
  }
  const Json& t1 = by_sample[1];
  EXPECT_EQ(called(t1), (std::vector<std::string>{"write_file", "compile", "verify", "finish"}));
  EXPECT_EQ(t1["status"], "incorrect");
  EXPECT_EQ(t1["reward"]["value"], -1);
  EXPECT_EQ(obs(t1, 3)["detail"]["summary"], "replayed t1/v1");
}

// The library environment keeps one evaluation per solution: verify after
// compile does not build again, verify asked twice is the kept verdict, a
// failed verify answers profile and the final check at once, and a changed
// solution starts afresh.
TEST(Environment, KeepsOneSolutionsBuildAndVerdicts) {
  const fs::path dir = tempDir("env-session") / "solution";
  fs::create_directories(dir);
  std::ofstream(dir / "forward.cpp") << kGood;
  EnvironmentOptions eo;
  eo.task_dir = kTask;
  eo.task_id = kTaskId;
  std::unique_ptr<Environment> env = makeLibraryEnvironment(eo);

  StageResult c = env->compile(dir);
  ASSERT_EQ(c.status, Status::Ok) << c.text;
  EXPECT_FALSE(c.report.contains("reused"));
  StageResult v = env->verify(dir);
  ASSERT_EQ(v.status, Status::Ok) << v.text;
  EXPECT_FALSE(v.report.contains("reused"));
  StageResult again = env->verify(dir);
  EXPECT_EQ(again.status, Status::Ok);
  EXPECT_EQ(again.report["reused"], true);
  EXPECT_EQ(again.report["verify"], v.report["verify"]);
  std::vector<StageResult> fin = env->check(dir);
  ASSERT_EQ(fin.size(), 3u);  // compile, verify, profile (not available: a CPU task)
  EXPECT_EQ(fin[0].report["reused"], true);
  EXPECT_EQ(fin[1].report["reused"], true);
  EXPECT_FALSE(fin[2].available);

  std::ofstream(dir / "forward.cpp") << kWrong;  // a new solution: checked afresh
  StageResult wrong = env->verify(dir);
  EXPECT_EQ(wrong.status, Status::Incorrect) << wrong.text;
  EXPECT_FALSE(wrong.report.contains("reused"));
  fin = env->check(dir);
  ASSERT_EQ(fin.size(), 2u);  // stopped at verify
  EXPECT_EQ(fin[1].status, Status::Incorrect);
  EXPECT_EQ(fin[1].report["reused"], true);
}
