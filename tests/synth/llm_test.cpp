// The LLM composer against a real HTTP server started by the test
// (tests/support/http_server.h, 127.0.0.1): the libcurl client, its retries on 5xx / 429 /
// timeouts / dropped connections / malformed bodies / replies without a
// program, the fatal errors, the spend cap, and `kbsynth compose --composer
// llm` end to end (KB_KBSYNTH names the binary).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "http_server.h"
#include "synth/llm.h"
#include "synth/pipeline.h"

using namespace kb::synth;
using kb::test::HttpServer;

namespace {

const char* kProgram = R"(import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


batch_size = 8
in_features = 32
out_features = 16


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
)";

std::string completion(const std::string& content, int pt = 100, int ct = 200) {
  kb::Json j = {{"id", "cmpl-1"},
                {"object", "chat.completion"},
                {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}}, {"finish_reason", "stop"}}}},
                {"usage", {{"prompt_tokens", pt}, {"completion_tokens", ct}, {"total_tokens", pt + ct}}}};
  return j.dump();
}

std::string fenced() { return std::string("Here it is:\n```python\n") + kProgram + "```\n"; }

LlmOptions opts(const HttpServer& s) {
  LlmOptions o;
  o.base_url = s.url();
  o.model = "test-model";
  o.api_key = "test-key";
  o.timeout_s = 0.5;
  o.backoff_s = 0.01;
  o.max_attempts = 3;
  o.budget_tokens = 100000;
  return o;
}

}  // namespace

TEST(Llm, ExtractsTheProgramAndSendsAChatCompletion) {
  HttpServer s;
  s.push({200, completion(fenced())});
  LlmClient c(opts(s));
  LlmResult r = c.completeProgram("sys", "fuse torch.nn.Linear and torch.relu");
  ASSERT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.code, kProgram);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.usage.prompt_tokens, 100);
  EXPECT_EQ(r.usage.completion_tokens, 200);
  auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/v1/chat/completions");
  EXPECT_NE(reqs[0].headers.find("Authorization: Bearer test-key"), std::string::npos);
  kb::Json body = kb::Json::parse(reqs[0].body);
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["content"], "fuse torch.nn.Linear and torch.relu");
  EXPECT_EQ(body["max_tokens"], 2048);
}

TEST(Llm, RetriesServerErrorsTimeoutsHangUpsAndMalformedReplies) {
  HttpServer s;
  s.push({500, R"({"error": "overloaded"})"});
  s.push({200, "this is not json"});
  s.push({200, completion(fenced())});
  LlmOptions o = opts(s);
  o.max_attempts = 4;
  LlmClient c(o);
  LlmResult r = c.completeProgram("sys", "user");
  ASSERT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.attempts, 3);
  ASSERT_EQ(r.attempt_log.size(), 3u);
  EXPECT_EQ(r.attempt_log[0]["outcome"], "http_500");
  EXPECT_EQ(r.attempt_log[1]["outcome"], "malformed_reply");
  EXPECT_EQ(r.attempt_log[2]["outcome"], "ok");

  HttpServer t;
  t.push({200, completion(fenced()), 1.5});   // slower than the 0.5 s timeout
  t.push({0, "", 0, true});                   // connection closed without a reply
  t.push({429, R"({"error": "rate limited"})"});
  t.push({200, completion(fenced())});
  LlmClient d(opts(t));
  LlmOptions o2 = opts(t);
  o2.max_attempts = 4;
  LlmClient e(o2);
  LlmResult q = e.completeProgram("sys", "user");
  ASSERT_TRUE(q.ok) << q.message;
  EXPECT_EQ(q.attempt_log[0]["outcome"], "timeout");
  EXPECT_EQ(q.attempt_log[1]["outcome"], "transport_error");
  EXPECT_EQ(q.attempt_log[2]["outcome"], "http_429");
  EXPECT_EQ(q.attempts, 4);
}

TEST(Llm, RepliesWithoutAProgramAreRetriedThenGivenUp) {
  HttpServer s;
  s.setDefault({200, completion("I cannot help with that.")});
  LlmClient c(opts(s));
  LlmResult r = c.completeProgram("sys", "user");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "retries_exhausted");
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(s.requests().size(), 3u);
  EXPECT_EQ(r.attempt_log[0]["outcome"], "no_program");
  // A fenced block without the KernelBench functions is not a program either.
  s.push({200, completion("```python\nprint(1)\n```")});
  s.push({200, completion(fenced())});
  LlmResult q = c.completeProgram("sys", "user");
  EXPECT_TRUE(q.ok);
  EXPECT_EQ(q.attempts, 2);
}

TEST(Llm, ErrorPaths) {
  {
    HttpServer s;
    s.push({401, R"({"error": "bad key"})"});
    LlmClient c(opts(s));
    EXPECT_THROW(c.completeProgram("sys", "user"), LlmFatal);
  }
  {
    HttpServer s;
    s.push({400, R"({"error": "context too long"})"});
    LlmClient c(opts(s));
    LlmResult r = c.completeProgram("sys", "user");
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.reason, "bad_request");
    EXPECT_EQ(r.attempts, 1);
  }
  {
    int port;
    {
      HttpServer gone;
      port = gone.port();
    }  // nothing listens there now
    LlmOptions o;
    o.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
    o.model = "m";
    o.backoff_s = 0.01;
    o.max_attempts = 2;
    LlmClient c(o);
    LlmResult r = c.completeProgram("sys", "user");
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.reason, "retries_exhausted");
    EXPECT_EQ(r.attempt_log[0]["outcome"], "transport_error");
  }
}

TEST(Llm, SpendCapStopsBeforeTheRequest) {
  HttpServer s;
  s.setDefault({200, completion(fenced(), 1000, 1500)});
  LlmOptions o = opts(s);
  o.max_tokens = 2000;
  o.budget_tokens = 4000;  // the first request fits (0 + 2000); the second would not (2500 spent + 2000)
  LlmClient c(o);
  EXPECT_TRUE(c.completeProgram("sys", "user").ok);
  LlmResult r = c.completeProgram("sys", "user");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "budget_exhausted");
  EXPECT_EQ(s.requests().size(), 1u);
  // Dollars: 1000 prompt tokens at $1/M and 1500 at $2/M = $0.004 a request.
  LlmOptions d = opts(s);
  d.budget_tokens = 0;
  d.max_tokens = 1500;
  d.price_in = 1.0;
  d.price_out = 2.0;
  d.budget_usd = 0.006;
  LlmClient cd(d);
  EXPECT_TRUE(cd.completeProgram("sys", "user").ok);
  EXPECT_EQ(cd.completeProgram("sys", "user").reason, "budget_exhausted");
}

TEST(Llm, PromptNamesTheSampledOperators) {
  Catalog cat = loadCatalog(defaultCatalogPath());
  Composed chain = sampleChain(cat, Profile::byName("tiny"), 3, 5, 0);
  ASSERT_TRUE(chain.ok);
  std::string p = llmUserPrompt(chain, cat);
  for (const auto& n : chain.ops) EXPECT_NE(p.find(n), std::string::npos) << n;
  EXPECT_NE(llmSystemPrompt().find("get_init_inputs"), std::string::npos);
}

TEST(Llm, KbsynthComposeWithTheLlmComposer) {
  const char* kbsynth = std::getenv("KB_KBSYNTH");
  if (!kbsynth || !*kbsynth) GTEST_SKIP() << "KB_KBSYNTH not set";
  namespace fs = std::filesystem;
  fs::path out = fs::temp_directory_path() / ("kbsynth-llm-test-" + std::to_string(::getpid()));
  fs::remove_all(out);
  HttpServer s;
  s.push({503, R"({"error": "warming up"})"});
  s.setDefault({200, completion(fenced(), 50, 60)});
  std::string base = std::string(kbsynth) + " compose --composer llm -n 4 --seed 3 --profile tiny -o " + out.string() +
                     " --llm-url " + s.url() + " --llm-model canned --llm-backoff 0.01 --llm-timeout 2";
  ASSERT_EQ(std::system(("OPENAI_API_KEY=k " + base + " >/dev/null 2>&1").c_str()), 0);
  auto recs = readManifest(out / "manifest.jsonl");
  ASSERT_EQ(recs.size(), 4u);
  int llm_tasks = 0;
  for (const auto& r : recs) {
    EXPECT_EQ(r["status"], "composed") << r.dump();
    if (r.contains("llm")) {
      ++llm_tasks;
      EXPECT_EQ(r["llm"]["model"], "canned");
      std::ifstream f(out / r["program"].get<std::string>());
      std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      EXPECT_EQ(text, kProgram);
    }
  }
  EXPECT_GE(llm_tasks, 3);
  EXPECT_EQ(recs[0]["llm"]["attempts"], 2);  // the 503 was retried
  EXPECT_NE(s.requests()[0].headers.find("Bearer k"), std::string::npos);
  // The spend cap over the run, resumes included: 8 more tasks with room for 2 requests.
  size_t before = s.requests().size();
  int rc = std::system((base.substr(0, base.find(" -n 4")) + " -n 12" + base.substr(base.find(" -n 4") + 5) +
                        " --llm-budget-tokens " + std::to_string(110 * llm_tasks + 2 * 110 + 2048 - 1) +
                        " --llm-max-tokens 2048 >/dev/null 2>&1")
                           .c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1);  // stopped by the budget
  auto more = readManifest(out / "manifest.jsonl");
  EXPECT_LT(more.size(), 12u);
  EXPECT_GT(more.size(), 4u);
  EXPECT_LE(s.requests().size() - before, 3u);
  // A 401 stops the run with an infrastructure error.
  HttpServer deny;
  deny.setDefault({401, R"({"error": "no"})"});
  fs::path out2 = out.string() + "-401";
  rc = std::system((std::string(kbsynth) + " compose --composer llm -n 2 --profile tiny -o " + out2.string() +
                    " --llm-url " + deny.url() + " --llm-model m >/dev/null 2>&1")
                       .c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 3);
  fs::remove_all(out);
  fs::remove_all(out2);
}
