// core/policy_file.h: policy names resolve to the shipped files, "extends"
// merges, and the run-time question "may a Python candidate call torch
// operations?" gets the same answer as the static stage's py-torch-compute.
#include "core/policy_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/error.h"

namespace fs = std::filesystem;

namespace {

fs::path freshDir() {
  fs::path d = fs::temp_directory_path() / ("kb-policy-file-test-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

TEST(PolicyFile, NamesResolveToTheShippedFiles) {
  EXPECT_EQ(kb::resolvePolicyFile("paper").filename(), "default.json");
  EXPECT_EQ(kb::resolvePolicyFile("kernelbench").filename(), "kernelbench.json");
  EXPECT_TRUE(fs::exists(kb::resolvePolicyFile("kernelbench")));
  EXPECT_EQ(kb::resolvePolicyFile("some/dir/p.json"), fs::path("some/dir/p.json"));
}

TEST(PolicyFile, TorchOpsFollowThePythonRule) {
  EXPECT_TRUE(kb::policyAllowsTorchOps("kernelbench"));
  EXPECT_FALSE(kb::policyAllowsTorchOps("paper"));
  ::unsetenv("KB_POLICY");
  EXPECT_FALSE(kb::policyAllowsTorchOps(""));  // the default is paper's
}

TEST(PolicyFile, ExtendsMergesRulesAndTheChildWins) {
  fs::path d = freshDir();
  write(d / "base.json", R"({"name": "base", "rules": {"a": "error", "b": "error"},
                              "python_rules": {"py-torch-compute": "off", "py-threads": "error"}})");
  write(d / "child.json", R"({"extends": "base.json", "name": "child", "rules": {"b": "warning"},
                               "python_rules": {"py-torch-compute": "error"}})");
  std::string text;
  kb::Json j = kb::readPolicyFile(d / "child.json", &text);
  EXPECT_EQ(j["name"], "child");
  EXPECT_EQ(j["rules"]["a"], "error");
  EXPECT_EQ(j["rules"]["b"], "warning");
  EXPECT_EQ(j["python_rules"]["py-threads"], "error");
  EXPECT_FALSE(j.contains("extends"));
  EXPECT_NE(text.find("\"base\""), std::string::npos);  // the base's text is hashed too
  EXPECT_TRUE(kb::policyAllowsTorchOps(d / "base.json"));
  EXPECT_FALSE(kb::policyAllowsTorchOps(d / "child.json"));  // the child turned it back on
  write(d / "warn.json", R"({"extends": "base.json", "python_rules": {"py-torch-compute": "warning"}})");
  EXPECT_TRUE(kb::policyAllowsTorchOps(d / "warn.json"));  // reported, not refused
  fs::remove_all(d);
}

TEST(PolicyFile, BadFilesAreUsageErrors) {
  fs::path d = freshDir();
  write(d / "bad.json", "{not json");
  EXPECT_THROW(kb::readPolicyFile(d / "bad.json"), kb::UsageError);
  EXPECT_THROW(kb::readPolicyFile(d / "missing.json"), kb::UsageError);
  write(d / "orphan.json", R"({"extends": "nowhere.json"})");
  EXPECT_THROW(kb::readPolicyFile(d / "orphan.json"), kb::UsageError);
  fs::remove_all(d);
}

}  // namespace
