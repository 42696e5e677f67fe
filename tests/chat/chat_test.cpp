// lib/chat against the tests' HTTP server (tests/support): one POST and
// what it reports (status, body, Retry-After, hang-ups, timeouts), the parse
// of a chat completion, and complete()'s retries. The agent's and the LLM
// composer's tests cover the same client through their own callers.
#include <gtest/gtest.h>

#include "chat/client.h"
#include "http_server.h"

using kb::Json;
using kb::test::HttpReply;
using kb::test::HttpServer;

namespace {

kb::chat::Config config(const HttpServer& s) {
  kb::chat::Config c;
  c.base_url = s.url();
  c.model = "m";
  c.api_key = "k";
  c.timeout_seconds = 0.5;
  c.max_attempts = 3;
  c.backoff_initial_seconds = 0.01;
  c.backoff_max_seconds = 0.05;
  return c;
}

std::string completion(const std::string& content) {
  return Json({{"id", "c1"},
               {"model", "m"},
               {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}},
                             {"finish_reason", "stop"}}}},
               {"usage", {{"prompt_tokens", 7}, {"completion_tokens", 3}}}})
      .dump();
}

}  // namespace

TEST(Chat, PostReportsStatusBodyAndRetryAfter) {
  HttpServer s;
  HttpReply busy{429, "{}"};
  busy.headers = "Retry-After: 3\r\n";
  s.push(busy);
  kb::chat::HttpReply r = kb::chat::post(config(s), R"({"model":"m"})");
  EXPECT_TRUE(r.transport_ok);
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.retry_after, 3);
  auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/chat/completions");
  EXPECT_EQ(reqs[0].authorization, "Bearer k");
  EXPECT_EQ(reqs[0].body, R"({"model":"m"})");
}

TEST(Chat, PostReportsHangUpsAndTimeouts) {
  HttpServer s;
  s.push({0, "", 0, true});
  s.push({200, completion("late"), 1.5});
  kb::chat::HttpReply a = kb::chat::post(config(s), "{}");
  EXPECT_FALSE(a.transport_ok);
  EXPECT_FALSE(a.timed_out);
  kb::chat::HttpReply b = kb::chat::post(config(s), "{}");
  EXPECT_FALSE(b.transport_ok);
  EXPECT_TRUE(b.timed_out);
  kb::chat::Config bad = config(s);
  bad.base_url = "gopher://127.0.0.1:1/v1";
  EXPECT_TRUE(kb::chat::post(bad, "{}").url_unusable);
}

TEST(Chat, ParsesACompletion) {
  kb::chat::Completion c = kb::chat::parseCompletion(completion("hi"));
  EXPECT_TRUE(c.has_content);
  EXPECT_EQ(c.content, "hi");
  EXPECT_EQ(c.prompt_tokens, 7);
  EXPECT_EQ(c.completion_tokens, 3);
  kb::chat::Completion n = kb::chat::parseCompletion(R"({"choices":[{"message":{"content":null}}]})");
  EXPECT_FALSE(n.has_content);
  EXPECT_EQ(n.prompt_tokens, -1);
  EXPECT_THROW(kb::chat::parseCompletion("not json"), kb::chat::BadReply);
  EXPECT_THROW(kb::chat::parseCompletion(R"({"error":{"message":"x"}})"), kb::chat::BadReply);
}

TEST(Chat, CompleteRetriesWhatCanGetBetterAndStopsAtWhatCannot) {
  HttpServer s;
  s.push({503, "{}"});
  s.push({200, "not json"});
  s.push({200, completion("ok")});
  kb::chat::Completion c = kb::chat::complete(config(s), "{}");
  EXPECT_EQ(c.content, "ok");
  EXPECT_EQ(c.attempts, 3);
  ASSERT_EQ(c.retry_errors.size(), 2u);
  EXPECT_NE(c.retry_errors[0].find("HTTP 503"), std::string::npos);

  HttpServer t;
  t.push({400, R"({"error":"too long"})"});
  try {
    kb::chat::complete(config(t), "{}");
    FAIL() << "no RequestError";
  } catch (const kb::chat::RequestError& e) {
    EXPECT_FALSE(e.retryable());
    EXPECT_EQ(e.httpStatus(), 400);
  }
  EXPECT_EQ(t.requests().size(), 1u);

  HttpServer u;
  u.setDefault({500, "{}"});
  EXPECT_THROW(kb::chat::complete(config(u), "{}"), kb::chat::RequestError);
  EXPECT_EQ(u.requests().size(), 3u);
}
