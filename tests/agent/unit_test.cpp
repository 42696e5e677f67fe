// lib/agent unit tests: the client against a real scripted HTTP server
// (retries, timeouts, malformed bodies, token ids), workspace confinement,
// the file tools, the pool, trajectory files.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "agent/client.h"
#include "agent/episode.h"
#include "agent/pool.h"
#include "agent/presampled_policy.h"
#include "agent/rollout.h"
#include "agent/tools.h"
#include "agent/trajectory.h"
#include "agent/workspace.h"
#include "core/hash.h"
#include "scripted_server.h"

namespace fs = std::filesystem;
using namespace kb;
using namespace kb::agent;
using namespace kb::chat;
using kb::test::ScriptedServer;

namespace {

fs::path tempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kb-agent-unit-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

ClientConfig fastConfig(const ScriptedServer& s) {
  ClientConfig c;
  c.base_url = s.baseUrl();
  c.model = "scripted";
  c.api_key = "sk-test";
  c.timeout_seconds = 1.0;
  c.max_attempts = 4;
  c.backoff_initial_seconds = 0.01;
  c.backoff_max_seconds = 0.05;
  return c;
}

std::vector<Message> hello() { return {{.role = "user", .content = "hi"}}; }

Json toolStep(const std::string& name, Json args) {
  return {{"content", "calling " + name}, {"tool_calls", Json::array({{{"name", name}, {"arguments", args}}})}};
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class NullEnv : public Environment {
 public:
  ShellResult bash(const fs::path&, const std::string&, double) override { return {}; }
  StageResult compile(const fs::path&) override { return {}; }
  StageResult verify(const fs::path&) override { return {}; }
  StageResult profile(const fs::path&) override { return {}; }
};

}  // namespace

// ---- client --------------------------------------------------------------

TEST(Client, SendsToolsSamplingAndKeyAndParsesToolCalls) {
  ScriptedServer server(Json::array({toolStep("read_file", {{"path", "model.py"}})}));
  OpenAIClient client(fastConfig(server));
  SamplingParams sp;
  sp.temperature = 0.7;
  sp.top_p = 0.9;
  sp.max_tokens = 123;
  sp.seed = 5;
  std::vector<ToolSpec> tools = {{"read_file", "read", {{"type", "object"}}}};
  Completion r = client.complete(hello(), tools, sp);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "read_file");
  EXPECT_EQ(Json::parse(r.tool_calls[0].arguments)["path"], "model.py");
  EXPECT_EQ(r.tool_calls[0].id, "call_0_0");
  EXPECT_EQ(r.finish_reason, "tool_calls");
  EXPECT_EQ(r.attempts, 1);
  // logprobs asked for: one per token, ids from "token_id:N".
  std::vector<int64_t> ids = ScriptedServer::tokenIds(toolStep("read_file", {{"path", "model.py"}}));
  EXPECT_EQ(r.token_ids, ids);
  ASSERT_EQ(r.logprobs.size(), ids.size());
  EXPECT_DOUBLE_EQ(r.logprobs[3], ScriptedServer::logprobOf(3));
  EXPECT_GT(r.prompt_tokens, 0);
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0]["_path"], "POST /v1/chat/completions HTTP/1.1");
  EXPECT_EQ(reqs[0]["_authorization"], "Bearer sk-test");
  EXPECT_EQ(reqs[0]["model"], "scripted");
  EXPECT_DOUBLE_EQ(reqs[0]["temperature"].get<double>(), 0.7);
  EXPECT_DOUBLE_EQ(reqs[0]["top_p"].get<double>(), 0.9);
  EXPECT_EQ(reqs[0]["max_tokens"], 123);
  EXPECT_EQ(reqs[0]["seed"], 5);
  EXPECT_EQ(reqs[0]["logprobs"], true);
  EXPECT_EQ(reqs[0]["tools"][0]["function"]["name"], "read_file");
}

TEST(Client, ExtraBodyAsksForTokenIds) {
  ScriptedServer server(Json::array({{{"content", "ok"}}}));
  ClientConfig c = fastConfig(server);
  c.extra_body = {{"return_token_ids", true}};
  OpenAIClient client(c);
  SamplingParams sp;
  sp.logprobs = false;
  Completion r = client.complete(hello(), {}, sp);
  EXPECT_EQ(r.content, "ok");
  EXPECT_EQ(r.token_ids, (std::vector<int64_t>{'o', 'k'}));
  EXPECT_TRUE(r.logprobs.empty());
  EXPECT_EQ(r.prompt_token_ids, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(server.requests()[0]["return_token_ids"], true);
  EXPECT_FALSE(server.requests()[0].contains("logprobs"));
}

TEST(Client, RetriesOn500And429ThenRecovers) {
  ScriptedServer server(Json::array({{{"status", 500}}, {{"status", 429}, {"retry_after", 0}},
                                     {{"status", 503}}, {{"content", "fine"}}}));
  OpenAIClient client(fastConfig(server));
  Completion r = client.complete(hello(), {}, {});
  EXPECT_EQ(r.content, "fine");
  EXPECT_EQ(r.attempts, 4);
  ASSERT_EQ(r.retry_errors.size(), 3u);
  EXPECT_NE(r.retry_errors[0].find("HTTP 500"), std::string::npos);
  EXPECT_NE(r.retry_errors[1].find("HTTP 429"), std::string::npos);
}

TEST(Client, TimeoutThenRecovers) {
  ScriptedServer server(Json::array({{{"delay_s", 3}, {"content", "late"}}, {{"content", "on time"}}}));
  ClientConfig c = fastConfig(server);
  c.timeout_seconds = 0.5;
  OpenAIClient client(c);
  Completion r = client.complete(hello(), {}, {});
  EXPECT_EQ(r.content, "on time");
  EXPECT_EQ(r.attempts, 2);
  EXPECT_NE(r.retry_errors[0].find("transport"), std::string::npos) << r.retry_errors[0];
}

TEST(Client, MalformedBodyIsRetried) {
  ScriptedServer server(Json::array({{{"raw", "{\"choices\": [ not json"}},
                                     {{"raw", "{\"choices\": []}"}},
                                     {{"close", true}},
                                     {{"content", "good"}}}));
  OpenAIClient client(fastConfig(server));
  Completion r = client.complete(hello(), {}, {});
  EXPECT_EQ(r.content, "good");
  EXPECT_EQ(r.attempts, 4);
  EXPECT_NE(r.retry_errors[0].find("not JSON"), std::string::npos);
  EXPECT_NE(r.retry_errors[1].find("no choices"), std::string::npos);
}

TEST(Client, GivesUpAfterMaxAttemptsAndDoesNotRetry400) {
  ScriptedServer server(Json::array({{{"status", 500}}, {{"status", 500}}, {{"status", 500}},
                                     {{"status", 500}}, {{"status", 400}, {"body", "{\"error\":\"too long\"}"}}}));
  OpenAIClient client(fastConfig(server));
  try {
    client.complete(hello(), {}, {});
    FAIL() << "expected PolicyError";
  } catch (const PolicyError& e) {
    EXPECT_TRUE(e.retryable());
    EXPECT_NE(std::string(e.what()).find("after 4 attempts"), std::string::npos) << e.what();
  }
  try {
    client.complete(hello(), {}, {});
    FAIL() << "expected PolicyError";
  } catch (const PolicyError& e) {
    EXPECT_FALSE(e.retryable());
    EXPECT_EQ(e.httpStatus(), 400);
    EXPECT_NE(std::string(e.what()).find("after 1 attempt:"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.requests().size(), 5u);
}

TEST(Client, ConnectionRefusedIsATransportError) {
  int port;
  {
    ScriptedServer s(Json::array());
    port = s.port();
  }
  ClientConfig c;
  c.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  c.model = "m";
  c.max_attempts = 2;
  c.backoff_initial_seconds = 0.01;
  OpenAIClient client(c);
  EXPECT_THROW(client.complete(hello(), {}, {}), PolicyError);
}

TEST(Client, ParsesArgumentsObjectAndReasoning) {
  Completion r = parseChatCompletion(R"({"choices":[{"message":{"role":"assistant","content":null,
    "reasoning_content":"think","tool_calls":[{"function":{"name":"glob","arguments":{"pattern":"*"}}}]},
    "finish_reason":"tool_calls"}]})");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].id, "call_1");
  EXPECT_EQ(Json::parse(r.tool_calls[0].arguments)["pattern"], "*");
  EXPECT_EQ(r.reasoning, "think");
  EXPECT_EQ(r.content, "");
  Json m = messageToJson(assistantMessage(r));
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "glob");
  EXPECT_THROW(parseChatCompletion(R"({"error":{"message":"overloaded"}})"), PolicyError);
}

TEST(Client, ConfigFromEnvironment) {
  ::setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/", 1);
  ::setenv("KB_MODEL", "env-model", 1);
  ClientConfig c = configFromEnvironment({});
  EXPECT_EQ(c.base_url, "http://127.0.0.1:9/v1");
  EXPECT_EQ(c.model, "env-model");
  ClientConfig flags;
  flags.model = "flag-model";
  EXPECT_EQ(configFromEnvironment(flags).model, "flag-model");
  ::unsetenv("OPENAI_BASE_URL");
  ::unsetenv("KB_POLICY_URL");
  EXPECT_THROW(configFromEnvironment({}), UsageError);
  ::unsetenv("KB_MODEL");
}

// ---- workspace -----------------------------------------------------------

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::path root = tempDir("ws");
    fs::create_directories(root / "solution" / "kernels");
    std::ofstream(root / "model.py") << "import torch\n";
    std::ofstream(root / "solution" / "forward.cpp") << "a\nb\na\n";
    fs::create_directories(tempDir("outside"));
    std::ofstream(tempDir("outside").parent_path() / "outside" / "secret.txt") << "secret\n";
    ws = Workspace(root);
  }
  Workspace ws;
};

TEST_F(WorkspaceTest, ResolvesInside) {
  EXPECT_EQ(ws.resolve("solution/forward.cpp"), ws.root() / "solution" / "forward.cpp");
  EXPECT_EQ(ws.resolve("./solution//kernels/new.cu"), ws.root() / "solution" / "kernels" / "new.cu");
  EXPECT_EQ(ws.resolve("a/b/c.txt"), ws.root() / "a" / "b" / "c.txt");
  EXPECT_EQ(ws.display(ws.root() / "solution" / "x.cu"), "solution/x.cu");
}

TEST_F(WorkspaceTest, RefusesEscapes) {
  EXPECT_THROW(ws.resolve("../x"), PathRefused);
  EXPECT_THROW(ws.resolve("solution/../../x"), PathRefused);
  EXPECT_THROW(ws.resolve("solution/.."), PathRefused);
  EXPECT_THROW(ws.resolve("/etc/passwd"), PathRefused);
  EXPECT_THROW(ws.resolve(ws.root().string() + "/model.py"), PathRefused);
  EXPECT_THROW(ws.resolve("~/x"), PathRefused);
  EXPECT_THROW(ws.resolve(""), PathRefused);
  EXPECT_THROW(ws.resolve(std::string("a\0b", 3)), PathRefused);
  EXPECT_THROW(ws.resolve("newdir/../../x"), PathRefused);
}

TEST_F(WorkspaceTest, RefusesSymlinksAnywhereOnThePath) {
  fs::path outside = ws.root().parent_path() / "outside";
  fs::create_directory_symlink(outside, ws.root() / "out");
  fs::create_symlink(outside / "secret.txt", ws.root() / "secret");
  fs::create_symlink("model.py", ws.root() / "inside-link");  // even in-tree links
  EXPECT_THROW(ws.resolve("out/secret.txt"), PathRefused);
  EXPECT_THROW(ws.resolve("out"), PathRefused);
  EXPECT_THROW(ws.resolve("secret"), PathRefused);
  EXPECT_THROW(ws.resolve("inside-link"), PathRefused);
  try {
    ws.resolve("out/secret.txt");
  } catch (const PathRefused& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos);
  }
}

TEST_F(WorkspaceTest, CreateLaysOutTheWorkspace) {
  fs::path task = tempDir("task");
  std::ofstream(task / "model.py") << "class Model: pass\n";
  fs::path guide = tempDir("g") / "guide.md";
  std::ofstream(guide) << "# guide\n";
  fs::path header = fs::path(KB_SOURCE_ROOT_FOR_TESTS) / "include" / "kb" / "solution.h";
  Workspace w = Workspace::create(tempDir("created"), {task, guide, header});
  EXPECT_EQ(slurp(w.root() / "model.py"), "class Model: pass\n");
  EXPECT_EQ(slurp(w.root() / "AGENT.md"), "# guide\n");
  EXPECT_TRUE(fs::exists(w.root() / "include" / "kb" / "solution.h"));
  EXPECT_EQ(slurp(w.solutionDir() / "forward.cpp"), solutionSkeleton());
  EXPECT_TRUE(fs::is_directory(w.solutionDir() / "kernels"));
  EXPECT_THROW(Workspace::create(tempDir("c2"), {tempDir("empty-task"), guide, header}), UsageError);
}

// ---- file tools ----------------------------------------------------------

class FileTools : public WorkspaceTest {
 protected:
  Observation run(const std::string& name, Json args) {
    ToolBox box(ws, env);
    return box.call({"id1", name, args.dump()});
  }
  NullEnv env;
};

TEST_F(FileTools, ReadWithLineNumbersAndRange) {
  Observation o = run("read_file", {{"path", "solution/forward.cpp"}, {"offset", 2}, {"limit", 1}});
  EXPECT_TRUE(o.ok);
  EXPECT_EQ(o.text, "     2\tb\n[lines 2-2 of 3; use offset to read on]\n");
  o = run("read_file", {{"path", "nope.txt"}});
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.error_kind, "not_found");
}

TEST_F(FileTools, WriteCreatesParentsAndRefusesEscapes) {
  Observation o = run("write_file", {{"path", "solution/kernels/k.cu"}, {"content", "x\n"}});
  EXPECT_TRUE(o.ok) << o.text;
  EXPECT_EQ(slurp(ws.root() / "solution" / "kernels" / "k.cu"), "x\n");
  for (const char* bad : {"../x", "/tmp/kb-agent-escape", "solution/../../x"}) {
    o = run("write_file", {{"path", bad}, {"content", "pwned"}});
    EXPECT_FALSE(o.ok) << bad;
    EXPECT_EQ(o.error_kind, "path_refused") << bad;
    EXPECT_EQ(o.text.rfind("error: path refused:", 0), 0u) << o.text;
  }
  EXPECT_FALSE(fs::exists(ws.root().parent_path() / "x"));
  EXPECT_FALSE(fs::exists("/tmp/kb-agent-escape"));
  fs::path outside = ws.root().parent_path() / "outside";
  fs::create_directory_symlink(outside, ws.root() / "out");
  o = run("write_file", {{"path", "out/secret.txt"}, {"content", "pwned"}});
  EXPECT_EQ(o.error_kind, "path_refused");
  EXPECT_EQ(slurp(outside / "secret.txt"), "secret\n");
}

TEST_F(FileTools, EditExactOnceWithClearErrors) {
  Observation o = run("edit_file", {{"path", "solution/forward.cpp"}, {"old_string", "b\n"}, {"new_string", "B\n"}});
  EXPECT_TRUE(o.ok) << o.text;
  EXPECT_EQ(slurp(ws.root() / "solution" / "forward.cpp"), "a\nB\na\n");
  o = run("edit_file", {{"path", "solution/forward.cpp"}, {"old_string", "zzz"}, {"new_string", "y"}});
  EXPECT_EQ(o.error_kind, "edit_not_found");
  EXPECT_NE(o.text.find("was not found"), std::string::npos);
  o = run("edit_file", {{"path", "solution/forward.cpp"}, {"old_string", "a\n"}, {"new_string", "c\n"}});
  EXPECT_EQ(o.error_kind, "edit_ambiguous");
  EXPECT_NE(o.text.find("occurs 2 times"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("lines 1, 3"), std::string::npos) << o.text;
  o = run("edit_file", {{"path", "solution/forward.cpp"}, {"old_string", "a\n"}, {"new_string", "c\n"},
                        {"replace_all", true}});
  EXPECT_TRUE(o.ok);
  EXPECT_EQ(slurp(ws.root() / "solution" / "forward.cpp"), "c\nB\nc\n");
  o = run("edit_file", {{"path", "solution/forward.cpp"}, {"old_string", ""}, {"new_string", "c"}});
  EXPECT_EQ(o.error_kind, "bad_arguments");
}

TEST_F(FileTools, GlobAndGrep) {
  run("write_file", {{"path", "solution/kernels/a.cu"}, {"content", "__global__ void k() {}\n"}});
  run("write_file", {{"path", "solution/kernels/b.cuh"}, {"content", "// header\n"}});
  Observation o = run("glob", {{"pattern", "solution/**/*.cu"}});
  EXPECT_EQ(o.text, "solution/kernels/a.cu\n");
  o = run("glob", {{"pattern", "**/*.cu*"}});
  EXPECT_EQ(o.text, "solution/kernels/a.cu\nsolution/kernels/b.cuh\n");
  EXPECT_EQ(run("glob", {{"pattern", "../*"}}).error_kind, "path_refused");
  o = run("grep", {{"pattern", "__global__\\s+void"}});
  EXPECT_EQ(o.text, "solution/kernels/a.cu:1: __global__ void k() {}\n");
  o = run("grep", {{"pattern", "IMPORT"}, {"ignore_case", true}, {"glob", "*.py"}});
  EXPECT_EQ(o.text, "model.py:1: import torch\n");
  EXPECT_EQ(run("grep", {{"pattern", "("}}).error_kind, "bad_arguments");
  EXPECT_EQ(run("grep", {{"pattern", "x"}, {"path", "../"}}).error_kind, "path_refused");
  // A pattern that backtracks exponentially ends (the line is skipped and
  // counted) instead of hanging the process that serves the tool.
  run("write_file", {{"path", "solution/long.txt"}, {"content", std::string(3000, 'a') + "\n"}});
  o = run("grep", {{"pattern", "(a|aa)+(b|c)"}, {"path", "solution/long.txt"}});
  EXPECT_TRUE(o.ok);
  EXPECT_NE(o.text.find("1 lines not searched"), std::string::npos) << o.text;
}

TEST_F(FileTools, BadArgumentsAndUnknownToolsAreObservations) {
  ToolBox box(ws, env);
  Observation o = box.call({"c", "read_file", "{not json"});
  EXPECT_EQ(o.error_kind, "bad_arguments");
  EXPECT_NE(o.text.find("not valid JSON"), std::string::npos);
  o = box.call({"c", "read_file", "[1,2]"});
  EXPECT_EQ(o.error_kind, "bad_arguments");
  o = box.call({"c", "read_file", R"({"path": 3})"});
  EXPECT_NE(o.text.find("'path' must be a string"), std::string::npos);
  o = box.call({"c", "write_file", R"({"path": "x"})"});
  EXPECT_NE(o.text.find("missing required argument 'content'"), std::string::npos);
  o = box.call({"c", "rm_rf", "{}"});
  EXPECT_EQ(o.error_kind, "unknown_tool");
  EXPECT_NE(o.text.find("the tools are: bash, read_file"), std::string::npos);
  o = box.call({"c", "finish", ""});
  EXPECT_TRUE(o.finish);
}

TEST(Text, CapAndGlob) {
  bool cut = false;
  std::string s(1000, 'x');
  std::string c = capText(s, 100, &cut);
  EXPECT_TRUE(cut);
  EXPECT_NE(c.find("characters left out"), std::string::npos);
  EXPECT_EQ(capText("short", 100, &cut), "short");
  EXPECT_FALSE(cut);
  EXPECT_TRUE(globMatch("**", "a/b/c"));
  EXPECT_TRUE(globMatch("a/**/c", "a/c"));
  EXPECT_TRUE(globMatch("*.cu", "k.cu"));
  EXPECT_FALSE(globMatch("*.cu", "kernels/k.cu"));
  EXPECT_TRUE(globMatch("kernels/[ab].cu", "kernels/b.cu"));
}

// ---- pool and trajectory files -------------------------------------------

TEST(Pool, EachSlotExclusive) {
  ResourcePool pool("gpu", {"0", "1"});
  std::atomic<int> holders[2] = {0, 0};
  std::atomic<bool> overlap{false};
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i)
    ts.emplace_back([&, i] {
      auto lease = pool.acquire("job" + std::to_string(i));
      int slot = std::stoi(lease.slot());
      if (holders[slot].fetch_add(1) != 0) overlap = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      holders[slot].fetch_sub(1);
    });
  for (auto& t : ts) t.join();
  EXPECT_FALSE(overlap);
  EXPECT_EQ(pool.maxConcurrent(), 2u);
  Json tl = pool.timeline();
  ASSERT_EQ(tl.size(), 8u);
  // No two leases of one slot overlap in time.
  for (size_t a = 0; a < tl.size(); ++a)
    for (size_t b = a + 1; b < tl.size(); ++b)
      if (tl[a]["slot"] == tl[b]["slot"])
        EXPECT_TRUE(tl[a]["end_s"].get<double>() <= tl[b]["start_s"].get<double>() ||
                    tl[b]["end_s"].get<double>() <= tl[a]["start_s"].get<double>());
}

TEST(Pool, FirstComeFirstServed) {
  // One slot, held; waiters that arrive one after another get it in that
  // order, however the condition variable wakes them.
  ResourcePool pool("gpu", {"0"});
  std::optional<ResourcePool::Lease> first(pool.acquire("holder"));
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> ts;
  for (int i = 0; i < 6; ++i) {
    ts.emplace_back([&, i] {
      auto lease = pool.acquire("job" + std::to_string(i));
      std::lock_guard lock(mu);
      order.push_back(i);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // each waits before the next asks
  }
  first.reset();
  for (auto& t : ts) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(Pool, TryAcquireNeverOvertakesAWaiter) {
  // A free slot is taken at once; none is taken while the pool is full, nor
  // while someone waits for a slot (kbserve's hold slots: the first in line
  // keeps its turn).
  ResourcePool pool("held-profile", {"0", "1"});
  std::optional<ResourcePool::Lease> a = pool.tryAcquire("a");
  ASSERT_TRUE(a.has_value());
  std::optional<ResourcePool::Lease> b = pool.tryAcquire("b");
  ASSERT_TRUE(b.has_value());
  EXPECT_NE(a->slot(), b->slot());
  EXPECT_FALSE(pool.tryAcquire("c").has_value());  // full
  std::atomic<bool> waiter_has_it{false};
  std::thread waiter([&] {
    auto lease = pool.acquire("waiter");
    waiter_has_it = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the waiter is queued
  a.reset();
  waiter.join();
  EXPECT_TRUE(waiter_has_it);
  std::optional<ResourcePool::Lease> d = pool.tryAcquire("d");  // the waiter's slot is free again
  EXPECT_TRUE(d.has_value());
  EXPECT_EQ(pool.maxConcurrent(), 2u);
}

TEST(Trajectory, AppendRepairAndResumeSet) {
  fs::path f = tempDir("traj") / "t.jsonl";
  {
    TrajectoryWriter w(f);
    w.append({{"rollout_id", "a#0"}, {"x", "caf\xc3\xa9"}});
    w.append({{"rollout_id", "a#1"}, {"bad_utf8", std::string("\xff\xfe")}});
  }
  std::ofstream(f, std::ios::app) << R"({"rollout_id": "a#2", "trunc)";  // interrupted write
  size_t skipped = 0;
  EXPECT_EQ(readTrajectories(f, &skipped).size(), 2u);
  EXPECT_EQ(skipped, 1u);
  EXPECT_EQ(finishedRollouts(f), (std::set<std::string>{"a#0", "a#1"}));
  {
    TrajectoryWriter w(f);  // cuts the partial line
    w.append({{"rollout_id", "a#2"}});
  }
  EXPECT_EQ(readTrajectories(f, &skipped).size(), 3u);
  EXPECT_EQ(skipped, 0u);
}

TEST(Trajectory, ASecondWriterIsRefusedWhileTheFirstHoldsTheFile) {
  fs::path f = tempDir("lock") / "t.jsonl";
  {
    TrajectoryWriter first(f);
    first.append({{"rollout_id", "a#0"}});
    try {
      TrajectoryWriter second(f);
      FAIL() << "a second writer on a locked output was accepted";
    } catch (const OutputBusy& e) {
      EXPECT_NE(std::string(e.what()).find("locked by another kbrollout"), std::string::npos) << e.what();
    }
    first.append({{"rollout_id", "a#1"}});
  }
  TrajectoryWriter again(f);  // the lock goes with the first writer
  EXPECT_EQ(again.recordsAtOpen(), 2u);
  EXPECT_EQ(readTrajectories(f).size(), 2u);
}

TEST(Trajectory, ACorruptFileIsRefusedWithItsLineNumber) {
  fs::path f = tempDir("corrupt") / "t.jsonl";
  // What two unlocked writers left: a line holding the halves of two records.
  std::ofstream(f) << R"({"rollout_id": "a#0"})" << "\n"
                   << R"({"rollout_id": "a#1", "x": {"rollout_id": "a#2"})" << "\n"
                   << R"({"rollout_id": "a#3"})" << "\n";
  try {
    TrajectoryWriter w(f);
    FAIL() << "a corrupt output was resumed";
  } catch (const CorruptOutput& e) {
    EXPECT_NE(std::string(e.what()).find(f.string() + ":2: not JSON"), std::string::npos) << e.what();
  }
  std::ofstream(f) << R"({"rollout_id": "a#0"})" << "\n" << R"([1, 2])" << "\n";
  EXPECT_THROW(TrajectoryWriter w(f), CorruptOutput);
  std::ofstream(f) << R"({"rollout_id": "a#0"})" << "\n" << R"({"id": 1})" << "\n";
  EXPECT_THROW(TrajectoryWriter w(f), CorruptOutput);
  EXPECT_EQ(readTrajectories(f).size(), 2u);  // nothing was cut from a refused file
}

TEST(Trajectory, InfraErrorsAreNotFinished) {
  fs::path f = tempDir("infra") / "t.jsonl";
  {
    TrajectoryWriter w(f);
    w.append({{"rollout_id", "a#0"}, {"status", "ok"}});
    w.append({{"rollout_id", "a#1"}, {"status", "infra_error"}});
    w.append({{"rollout_id", "a#2"}, {"status", "infra_error"}});
    w.append({{"rollout_id", "a#2"}, {"status", "incorrect"}});  // redone later
  }
  EXPECT_EQ(finishedRollouts(f), (std::set<std::string>{"a#0", "a#2"}));
  TrajectoryWriter w(f);
  EXPECT_EQ(w.finished(), (std::set<std::string>{"a#0", "a#2"}));
  EXPECT_EQ(w.lastStatus().at("a#1"), "infra_error");
}

TEST(Trajectory, AnUnwritableOutputIsAUsageError) {
  fs::path d = tempDir("unwritable");
  std::ofstream(d / "file") << "x";
  EXPECT_THROW(TrajectoryWriter w(d / "file" / "t.jsonl"), UsageError);
}

TEST(Seeds, EachSampleOfATaskGetsItsOwnReproducibleSeed) {
  std::set<int64_t> seen;
  for (int k = 0; k < 64; ++k) {
    int64_t s = sampleSeed(1, "level1/gemm", k);
    EXPECT_GE(s, 0);
    EXPECT_LT(s, int64_t{1} << 31);
    EXPECT_EQ(s, sampleSeed(1, "level1/gemm", k));
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_NE(sampleSeed(1, "level1/gemm", 0), sampleSeed(2, "level1/gemm", 0));
  EXPECT_NE(sampleSeed(1, "level1/gemm", 0), sampleSeed(1, "level1/relu", 0));
  // The documented derivation (docs/kbrollout.md "Seeds"), pinned.
  std::string hex = sha256Hex("kbrollout-seed-v1\n1\nlevel1/gemm\n0");
  uint64_t v = std::stoull(hex.substr(0, 16), nullptr, 16);
  EXPECT_EQ(sampleSeed(1, "level1/gemm", 0), static_cast<int64_t>((v & 0x7fffffffffffffffULL) % 0x80000000ULL));
}

// A family of one answer, as kbtrain's toy family is: no tools, the first
// reply ends the episode (or, when `nudge` is set, is nudged like
// kbrollout's), and judge() records what it was shown.
class OneAnswer : public Episode {
 public:
  std::optional<std::string> nudge;
  std::string answer;
  std::vector<Message> prompt() override {
    return {{.role = "system", .content = "answer"}, {.role = "user", .content = "2 + 2?"}};
  }
  std::vector<ToolSpec> tools() override { return {}; }
  Observation call(const ToolCall&) override {
    Observation o;
    o.ok = false;
    o.text = "no tools";
    return o;
  }
  std::optional<std::string> replyWithoutTools(const Completion& reply) override {
    answer = reply.content;
    return nudge;
  }
  void judge(Json& record, const RolloutOptions&) override {
    record["status"] = answer == "4" ? "ok" : "incorrect";
    record["reward"] = {{"value", answer == "4" ? 1 : -1}};
  }
  std::string solutionHash() override { return "sha256:none"; }
};

TEST(Episode, OneReplyIsTheAnswerAndThePresampledPolicyGivesIt) {
  Completion four;
  four.content = "4";
  four.finish_reason = "stop";
  four.token_ids = {52};
  PresampledPolicy policy({four}, {{"kind", "presampled"}});
  OneAnswer episode;
  RolloutOptions options;
  options.sampling.seed = 3;
  options.same_seed = true;
  Json r = runEpisode({.tool = "test-family", .task_id = "sum", .sample = 2, .workspace = ""}, episode, policy,
                      options);
  EXPECT_EQ(r["tool"], "test-family");
  EXPECT_EQ(r["rollout_id"], "sum#2");
  EXPECT_EQ(r["policy"]["kind"], "presampled");
  EXPECT_EQ(r["sampling"]["seed"], 3);
  EXPECT_FALSE(r.contains("workspace"));
  EXPECT_EQ(r["end"]["reason"], "finish");
  EXPECT_EQ(r["turns"].size(), 1u);
  EXPECT_EQ(r["turns"][0]["response"]["token_ids"], Json({52}));
  EXPECT_EQ(r["messages"].size(), 3u);
  EXPECT_EQ(r["status"], "ok");
  EXPECT_EQ(r["reward"]["value"], 1);
}

TEST(Episode, APresampledPolicyOutOfRepliesIsAPolicyError) {
  // Nudged after its one reply, the episode asks again: the policy has
  // nothing left, so the rollout ends infra_error, unjudged.
  Completion five;
  five.content = "5";
  PresampledPolicy policy({five}, {{"kind", "presampled"}});
  OneAnswer episode;
  episode.nudge = "Think again.";
  Json r = runEpisode({.tool = "test-family", .task_id = "sum", .sample = 0, .workspace = ""}, episode, policy,
                      RolloutOptions{});
  EXPECT_EQ(r["end"]["reason"], "policy_error");
  EXPECT_EQ(r["turns"].size(), 2u);
  EXPECT_EQ(r["turns"][0]["nudge"], "Think again.");
  EXPECT_EQ(r["status"], "infra_error");
  EXPECT_EQ(r["solution_hash"], "sha256:none");
  EXPECT_TRUE(r["reward"]["value"].is_null());
  EXPECT_EQ(r["messages"].size(), 4u);  // system, user, the reply, the nudge
}
