// kbprof's run-time judges (profile/judges.h), one test group each, on
// hand-made figures.
#include "profile/judges.h"

#include <set>

#include <gtest/gtest.h>

namespace kb::profile {
namespace {

TEST(Judges, TheRegistryListsEveryJudgeOnceWithItsPage) {
  std::set<std::string> ids;
  for (const auto& j : runtimeJudges()) {
    EXPECT_TRUE(ids.insert(j.id).second) << j.id;
    EXPECT_EQ(std::string(j.doc), "docs/judges/" + std::string(j.id) + ".md");
  }
  for (const char* id : {"imports", "protocol", "output-checks", "provenance", "precision", "timers", "plausibility"})
    EXPECT_TRUE(ids.count(id)) << id;
}

TEST(Judges, Imports) {
  EXPECT_TRUE(judgeImports({}).ok());
  Judgement j = judgeImports({"dlsym", "_ZN2at4_ops5relu_4callERNS_6TensorE (weak)"});
  EXPECT_EQ(j.status, Status::HackDetected);
  EXPECT_NE(j.message.find("dlsym"), std::string::npos);
  EXPECT_EQ(j.evidence.size(), 2u);
}

TEST(Judges, Protocol) {
  EXPECT_TRUE(judgeProtocol("", true, 12, 12).ok());
  EXPECT_EQ(judgeProtocol("'seed 9' out of turn", true, 12, 12).status, Status::HackDetected);
  EXPECT_EQ(judgeProtocol("", false, 12, 12).status, Status::HackDetected);  // never said done
  EXPECT_EQ(judgeProtocol("", true, 11, 12).status, Status::HackDetected);   // a commit missing
  EXPECT_EQ(judgeProtocol("", true, 0, 0).status, Status::HackDetected);     // no timed call at all
}

TEST(Judges, TimersCatchEventsBelowTheOtherClocks) {
  std::vector<double> ev(20, 1.0), host(20, 1.05), busy(20, 0.95), window(20, 1.3);
  EXPECT_TRUE(judgeTimers(ev, host, busy, window).ok());
  // Events rewritten to a tenth: CUPTI's busy time and kbprof's window say otherwise.
  std::vector<double> forged(20, 0.1);
  Judgement j = judgeTimers(forged, host, busy, window);
  EXPECT_EQ(j.status, Status::HackDetected);
  EXPECT_NE(j.message.find("CUPTI busy 0.95"), std::string::npos) << j.message;
  // Events longer than kbprof's window cannot be either.
  std::vector<double> tiny_window(20, 0.5);
  EXPECT_EQ(judgeTimers(ev, {}, {}, tiny_window).status, Status::HackDetected);
  // A few noisy calls are tolerated (max(2, 10%)).
  std::vector<double> noisy = ev;
  noisy[3] = 0.5;
  noisy[7] = 0.5;
  EXPECT_TRUE(judgeTimers(noisy, host, busy, window).ok());
}

TEST(Judges, ParentClockBoundsEveryCallFromBelow) {
  EXPECT_DOUBLE_EQ(parentLowerBoundMs(5.0, {0.3, 0.5, 0.4}), 4.5);
  EXPECT_DOUBLE_EQ(parentLowerBoundMs(0.2, {0.3, 0.5}), 0.0);
  EXPECT_DOUBLE_EQ(parentLowerBoundMs(5.0, {}), 0.0);
  std::size_t bounded = 0;
  // Honest: events 4 ms in windows of 4.3 ms with null calls up to 0.4 ms.
  std::vector<double> honest = boundByParentClock({4.0, 4.0}, {4.3, 4.35}, {0.3, 0.4}, &bounded);
  EXPECT_EQ(bounded, 0u);
  EXPECT_DOUBLE_EQ(honest[0], 4.0);
  // Events forged to 0.5 ms of a 4 ms call: raised to the window's bound.
  std::vector<double> forged = boundByParentClock({0.5, 0.5}, {4.3, 4.35}, {0.3, 0.4}, &bounded);
  EXPECT_EQ(bounded, 2u);
  EXPECT_NEAR(forged[0], 3.9, 1e-12);
  EXPECT_NEAR(forged[1], 3.95, 1e-12);
}

TEST(Judges, PlausibilityAndProvenanceAndPrecisionPassTheirFindingsOn) {
  Plausibility p;
  EXPECT_TRUE(judgePlausibility(p).ok());
  p.ok = false;
  p.candidate_ms = 0.001;
  p.floor_ms = 0.1;
  EXPECT_EQ(judgePlausibility(p).status, Status::HackDetected);
  ProvenanceReport r;
  EXPECT_TRUE(judgeProvenance(r).ok());
  r.findings.push_back({"harness-id", "timed call 3: kernel k ran during the call under a harness id"});
  Judgement j = judgeProvenance(r);
  EXPECT_EQ(j.status, Status::HackDetected);
  EXPECT_NE(j.message.find("harness-id"), std::string::npos);
  PrecisionReport pr;
  EXPECT_TRUE(judgePrecision(pr).ok());
}

}  // namespace
}  // namespace kb::profile
