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

// KernelBench versions (docs/kbsynth.md): a manifest beside the level
// folders, or --kernelbench-version, puts the version in every id and in
// the provenance; today's set (no manifest, no flag) keeps kernelbench/.
TEST(Import, KernelBenchVersionFromTheManifest) {
  fs::path src = fs::path(std::getenv("KB_SOURCE_ROOT")) / "testdata" / "kernelbench-versions";
  auto items = kb::synth::findProblems(src, {});
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0].id, "kernelbench-v0/level1/1_ReLU");
  EXPECT_EQ(items[3].id, "kernelbench-v0/level2/2_Linear_GroupNorm_Mean");
  EXPECT_EQ(items[0].provenance["source"], "kernelbench");
  EXPECT_EQ(items[0].provenance["version"], "v0");
  EXPECT_EQ(items[0].provenance["commit"], "0000000000000000000000000000000000000000");
  // A level folder alone finds the manifest in its parent.
  auto level2 = kb::synth::findProblems(src / "level2", {});
  ASSERT_EQ(level2.size(), 2u);
  EXPECT_EQ(level2[0].id, "kernelbench-v0/level2/1_Linear_Mean_Softmax");
  // The flag agreeing with the manifest changes nothing.
  EXPECT_EQ(kb::synth::findProblems(src, {.kernelbench_version = "v0"})[0].id, "kernelbench-v0/level1/1_ReLU");
  // A flag that contradicts it would make the ids lie.
  EXPECT_NE(expectUsageError([&] { kb::synth::findProblems(src, {.kernelbench_version = "v0.1"}); })
                .find("names version v0"),
            std::string::npos);
}

TEST(Import, KernelBenchVersionFromTheFlag) {
  fs::path src = fs::path(std::getenv("KB_SOURCE_ROOT")) / "testdata" / "tasks-src" / "kernelbench";
  auto items = kb::synth::findProblems(src, {.kernelbench_version = "v0.1"});
  ASSERT_FALSE(items.empty());
  EXPECT_EQ(items[0].id, "kernelbench-v0.1/level1/1_ReLU_Scale");
  EXPECT_EQ(items[0].provenance["version"], "v0.1");
  EXPECT_FALSE(items[0].provenance.contains("commit"));
  EXPECT_EQ(kb::synth::findProblems(src, {})[0].id, "kernelbench/level1/1_ReLU_Scale");
  EXPECT_NE(expectUsageError([&] { kb::synth::findProblems(src, {.kernelbench_version = "v/0"}); })
                .find("not a task id part"),
            std::string::npos);
  // Not a KernelBench source: the flag would mean nothing there.
  fs::path one = src / "level1" / "1_ReLU_Scale.py";
  EXPECT_NE(expectUsageError([&] { kb::synth::findProblems(one, {.kernelbench_version = "v0"}); })
                .find("not a KernelBench folder"),
            std::string::npos);
}

TEST(Import, KernelBenchManifestMustBeOne) {
  fs::path dir = fs::temp_directory_path() / ("kb_manifest_" + std::to_string(::getpid()));
  fs::create_directories(dir / "level1");
  std::ofstream(dir / "level1" / "1_A.py") << "print(1)\n";
  std::ofstream(dir / kb::synth::kKernelBenchManifest) << R"J({"version": "v0"})J";
  std::string no_format = expectUsageError([&] { kb::synth::findProblems(dir, {}); });
  std::ofstream(dir / kb::synth::kKernelBenchManifest) << R"J({"format": "kb-kernelbench-version", "version": "a/b"})J";
  std::string bad_version = expectUsageError([&] { kb::synth::findProblems(dir, {}); });
  std::ofstream(dir / kb::synth::kKernelBenchManifest) << "{not json";
  std::string unreadable = expectUsageError([&] { kb::synth::findProblems(dir, {}); });
  fs::remove_all(dir);
  EXPECT_NE(no_format.find("not a KernelBench version manifest"), std::string::npos) << no_format;
  EXPECT_NE(bad_version.find("not a task id part"), std::string::npos) << bad_version;
  EXPECT_NE(unreadable.find("not a readable KernelBench version manifest"), std::string::npos) << unreadable;
}

}  // namespace
