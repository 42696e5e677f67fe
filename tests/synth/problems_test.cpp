// lib/synth/problems.h: finding the problems of an import (KernelBench
// level folders, one file, a dataset's rows) and the ids they get.
#include "synth/problems.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "../support/usage_error.h"

namespace fs = std::filesystem;

namespace {

TEST(Import, TaskIds) {
  EXPECT_TRUE(kb::synth::validTaskId("kernelbench/level1/19_ReLU"));
  EXPECT_FALSE(kb::synth::validTaskId("../x"));
  EXPECT_FALSE(kb::synth::validTaskId("/abs"));
  EXPECT_FALSE(kb::synth::validTaskId("a//b"));
  EXPECT_FALSE(kb::synth::validTaskId("a b"));
  EXPECT_EQ(kb::synth::sanitizeIdPart("1_Conv 2d(x)"), "1_Conv_2d_x_");
  EXPECT_EQ(kb::synth::sanitizeIdPart(".."), "_..");
}

TEST(Import, FindsKernelBenchLevels) {
  fs::path src = fs::path(std::getenv("KB_SOURCE_ROOT")) / "testdata" / "tasks-src" / "kernelbench";
  auto items = kb::synth::findProblems(src, {});
  ASSERT_GE(items.size(), 7u);
  EXPECT_EQ(items[0].id, "kernelbench/level1/1_ReLU_Scale");
  EXPECT_EQ(items[0].provenance["level"], 1);
  EXPECT_EQ(items[0].provenance["name"], "1_ReLU_Scale");
  EXPECT_NE(items[0].code.find("class Model"), std::string::npos);
  // One level folder alone gives the same ids.
  auto level2 = kb::synth::findProblems(src / "level2", {});
  ASSERT_FALSE(level2.empty());
  EXPECT_EQ(level2[0].id.rfind("kernelbench/level2/", 0), 0u);
}

TEST(Import, DatasetRows) {
  fs::path f = fs::temp_directory_path() / ("kb_rows_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(f) << R"J({"code": "print(1)", "ops": ["torch.relu"], "data_source": "synth"})J" << "\n"
                   << R"J({"ops": []})J" << "\n"
                   << "not json\n";
  auto items = kb::synth::findProblems(f, {.id = "", .id_prefix = "ops6k", .python = ""});
  fs::remove(f);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].id, "ops6k/00000");
  EXPECT_EQ(items[0].code, "print(1)");
  EXPECT_EQ(items[0].provenance["ops"][0], "torch.relu");
  EXPECT_EQ(items[0].provenance["data_source"], "synth");
  EXPECT_TRUE(items[0].error.empty());
  EXPECT_NE(items[1].error.find("no string column \"code\""), std::string::npos);
  EXPECT_NE(items[2].error.find("not valid JSON"), std::string::npos);
}

TEST(Import, SingleFileAndBadSources) {
  fs::path src = fs::path(std::getenv("KB_SOURCE_ROOT")) / "testdata" / "tasks-src" / "kernelbench" / "level1" /
                 "1_ReLU_Scale.py";
  auto items = kb::synth::findProblems(src, {});
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].id, "file/1_ReLU_Scale");
  items = kb::synth::findProblems(src, {.id = "mine/relu", .id_prefix = "", .python = ""});
  EXPECT_EQ(items[0].id, "mine/relu");
  EXPECT_NE(expectUsageError([] { kb::synth::findProblems("/no/such/thing", {}); }).find("no such file"), std::string::npos);
  EXPECT_NE(expectUsageError([&] { kb::synth::findProblems(src, {.id = "../up", .id_prefix = "", .python = ""}); })
                .find("not a safe relative path"),
            std::string::npos);
}

}  // namespace
