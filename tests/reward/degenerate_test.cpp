// Degenerate tasks get no reward (lib/reward/degenerate.h, docs/kbreward.md
// "Degenerate tasks"): the flag read from task.json or from a record, the
// contract that decides, the exclusion whatever the candidate did, and
// kbreward --tasks' lookup of bundles with its warning for a task not found.
#include "reward/degenerate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "reward/reward.h"

namespace kb::reward {
namespace {

namespace fs = std::filesystem;

Candidate withStatus(Status s, const std::string& contract) {
  Candidate c;
  c.task_id = "kernelbench-v0/level2/66_Matmul_Dropout_Mean_Softmax";
  c.status = s;
  c.input_status = std::string(statusName(s));
  c.precision_contract = contract;
  Timing t;
  t.median_ms = t.mean_ms = t.min_ms = 1;
  c.timings.eager = c.timings.compile = t;
  t.median_ms = t.mean_ms = t.min_ms = 0.5;
  c.timings.candidate = t;
  return c;
}

TEST(Degenerate, ReadFromTaskJson) {
  EXPECT_FALSE(degenerateOf(Json::object()));
  EXPECT_FALSE(degenerateOf(Json{{"degenerate", nullptr}}));
  EXPECT_FALSE(degenerateOf(Json{{"degenerate", {{"contracts", {"strict"}}}}}));  // no reason: not a flag
  auto both = degenerateOf(Json{{"degenerate", {{"reason", "all ones"}}}});
  ASSERT_TRUE(both);
  EXPECT_EQ(both->reason, "all ones");
  EXPECT_EQ(both->contracts, (std::vector<std::string>{"strict", "paper"}));  // unnamed: both
  auto paper = degenerateOf(Json{{"degenerate", {{"reason", "zeros pass"}, {"contracts", {"paper"}}}}});
  ASSERT_TRUE(paper);
  EXPECT_EQ(paper->contracts, (std::vector<std::string>{"paper"}));
  EXPECT_EQ(degenerateToJson(*paper), (Json{{"reason", "zeros pass"}, {"contracts", {"paper"}}}));
}

TEST(Degenerate, TheJudgesContractDecides) {
  DegenerateTask paper_only{"zeros pass under 1e-2", {"paper"}};
  EXPECT_TRUE(excludedAsDegenerate(paper_only, "paper"));
  EXPECT_FALSE(excludedAsDegenerate(paper_only, "strict"));  // a fair task at 1e-4
  EXPECT_TRUE(excludedAsDegenerate(paper_only, ""));         // unknown: no reward where it may be trivial
  EXPECT_FALSE(excludedAsDegenerate(std::nullopt, "paper"));
}

TEST(Degenerate, ExcludedWhateverTheCandidateDid) {
  for (Status s : {Status::Ok, Status::Incorrect, Status::HackDetected, Status::InfraError}) {
    Candidate c = withStatus(s, "strict");
    c.degenerate_task = DegenerateTask{"all ones", {"strict", "paper"}};
    Score sc = score(c, {});
    EXPECT_EQ(sc.excluded, kDegenerateTask) << statusName(s);
    EXPECT_FALSE(sc.reward.has_value());
    EXPECT_FALSE(sc.correct);
  }
  // Trivial only under the paper contract: a strict judgement scores as usual.
  Candidate c = withStatus(Status::Ok, "strict");
  c.degenerate_task = DegenerateTask{"zeros pass under 1e-2", {"paper"}};
  Score sc = score(c, {});
  EXPECT_EQ(sc.excluded, "");
  EXPECT_EQ(sc.reward, 3);
  c.precision_contract = "paper";
  EXPECT_EQ(score(c, {}).excluded, kDegenerateTask);
}

TEST(Degenerate, RecordsCarryTheFlag) {
  RawInput raw;
  parseText(R"J({"task_id": "a", "status": "ok", "degenerate_task": {"reason": "all ones", "contracts": ["strict"]}}
{"task_id": "b", "status": "incorrect", "degenerate_task": null}
)J", "-", raw);
  Input in = assemble(std::move(raw));
  ASSERT_EQ(in.candidates.size(), 2u);
  ASSERT_TRUE(in.candidates[0].degenerate_task);
  EXPECT_EQ(in.candidates[0].degenerate_task->reason, "all ones");
  EXPECT_FALSE(in.candidates[1].degenerate_task);
}

TEST(Degenerate, TaskRootsGiveTheFlagAndNameWhatIsMissing) {
  fs::path root = fs::temp_directory_path() / ("kb_degenerate_" + std::to_string(::getpid()));
  fs::create_directories(root / "kb-v0" / "level2" / "flat");
  fs::create_directories(root / "kb-v0" / "level1" / "fair");
  std::ofstream(root / "kb-v0" / "level2" / "flat" / "task.json")
      << R"J({"id": "kb-v0/level2/flat", "degenerate": {"reason": "all ones", "contracts": ["strict", "paper"]}})J";
  std::ofstream(root / "kb-v0" / "level1" / "fair" / "task.json") << R"J({"id": "kb-v0/level1/fair", "degenerate": null})J";
  RawInput raw;
  parseText(R"J({"task_id": "kb-v0/level2/flat", "solution_hash": "h1", "status": "incorrect"}
{"task_id": "kb-v0/level2/flat", "solution_hash": "h2", "status": "ok"}
{"task_id": "kb-v0/level1/fair", "status": "incorrect"}
{"task_id": "kb-v0/level1/gone", "status": "incorrect"}
)J", "-", raw);
  Input in = assemble(std::move(raw), {root});
  fs::remove_all(root);
  ASSERT_EQ(in.candidates.size(), 4u);
  EXPECT_TRUE(in.candidates[0].degenerate_task);
  EXPECT_TRUE(in.candidates[1].degenerate_task);
  EXPECT_FALSE(in.candidates[2].degenerate_task);
  EXPECT_FALSE(in.candidates[3].degenerate_task);
  EXPECT_EQ(score(in.candidates[0], {}).excluded, kDegenerateTask);
  EXPECT_EQ(score(in.candidates[2], {}).reward, -1);
  auto w = std::find_if(in.warnings.begin(), in.warnings.end(),
                        [](const Warning& x) { return x.kind == "task_not_found"; });
  ASSERT_NE(w, in.warnings.end());
  EXPECT_EQ(w->items, (std::vector<std::string>{"kb-v0/level1/gone"}));
}

}  // namespace
}  // namespace kb::reward
