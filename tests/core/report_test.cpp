#include "core/report.h"

#include <gtest/gtest.h>

TEST(Status, NamesRoundTrip) {
  for (const char* name : {"ok", "static_violation", "compile_error", "runtime_error", "timeout",
                           "crash", "incorrect", "hack_detected", "infra_error"}) {
    auto s = kb::parseStatus(name);
    ASSERT_TRUE(s.has_value()) << name;
    EXPECT_EQ(kb::statusName(*s), name);
  }
  EXPECT_FALSE(kb::parseStatus("passed").has_value());
}

TEST(ReportHeader, EmptyFieldsBecomeNull) {
  kb::ReportHeader h;
  h.tool = "kbcheck";
  h.status = kb::Status::StaticViolation;
  kb::Json j = kb::headerToJson(h);
  EXPECT_EQ(j["tool"], "kbcheck");
  EXPECT_TRUE(j["task_id"].is_null());
  EXPECT_TRUE(j["gpu"].is_null());
  EXPECT_EQ(j["status"], "static_violation");
  EXPECT_FALSE(j["version"].get<std::string>().empty());
}

TEST(Time, Iso8601Shape) {
  std::string t = kb::nowIso8601();
  ASSERT_EQ(t.size(), 24u) << t;
  EXPECT_EQ(t[10], 'T');
  EXPECT_EQ(t.back(), 'Z');
}
