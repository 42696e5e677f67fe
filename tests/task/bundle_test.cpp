// lib/task without torch: task.json parsing, bundle validation, finding
// problems to import.
#include "task/bundle.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/error.h"
#include "../support/usage_error.h"
#include "core/hash.h"

namespace fs = std::filesystem;

namespace {

kb::Json minimalTask() {
  return kb::Json::parse(R"({
    "format": "kb-task", "format_version": 1, "id": "t/one",
    "files": {"model.py": "", "reference.pt": ""},
    "torch_version": "2.11.0", "init": {"seed": 42, "args": []},
    "capture": "script", "generator": "spec",
    "inputs": [
      {"kind": "tensor", "dtype": "float32", "shape": [2, 3], "distribution": "normal",
       "params": {"mean": 0.0, "std": 1.0}},
      {"kind": "tensor", "dtype": "int64", "shape": [2], "distribution": "randint",
       "params": {"low": 0, "high": 10}},
      {"kind": "tensor", "dtype": "float32", "shape": [4], "distribution": "choice",
       "params": {"values": [-1.0, 1.0]}},
      {"kind": "int", "value": 1},
      {"kind": "bool", "value": true}
    ],
    "outputs": [{"dtype": "float32", "shape": [2, 3]}],
    "state": [{"name": "lin.weight", "kind": "parameter", "dtype": "float32", "shape": [3, 3]},
              {"name": "bn.running_mean", "kind": "buffer", "dtype": "float32", "shape": [3]}]
  })");
}

class BundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kb_bundle_test_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "b");
    write("model.py", "print('model')\n");
    write("reference.pt", "not really torchscript");
    kb::Json doc = minimalTask();
    doc["files"]["model.py"] = "sha256:" + kb::sha256Hex("print('model')\n");
    doc["files"]["reference.pt"] = "sha256:" + kb::sha256Hex("not really torchscript");
    kb::writeJsonFile(root_ / "b" / "task.json", doc);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& content) {
    fs::create_directories((root_ / "b" / rel).parent_path());
    std::ofstream(root_ / "b" / rel, std::ios::binary) << content;
  }
  kb::Json doc() { return kb::readJsonFile(root_ / "b" / "task.json"); }
  fs::path root_;
};

TEST(TaskInfo, ParsesEveryField) {
  kb::task::TaskInfo info = kb::task::parseTaskInfo(minimalTask(), "task.json");
  EXPECT_EQ(info.id, "t/one");
  EXPECT_EQ(info.generator, "spec");
  EXPECT_EQ(info.reference_args, "all");
  ASSERT_EQ(info.inputs.size(), 5u);
  EXPECT_EQ(info.inputs[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(info.inputs[1].distribution, "randint");
  EXPECT_EQ(info.inputs[1].b, 10.0);
  EXPECT_EQ(info.inputs[2].values, (std::vector<double>{-1.0, 1.0}));
  EXPECT_EQ(info.inputs[3].kind, "int");
  EXPECT_EQ(info.inputs[4].value, 1.0);
  ASSERT_EQ(info.state.size(), 2u);
  EXPECT_FALSE(info.state[0].buffer);
  EXPECT_TRUE(info.state[1].buffer);
  // An fp32 task without "precision": the strict contract's tolerance.
  EXPECT_EQ(info.precision, "strict");
  EXPECT_EQ(info.atol, 1e-4);
  EXPECT_EQ(info.rtol, 1e-4);
  EXPECT_EQ(info.correctness_seeds, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
}

// Inputs beyond the generator: the seeds verification runs are the task's
// correctness seeds, then domain draws of up to 3 of them (at least 2),
// none when the task declares its generator exhaustive.
TEST(TaskInfo, VerificationSeedsAddDomainDrawsUnlessExhaustive) {
  using kb::task::domainSeed;
  kb::task::TaskInfo info = kb::task::parseTaskInfo(minimalTask(), "task.json");
  EXPECT_FALSE(info.inputs_exhaustive);
  EXPECT_EQ(kb::task::verificationSeeds(info),
            (std::vector<uint64_t>{0, 1, 2, 3, 4, domainSeed(0), domainSeed(1), domainSeed(2)}));
  for (uint64_t s : {0ull, 1ull, 4ull}) {
    EXPECT_FALSE(kb::task::isDomainSeed(s));
    EXPECT_TRUE(kb::task::isDomainSeed(domainSeed(s)));
    EXPECT_EQ(kb::task::generatorSeed(domainSeed(s)), s);
    EXPECT_EQ(kb::task::generatorSeed(s), s);
  }
  // kbprof's timed-call seeds are below 2^63: never a domain draw.
  EXPECT_FALSE(kb::task::isDomainSeed((~0ull) >> 1));
  EXPECT_EQ(kb::task::seedName(3), "seed 3");
  EXPECT_EQ(kb::task::seedName(domainSeed(3)), "domain draw of seed 3");
  EXPECT_EQ(kb::task::describeSeed(domainSeed(3)),
            "domain draw of seed 3 (inputs rescaled/broadened beyond get_inputs)");
  kb::Json d = minimalTask();
  d["correctness_seeds"] = {7};
  EXPECT_EQ(kb::task::verificationSeeds(kb::task::parseTaskInfo(d, "task.json")),
            (std::vector<uint64_t>{7, domainSeed(7), domainSeed(8)}));
  d["correctness_seeds"] = {5, 9};
  EXPECT_EQ(kb::task::verificationSeeds(kb::task::parseTaskInfo(d, "task.json")),
            (std::vector<uint64_t>{5, 9, domainSeed(5), domainSeed(9)}));
  d["inputs_exhaustive"] = true;
  info = kb::task::parseTaskInfo(d, "task.json");
  EXPECT_TRUE(info.inputs_exhaustive);
  EXPECT_EQ(kb::task::verificationSeeds(info), (std::vector<uint64_t>{5, 9}));
  d["inputs_exhaustive"] = "yes";
  EXPECT_NE(expectUsageError([&] { kb::task::parseTaskInfo(d, "x/task.json"); }).find("inputs_exhaustive"),
            std::string::npos);
  d = minimalTask();
  d["correctness_seeds"] = {domainSeed(1)};
  EXPECT_NE(expectUsageError([&] { kb::task::parseTaskInfo(d, "x/task.json"); }).find("2^63"), std::string::npos);
}

// task.json "degenerate" (docs/task-format.md): null or absent is not
// degenerate; an object gives its reason; anything else is bad input.
TEST(TaskInfo, DegenerateReasonIsRead) {
  kb::Json d = minimalTask();
  EXPECT_EQ(kb::task::parseTaskInfo(d, "task.json").degenerate, "");
  d["degenerate"] = nullptr;
  EXPECT_EQ(kb::task::parseTaskInfo(d, "task.json").degenerate, "");
  d["degenerate"] = {{"reason", "the output does not depend on the input"}, {"contracts", {"paper"}},
                     {"checks", {{"input_independent", {"paper"}}}}};
  kb::task::TaskInfo info = kb::task::parseTaskInfo(d, "task.json");
  EXPECT_EQ(info.degenerate, "the output does not depend on the input");
  EXPECT_EQ(info.degenerate_contracts, (std::vector<std::string>{"paper"}));
  d["degenerate"]["contracts"] = {"loose"};
  EXPECT_NE(expectUsageError([&] { kb::task::parseTaskInfo(d, "x/task.json"); }).find("degenerate.contracts"),
            std::string::npos);
  d["degenerate"] = true;
  EXPECT_NE(expectUsageError([&] { kb::task::parseTaskInfo(d, "x/task.json"); }).find("degenerate"),
            std::string::npos);
  d["degenerate"] = kb::Json::object();
  EXPECT_NE(expectUsageError([&] { kb::task::parseTaskInfo(d, "x/task.json"); }).find("degenerate.reason"),
            std::string::npos);
}

TEST(TaskInfo, ErrorsNameTheField) {
  kb::Json d = minimalTask();
  d["inputs"][0].erase("shape");
  EXPECT_NE(expectUsageError([&] { kb::task::parseTaskInfo(d, "x/task.json"); }).find("inputs[0].shape"), std::string::npos);
  d = minimalTask();
  d["inputs"][1]["distribution"] = "poisson";
  EXPECT_NE(expectUsageError([&] { kb::task::parseTaskInfo(d, "x/task.json"); }).find("poisson"), std::string::npos);
  d = minimalTask();
  d["capture"] = "export";
  EXPECT_NE(expectUsageError([&] { kb::task::parseTaskInfo(d, "x/task.json"); }).find("\"capture\""), std::string::npos);
  d = minimalTask();
  d["format_version"] = 99;
  std::string msg = expectUsageError([&] { kb::task::parseTaskInfo(d, "x/task.json"); });
  EXPECT_NE(msg.find("format_version 99"), std::string::npos) << msg;
  EXPECT_NE(msg.find("x/task.json"), std::string::npos) << msg;
}

TEST_F(BundleTest, OpensAValidBundle) {
  kb::task::TaskBundle b = kb::task::openBundle(root_ / "b");
  EXPECT_EQ(b.info.id, "t/one");
  EXPECT_EQ(b.referencePt(), b.dir / "reference.pt");
  EXPECT_TRUE(b.compiledArchs().empty());
}

TEST_F(BundleTest, MissingFolderOrTaskJson) {
  EXPECT_NE(expectUsageError([&] { kb::task::openBundle(root_ / "nope"); }).find("not a task bundle"), std::string::npos);
  fs::remove(root_ / "b" / "task.json");
  EXPECT_NE(expectUsageError([&] { kb::task::openBundle(root_ / "b"); }).find("no task.json"), std::string::npos);
}

TEST_F(BundleTest, CorruptTaskJson) {
  write("task.json", "{\"format_version\": 1, ");
  EXPECT_NE(expectUsageError([&] { kb::task::openBundle(root_ / "b"); }).find("corrupt task.json"), std::string::npos);
}

TEST_F(BundleTest, MissingReference) {
  fs::remove(root_ / "b" / "reference.pt");
  EXPECT_NE(expectUsageError([&] { kb::task::openBundle(root_ / "b"); }).find("missing reference.pt"), std::string::npos);
}

TEST_F(BundleTest, ModifiedReferenceIsCorrupt) {
  write("reference.pt", "truncated");
  std::string msg = expectUsageError([&] { kb::task::openBundle(root_ / "b"); });
  EXPECT_NE(msg.find("reference.pt: corrupt"), std::string::npos) << msg;
}

TEST_F(BundleTest, ScriptedGeneratorNeedsInputsPt) {
  kb::Json d = doc();
  d["generator"] = "scripted";
  kb::writeJsonFile(root_ / "b" / "task.json", d);
  EXPECT_NE(expectUsageError([&] { kb::task::openBundle(root_ / "b"); }).find("missing inputs.pt"), std::string::npos);
}

TEST_F(BundleTest, VersionMismatch) {
  kb::Json d = doc();
  d["format_version"] = 2;
  kb::writeJsonFile(root_ / "b" / "task.json", d);
  EXPECT_NE(expectUsageError([&] { kb::task::openBundle(root_ / "b"); }).find("not supported"), std::string::npos);
}

TEST_F(BundleTest, CompiledChecks) {
  kb::Json d = doc();
  write("compiled/cpu.pt2", "package");
  d["compiled"]["cpu"] = {{"file", "compiled/cpu.pt2"}, {"arch", "cpu"},
                          {"sha256", "sha256:" + kb::sha256Hex("package")}, {"torch_version", "2.11.0"}};
  d["compiled"]["sm_90"] = {{"file", "compiled/sm_90.pt2"}, {"arch", "sm_90"}};
  kb::writeJsonFile(root_ / "b" / "task.json", d);
  kb::task::TaskBundle b = kb::task::openBundle(root_ / "b");
  EXPECT_EQ(b.compiledArchs(), (std::vector<std::string>{"cpu", "sm_90"}));
  EXPECT_FALSE(kb::task::checkCompiled(b, "cpu").has_value());
  EXPECT_NE(kb::task::checkCompiled(b, "sm_90").value_or("").find("missing"), std::string::npos);
  EXPECT_NE(kb::task::checkCompiled(b, "sm_80").value_or("").find("no compiled baseline for sm_80"), std::string::npos);
  write("compiled/cpu.pt2", "other bytes");
  EXPECT_NE(kb::task::checkCompiled(b, "cpu").value_or("").find("corrupt"), std::string::npos);
  // A package recorded for one arch but filed under another.
  write("compiled/sm_90.pt2", "x");
  d["compiled"]["sm_90"]["arch"] = "sm_80";
  kb::writeJsonFile(root_ / "b" / "task.json", d);
  b = kb::task::openBundle(root_ / "b");
  EXPECT_NE(kb::task::checkCompiled(b, "sm_90").value_or("").find("built for sm_80"), std::string::npos);
}

}  // namespace
