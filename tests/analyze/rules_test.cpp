// Runs the checker over every case under tests/analyze/cases (each line that
// must be flagged carries `// expect: [rule-id]`, whole-file findings are
// listed in an EXPECT file) and over the legitimate corpus (tests/analyze/legit
// and testdata/solutions), which must come out with no finding at all. The
// expected and actual sets of (file, line, rule) must be equal.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <tuple>

#include "analyze/analyze.h"
#include "analyze/policy.h"
#include "analyze/render.h"
#include "core/error.h"
#include "solution/solution.h"

namespace fs = std::filesystem;
using kb::analyze::Finding;

namespace {

using Key = std::tuple<std::string, unsigned, std::string>;  // file, line, rule

fs::path sourceRoot() {
  const char* root = std::getenv("KB_SOURCE_ROOT");
  return root ? fs::path(root) : fs::current_path();
}

std::vector<std::string> listDirs(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) out.push_back(prefix + e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::set<Key> expectations(const fs::path& dir) {
  std::set<Key> out;
  const std::regex expect_re("//\\s*expect:(.*)$");
  const std::regex rule_re("\\[([a-z0-9-]+)\\]");
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_symlink() || !e.is_regular_file()) continue;
    std::string rel = e.path().lexically_relative(dir).generic_string();
    if (rel == "EXPECT") {
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::smatch m;
        if (std::regex_search(line, m, rule_re))
          out.insert({line.substr(0, line.find(' ')), 0u, m[1]});
      }
      continue;
    }
    std::ifstream in(e.path());
    unsigned n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      std::smatch m;
      if (!std::regex_search(line, m, expect_re)) continue;
      std::string rules = m[1];
      for (std::sregex_iterator it(rules.begin(), rules.end(), rule_re), end; it != end; ++it)
        out.insert({rel, n, (*it)[1]});
    }
  }
  return out;
}

std::string show(const std::set<Key>& keys) {
  std::string s;
  for (const auto& [file, line, rule] : keys) s += "  " + file + ":" + std::to_string(line) + " [" + rule + "]\n";
  return s.empty() ? "  (none)\n" : s;
}

class StaticRules : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    policy_ = new kb::analyze::StaticPolicy(kb::analyze::loadStaticPolicy(sourceRoot() / "policy" / "default.json"));
  }
  static kb::analyze::StaticPolicy* policy_;
};
kb::analyze::StaticPolicy* StaticRules::policy_ = nullptr;

TEST_P(StaticRules, FindingsMatchAnnotations) {
  const fs::path dir = sourceRoot() / GetParam();
  kb::solution::Solution solution = kb::solution::loadSolution(dir);
  kb::analyze::StaticResult r =
      kb::analyze::checkSolution(solution, *policy_, kb::analyze::defaultCheckOptions());
  ASSERT_FALSE(r.infra_failed) << r.infra_message;
  std::set<Key> actual;
  for (const Finding& f : r.findings) actual.insert({f.file, f.line, f.rule});
  std::set<Key> expected = expectations(dir);
  std::set<Key> missing, unexpected;
  std::set_difference(expected.begin(), expected.end(), actual.begin(), actual.end(),
                      std::inserter(missing, missing.end()));
  std::set_difference(actual.begin(), actual.end(), expected.begin(), expected.end(),
                      std::inserter(unexpected, unexpected.end()));
  std::string messages;
  for (const Finding& f : r.findings)
    messages += "  " + f.file + ":" + std::to_string(f.line) + " [" + f.rule + "] " + f.message + "\n";
  EXPECT_TRUE(missing.empty() && unexpected.empty())
      << "missing:\n" << show(missing) << "unexpected:\n" << show(unexpected) << "all findings:\n" << messages;
  if (expected.empty()) {
    // The legitimate corpus must also parse on both sides.
    std::string errors;
    for (const auto& e : r.parse_errors) errors += e;
    EXPECT_TRUE(r.parsed) << errors;
    EXPECT_EQ(kb::analyze::staticStatus(r), kb::Status::Ok);
  } else {
    EXPECT_EQ(kb::analyze::staticStatus(r), kb::Status::StaticViolation);
  }
}

std::vector<std::string> allCases() {
  const fs::path root = sourceRoot();
  std::vector<std::string> cases = listDirs(root / "tests/analyze/cases", "tests/analyze/cases/");
  for (auto& d : listDirs(root / "tests/analyze/legit", "tests/analyze/legit/")) cases.push_back(d);
  for (auto& d : listDirs(root / "testdata/solutions", "testdata/solutions/")) cases.push_back(d);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Corpus, StaticRules, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

TEST(StaticRulesCorpus, EveryRuleHasAViolatingCase) {
  std::set<std::string> covered;
  for (const auto& c : allCases())
    for (const auto& [file, line, rule] : expectations(sourceRoot() / c)) covered.insert(rule);
  const std::set<std::string> rules = {"torch-api", "extern-symbol", "stream-create", "launch-stream",
                                       "host-thread", "process", "file-io", "network", "dynamic-loading",
                                       "environment", "raw-syscall", "memory-protect", "device-control", "raw-alloc",
                                       "interpose", "mutable-global", "library-api", "device-library",
                                       "include", "symlink", "compiler-conditional", "skipped-branch",
                                       "missing-entry", "parser-limit"};
  for (const auto& rule : rules) EXPECT_TRUE(covered.count(rule)) << "no violating case for " << rule;
}

TEST(Policy, SeverityOffAndWarning) {
  const fs::path dir = fs::temp_directory_path() / ("kb_policy_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "p.json") << R"({"rules": {"process": "off", "environment": "warning", "extern-symbol": "warning"},
    "banned": {"environment": {"functions": ["::getenv"], "message": "reads the environment"}}})";
  kb::analyze::StaticPolicy p = kb::analyze::loadStaticPolicy(dir / "p.json");
  EXPECT_EQ(p.severityOf("process"), "off");
  EXPECT_EQ(p.severityOf("environment"), "warning");
  EXPECT_EQ(p.severityOf("torch-api"), "error");

  kb::solution::Solution s = kb::solution::loadSolution(sourceRoot() / "tests/analyze/cases/environment");
  kb::analyze::StaticResult r = kb::analyze::checkSolution(s, p, kb::analyze::defaultCheckOptions());
  ASSERT_FALSE(r.findings.empty());
  for (const auto& f : r.findings)
    if (f.rule == "environment") EXPECT_EQ(f.severity, kb::analyze::Severity::Warning);
  EXPECT_EQ(r.errorCount(), 0u);
  EXPECT_EQ(kb::analyze::staticStatus(r), kb::Status::Ok);  // warnings do not fail a check

  std::ofstream(dir / "bad.json") << R"({"rules": {"process": "loud"}})";
  EXPECT_THROW(kb::analyze::loadStaticPolicy(dir / "bad.json"), kb::UsageError);
  std::ofstream(dir / "broken.json") << "{";
  EXPECT_THROW(kb::analyze::loadStaticPolicy(dir / "broken.json"), kb::UsageError);
  fs::remove_all(dir);
}

// A source Clang cannot parse is a parser limit (nvcc may accept it; the
// build decides): notes, the other findings, status ok.
TEST(StaticCheck, SourceThatDoesNotParseIsAParserLimitNote) {
  const fs::path dir = fs::temp_directory_path() / ("kb_parse_test_" + std::to_string(::getpid()));
  fs::create_directories(dir / "kernels");
  std::ofstream(dir / "forward.cpp") << "#include <kb/solution.h>\nKB_FORWARD(ctx) { int x = ; }\n";
  std::ofstream(dir / "kernels/k.cu") << "__global__ void k( { }\n";
  kb::analyze::StaticPolicy p = kb::analyze::loadStaticPolicy(sourceRoot() / "policy" / "default.json");
  kb::analyze::StaticResult r =
      kb::analyze::checkSolution(kb::solution::loadSolution(dir), p, kb::analyze::defaultCheckOptions());
  EXPECT_FALSE(r.parsed);
  EXPECT_EQ(kb::analyze::staticStatus(r), kb::Status::Ok);
  ASSERT_FALSE(r.parse_errors.empty());
  EXPECT_NE(r.parse_errors[0].find("expected expression"), std::string::npos) << r.parse_errors[0];
  ASSERT_FALSE(r.findings.empty());
  for (const Finding& f : r.findings) {
    EXPECT_EQ(f.rule, "parser-limit") << f.file << ":" << f.line << " " << f.message;
    EXPECT_EQ(f.severity, kb::analyze::Severity::Note);
  }
  fs::remove_all(dir);
}

// In code Clang could not parse, the token scan judges names: a member call
// that shares a banned function's name (`input.clone()` of a published
// solution's tensor, `p->read(...)`) is not that function; the function
// itself is.
TEST(StaticCheck, TokenScanTellsMembersFromTheLibrarysFunctions) {
  const fs::path dir = fs::temp_directory_path() / ("kb_token_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string head =
      "#include <kb/solution.h>\n"
      "struct T { T clone() const { return *this; } int read(int) { return 0; } };\n";
  std::ofstream(dir / "forward.cpp") << head
                                     << "KB_FORWARD(ctx) { T t; T u = t.clone(); T* p = &t; p->read(1); int x = ; }\n";
  kb::analyze::StaticPolicy p = kb::analyze::loadStaticPolicy(sourceRoot() / "policy" / "default.json");
  kb::analyze::StaticResult r =
      kb::analyze::checkSolution(kb::solution::loadSolution(dir), p, kb::analyze::defaultCheckOptions());
  EXPECT_FALSE(r.parsed);
  for (const Finding& f : r.findings) EXPECT_EQ(f.rule, "parser-limit") << f.line << " " << f.message;
  EXPECT_EQ(kb::analyze::staticStatus(r), kb::Status::Ok);

  std::ofstream(dir / "forward.cpp", std::ios::trunc)
      << head << "#include <sched.h>\nKB_FORWARD(ctx) { clone(nullptr, nullptr, 0, nullptr); int x = ; }\n";
  r = kb::analyze::checkSolution(kb::solution::loadSolution(dir), p, kb::analyze::defaultCheckOptions());
  std::set<std::string> rules;
  for (const Finding& f : r.findings) rules.insert(f.rule);
  EXPECT_TRUE(rules.count("host-thread")) << r.findings.size();
  EXPECT_EQ(kb::analyze::staticStatus(r), kb::Status::StaticViolation);
  fs::remove_all(dir);
}

// missing-entry (docs/rules/missing-entry.md): an empty forward.cpp used to
// pass with status ok (issue 18).
TEST(StaticCheck, EntryPointMissingFromAnEmptyForward) {
  const fs::path dir = fs::temp_directory_path() / ("kb_entry_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "forward.cpp") << "";
  kb::analyze::StaticPolicy p = kb::analyze::loadStaticPolicy(sourceRoot() / "policy" / "default.json");
  kb::analyze::StaticResult r =
      kb::analyze::checkSolution(kb::solution::loadSolution(dir), p, kb::analyze::defaultCheckOptions());
  ASSERT_FALSE(r.infra_failed) << r.infra_message;
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].rule, "missing-entry");
  EXPECT_EQ(r.findings[0].file, "forward.cpp");
  EXPECT_EQ(r.findings[0].line, 0u);
  EXPECT_EQ(kb::analyze::staticStatus(r), kb::Status::StaticViolation);

  // The parses are joined: KB_FORWARD in a .cu file is an entry point too.
  fs::create_directories(dir / "kernels");
  std::ofstream(dir / "forward.cpp") << "#include <kb/solution.h>\n";
  std::ofstream(dir / "kernels/entry.cu") << "#include <kb/solution.h>\nKB_FORWARD(ctx) { (void)ctx; }\n";
  r = kb::analyze::checkSolution(kb::solution::loadSolution(dir), p, kb::analyze::defaultCheckOptions());
  EXPECT_TRUE(r.findings.empty()) << r.findings[0].rule << ": " << r.findings[0].message;
  EXPECT_EQ(kb::analyze::staticStatus(r), kb::Status::Ok);

  // Only a definition counts, and the policy can turn the rule off.
  fs::remove(dir / "kernels/entry.cu");
  std::ofstream(dir / "forward.cpp")
      << "#include <kb/solution.h>\nextern \"C\" int32_t kb_forward(const kb_api*, kb_context*);\n";
  r = kb::analyze::checkSolution(kb::solution::loadSolution(dir), p, kb::analyze::defaultCheckOptions());
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].rule, "missing-entry");
  const fs::path off_path = dir.string() + ".off.json";
  std::ofstream(off_path) << R"({"rules": {"missing-entry": "off"}})";
  kb::analyze::StaticPolicy off = kb::analyze::loadStaticPolicy(off_path);
  fs::remove(off_path);
  r = kb::analyze::checkSolution(kb::solution::loadSolution(dir), off, kb::analyze::defaultCheckOptions());
  EXPECT_TRUE(r.findings.empty());
  fs::remove_all(dir);
}

}  // namespace
