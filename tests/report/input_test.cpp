// The reader: formats (object, array, JSONL, directories), joining kbcheck and
// kbprof reports, and robustness: every skipped or doubtful record is named.
#include "reward/input.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "report/render.h"
#include "reward/reward.h"

namespace kb::report {
namespace {

using namespace kb::reward;  // a report is built on the scoring's types

std::string root() {
  const char* r = std::getenv("KB_SOURCE_ROOT");
  return r ? r : ".";
}

Input fromText(const std::string& text) {
  RawInput raw;
  parseText(text, "in", raw);
  return assemble(std::move(raw));
}

const Warning* find(const Input& in, const std::string& kind) {
  for (const Warning& w : in.warnings)
    if (w.kind == kind) return &w;
  return nullptr;
}

const std::string kTimings =
    R"("timings":{"eager":{"median_ms":2.0,"ci95_low_ms":1.9,"ci95_high_ms":2.1,"n":50},)"
    R"("compile":{"median_ms":1.5},"candidate":{"median_ms":1.0,"mean_ms":1.1,"min_ms":0.9}})";

TEST(Input, CombinedRecordsAsJsonl) {
  Input in = fromText("{\"task_id\":\"a\",\"level\":1,\"status\":\"ok\"," + kTimings +
                      "}\n\n{\"task_id\":\"b\",\"source\":\"synth\",\"status\":\"incorrect\"}\n");
  ASSERT_EQ(in.candidates.size(), 2u);
  EXPECT_TRUE(in.warnings.empty());
  const Candidate& a = in.candidates[0];
  EXPECT_EQ(a.status, Status::Ok);
  EXPECT_EQ(groupOf(a), "level 1");
  ASSERT_TRUE(a.timings.eager && a.timings.compile && a.timings.candidate);
  EXPECT_EQ(a.timings.eager->median_ms, 2.0);
  EXPECT_EQ(a.timings.eager->ci95_low_ms, 1.9);
  EXPECT_EQ(a.timings.eager->n, 50);
  EXPECT_TRUE(std::isnan(a.timings.compile->ci95_low_ms));  // not given
  EXPECT_EQ(a.timings.candidate->min_ms, 0.9);
  EXPECT_EQ(groupOf(in.candidates[1]), "synth");
  EXPECT_EQ(in.candidates[1].status, Status::Incorrect);
}

// No level field: a KernelBench task id's "levelN" part is the group; an
// explicit level wins; an id without one is not guessed.
TEST(Input, LevelFromKernelBenchTaskId) {
  Input in = fromText(
      "{\"task_id\":\"kernelbench/level2/12_Gemm\",\"status\":\"ok\"}\n"
      "{\"task_id\":\"kernelbench/level2/13_X\",\"level\":3,\"status\":\"ok\"}\n"
      "{\"task_id\":\"mine/levelheaded\",\"status\":\"ok\"}\n");
  ASSERT_EQ(in.candidates.size(), 3u);
  EXPECT_EQ(groupOf(in.candidates[0]), "level 2");
  EXPECT_EQ(groupOf(in.candidates[1]), "level 3");
  EXPECT_EQ(groupOf(in.candidates[2]), "other");
}

TEST(Input, PrecisionContractAndClassFromKbprof) {
  Input in = fromText("{\"task_id\":\"a\",\"status\":\"ok\"," + kTimings +
                      ",\"precision\":{\"contract\":{\"name\":\"strict\",\"atol\":1e-4},"
                      "\"candidate_class\":\"fp32\"}}\n{\"task_id\":\"b\",\"status\":\"ok\"," + kTimings + "}\n");
  ASSERT_EQ(in.candidates.size(), 2u);
  EXPECT_EQ(in.candidates[0].precision_contract, "strict");
  EXPECT_EQ(in.candidates[0].precision_class, "fp32");
  EXPECT_EQ(in.candidates[1].precision_contract, "");  // older reports: not said
  Json scored = scoreToJson(in.candidates[0], score(in.candidates[0], Scheme{}), Scheme{});
  EXPECT_EQ(scored["precision"]["contract"], "strict");
  EXPECT_EQ(scored["precision"]["candidate_class"], "fp32");
  EXPECT_TRUE(scoreToJson(in.candidates[1], score(in.candidates[1], Scheme{}), Scheme{})["precision"]["contract"]
                  .is_null());
}

TEST(Input, ArrayAndPrettyObject) {
  Input in = fromText("[{\"task_id\":\"a\",\"status\":\"ok\"}, 3, {\"task_id\":\"b\",\"status\":\"crash\"}]");
  EXPECT_EQ(in.candidates.size(), 2u);
  ASSERT_TRUE(find(in, "not_object"));
  EXPECT_EQ(find(in, "not_object")->items, std::vector<std::string>{"in[1]"});
  Input one = fromText("{\n  \"task_id\": \"x\",\n  \"status\": \"timeout\"\n}\n");
  ASSERT_EQ(one.candidates.size(), 1u);
  EXPECT_EQ(one.candidates[0].status, Status::Timeout);
}

TEST(Input, JoinsCheckAndProfileFiles) {
  RawInput raw;
  readPath(root() + "/testdata/reward/pair", raw);  // a directory: check.json, prof.json
  Input in = assemble(std::move(raw));
  ASSERT_EQ(in.candidates.size(), 1u);
  EXPECT_TRUE(in.warnings.empty());
  const Candidate& c = in.candidates[0];
  EXPECT_EQ(c.task_id, "kernelbench/level1/19_ReLU");
  EXPECT_EQ(c.status, Status::Ok);
  EXPECT_EQ(c.level, 1);  // from the check report
  EXPECT_EQ(c.gpu, "NVIDIA H200");
  EXPECT_EQ(c.driver, "570.86.15");
  EXPECT_EQ(c.timing_method, "cuda_events");
  ASSERT_TRUE(c.timings.candidate);
  EXPECT_EQ(c.timings.candidate->median_ms, 1.20);
  // 2.40 / 1.20 = 2x over eager, 1.60 / 1.20 = 1.33x over compile: both more than 5%.
  EXPECT_EQ(score(c, {}).reward, 3);
}

TEST(Input, CheckFailureWinsOverProfile) {
  Input in = fromText(
      "{\"tool\":\"kbcheck\",\"task_id\":\"a\",\"solution_hash\":\"h\",\"status\":\"incorrect\"}\n"
      "{\"tool\":\"kbprof\",\"task_id\":\"a\",\"solution_hash\":\"h\",\"status\":\"ok\"," + kTimings + "}\n");
  ASSERT_EQ(in.candidates.size(), 1u);
  EXPECT_EQ(in.candidates[0].status, Status::Incorrect);
}

TEST(Input, ProfileStatusCountsAfterAPassingCheck) {
  Input in = fromText(
      "{\"tool\":\"kbcheck\",\"task_id\":\"a\",\"status\":\"ok\"}\n"
      "{\"tool\":\"kbprof\",\"task_id\":\"a\",\"status\":\"hack_detected\"," + kTimings + "}\n");
  EXPECT_EQ(in.candidates[0].status, Status::HackDetected);
}

TEST(Input, SeveralCheckStages) {
  // static passed, verify failed: the failure counts.
  Input a = fromText(
      "{\"tool\":\"kbcheck\",\"stage\":\"static\",\"task_id\":\"a\",\"status\":\"ok\"}\n"
      "{\"tool\":\"kbcheck\",\"stage\":\"verify\",\"task_id\":\"a\",\"status\":\"incorrect\"}\n");
  EXPECT_EQ(a.candidates[0].status, Status::Incorrect);
  // A policy violation is the solution's fault even when a later stage hit an infra error.
  Input b = fromText(
      "{\"tool\":\"kbcheck\",\"stage\":\"static\",\"task_id\":\"a\",\"status\":\"static_violation\"}\n"
      "{\"tool\":\"kbcheck\",\"stage\":\"verify\",\"task_id\":\"a\",\"status\":\"infra_error\"}\n");
  EXPECT_EQ(b.candidates[0].status, Status::StaticViolation);
  Input c = fromText(
      "{\"tool\":\"kbcheck\",\"stage\":\"static\",\"task_id\":\"a\",\"status\":\"ok\"}\n"
      "{\"tool\":\"kbcheck\",\"stage\":\"verify\",\"task_id\":\"a\",\"status\":\"infra_error\"}\n");
  EXPECT_EQ(c.candidates[0].status, Status::InfraError);
}

TEST(Input, DifferentHashesAreDifferentCandidates) {
  Input in = fromText(
      "{\"tool\":\"kbcheck\",\"task_id\":\"a\",\"solution_hash\":\"h1\",\"status\":\"ok\"}\n"
      "{\"tool\":\"kbcheck\",\"task_id\":\"a\",\"solution_hash\":\"h2\",\"status\":\"crash\"}\n");
  ASSERT_EQ(in.candidates.size(), 2u);
  EXPECT_EQ(in.candidates[1].solution_hash, "h2");
}

TEST(Input, ProfileWithoutCheckIsNamed) {
  Input in = fromText("{\"tool\":\"kbprof\",\"task_id\":\"a\",\"status\":\"ok\"," + kTimings + "}\n");
  ASSERT_TRUE(find(in, "no_check"));
  EXPECT_EQ(find(in, "no_check")->items[0], "a");
  EXPECT_EQ(in.candidates[0].status, Status::Ok);
}

TEST(Input, CheckWithoutProfileIsExcludedWhenCorrect) {
  Input in = fromText("{\"tool\":\"kbcheck\",\"task_id\":\"a\",\"status\":\"ok\"}\n");
  Score s = score(in.candidates[0], {});
  EXPECT_EQ(s.excluded, "missing_timings");
  EXPECT_EQ(s.missing, "eager, compile, candidate");
}

TEST(Input, MessyFileIsCountedAndNamed) {
  RawInput raw;
  readPath(root() + "/testdata/reward/messy.jsonl", raw);
  Input in = assemble(std::move(raw));
  const std::string f = root() + "/testdata/reward/messy.jsonl";
  // m1..m7 minus the record without a task_id.
  ASSERT_EQ(in.candidates.size(), 7u);
  ASSERT_TRUE(find(in, "unparsable"));
  EXPECT_EQ(find(in, "unparsable")->items, std::vector<std::string>{f + ":7"});
  ASSERT_TRUE(find(in, "missing_task_id"));
  EXPECT_EQ(find(in, "missing_task_id")->items, std::vector<std::string>{f + ":6"});
  ASSERT_TRUE(find(in, "not_object"));
  EXPECT_EQ(find(in, "not_object")->items, std::vector<std::string>{f + ":12"});
  ASSERT_TRUE(find(in, "mixed_versions"));
  EXPECT_EQ(formatWarning(*find(in, "mixed_versions")),
            "2 kbprof versions in one input: 0.1.0 (1 record), 0.2.0 (1 record)");
  ASSERT_TRUE(find(in, "invalid_timing"));
  EXPECT_EQ(find(in, "invalid_timing")->items[0], "m7 timings.eager.median_ms");
  EXPECT_FALSE(in.candidates[2].status.has_value());
  EXPECT_EQ(in.candidates[2].input_status, "passed");
  EXPECT_FALSE(in.candidates[4].status.has_value());  // m5: no status at all
  EXPECT_EQ(in.candidates[4].input_status, "");
}

TEST(Input, LevelsInSeveralSpellings) {
  Input in = fromText(
      "{\"task_id\":\"a\",\"level\":\"L2\",\"status\":\"ok\"}\n"
      "{\"task_id\":\"b\",\"level\":\"level 3\",\"status\":\"ok\"}\n"
      "{\"task_id\":\"c\",\"level\":\"Level-1\",\"status\":\"ok\"}\n"
      "{\"task_id\":\"d\",\"level\":\"hard\",\"source\":\"x\",\"status\":\"ok\"}\n");
  EXPECT_EQ(groupOf(in.candidates[0]), "level 2");
  EXPECT_EQ(groupOf(in.candidates[1]), "level 3");
  EXPECT_EQ(groupOf(in.candidates[2]), "level 1");
  EXPECT_EQ(groupOf(in.candidates[3]), "x");
  ASSERT_TRUE(find(in, "invalid_level"));
  EXPECT_EQ(find(in, "invalid_level")->items[0], "d (\"hard\")");
}

TEST(Input, DuplicatesKeepTheLaterAndSaySo) {
  Input in = fromText("{\"task_id\":\"a\",\"status\":\"crash\"}\n{\"task_id\":\"a\",\"status\":\"timeout\"}\n");
  ASSERT_EQ(in.candidates.size(), 1u);
  EXPECT_EQ(in.candidates[0].status, Status::Timeout);
  ASSERT_TRUE(find(in, "duplicate"));
  EXPECT_EQ(find(in, "duplicate")->items[0], "a at in:2");
}

TEST(Input, MixedGpusAreNamed) {
  Input in = fromText("{\"task_id\":\"a\",\"status\":\"ok\",\"gpu\":\"NVIDIA H200\"}\n"
                      "{\"task_id\":\"b\",\"status\":\"ok\",\"gpu\":\"NVIDIA H20\"}\n");
  ASSERT_TRUE(find(in, "mixed_gpus"));
  EXPECT_EQ(find(in, "mixed_gpus")->items.size(), 2u);
}

TEST(Input, EmptyInputIsAnError) {
  RawInput raw;
  parseText("", "empty.jsonl", raw);
  try {
    assemble(std::move(raw));
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "empty input: no records in empty.jsonl");
  }
  RawInput blank;
  parseText("  \n\n", "-", blank);
  EXPECT_THROW(assemble(std::move(blank)), UsageError);
}

TEST(Input, NothingUsableIsAnErrorThatSaysWhy) {
  RawInput raw;
  parseText("not json\n{\"status\":\"ok\"}\n", "bad.jsonl", raw);
  try {
    assemble(std::move(raw));
    FAIL() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "no usable record in bad.jsonl: 1 lines that are not JSON (skipped): bad.jsonl:1");
  }
}

TEST(Input, UnreadablePathIsAUsageError) {
  RawInput raw;
  EXPECT_THROW(readPath("/nonexistent/kbreward/input.jsonl", raw), UsageError);
}

TEST(Warning, FormatListsAFewItems) {
  Warning w{"k", "things", {"a", "b", "c", "d"}};
  EXPECT_EQ(formatWarning(w, 2), "4 things: a, b, and 2 more");
  EXPECT_EQ(formatWarning(Warning{"k", "things", {}}), "0 things");
}

}  // namespace
}  // namespace kb::reward
