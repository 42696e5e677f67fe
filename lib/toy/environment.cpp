#include "toy/environment.h"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/hash.h"
#include "verify/verify.h"

namespace fs = std::filesystem;

namespace kb::toy {

namespace {

// The fixed part of every solution: the answer defines
// `__global__ void k(const float* x, float* y, int n)`; forward.cpp hands it
// the task's one input and a fresh output of the same shape.
constexpr const char* kForwardCuda = R"(// The toy family's fixed forward (lib/toy/environment.cpp); the kernel is the answer's.
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

constexpr const char* kForwardCpu = R"(// The toy family's fixed forward (lib/toy/environment.cpp), host build.
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
constexpr const char* kCpuStandIn = R"(// CUDA stand-in for the host build (lib/toy/environment.cpp).
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

// The answer file's text around the answer.
std::string answerPrefix(bool cuda) { return cuda ? "#include <cuda_runtime.h>\n\n" : std::string(kCpuStandIn) + "\n"; }
std::string answerSuffix(bool cuda) { return std::string("\n") + (cuda ? kLaunchCuda : kLaunchCpu); }

std::atomic<uint64_t> next_work_dir{0};  // distinct temporary directories within one process

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
    out.push_back(verify::checkDevice(name));
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
    writeFile(dir / "kernels/answer.cu", answerPrefix(true) + answer + answerSuffix(true));
  } else {
    writeFile(dir / "forward.cpp", kForwardCpu);
    writeFile(dir / "answer.cpp", answerPrefix(false) + answer + answerSuffix(false));
  }
}

std::optional<std::string> readToyAnswer(const fs::path& dir) {
  for (bool cuda : {true, false}) {
    std::ifstream in(dir / (cuda ? "kernels/answer.cu" : "answer.cpp"), std::ios::binary);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str(), pre = answerPrefix(cuda), post = answerSuffix(cuda);
    if (text.size() < pre.size() + post.size() || text.compare(0, pre.size(), pre) != 0 ||
        text.compare(text.size() - post.size(), post.size(), post) != 0)
      return std::nullopt;
    return text.substr(pre.size(), text.size() - pre.size() - post.size());
  }
  return std::nullopt;
}

agent::StageResult toyStage(const std::string& stage, Status status, const std::string& reason,
                            const std::string& message, bool cached) {
  agent::StageResult r;
  r.stage = stage;
  r.status = status;
  r.text = message.empty() ? reason : message;
  r.report = {{"status", statusName(status)}, {"reason", reason}, {"message", message}, {"cached", cached}};
  return r;
}

// ---- what both environments share -----------------------------------------

ToyEnvironment::ToyEnvironment(fs::path work, bool cuda) : work_(std::move(work)), cuda_(cuda) {
  temporary_ = work_.empty();
  if (temporary_)
    work_ = fs::temp_directory_path() /
            ("kb-toy-env-" + std::to_string(::getpid()) + "-" + std::to_string(next_work_dir++));
  fs::create_directories(work_);
}

ToyEnvironment::~ToyEnvironment() {
  if (!temporary_) return;
  std::error_code ec;
  fs::remove_all(work_, ec);
}

fs::path ToyEnvironment::writeAnswer(const ToyTask& task, const std::string& answer) {
  const std::string sha = sha256Hex(answer);
  // One directory per pair; the build cache makes a repeated answer text cheap.
  const fs::path dir = work_ / task.id / sha.substr(0, 16);
  std::lock_guard<std::mutex> lock(mu_);
  if (written_.count(dir)) return dir;
  writeToySolution(dir, answer, cuda_);
  written_[dir] = {task, sha};
  return dir;
}

ToyEnvironment::Written ToyEnvironment::written(const fs::path& dir) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = written_.find(dir);
  if (it == written_.end()) throw Error("toy environment: " + dir.string() + " is not an answer it wrote");
  return it->second;
}

void ToyEnvironment::prepare(const std::vector<ToyTask>&, const std::vector<std::string>&) {}

agent::ShellResult ToyEnvironment::bash(const fs::path&, const std::string&, double) {
  agent::ShellResult r;
  r.message = "the toy environment has no shell";
  return r;
}

agent::StageResult ToyEnvironment::profile(const fs::path&) {
  agent::StageResult r;
  r.stage = "profile";
  r.available = false;
  r.text = "the toy environment does not profile";
  return r;
}

// ---- expr: the expression evaluator ----------------------------------------

namespace {

class ExprToyEnvironment : public ToyEnvironment {
 public:
  ExprToyEnvironment() : ToyEnvironment({}, /*cuda=*/false) {}

  // Any text is an answer the evaluator can read.
  agent::StageResult compile(const fs::path& dir) override {
    written(dir);
    return toyStage("compile", Status::Ok, "ok", "");
  }
  std::vector<agent::StageResult> check(const fs::path& dir) override { return {compile(dir), verify(dir)}; }
  agent::StageResult verify(const fs::path& dir) override {
    const Written w = written(dir);
    const std::optional<std::string> answer = readToyAnswer(dir);
    if (!answer) return toyStage("verify", Status::InfraError, "infra_error", "cannot read the answer back");
    const ToyScore s = scoreToyAnswer(w.task, *answer);
    return toyStage("verify", s.correct ? Status::Ok : Status::Incorrect, s.reason, "");
  }
};

}  // namespace

std::unique_ptr<ToyEnvironment> makeExprToyEnvironment() { return std::make_unique<ExprToyEnvironment>(); }

}  // namespace kb::toy
