// lib/serve's parts alone: request parsing and file names, the journal's
// replay (a torn last line), the metrics text, --listen, --gpus and --gpu-share, the
// profile options the service's options make, the shared GPU's gate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "serve/gpu_gate.h"
#include "serve/journal.h"
#include "serve/metrics.h"
#include "serve/request.h"
#include "serve/server.h"
#include "serve/service.h"

using kb::Json;
using namespace kb::serve;
namespace fs = std::filesystem;

namespace {

int statusOf(const Json& body) {
  try {
    parseEvaluationRequest(body, {});
    return 0;
  } catch (const RequestError& e) {
    return e.httpStatus();
  }
}

}  // namespace

TEST(ServeRequest, ParsesAndDefaults) {
  EvaluationRequest r = parseEvaluationRequest({{"task", "t"}, {"files", {{"forward.cpp", "x"}, {"kernels/a.cu", "y"}}}}, {});
  EXPECT_EQ(r.device, "cpu");
  EXPECT_TRUE(r.stages.static_check && r.stages.build && r.stages.verify && !r.stages.profile);
  EXPECT_EQ(r.priority, 5);
  EXPECT_EQ(r.files.size(), 2u);
  EvaluationRequest again = parseEvaluationRequest(r.toJson(), {});
  EXPECT_EQ(again.digest(), r.digest());  // the canonical form reads back as itself
  Json other = r.toJson();
  other["files"]["forward.cpp"] = "z";
  EXPECT_NE(parseEvaluationRequest(other, {}).digest(), r.digest());
  // "static" left out: kept, unless the server allows it (--allow-no-static).
  Json no_static = {{"task", "t"}, {"files", {{"forward.cpp", "x"}}}, {"stages", {"build", "verify"}}};
  EXPECT_TRUE(parseEvaluationRequest(no_static, {}).stages.static_check);
  RequestLimits trusted;
  trusted.allow_no_static = true;
  EXPECT_FALSE(parseEvaluationRequest(no_static, trusted).stages.static_check);
}

TEST(ServeRequest, RefusesWithTheRightStatus) {
  Json files = {{"forward.cpp", "x"}};
  EXPECT_EQ(statusOf(Json::array()), 400);
  EXPECT_EQ(statusOf({{"files", files}}), 400);
  EXPECT_EQ(statusOf({{"task", "t"}, {"files", files}, {"stages", {"verify", "lint"}}}), 422);
  EXPECT_EQ(statusOf({{"task", "t"}, {"files", files}, {"stages", {"profile"}}}), 422);  // profile needs cuda
  EXPECT_EQ(statusOf({{"task", "t"}, {"files", files}, {"priority", 10}}), 422);
  EXPECT_EQ(statusOf({{"task", "t"}, {"files", files}, {"deadline_s", -1}}), 422);
  EXPECT_EQ(statusOf({{"task", "t"}, {"files", {{"forward.cpp", std::string("a\0b", 3)}}}}), 422);
  RequestLimits few;
  few.max_files = 1;
  EXPECT_THROW(parseEvaluationRequest({{"task", "t"}, {"files", {{"forward.cpp", "x"}, {"b.h", "y"}}}}, few), RequestError);
}

TEST(ServeRequest, FileNamesAsLoadSolutionTakesThem) {
  for (const char* ok : {"forward.cpp", "kernels/gemm.cu", "a/b/c/d.h"}) EXPECT_NO_THROW(checkFileName(ok)) << ok;
  for (const char* bad : {"", "/etc/passwd", "../x.cpp", "a/../b.cpp", "a//b.cpp", "./a.cpp", "a\\b.cpp", "a b.cpp",
                          "a/b/c/d/e.cpp", "x$(id).cpp"})
    EXPECT_THROW(checkFileName(bad), RequestError) << bad;
}

TEST(ServeRequest, WritesFilesWithoutFollowingLinks) {
  fs::path dir = fs::path(KB_TEST_WORK_DIR) / "write-files";
  fs::remove_all(dir);
  writeSolutionFiles(dir, {{"forward.cpp", "int x;"}, {"kernels/k.cu", "y"}});
  EXPECT_TRUE(fs::is_regular_file(dir / "kernels/k.cu"));
  EXPECT_EQ(fs::status(dir).permissions() & fs::perms::others_all, fs::perms::none);
  fs::path other = fs::path(KB_TEST_WORK_DIR) / "write-files-victim";
  std::ofstream(other) << "keep";
  fs::path linked = fs::path(KB_TEST_WORK_DIR) / "write-files-2";
  fs::remove_all(linked);
  fs::create_directories(linked);
  fs::create_symlink(other, linked / "forward.cpp");
  EXPECT_THROW(writeSolutionFiles(linked, {{"forward.cpp", "overwrite"}}), kb::Error);
  std::ifstream in(other);
  std::string kept;
  in >> kept;
  EXPECT_EQ(kept, "keep");
}

TEST(ServeJournal, ReplaysAndSkipsATornLine) {
  fs::path file = fs::path(KB_TEST_WORK_DIR) / "journal.jsonl";
  fs::remove(file);
  {
    Journal j(file);
    j.accepted("ev-1", {{"task", "t"}}, 1.0);
    j.accepted("ev-2", {{"task", "t"}}, 2.0);
    j.started("ev-1");
    j.finished("ev-1", {{"id", "ev-1"}, {"status", "ok"}});
    j.started("ev-2");
  }
  std::ofstream(file, std::ios::app) << "{\"op\":\"finished\",\"id\":\"ev-2\",\"evalu";  // kill -9 mid-write
  JournalReplay r = Journal::replay(file);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_EQ(r.torn_lines, 1u);
  EXPECT_TRUE(r.entries[0].result.has_value());
  EXPECT_EQ(r.entries[1].starts, 1);
  EXPECT_FALSE(r.entries[1].result.has_value());
  Journal j(file);
  j.rewrite(r.entries);
  JournalReplay again = Journal::replay(file);
  EXPECT_EQ(again.torn_lines, 0u);
  EXPECT_EQ(again.entries.size(), 2u);
  EXPECT_EQ(again.entries[1].starts, 1);
}

// A server that runs for days: the journal is compacted as it goes, keeping
// every unfinished entry whole and the newest finished ones without files.
TEST(ServeJournal, CompactsWhileRunning) {
  fs::path file = fs::path(KB_TEST_WORK_DIR) / "journal-compact.jsonl";
  fs::remove(file);
  Journal j(file, JournalLimits{.keep_finished = 5, .compact_bytes = 8192});
  const std::string body(1000, 'x');
  j.accepted("ev-open", {{"task", "t"}, {"files", {{"forward.cpp", body}}}}, 0.5);
  for (int i = 0; i < 100; ++i) {
    std::string id = "ev-" + std::to_string(i);
    j.accepted(id, {{"task", "t"}, {"files", {{"forward.cpp", body}}}}, 1.0 + i);
    j.started(id);
    j.finished(id, {{"id", id}, {"status", "ok"}});
  }
  EXPECT_GT(j.compactions(), 0u);
  EXPECT_LT(fs::file_size(file), 3 * 8192u);  // 100 requests of 1 kB each were written
  JournalReplay r = Journal::replay(file);
  EXPECT_EQ(r.torn_lines, 0u);
  ASSERT_FALSE(r.entries.empty());
  EXPECT_EQ(r.entries.front().id, "ev-open");  // unfinished: kept with its files
  EXPECT_FALSE(r.entries.front().result.has_value());
  EXPECT_EQ(r.entries.front().request["files"]["forward.cpp"], body);
  EXPECT_EQ(r.entries.back().id, "ev-99");
  size_t finished = 0, finished_with_files = 0;
  for (const JournalEntry& e : r.entries)
    if (e.result) {
      ++finished;
      finished_with_files += e.request.contains("files") ? 1 : 0;  // appended since the last compaction
      EXPECT_EQ(e.starts, 1) << e.id;
    }
  EXPECT_FALSE(r.entries[1].request.contains("files")) << r.entries[1].id;  // the oldest finished kept
  EXPECT_LT(finished_with_files, finished);
  EXPECT_LE(finished, 5u + 10u);  // keep_finished, plus what was appended since the last compaction
  EXPECT_GE(finished, 5u);
}

TEST(ServeMetrics, PrometheusText) {
  Metrics m;
  m.describe("x_total", "counter", "Xs.");
  m.describe("y_seconds", "histogram", "Ys.");
  m.count("x_total", "status=\"ok\"", 2);
  m.observe("y_seconds", "stage=\"build\"", 0.3);
  m.observe("y_seconds", "stage=\"build\"", 7);
  std::string t = m.render({{"z_depth", 4}});
  EXPECT_NE(t.find("# TYPE x_total counter\nx_total{status=\"ok\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("y_seconds_bucket{stage=\"build\",le=\"0.5\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("y_seconds_bucket{stage=\"build\",le=\"10\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("y_seconds_bucket{stage=\"build\",le=\"+Inf\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("y_seconds_count{stage=\"build\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("z_depth 4\n"), std::string::npos) << t;
}

TEST(ServeConfig, ListenAndGpus) {
  ServerConfig c;
  parseListen("127.0.0.1:0", c);
  EXPECT_EQ(c.host, "127.0.0.1");
  EXPECT_EQ(c.port, 0);
  parseListen("[::1]:8470", c);
  EXPECT_EQ(c.host, "::1");
  EXPECT_THROW(parseListen("8470", c), kb::UsageError);
  EXPECT_THROW(parseListen("h:99999", c), kb::UsageError);
  EXPECT_TRUE(isLoopback("127.0.0.1") && isLoopback("::1") && isLoopback("localhost"));
  EXPECT_FALSE(isLoopback("0.0.0.0") || isLoopback("10.0.0.1"));
  EXPECT_EQ(parseGpus("none").size(), 0u);
  EXPECT_EQ(parseGpus("0,3"), (std::vector<std::string>{"0", "3"}));
  EXPECT_THROW(parseGpus("0,x"), kb::UsageError);
}

// --gpu-share auto: 16 GiB of the smallest GPU per evaluation, 1 to 4, 1
// when nvidia-smi cannot say; a number as given. nvidia-smi is a script
// that answers as it does ($KB_NVIDIA_SMI, core/gpu_info.h).
TEST(ServeConfig, GpuShareAutoFollowsTheGpusMemory) {
  fs::path dir = fs::temp_directory_path() / ("kb_gpu_share_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto memory = [&](const std::string& by_index) {  // a shell case over "-i N"'s N
    fs::path smi = dir / "nvidia-smi";
    std::ofstream(smi) << "#!/bin/sh\nfor a; do i=$a; done\ncase $i in " << by_index << " esac\n";
    fs::permissions(smi, fs::perms::owner_all);
    ::setenv("KB_NVIDIA_SMI", smi.c_str(), 1);
  };
  memory("*) echo 81559;;");  // H100 80GB
  EXPECT_EQ(parseGpuShare("auto", {"0"}), 4u);
  memory("*) echo 143771;;");  // H200: still at most 4
  EXPECT_EQ(parseGpuShare("auto", {"0", "1"}), 4u);
  memory("1) echo 24576;; *) echo 81559;;");  // the smallest GPU decides
  EXPECT_EQ(parseGpuShare("auto", {"0", "1"}), 1u);
  memory("*) echo 40960;;");
  EXPECT_EQ(parseGpuShare("auto", {"0"}), 2u);
  memory("*) exit 9;;");  // nvidia-smi cannot say
  EXPECT_EQ(parseGpuShare("auto", {"0"}), 1u);
  EXPECT_EQ(parseGpuShare("auto", {}), 1u);
  EXPECT_EQ(parseGpuShare("3", {"0"}), 3u);
  EXPECT_THROW(parseGpuShare("0", {"0"}), kb::UsageError);
  EXPECT_THROW(parseGpuShare("17", {"0"}), kb::UsageError);
  EXPECT_THROW(parseGpuShare("two", {"0"}), kb::UsageError);
  ::unsetenv("KB_NVIDIA_SMI");
  fs::remove_all(dir);
}

// kbserve --compile-baseline reaches every evaluation's and session's
// profile options; the service never builds an AOTInductor package.
TEST(ServeConfig, CompileBaselineReachesTheProfile) {
  ServiceOptions o;
  kb::profile::ProfileOptions p = serviceProfileOptions(o);
  EXPECT_EQ(p.compile_baseline_mode, "auto");
  EXPECT_TRUE(p.compile_baseline);
  EXPECT_FALSE(p.build_compiled);
  EXPECT_TRUE(kb::profile::ProfileOptions().build_compiled);  // kbprof's default: unchanged
  o.compile_baseline = "none";
  o.profile_budget_seconds = 2.5;
  p = serviceProfileOptions(o);
  EXPECT_EQ(p.compile_baseline_mode, "none");
  EXPECT_EQ(p.budget_seconds, 2.5);
  EXPECT_FALSE(p.build_compiled);
  for (const char* mode : {"auto", "python"}) {
    o.compile_baseline = mode;
    EXPECT_EQ(serviceProfileOptions(o).compile_baseline_mode, mode);
  }
  o.compile_baseline = "bogus";
  EXPECT_THROW(serviceProfileOptions(o), kb::UsageError);
}

// --gpu-share: untimed work side by side, a profile's baselines and
// candidate alone. Many evaluations at once, each shared, then exclusive,
// then shared again (its reference check): no exclusive holder ever sees
// another holder of either kind, and shared holders do meet.
TEST(ServeGpuGate, ExclusiveAloneSharedTogether) {
  GpuGate gate;
  std::atomic<int> shared_in{0}, exclusive_in{0}, most_shared{0}, violations{0};
  auto inShared = [&] {
    int now = ++shared_in;
    for (int m = most_shared.load(); now > m && !most_shared.compare_exchange_weak(m, now);) {}
    if (exclusive_in.load() != 0) ++violations;
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    --shared_in;
  };
  std::vector<std::thread> evaluations;
  for (int e = 0; e < 8; ++e)
    evaluations.emplace_back([&] {
      for (int round = 0; round < 10; ++round) {
        GpuShare share;
        share.enter(gate);
        inShared();  // device set-up
        {
          kb::profile::ExclusiveGpu alone = share.exclusive();
          ASSERT_NE(alone, nullptr);
          if (++exclusive_in != 1 || shared_in.load() != 0) ++violations;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          if (shared_in.load() != 0) ++violations;
          --exclusive_in;
        }
        inShared();  // the reference's check
      }
    });
  for (auto& t : evaluations) t.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(most_shared.load(), 1);
  EXPECT_GT(gate.exclusiveSeconds(), 0.0);
  EXPECT_GE(gate.occupiedSeconds(), gate.exclusiveSeconds());
}

// A waiting exclusive holder goes before shared holders that come after it:
// a stream of set-ups never starves timing.
TEST(ServeGpuGate, WaitingExclusiveGoesFirst) {
  GpuGate gate;
  std::mutex log_mu;
  std::vector<std::string> log;
  auto note = [&](const std::string& s) {
    std::lock_guard lock(log_mu);
    log.push_back(s);
  };
  gate.lockShared();  // one evaluation's set-up holds the GPU
  std::thread timer([&] {
    gate.lock();
    note("exclusive");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate.unlock();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the timer waits now
  std::thread late([&] {
    gate.lockShared();
    note("late shared");
    gate.unlockShared();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  {
    std::lock_guard lock(log_mu);
    EXPECT_TRUE(log.empty());  // neither: the first share is still held
  }
  gate.unlockShared();
  timer.join();
  late.join();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0], "exclusive");
  EXPECT_EQ(log[1], "late shared");
}

// Without a gate (no sharing, or a CPU evaluation) the lease is exclusive
// already: nothing to hold.
TEST(ServeGpuGate, NoGateNoHolder) {
  GpuShare share;
  EXPECT_EQ(share.exclusive(), nullptr);
}

// What a shared GPU's out-of-memory retry takes (Service::run): a runtime or
// infrastructure error that says so, as torch and the CUDA runtime word it;
// a wrong answer or a plain crash is the candidate's own.
TEST(ServeGpuGate, OutOfDeviceMemoryIsRetriedAlone) {
  auto failed = [](kb::Status s, const std::string& message) {
    kb::eval::Result r;
    r.header.status = s;
    r.message = message;
    return r;
  };
  EXPECT_TRUE(outOfDeviceMemory(failed(kb::Status::RuntimeError,
                                       "verify: seed 0: CUDA out of memory. Tried to allocate 6.00 GiB")));
  EXPECT_TRUE(outOfDeviceMemory(failed(kb::Status::InfraError, "profile: cudaMalloc: out of memory")));
  EXPECT_FALSE(outOfDeviceMemory(failed(kb::Status::RuntimeError, "verify: seed 0: illegal memory access")));
  EXPECT_FALSE(outOfDeviceMemory(failed(kb::Status::Incorrect, "verify: out of memory in the message")));
  EXPECT_FALSE(outOfDeviceMemory(failed(kb::Status::Ok, "")));
}
