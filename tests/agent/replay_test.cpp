// The replay policy (lib/agent/replay_policy.h): known solutions submitted
// through the real agent loop on a real CPU task (testdata/tasks/linear_relu):
// write_file, compile (Clang static check + host build), verify (lib/verify
// against the reference), finish, then the final check and the reward. Also
// the policy's own logic (layout, errors, the script, the profile step) on
// hand-made conversations. Variants by sample, with parallel rollouts, are
// in rollout_test.cpp (Runner.ReplayVariantsBySample).
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "agent/replay_policy.h"
#include "agent/rollout.h"

namespace fs = std::filesystem;
using namespace kb;
using namespace kb::agent;
using namespace kb::chat;

namespace {

const fs::path kSource = KB_SOURCE_ROOT_FOR_TESTS;
const fs::path kTask = kSource / "testdata/tasks/linear_relu";
const std::string kTaskId = "testdata/linear_relu";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::trunc) << text;
}

fs::path tempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kb-agent-replay-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

const std::string kGood = slurp(kSource / "testdata/solutions-cpu/ok_linear_relu/forward.cpp");
const std::string kWrong = slurp(kSource / "testdata/solutions-cpu/wrong_result/forward.cpp");

Json replayOne(const fs::path& dir, const std::string& name, int sample = 0) {
  ReplayPolicy policy(dir);
  EnvironmentOptions eo;
  eo.task_dir = kTask;
  eo.task_id = kTaskId;
  std::unique_ptr<Environment> env = makeLibraryEnvironment(eo);
  RolloutOptions options;
  options.limits.max_turns = 20;
  RolloutSpec spec{kTaskId, kTask, sample, tempDir(name) / "ws", kSource / "docs/agent-guide.md",
                   kSource / "include/kb/solution.h"};
  return runRollout(spec, policy, *env, options);
}

std::vector<std::string> calledTools(const Json& t) {
  std::vector<std::string> out;
  for (const Json& turn : t["turns"])
    for (const Json& c : turn["response"]["tool_calls"]) out.push_back(c["name"]);
  return out;
}

const Json& obs(const Json& t, int turn) { return t["turns"][turn]["observations"][0]; }

// A conversation as the rollout builds it: system, task message, then
// assistant/tool pairs.
std::vector<Message> conversation(const std::string& task_id) {
  return {{.role = "system", .content = "guide"},
          {.role = "user", .content = "Task: " + task_id + "\n\nThe reference program ..."}};
}
void answer(std::vector<Message>& msgs, const Completion& r, const std::string& observation) {
  msgs.push_back(assistantMessage(r));
  msgs.push_back({.role = "tool", .content = observation, .tool_call_id = r.tool_calls.at(0).id});
}

}  // namespace

TEST(ReplayPolicy, TaskIdAndName) {
  EXPECT_EQ(replayTaskId(conversation("testdata/linear_relu")), "testdata/linear_relu");
  EXPECT_FALSE(replayTaskId({{.role = "system", .content = "x"}}));
  EXPECT_FALSE(replayTaskId({{.role = "user", .content = "write a kernel"}}));
  EXPECT_EQ(replayName("kernelbench/level1/19_ReLU"), "19_ReLU");
  EXPECT_EQ(replayName("linear_relu"), "linear_relu");
}

TEST(ReplayPolicy, LayoutAndRefusals) {
  fs::path d = tempDir("layout");
  put(d / "README.md", "not a solution\n");
  put(d / "one/forward.cpp", "a");
  put(d / "one/kernels/k.cu", "b");
  put(d / "two/v0/forward.cpp", "c");
  put(d / "two/v1/forward.cpp", "d");
  put(d / "two/v3/forward.cpp", "skipped: v2 is missing");
  ReplayPolicy p(d);
  EXPECT_EQ(p.size(), 2u);
  ASSERT_TRUE(p.find("some/prefix/one"));
  ASSERT_EQ(p.find("one")->size(), 1u);
  const ReplaySolution& one = p.find("one")->front();
  ASSERT_EQ(one.files.size(), 2u);
  EXPECT_EQ(one.files[0].path, "forward.cpp");
  EXPECT_EQ(one.files[1].path, "kernels/k.cu");
  EXPECT_EQ(one.files[1].content, "b");
  ASSERT_EQ(p.find("two")->size(), 2u);
  EXPECT_EQ((*p.find("two"))[1].source, "two/v1");
  EXPECT_FALSE(p.find("three"));
  Json desc = p.describe();
  EXPECT_EQ(desc["kind"], "replay");
  EXPECT_EQ(desc["model"], "replay:layout");
  EXPECT_EQ(desc["tasks"], 2);

  EXPECT_THROW(ReplayPolicy(d / "missing"), UsageError);
  put(d / "bad/notes.txt", "no forward.cpp");
  EXPECT_THROW(ReplayPolicy{d}, UsageError);
  fs::remove_all(d / "bad");
  put(d / "bin/forward.cpp", std::string("\xff\xfe", 2));
  EXPECT_THROW(ReplayPolicy{d}, UsageError);
  fs::remove_all(d / "bin");
  // Issue 38: a 1 GB text file in a replay folder was replayed whole (a
  // 2.25 GB trajectory); every file is held to a solution's limits.
  put(d / "big/forward.cpp", "e");
  put(d / "big/notes.txt", std::string((1 << 20) + 1, 'n'));
  try {
    ReplayPolicy p2(d);
    FAIL() << "a folder with a file over 1 MiB was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("over the limit"), std::string::npos) << e.what();
  }
}

// The script on a CUDA-like conversation: verify ok on cuda:N is followed by
// profile; on the CPU (and after a failed verify) by finish. Each call is
// derived from the conversation alone.
TEST(ReplayPolicy, ScriptFromTheConversation) {
  fs::path d = tempDir("script");
  put(d / "t/forward.cpp", "F");
  put(d / "t/kernels/k.cu", "K");
  ReplayPolicy p(d);
  std::vector<ToolSpec> tools;
  for (const char* n : {"bash", "write_file", "compile", "verify", "profile", "finish"}) tools.push_back({n, "", {}});
  auto script = [&](const std::string& verify_text) {
    std::vector<Message> msgs = conversation("tasks/t");
    std::vector<std::string> calls;
    for (int i = 0; i < 10; ++i) {
      Completion r = p.complete(msgs, tools, {});
      EXPECT_EQ(r.tool_calls.size(), 1u);
      const ToolCall& c = r.tool_calls.at(0);
      calls.push_back(c.name);
      if (c.name == "write_file") {
        Json a = Json::parse(c.arguments);
        calls.back() += " " + a["path"].get<std::string>() + "=" + a["content"].get<std::string>();
      }
      if (c.name == "finish") break;
      answer(msgs, r, c.name == "verify" ? verify_text : "ok");
    }
    return calls;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(script("ok: outputs match the reference on 3 seed(s) (atol 1e-4, rtol 1e-4) on cuda:0\nseed 0: ok"),
            (V{"write_file solution/forward.cpp=F", "write_file solution/kernels/k.cu=K", "compile", "verify",
               "profile", "finish"}));
  EXPECT_EQ(script("ok: outputs match the reference on 3 seed(s) (atol 1e-4, rtol 1e-4) on cpu\nseed 0: ok"),
            (V{"write_file solution/forward.cpp=F", "write_file solution/kernels/k.cu=K", "compile", "verify",
               "finish"}));
  EXPECT_EQ(script("incorrect: seed 0: ... on cuda:0"),
            (V{"write_file solution/forward.cpp=F", "write_file solution/kernels/k.cu=K", "compile", "verify",
               "finish"}));
  // No profile tool offered: none called.
  tools.erase(tools.begin() + 4);
  EXPECT_EQ(script("ok: outputs match the reference on 3 seed(s) (atol 1e-4, rtol 1e-4) on cuda:0"),
            (V{"write_file solution/forward.cpp=F", "write_file solution/kernels/k.cu=K", "compile", "verify",
               "finish"}));
  // A task without a solution: finish at once. No task message: the policy
  // cannot answer (an infra_error, never a reward).
  Completion r = p.complete(conversation("tasks/other"), tools, {});
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "finish");
  EXPECT_THROW(p.complete({{.role = "user", .content = "hello"}}, tools, {}), PolicyError);
}

TEST(ReplayRollout, CorrectSolutionEndsOk) {
  fs::path d = tempDir("good") / "solutions";
  put(d / "linear_relu/forward.cpp", kGood);
  Json t = replayOne(d, "good-run");
  EXPECT_EQ(t["policy"]["kind"], "replay");
  EXPECT_EQ(t["policy"]["model"], "replay:solutions");
  EXPECT_EQ(t["end"]["reason"], "finish");
  // The real tools ran: the file was written, compiled, verified on the CPU.
  EXPECT_EQ(calledTools(t), (std::vector<std::string>{"write_file", "compile", "verify", "finish"}));
  EXPECT_TRUE(obs(t, 0)["ok"]);
  EXPECT_EQ(obs(t, 0)["detail"]["path"], "solution/forward.cpp");
  EXPECT_EQ(obs(t, 1)["detail"]["status"], "ok") << obs(t, 1)["text"];
  EXPECT_EQ(obs(t, 1)["detail"]["report"]["build"]["target"], "cpu");
  EXPECT_EQ(obs(t, 2)["detail"]["status"], "ok") << obs(t, 2)["text"];
  EXPECT_EQ(obs(t, 2)["text"].get<std::string>().rfind("ok: outputs match the reference", 0), 0u);
  EXPECT_EQ(obs(t, 2)["detail"]["report"]["verify"]["device"], "cpu");
  EXPECT_TRUE(obs(t, 3)["detail"]["summary"] == "replayed linear_relu");
  // The final check: ok; a CPU task has no timings, so no reward is made up.
  EXPECT_EQ(t["final"]["stages"]["compile"]["status"], "ok");
  EXPECT_EQ(t["final"]["stages"]["verify"]["status"], "ok");
  EXPECT_EQ(t["status"], "ok");
  EXPECT_TRUE(t["reward"]["value"].is_null());
  EXPECT_EQ(t["reward"]["excluded"], "profile_not_available");
  EXPECT_EQ(t["reward"]["correct"], true);
  EXPECT_EQ(slurp(fs::path(t["workspace"].get<std::string>()) / "solution/forward.cpp"), kGood);
  // No token ids: nothing was sampled.
  EXPECT_TRUE(t["turns"][0]["response"]["token_ids"].is_null());
}

TEST(ReplayRollout, WrongSolutionEndsIncorrectWithMinusOne) {
  fs::path d = tempDir("wrong") / "solutions";
  put(d / "linear_relu/forward.cpp", kWrong);
  Json t = replayOne(d, "wrong-run");
  EXPECT_EQ(calledTools(t), (std::vector<std::string>{"write_file", "compile", "verify", "finish"}));
  EXPECT_EQ(obs(t, 1)["detail"]["status"], "ok") << obs(t, 1)["text"];
  EXPECT_EQ(obs(t, 2)["detail"]["status"], "incorrect") << obs(t, 2)["text"];
  EXPECT_NE(obs(t, 2)["text"].get<std::string>().find("differ by more than"), std::string::npos);
  EXPECT_EQ(t["final"]["stages"]["verify"]["status"], "incorrect");
  EXPECT_FALSE(t["final"]["stages"].contains("profile"));
  EXPECT_EQ(t["status"], "incorrect");
  EXPECT_EQ(t["reward"]["value"], -1);
  EXPECT_EQ(t["reward"]["correct"], false);
}

TEST(ReplayRollout, TaskWithoutASolutionGivesUp) {
  fs::path d = tempDir("none") / "solutions";
  put(d / "other_task/forward.cpp", kGood);
  Json t = replayOne(d, "none-run");
  EXPECT_EQ(calledTools(t), (std::vector<std::string>{"finish"}));
  EXPECT_EQ(t["end"]["turns"], 1);
  // The workspace's skeleton is what gets checked: it builds and fails at run time.
  EXPECT_EQ(t["final"]["stages"]["compile"]["status"], "ok");
  EXPECT_EQ(t["status"], "runtime_error");
  EXPECT_EQ(t["reward"]["value"], -1);
}
