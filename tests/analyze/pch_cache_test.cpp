// The precompiled-header cache of `kbcheck static` (lib/analyze/driver.cpp,
// issue 18). A PCH records the path, size and mtime of every file it read;
// the PCH that was keyed on the interface header's content but read it from
// the source tree stopped loading after a new clone or a `touch`, and every
// check then ended without a verdict on the solution. Here: a second tree
// (new path, new mtimes), touched headers, a deleted first tree, a copied
// cache, two trees at once on one cache, and corrupt or stale PCHs all give
// the verdicts of the first run, and the PCH is shared and stays valid.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <tuple>

#include "analyze/analyze.h"
#include "analyze/policy.h"
#include "analyze/render.h"
#include "solution/solution.h"

namespace fs = std::filesystem;

namespace {

fs::path sourceRoot() {
  const char* root = std::getenv("KB_SOURCE_ROOT");
  return root ? fs::path(root) : fs::current_path();
}

const char* kOk = "testdata/solutions/vec_gelu";          // clean: ok
const char* kBad = "tests/analyze/cases/environment";     // static_violation

struct Verdict {
  kb::Status status = kb::Status::InfraError;
  std::set<std::tuple<std::string, unsigned, std::string>> findings;  // file, line, rule
  bool parsed = false;
  bool fallback = false;
  std::string errors;  // Clang's diagnostics and the infra message, for failures

  bool sameAs(const Verdict& o) const {
    return status == o.status && findings == o.findings && parsed == o.parsed;
  }
};

std::string show(const Verdict& v) {
  std::string s = "status " + std::string(kb::statusName(v.status)) + (v.parsed ? ", parsed" : ", NOT parsed") +
                  (v.fallback ? ", PCH fallback" : "") + ", findings:";
  for (const auto& [file, line, rule] : v.findings) s += " " + file + ":" + std::to_string(line) + "[" + rule + "]";
  return s + "\n" + v.errors;
}

// Every file under `dir` gets an mtime `hours` from now: a clone or a touch.
void touchAll(const fs::path& dir, int hours) {
  const auto when = fs::file_time_type::clock::now() + std::chrono::hours(hours);
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) fs::last_write_time(e.path(), when);
}

class PchCache : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("kb_pch_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    cache_ = root_ / "cache";
    policy_ = kb::analyze::loadStaticPolicy(sourceRoot() / "policy" / "default.json");
  }
  void TearDown() override { fs::remove_all(root_); }

  // The interface include tree as a new clone has it: another path, new mtimes.
  fs::path cloneInclude(const std::string& name, int hours) {
    const fs::path to = root_ / name / "include";
    fs::create_directories(to.parent_path());
    fs::copy(sourceRoot() / "include", to, fs::copy_options::recursive);
    touchAll(to, hours);
    return to;
  }

  Verdict check(const fs::path& interface_include, const std::string& solution) const {
    kb::analyze::CheckOptions o = kb::analyze::defaultCheckOptions();
    o.interface_include = interface_include;
    o.cache_dir = cache_;
    kb::analyze::StaticResult r = kb::analyze::checkSolution(kb::solution::loadSolution(sourceRoot() / solution), policy_, o);
    Verdict v;
    v.status = kb::analyze::staticStatus(r);
    for (const auto& f : r.findings) v.findings.insert({f.file, f.line, f.rule});
    v.parsed = r.parsed;
    v.fallback = r.pch_fallback;
    for (const auto& e : r.parse_errors) v.errors += e;
    v.errors += r.infra_message;
    return v;
  }

  std::vector<fs::path> pchFiles() const {
    std::vector<fs::path> out;
    if (!fs::exists(cache_ / "pch")) return out;
    for (const auto& e : fs::recursive_directory_iterator(cache_ / "pch"))
      if (e.path().extension() == ".pch") out.push_back(e.path());
    return out;
  }
  size_t pchDirs() const {
    size_t n = 0;
    if (fs::exists(cache_ / "pch"))
      for (const auto& e : fs::directory_iterator(cache_ / "pch")) n += e.is_directory();
    return n;
  }

  // The first run's verdicts, with the checks every later run is held to.
  void baseline(const fs::path& include) {
    ok_ = check(include, kOk);
    ASSERT_EQ(ok_.status, kb::Status::Ok) << show(ok_);
    ASSERT_TRUE(ok_.parsed) << show(ok_);
    ASSERT_TRUE(ok_.findings.empty()) << show(ok_);
    ASSERT_FALSE(ok_.fallback) << show(ok_);
    bad_ = check(include, kBad);
    ASSERT_EQ(bad_.status, kb::Status::StaticViolation) << show(bad_);
    ASSERT_TRUE(bad_.parsed) << show(bad_);
    ASSERT_FALSE(bad_.fallback) << show(bad_);
  }
  // Same verdicts as the baseline; `pch_used`: and from the cached PCH.
  void expectBaseline(const fs::path& include, bool pch_used, const std::string& when) {
    for (const auto& [solution, want] : {std::pair{kOk, &ok_}, std::pair{kBad, &bad_}}) {
      Verdict v = check(include, solution);
      EXPECT_TRUE(v.sameAs(*want)) << when << ", " << solution << ":\n got " << show(v) << "\n want "
                                   << show(*want);
      if (pch_used) {
        EXPECT_FALSE(v.fallback) << when << ", " << solution << ": the PCH did not load\n" << v.errors;
      }
    }
  }

  fs::path root_, cache_;
  kb::analyze::StaticPolicy policy_;
  Verdict ok_, bad_;
};

TEST_F(PchCache, NewCloneTouchAndDeletedTreeKeepTheVerdicts) {
  const fs::path a = cloneInclude("a", 1);
  ASSERT_NO_FATAL_FAILURE(baseline(a));
  EXPECT_EQ(pchDirs(), 1u);
  EXPECT_EQ(pchFiles().size(), 3u);

  const fs::path b = cloneInclude("b", 2);  // a second clone: new path, new mtimes
  expectBaseline(b, true, "second tree");
  EXPECT_EQ(pchDirs(), 1u) << "the same interface content must share one PCH";

  touchAll(a, 3);  // `touch` every header of the first tree
  expectBaseline(a, true, "touched tree");
  expectBaseline(b, true, "second tree after the first was touched");

  fs::remove_all(root_ / "a");  // the tree the PCH was first built from is gone
  expectBaseline(b, true, "first tree deleted");

  // A cache copied or restored with new mtimes: same content, still valid.
  for (const auto& e : fs::recursive_directory_iterator(cache_ / "pch"))
    if (e.is_regular_file() && e.path().extension() != ".pch")
      fs::last_write_time(e.path(), fs::file_time_type::clock::now() + std::chrono::hours(4));
  expectBaseline(b, true, "cache inputs touched");
  EXPECT_EQ(pchDirs(), 1u);
}

TEST_F(PchCache, TwoTreesAtOnceOnOneCache) {
  const fs::path a = cloneInclude("a", 1), b = cloneInclude("b", 2);
  // Both start on an empty cache: they build the PCHs at the same time.
  std::vector<Verdict> got_a, got_b;
  auto run = [&](const fs::path& include, std::vector<Verdict>* out, int hours) {
    for (int round = 0; round < 2; ++round) {
      out->push_back(check(include, kOk));
      out->push_back(check(include, kBad));
      touchAll(include, hours + 10 * round);
    }
  };
  std::thread ta(run, a, &got_a, 3), tb(run, b, &got_b, 5);
  ta.join();
  tb.join();
  ASSERT_EQ(got_a.size(), 4u);
  ASSERT_EQ(got_b.size(), 4u);
  ASSERT_NO_FATAL_FAILURE(baseline(a));
  for (size_t i = 0; i < 4; ++i) {
    const Verdict& want = i % 2 == 0 ? ok_ : bad_;
    for (const Verdict* v : {&got_a[i], &got_b[i]}) {
      EXPECT_TRUE(v->sameAs(want)) << "run " << i << ":\n got " << show(*v) << "\n want " << show(want);
      EXPECT_FALSE(v->fallback) << "run " << i << ": the PCH did not load\n" << v->errors;
    }
  }
  EXPECT_EQ(pchDirs(), 1u);
}

// A PCH that does not load is never the solution's fault: the parse is done
// again without it, with the same verdict, and the next run rebuilds it.
TEST_F(PchCache, CorruptOrStalePchIsParsedWithout) {
  const fs::path a = cloneInclude("a", 1);
  ASSERT_NO_FATAL_FAILURE(baseline(a));
  ASSERT_EQ(pchFiles().size(), 3u);

  for (const fs::path& p : pchFiles()) std::ofstream(p, std::ios::trunc) << "not a precompiled header";
  Verdict v = check(a, kOk);
  EXPECT_TRUE(v.sameAs(ok_)) << "corrupt PCH:\n got " << show(v);
  EXPECT_TRUE(v.fallback) << show(v);
  EXPECT_TRUE(v.errors.empty()) << "the PCH's errors must not be reported as the solution's:\n" << v.errors;
  // The corrupt PCHs the parses used were removed; the next run rebuilds them.
  v = check(a, kBad);
  EXPECT_TRUE(v.sameAs(bad_)) << "after a corrupt PCH:\n got " << show(v);
  expectBaseline(a, true, "rebuilt PCH");

  // An input of the PCHs changed in content (here the cache's preludes):
  // the PCHs are stale; same verdicts, then rebuilt from the right preludes.
  int changed = 0;
  for (const auto& e : fs::recursive_directory_iterator(cache_ / "pch"))
    if (e.path().filename() == "prelude.cuh" || e.path().filename() == "prelude.hpp") {
      std::ofstream(e.path(), std::ios::app) << "// changed\n";
      ++changed;
    }
  ASSERT_EQ(changed, 2);
  v = check(a, kOk);
  EXPECT_TRUE(v.sameAs(ok_)) << "stale PCH:\n got " << show(v);
  EXPECT_TRUE(v.fallback) << show(v);
  expectBaseline(a, true, "rebuilt after a stale PCH");

  // A PCH deleted from the cache is built again.
  for (const fs::path& p : pchFiles()) fs::remove(p);
  expectBaseline(a, true, "deleted PCH");
  EXPECT_EQ(pchFiles().size(), 3u);
}

}  // namespace
