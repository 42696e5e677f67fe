// The solution library's symbols, the plausibility floor, the baseline cache.
#include <gtest/gtest.h>

#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/json.h"
#include "profile/baseline_cache.h"
#include "profile/elf_symbols.h"
#include "profile/gpu_neighbours.h"
#include "profile/plausibility.h"

namespace fs = std::filesystem;

namespace kb {
namespace {

fs::path tempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kb-measure-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Builds a shared object from `source` with the system C++ compiler.
fs::path buildSo(const fs::path& dir, const std::string& name, const std::string& source) {
  fs::path src = dir / (name + ".cpp"), so = dir / (name + ".so");
  std::ofstream(src) << source;
  std::string cmd = "c++ -shared -fPIC -O1 -o '" + so.string() + "' '" + src.string() + "' 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return so;
}

TEST(ElfSymbols, DefinedFunctionsAndImports) {
  fs::path d = tempDir("elf");
  fs::path so = buildSo(d, "clean", R"(
    #include <cmath>
    extern "C" float kb_forward_like(float x) { return std::sqrt(x); }
    namespace { float helper(float x) { return x * 2; } }
    float mangled_kernel_stub(const float* x, int n) { return helper(x[n]); }
  )");
  profile::ElfSymbols s = profile::readElfSymbols(so);
  EXPECT_TRUE(s.defined_functions.count("kb_forward_like"));
  EXPECT_TRUE(s.defined_functions.count("_Z19mangled_kernel_stubPKfi"));
  EXPECT_TRUE(profile::forbiddenImports(s).empty());
  fs::remove_all(d);
}

TEST(ElfSymbols, TorchSymbolsAndDlsymAreForbidden) {
  fs::path d = tempDir("elf-bad");
  // A weak declaration of an ATen function links under -z defs and is
  // resolved at load time against the worker's libtorch.
  fs::path so = buildSo(d, "sneaky", R"(
    #include <dlfcn.h>
    namespace at { struct Tensor; Tensor& relu_(Tensor&) __attribute__((weak)); }
    extern "C" void* look(const char* n) { return dlsym(RTLD_DEFAULT, n); }
    extern "C" bool has() { return &at::relu_ != nullptr; }
  )");
  profile::ElfSymbols s = profile::readElfSymbols(so);
  auto bad = profile::forbiddenImports(s);
  ASSERT_EQ(bad.size(), 2u) << testing::PrintToString(bad);
  EXPECT_NE(bad[0].find("_ZN2at5relu_ERNS_6TensorE"), std::string::npos);
  EXPECT_NE(bad[1].find("dlsym"), std::string::npos);
  fs::remove_all(d);
}

TEST(ElfSymbols, NotAnElfFile) {
  fs::path d = tempDir("elf-not");
  std::ofstream(d / "x.so") << "hello";
  EXPECT_THROW(profile::readElfSymbols(d / "x.so"), std::exception);
  EXPECT_THROW(profile::readElfSymbols(d / "missing.so"), std::exception);
  fs::remove_all(d);
}

TEST(Plausibility, BytesOverBandwidth) {
  profile::PlausibilityInput in;
  in.input_bytes = 3'000'000'000;  // 3 GB in, 1 GB out at 4000 GB/s: 1 ms
  in.output_bytes = 1'000'000'000;
  in.bandwidth_gbps = 4000;
  profile::Plausibility p = profile::checkPlausibility(in, 1.2, 10.0);
  EXPECT_NEAR(p.floor_ms, 1.0, 1e-12);
  EXPECT_TRUE(p.ok);
  EXPECT_NEAR(p.max_speedup_vs_eager, 10.0, 1e-9);
  EXPECT_TRUE(profile::checkPlausibility(in, 0.81, 10.0).ok);
  EXPECT_FALSE(profile::checkPlausibility(in, 0.79, 10.0).ok);  // below 0.8 x floor
}

TEST(Plausibility, FlopsFloorWhenStated) {
  profile::PlausibilityInput in;
  in.flops = 2e12;  // 2 TFLOP at 1000 TFLOP/s: 2 ms
  in.peak_tflops = 1000;
  profile::Plausibility p = profile::checkPlausibility(in, 1.0, 0);
  EXPECT_NEAR(p.flops_floor_ms, 2.0, 1e-12);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.max_speedup_vs_eager, 0);
}

TEST(Plausibility, UnknownBandwidthNeverFlags) {
  profile::PlausibilityInput in;
  in.input_bytes = 1 << 30;
  EXPECT_TRUE(profile::checkPlausibility(in, 1e-9, 1.0).ok);
}

TEST(BaselineCache, RoundTripAndKeyMismatch) {
  fs::path d = tempDir("cache");
  profile::BaselineKey k{"sha256:0123456789abcdef0123", "NVIDIA H200", "580.1", "2.11.0"};
  EXPECT_FALSE(profile::readBaselineCache(d, k));
  Json entry{{"eager", {{"median_ms", 1.5}}}};
  profile::writeBaselineCache(d, k, entry);
  auto hit = profile::readBaselineCache(d, k);
  ASSERT_TRUE(hit);
  EXPECT_EQ((*hit)["eager"]["median_ms"], 1.5);
  EXPECT_EQ(profile::baselineCacheFile(d, k).filename(), "0123456789abcdef-NVIDIA_H200-580.1-2.11.0.json");
  profile::BaselineKey other = k;
  other.driver = "580.2";
  EXPECT_FALSE(profile::readBaselineCache(d, other));
  other = k;
  other.method = "v2";  // same file name, different method: not a hit
  EXPECT_FALSE(profile::readBaselineCache(d, other));
  std::ofstream(profile::baselineCacheFile(d, k)) << "{ corrupt";
  EXPECT_FALSE(profile::readBaselineCache(d, k));
  fs::remove_all(d);
}

TEST(BaselineCache, HeadStartIsPartOfTheMethod) {
  EXPECT_EQ(profile::timingMethodName(0), "events+l2flush+fp32/v3");
  EXPECT_EQ(profile::timingMethodName(200), "events+l2flush+headstart200us+fp32/v3");
  EXPECT_NE(profile::timingMethodName(200), profile::timingMethodName(100));
  // Baselines timed with one head start are not served to a run with another.
  fs::path d = tempDir("method");
  profile::BaselineKey k{"sha256:0123456789abcdef0123", "NVIDIA H200", "580.1", "2.11.0", profile::timingMethodName(200)};
  profile::writeBaselineCache(d, k, Json{{"eager", {{"median_ms", 1.5}}}});
  profile::BaselineKey plain = k;
  plain.method = profile::timingMethodName(0);
  EXPECT_TRUE(profile::readBaselineCache(d, k));
  EXPECT_FALSE(profile::readBaselineCache(d, plain));
  fs::remove_all(d);
}

TEST(BaselineCache, TaskHashFollowsTheFiles) {
  fs::path d = tempDir("hash");
  std::ofstream(d / "task.json") << "{}";
  std::ofstream(d / "reference.pt") << "weights";
  std::string h1 = profile::taskContentHash(d, "sm_90");
  EXPECT_EQ(h1, profile::taskContentHash(d, "sm_90"));
  fs::create_directories(d / "compiled");
  std::ofstream(d / "compiled" / "sm_90.pt2") << "package";
  EXPECT_NE(h1, profile::taskContentHash(d, "sm_90"));
  EXPECT_EQ(h1, profile::taskContentHash(d, "sm_80"));
  std::ofstream(d / "reference.pt") << "other weights";
  EXPECT_NE(h1, profile::taskContentHash(d, "sm_80"));
  fs::remove_all(d);
}

// The Python baselines' entries (docs/kbprof.md "Baselines"): a file of
// their own beside the native one, never served for it or the other way
// round, and keyed by model.py too (the code they time).
TEST(BaselineCache, PythonKindsAreAnEntryOfTheirOwn) {
  fs::path d = tempDir("kinds");
  profile::BaselineKey native{"sha256:0123456789abcdef0123", "NVIDIA H200", "580.1", "2.11.0"};
  profile::BaselineKey python = native;
  python.baselines = profile::baselineKindsName("python", "python_compile");
  EXPECT_EQ(python.baselines, "python+python_compile");
  EXPECT_TRUE(profile::kindsRunModelPy(python.baselines));
  EXPECT_TRUE(profile::kindsRunModelPy(profile::baselineKindsName("libtorch", "python_compile")));
  EXPECT_FALSE(profile::kindsRunModelPy(native.baselines));
  EXPECT_NE(profile::baselineCacheFile(d, native), profile::baselineCacheFile(d, python));
  EXPECT_EQ(profile::baselineCacheFile(d, python).filename(),
            "0123456789abcdef-NVIDIA_H200-580.1-2.11.0-python_python_compile.json");

  std::ofstream(d / "model.py") << "class Model: pass\n";
  python.model_hash = profile::modelSourceHash(d);
  EXPECT_EQ(python.model_hash.rfind("sha256:", 0), 0u);
  profile::writeBaselineCache(d, python, Json{{"eager", {{"median_ms", 2.5}}}, {"compile", {{"error", "torch.compile: x"}}}});
  EXPECT_FALSE(profile::readBaselineCache(d, native));
  auto hit = profile::readBaselineCache(d, python);
  ASSERT_TRUE(hit);
  EXPECT_EQ((*hit)["compile"]["error"], "torch.compile: x");  // a failed compile is an entry too
  EXPECT_FALSE(profile::baselineKeyJson(native).contains("model_hash"));  // the native key as it was

  // model.py changed: the entry is not a hit (the file is replaced on the next write).
  std::ofstream(d / "model.py") << "class Model: x = 1\n";
  profile::BaselineKey changed = python;
  changed.model_hash = profile::modelSourceHash(d);
  EXPECT_NE(changed.model_hash, python.model_hash);
  EXPECT_FALSE(profile::readBaselineCache(d, changed));
  fs::remove_all(d);
}

}  // namespace
}  // namespace kb

// A child of this process running `sleep_bin` (sleep 10), returned once it
// has exec'd: until then its /proc/PID/exe is this test's binary.
static pid_t startSleeper(const std::string& sleep_bin) {
  pid_t child = ::fork();
  if (child == 0) {
    ::execl(sleep_bin.c_str(), "sleep", "10", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; child > 0 && i < 200; ++i) {
    std::error_code ec;
    if (std::filesystem::read_symlink("/proc/" + std::to_string(child) + "/exe", ec) == sleep_bin) break;
    ::usleep(10000);
  }
  return child;
}

// Baselines are cached only when nobody else had the GPU; this process's own
// workers (descendants running the worker binary) do not count, anyone else
// does: another binary, or the same binary started by someone else (pid 1's
// children are not ours).
TEST(GpuNeighbours, OwnWorkersAreNotNeighbours) {
  const std::string sleep_bin = std::filesystem::canonical("/bin/sleep").string();
  pid_t child = startSleeper(sleep_bin);
  ASSERT_GT(child, 0);
  EXPECT_EQ(kb::profile::parentPid(child), static_cast<long>(::getpid()));
  std::vector<long> listed = {static_cast<long>(child), 1};
  EXPECT_EQ(kb::profile::othersThanOurWorkers(listed, sleep_bin), std::vector<long>{1});
  EXPECT_EQ(kb::profile::othersThanOurWorkers(listed, "/bin/true"), listed);  // not the worker binary
  EXPECT_EQ(kb::profile::othersThanOurWorkers({999999999}, sleep_bin), std::vector<long>{999999999});  // unreadable: kept
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

// A confined worker is non-dumpable, and a process without CAP_SYS_PTRACE
// (a container's default) may not read such a process's /proc/PID/exe: the
// worker is then known by its name (and, as always, by descending from us).
// Here: a child without CAP_SYS_PTRACE asks about its own non-dumpable child.
TEST(GpuNeighbours, NonDumpableWorkersAreKnownByName) {
  const std::filesystem::path self_bin = std::filesystem::canonical("/proc/self/exe");
  pid_t checker = ::fork();
  ASSERT_GE(checker, 0);
  if (checker == 0) {
    int ready[2];
    if (::pipe(ready) != 0) ::_exit(10);
    pid_t worker = ::fork();
    if (worker < 0) ::_exit(11);
    if (worker == 0) {
      ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
      char c = 'r';
      if (::write(ready[1], &c, 1) != 1) ::_exit(1);
      ::pause();
      ::_exit(0);
    }
    char c;
    if (::read(ready[0], &c, 1) != 1) ::_exit(12);
    // Drop CAP_SYS_PTRACE from this process's effective set.
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &header, data) != 0) ::_exit(13);
    data[CAP_TO_INDEX(CAP_SYS_PTRACE)].effective &= ~CAP_TO_MASK(CAP_SYS_PTRACE);
    if (::syscall(SYS_capset, &header, data) != 0) ::_exit(14);
    int code = 0;
    std::error_code ec;
    const auto link = std::filesystem::read_symlink("/proc/" + std::to_string(worker) + "/exe", ec);
    (void)link;
    if (!ec) code = 77;  // the link is open to us after all: nothing to test here
    else if (!kb::profile::runsBinary(worker, self_bin)) code = 2;
    else if (kb::profile::runsBinary(worker, "/bin/true")) code = 3;  // another name
    else if (!kb::profile::othersThanOurWorkers({static_cast<long>(worker)}, self_bin).empty()) code = 4;
    else if (kb::profile::othersThanOurWorkers({static_cast<long>(worker)}, "/bin/true").size() != 1) code = 5;
    ::kill(worker, SIGKILL);
    ::waitpid(worker, nullptr, 0);
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(checker, &status, 0), checker);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "this machine lets a process without CAP_SYS_PTRACE read the link";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1-5: see the checks above; 10-14: the set-up failed";
}

// The list taken before the baselines drops what has already ended (it
// cannot slow them) and this process's workers, judged while they live; the
// list taken after keeps what has ended. nvidia-smi: a script (KB_NVIDIA_SMI).
TEST(GpuNeighbours, ListedAsTheyLive) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kb-neighbours-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string sleep_bin = std::filesystem::canonical("/bin/sleep").string();
  pid_t ended = ::fork();
  ASSERT_GE(ended, 0);
  if (ended == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(ended, nullptr, 0), ended);
  pid_t worker = startSleeper(sleep_bin);
  ASSERT_GT(worker, 0);
  const std::filesystem::path smi = dir / "nvidia-smi";
  {
    std::ofstream f(smi);
    f << "#!/bin/sh\nprintf '%s\\n' " << worker << " " << ended << " 1\n";
  }
  std::filesystem::permissions(smi, std::filesystem::perms::owner_all);
  ::setenv("KB_NVIDIA_SMI", smi.c_str(), 1);
  EXPECT_EQ(kb::profile::gpuNeighboursNow(0, sleep_bin), std::vector<long>{1});
  EXPECT_EQ(kb::profile::gpuNeighboursNow(0, sleep_bin, /*drop_ended=*/false), (std::vector<long>{ended, 1}));
  ::setenv("KB_NVIDIA_SMI", (dir / "none").c_str(), 1);
  EXPECT_FALSE(kb::profile::gpuNeighboursNow(0, sleep_bin));
  ::unsetenv("KB_NVIDIA_SMI");
  ::kill(worker, SIGKILL);
  ::waitpid(worker, nullptr, 0);
  std::filesystem::remove_all(dir);
}
