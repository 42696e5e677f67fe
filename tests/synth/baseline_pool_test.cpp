// lib/synth's baseline pool with stand-in interpreters (shell scripts in
// place of python3 + scripts/baseline.py).
//
// When its workers crash: a stand-in interpreter
// (a shell script in place of python3 + scripts/baseline.py) that is killed
// by SIGSEGV whenever it builds with another $CXX than /usr/bin/c++, as
// baseline.py was under the GPU machine's /opt/gcc g++ (2026-12-06). The real
// crash needs that machine's compiler; what is tested here is the pool's
// answer to it: every bundle whose worker died that way is built again with
// /usr/bin/c++, not only the first one.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "synth/baseline_pool.h"

namespace fs = std::filesystem;
using kb::synth::BaselinePool;
using kb::synth::BaselinePoolOptions;
using kb::synth::bundleDeviceBytes;

namespace {

// Says hello, then answers each {"dir": ...} line: killed by SIGSEGV after a
// short wait (so that all the workers started together are building) unless
// CXX is /usr/bin/c++.
constexpr const char* kCrashingInterpreter = R"sh(#!/bin/bash
echo "{\"hello\":{\"pid\":$$}}"
while read -r line; do
  dir=$(printf '%s' "$line" | sed -n 's/.*"dir": *"\([^"]*\)".*/\1/p')
  if [ "$CXX" != /usr/bin/c++ ]; then sleep 0.5; kill -SEGV $$; fi
  echo "{\"dir\":\"$dir\",\"id\":\"$(basename "$dir")\",\"status\":\"ok\",\"cxx\":\"$CXX\"}"
done
)sh";

class BaselinePoolCrash : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/bin/c++")) GTEST_SKIP() << "no /usr/bin/c++ to fall back to";
    root_ = fs::temp_directory_path() / ("kb-pool-test-" + std::to_string(::getpid()));
    fs::create_directories(root_ / "scripts");
    std::ofstream(root_ / "scripts" / "baseline.py") << "# not run: the interpreter below stands in for it\n";
    interpreter_ = root_ / "crashing-python";
    std::ofstream(interpreter_) << kCrashingInterpreter;
    fs::permissions(interpreter_, fs::perms::owner_all);
    saved_scripts_ = std::getenv("KB_SCRIPTS_DIR") ? std::getenv("KB_SCRIPTS_DIR") : "";
    saved_cxx_ = std::getenv("CXX") ? std::getenv("CXX") : "";
    ::setenv("KB_SCRIPTS_DIR", (root_ / "scripts").c_str(), 1);
    ::setenv("CXX", "/opt/some-other-gcc/bin/g++", 1);
  }
  void TearDown() override {
    if (root_.empty()) return;
    restore("KB_SCRIPTS_DIR", saved_scripts_);
    restore("CXX", saved_cxx_);
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  static void restore(const char* name, const std::string& value) {
    if (value.empty()) ::unsetenv(name);
    else ::setenv(name, value.c_str(), 1);
  }
  std::string bundle(int i) {
    const fs::path dir = root_ / ("task" + std::to_string(i));
    fs::create_directories(dir);
    std::ofstream(dir / "model.py") << std::string(100 + i, '#') << "\n";
    return dir.string();
  }
  fs::path root_, interpreter_;
  std::string saved_scripts_, saved_cxx_;
};

TEST_F(BaselinePoolCrash, EveryBundleWhoseWorkerDiedWithAnotherCompilerIsBuiltAgainWithTheSystemOne) {
  constexpr int kBundles = 4;
  BaselinePoolOptions o;
  o.device = "cpu";
  o.python = interpreter_.string();
  o.jobs = kBundles;  // all start together, all with the other compiler
  o.expected = kBundles;
  BaselinePool pool(o);
  std::vector<std::string> dirs;
  for (int i = 0; i < kBundles; ++i) pool.add(dirs.emplace_back(bundle(i)));
  const auto results = pool.finish();
  ASSERT_EQ(results.size(), static_cast<size_t>(kBundles));
  for (const auto& d : dirs) {
    ASSERT_TRUE(results.count(d)) << d;
    const kb::Json& r = results.at(d);
    EXPECT_EQ(r.value("status", ""), "ok") << r.dump();
    EXPECT_EQ(r.value("cxx", ""), "/usr/bin/c++") << r.dump();
    EXPECT_NE(r.value("note", "").find("built again with /usr/bin/c++"), std::string::npos) << r.dump();
  }
}

TEST_F(BaselinePoolCrash, ACrashWithTheSystemCompilerIsNotBuiltAgain) {
  // The stand-in crashes on every build: a bundle is tried once with the
  // other compiler and once with /usr/bin/c++, then recorded as died.
  std::ofstream(interpreter_) << "#!/bin/bash\necho \"{\\\"hello\\\":{\\\"pid\\\":$$}}\"\n"
                                 "while read -r line; do kill -SEGV $$; done\n";
  BaselinePoolOptions o;
  o.device = "cpu";
  o.python = interpreter_.string();
  o.jobs = 2;
  o.expected = 2;
  BaselinePool pool(o);
  const std::string a = bundle(0), b = bundle(1);
  pool.add(a);
  pool.add(b);
  const auto results = pool.finish();
  for (const auto& d : {a, b}) {
    ASSERT_TRUE(results.count(d)) << d;
    EXPECT_EQ(results.at(d).value("status", ""), "failed");
    EXPECT_NE(results.at(d).value("message", "").find("killed by a signal"), std::string::npos)
        << results.at(d).dump();
  }
}

// On a GPU the builds share its memory: a stand-in that says the device has
// 1000 bytes (a budget of 700) and reports when each build started and
// ended. Bundles of 1600 estimated bytes (100 float32 inputs) must build one
// at a time; bundles of 160 (10 inputs) together.
constexpr const char* kTimedInterpreter = R"sh(#!/bin/bash
echo "{\"hello\":{\"pid\":$$,\"device_memory\":1000}}"
while read -r line; do
  dir=$(printf '%s' "$line" | sed -n 's/.*"dir": *"\([^"]*\)".*/\1/p')
  t0=$(date +%s%N); sleep 0.4; t1=$(date +%s%N)
  echo "{\"dir\":\"$dir\",\"id\":\"$(basename "$dir")\",\"status\":\"ok\",\"t0\":$t0,\"t1\":$t1}"
done
)sh";

class BaselinePoolMemory : public BaselinePoolCrash {
 protected:
  void SetUp() override {
    BaselinePoolCrash::SetUp();
    if (IsSkipped()) return;
    std::ofstream(interpreter_) << kTimedInterpreter;
    ::setenv("CXX", "/usr/bin/c++", 1);  // no crash fallback involved
  }
  // A task.json as kbsynth writes one, with these "inputs", "outputs" and "state".
  static void writeTaskJson(const std::string& dir, const std::string& inputs, const std::string& outputs,
                            const std::string& state) {
    std::ofstream(fs::path(dir) / "task.json")
        << R"({"format_version": 1, "id": "test/t", "files": {"model.py": "sha256:0"}, "torch_version": "2.11.0",)"
        << R"( "init": {"seed": 42, "args": []}, "capture": "script", "generator": "spec", "inputs": )" << inputs
        << R"(, "outputs": )" << outputs << R"(, "state": )" << state << "}";
  }
  static std::string tensorSpec(const std::string& dtype, const std::string& shape) {
    return R"({"kind": "tensor", "dtype": ")" + dtype + R"(", "shape": )" + shape +
           R"(, "distribution": "normal", "params": {"mean": 0.0, "std": 1.0}})";
  }
  std::string sizedBundle(int i, int inputs) {
    const std::string dir = bundle(i);
    writeTaskJson(dir, "[" + tensorSpec("float32", "[" + std::to_string(inputs) + "]") + R"(, {"kind": "int", "value": 3}])",
                  "[]", "[]");
    return dir;
  }
  // The largest number of builds that ran at once, from their start and end times.
  static int mostAtOnce(const std::map<std::string, kb::Json>& results) {
    int most = 0;
    for (const auto& [d, r] : results) {
      int at_once = 0;
      const auto t = r.value("t0", int64_t{0});
      for (const auto& [d2, r2] : results)
        if (r2.value("t0", int64_t{0}) <= t && t < r2.value("t1", int64_t{0})) ++at_once;
      most = std::max(most, at_once);
    }
    return most;
  }
  std::map<std::string, kb::Json> build(int bundles, int inputs) {
    BaselinePoolOptions o;
    o.device = "cuda";  // the stand-in has no device to use: only the pool's accounting is tested
    o.python = interpreter_.string();
    o.jobs = bundles;
    o.expected = bundles;
    BaselinePool pool(o);
    for (int i = 0; i < bundles; ++i) pool.add(sizedBundle(i, inputs));
    return pool.finish();
  }
};

TEST_F(BaselinePoolMemory, EstimatesABundlesDeviceBytesFromItsTaskJson) {
  const std::string dir = bundle(7);
  writeTaskJson(dir, "[" + tensorSpec("float16", "[4, 8]") + "]", R"([{"dtype": "float32", "shape": [4]}])",
                R"([{"name": "w", "dtype": "float64", "shape": [3], "kind": "parameter"}])");
  EXPECT_EQ(bundleDeviceBytes(dir), 4u * (4 * 8 * 2 + 4 * 4) + 2u * 3 * 8);
  EXPECT_EQ(bundleDeviceBytes(bundle(8)), 0u);  // no task.json
}

TEST_F(BaselinePoolMemory, BuildsThatDoNotFitTogetherRunOneAtATime) {
  const auto results = build(3, 100);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& [d, r] : results) EXPECT_EQ(r.value("status", ""), "ok") << r.dump();
  EXPECT_EQ(mostAtOnce(results), 1);
}

TEST_F(BaselinePoolMemory, BuildsThatFitTogetherRunTogether) {
  const auto results = build(3, 10);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& [d, r] : results) EXPECT_EQ(r.value("status", ""), "ok") << r.dump();
  EXPECT_EQ(mostAtOnce(results), 3);
}

}  // namespace
