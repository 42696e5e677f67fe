#include "rl/toy_env.h"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include "build/build.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/hash.h"
#include "solution/solution.h"
#include "verify/verify.h"

namespace fs = std::filesystem;

namespace kb::rl {

namespace {

// The fixed part of every solution: the answer defines
// `__global__ void k(const float* x, float* y, int n)`; forward.cpp hands it
// the task's one input and a fresh output of the same shape.
constexpr const char* kForwardCuda = R"(// The toy family's fixed forward (lib/rl/toy_env.cpp); the kernel is the answer's.
#include <cuda_runtime.h>

#include <kb/solution.h>

void launch_answer(const float* x, float* y, int n, cudaStream_t stream);

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  kb::Tensor y = ctx.output(0, x.ndim, x.sizes, KB_FLOAT32);
  if (ctx.failed()) return;
  launch_answer(x.data_as<const float>(), y.data_as<float>(), static_cast<int>(x.numel()),
                static_cast<cudaStream_t>(ctx.stream()));
}
)";

constexpr const char* kLaunchCuda = R"(
void launch_answer(const float* x, float* y, int n, cudaStream_t stream) {
  k<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n);
}
)";

constexpr const char* kForwardCpu = R"(// The toy family's fixed forward (lib/rl/toy_env.cpp), host build.
#include <kb/solution.h>

void launch_answer(const float* x, float* y, int n);

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  if (ctx.failed()) return;
  kb::Tensor y = ctx.output(0, x.ndim, x.sizes, KB_FLOAT32);
  if (ctx.failed()) return;
  launch_answer(x.data_as<const float>(), y.data_as<float>(), static_cast<int>(x.numel()));
}
)";

// What a CUDA kernel needs to compile and run as host code: the launch
// runs the body once per index as a grid of one-thread blocks.
constexpr const char* kCpuStandIn = R"(// CUDA stand-in for the host build (lib/rl/toy_env.cpp).
#include <math.h>
#include <stdint.h>
namespace {
struct KbDim3 { unsigned x = 0, y = 0, z = 0; };
thread_local KbDim3 blockIdx, threadIdx;
const KbDim3 blockDim{1, 1, 1};
thread_local KbDim3 gridDim;
}
#define __global__ static
#define __device__ static inline
#define __host__
#define __forceinline__
#define __restrict__
)";

constexpr const char* kLaunchCpu = R"(
void launch_answer(const float* x, float* y, int n) {
  gridDim.x = static_cast<unsigned>(n);
  for (int b = 0; b < n; ++b) {
    blockIdx.x = static_cast<unsigned>(b);
    threadIdx.x = 0;
    k(x, y, n);
  }
}
)";

void writeFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p);
  f << text;
  if (!f) throw Error("cannot write " + p.string());
}

bool isCuda(const std::string& device) { return device.rfind("cuda", 0) == 0; }

ToyScore scoreOf(Status status, const std::string& message) {
  ToyScore s;
  s.status = statusName(status);
  s.reason = status == Status::Ok ? "ok" : s.status;
  s.message = message;
  s.correct = status == Status::Ok;
  s.excluded = status == Status::InfraError;
  s.reward = s.correct ? 1.0 : -1.0;
  return s;
}

// Writes and builds one answer's solution: its library, or (library empty)
// the score of an answer that did not build.
std::pair<fs::path, ToyScore> buildAnswer(const fs::path& dir, const std::string& answer, const ToyEnvOptions& o,
                                          bool cuda) {
  BuildOptions bo;
  bo.target = cuda ? BuildTarget::Cuda : BuildTarget::Cpu;
  bo.arch = o.arch;
  bo.jobs = 1;
  if (!o.build_cache.empty()) bo.cache_dir = o.build_cache;
  BuildResult b;
  try {  // in a job's thread: every failure becomes a status (a disk error writing the solution: infra_error)
    writeToySolution(dir, answer, cuda);
    Solution sol;
    try {
      sol = loadSolution(dir);
    } catch (const UsageError& e) {
      // Not source code (a NUL byte, over the size limits): the answer's fault.
      b.status = Status::CompileError;
      b.message = e.what();
    }
    if (b.message.empty()) b = buildSolution(sol, bo);
  } catch (const std::exception& e) {
    b.status = Status::InfraError;
    b.message = e.what();
  }
  if (b.status != Status::Ok) return {fs::path(), scoreOf(b.status, b.message)};
  return {b.library, ToyScore{}};
}

// One task's answers: each built, then the built ones verified together
// (verifySolutions: a worker process each, one reference worker for all).
std::vector<ToyScore> scoreTaskAnswers(const fs::path& bundle, const std::vector<fs::path>& dirs,
                                       const std::vector<std::string>& answers, const ToyEnvOptions& o,
                                       const std::string& device, std::atomic<int>& verified) {
  std::vector<ToyScore> out(answers.size());
  std::vector<fs::path> libraries;
  std::vector<size_t> built;
  for (size_t k = 0; k < answers.size(); ++k) {
    auto [library, score] = buildAnswer(dirs[k], answers[k], o, isCuda(device));
    if (library.empty()) {
      out[k] = score;
    } else {
      libraries.push_back(library);
      built.push_back(k);
    }
  }
  if (built.empty()) return out;
  VerifyOptions vo;
  vo.device = device;
  std::vector<VerifyResult> results;
  try {
    results = verifySolutions(bundle, libraries, vo);
  } catch (const std::exception& e) {
    for (size_t k : built) out[k] = scoreOf(Status::InfraError, e.what());
    return out;
  }
  verified += static_cast<int>(built.size());
  for (size_t j = 0; j < built.size(); ++j) out[built[j]] = scoreOf(results[j].status, results[j].message);
  return out;
}

using VerdictKey = std::pair<std::string, std::string>;  // task id, answer's SHA-256

std::map<VerdictKey, ToyScore> readVerdicts(const fs::path& file) {
  std::map<VerdictKey, ToyScore> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("task") || !j.contains("answer_sha256")) continue;  // a torn last line
    ToyScore s;
    s.status = j.value("status", "");
    s.reason = j.value("reason", "");
    s.message = j.value("message", "");
    s.correct = s.status == "ok";
    s.reward = s.correct ? 1.0 : -1.0;
    out[{j["task"].get<std::string>(), j["answer_sha256"].get<std::string>()}] = s;
  }
  return out;
}

}  // namespace

fs::path toyBundleDir(const fs::path& bundles, const ToyTask& task) {
  fs::path dir = bundles / task.id;
  if (!fs::exists(dir / "task.json"))
    throw UsageError("toy environment: no task bundle " + dir.string() + " (kbtrain toy tasks, then kbsynth import)");
  return dir;
}

std::vector<std::string> toyEnvDevices(const std::string& device) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = device.find(',', start);
    const std::string name = device.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name.empty()) throw UsageError("toy environment: empty device in '" + device + "'");
    out.push_back(checkDevice(name));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const bool cuda = isCuda(out.front());
  for (const std::string& d : out)
    if (isCuda(d) != cuda) throw UsageError("toy environment: '" + device + "' mixes cpu and cuda devices");
  return out;
}

void writeToySolution(const fs::path& dir, const std::string& answer, bool cuda) {
  if (cuda) {
    writeFile(dir / "forward.cpp", kForwardCuda);
    writeFile(dir / "kernels/answer.cu", "#include <cuda_runtime.h>\n\n" + answer + "\n" + kLaunchCuda);
  } else {
    writeFile(dir / "forward.cpp", kForwardCpu);
    writeFile(dir / "answer.cpp", std::string(kCpuStandIn) + "\n" + answer + "\n" + kLaunchCpu);
  }
}

std::vector<ToyScore> scoreToyAnswersInEnvironment(const std::vector<ToyTask>& tasks,
                                                   const std::vector<std::string>& answers,
                                                   const ToyEnvOptions& o, Json* stats) {
  if (tasks.size() != answers.size()) throw UsageError("toy environment: one answer per task expected");
  const std::vector<std::string> devices = toyEnvDevices(o.device);
  const auto t0 = Clock::now();
  // Distinct pairs, in first-seen order.
  std::map<std::pair<std::string, std::string>, size_t> index;
  std::vector<size_t> pair_of(tasks.size());
  std::vector<size_t> first;  // an answer index per distinct pair
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto [it, fresh] = index.try_emplace({tasks[i].id, answers[i]}, first.size());
    if (fresh) {
      first.push_back(i);
      toyBundleDir(o.bundles, tasks[i]);
    }
    pair_of[i] = it->second;
  }

  // Verdicts from earlier calls; infra errors are not kept, so they are tried again.
  std::map<VerdictKey, ToyScore> known;
  if (!o.verdict_cache.empty()) known = readVerdicts(o.verdict_cache);
  std::vector<ToyScore> distinct(first.size());
  std::vector<bool> todo(first.size(), true);
  std::vector<std::string> answer_sha(first.size());
  int cached = 0;
  for (size_t d = 0; d < first.size(); ++d) {
    answer_sha[d] = sha256Hex(answers[first[d]]);
    auto it = known.find({tasks[first[d]].id, answer_sha[d]});
    if (it != known.end()) {
      distinct[d] = it->second;
      todo[d] = false;
      ++cached;
    }
  }

  fs::path work = o.work_dir;
  const bool temporary = work.empty();
  if (temporary) work = fs::temp_directory_path() / ("kb-toy-env-" + std::to_string(::getpid()));
  fs::create_directories(work);

  // Each verdict is appended as soon as its task's batch is done, so an
  // interrupted call (a time limit) loses none of the batches it finished.
  std::ofstream cache_file;
  std::mutex cache_mutex;
  if (!o.verdict_cache.empty()) {
    if (o.verdict_cache.has_parent_path()) fs::create_directories(o.verdict_cache.parent_path());
    cache_file.open(o.verdict_cache, std::ios::app);
    if (!cache_file) throw Error("cannot write the verdict cache " + o.verdict_cache.string());
  }
  // The work, by task: each job builds one task's new answers and verifies
  // them against one reference worker.
  std::map<std::string, std::vector<size_t>> by_task;  // task id -> distinct pairs to score
  for (size_t d = 0; d < first.size(); ++d)
    if (todo[d]) by_task[tasks[first[d]].id].push_back(d);
  std::vector<const std::vector<size_t>*> batches;
  for (const auto& [id, ds] : by_task) batches.push_back(&ds);
  std::atomic<size_t> next{0};
  std::atomic<int> verified{0};
  auto worker = [&](const std::string& device) {
    for (size_t b; (b = next++) < batches.size();) {
      const std::vector<size_t>& ds = *batches[b];
      const ToyTask& task = tasks[first[ds.front()]];
      std::vector<fs::path> dirs;
      std::vector<std::string> texts;
      for (size_t d : ds) {
        // One directory per pair; the build cache makes a repeated answer text cheap.
        dirs.push_back(work / task.id / answer_sha[d].substr(0, 16));
        texts.push_back(answers[first[d]]);
      }
      const std::vector<ToyScore> scores = scoreTaskAnswers(o.bundles / task.id, dirs, texts, o, device, verified);
      std::lock_guard<std::mutex> lock(cache_mutex);
      for (size_t j = 0; j < ds.size(); ++j) {
        distinct[ds[j]] = scores[j];
        if (cache_file.is_open() && !scores[j].excluded)  // infra errors are tried again next time
          cache_file << Json{{"task", task.id}, {"answer_sha256", answer_sha[ds[j]]}, {"status", scores[j].status},
                             {"reason", scores[j].reason}, {"message", scores[j].message}}.dump()
                     << '\n' << std::flush;
      }
    }
  };
  std::vector<std::thread> threads;
  const size_t n_threads = std::min<size_t>(static_cast<size_t>(std::max(1, o.jobs)), batches.size());
  for (size_t k = 0; k < n_threads; ++k) threads.emplace_back(worker, devices[k % devices.size()]);
  for (auto& t : threads) t.join();
  if (temporary) {
    std::error_code ec;
    fs::remove_all(work, ec);
  }
  if (cache_file.is_open() && !cache_file) throw Error("cannot write the verdict cache " + o.verdict_cache.string());

  std::vector<ToyScore> out(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) out[i] = distinct[pair_of[i]];
  if (stats) {
    auto count = [&](auto pred) { return std::count_if(distinct.begin(), distinct.end(), pred); };
    *stats = {{"distinct", first.size()},
              {"cached", cached},
              {"compile_errors", count([](const ToyScore& s) { return s.status == "compile_error"; })},
              {"verified", verified.load()},
              {"correct", count([](const ToyScore& s) { return s.correct; })},
              {"infra_errors", count([](const ToyScore& s) { return s.excluded; })},
              {"seconds", since(t0)}};
  }
  return out;
}

}  // namespace kb::rl
