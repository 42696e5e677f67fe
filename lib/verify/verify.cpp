// The verifying parent: candidate worker, then reference worker, then the
// verdict. Torch-free.
#include "verify/verify.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/clock.h"
#include "core/error.h"
#include "core/gpu_info.h"
#include "sandbox/confine.h"
#include "task/bundle.h"
#include "task/precision.h"
#include "verify/private_dirs.h"

namespace fs = std::filesystem;

namespace kb::verify {
namespace {

uint64_t specBytes(const std::string& dtype, const std::vector<int64_t>& shape) {
  uint64_t n = dtype == "float64" || dtype == "int64"   ? 8
               : dtype == "float32" || dtype == "int32" ? 4
               : dtype == "float16" || dtype == "bfloat16" || dtype == "int16" ? 2
                                                                               : 1;
  for (int64_t s : shape) n *= static_cast<uint64_t>(s);
  return n;
}

constexpr uint64_t kRecordHeader = 1u << 20, kChannelBase = 16u << 20;

uint64_t outputBytes(const task::TaskInfo& info) {
  uint64_t out_bytes = 0;
  for (const auto& o : info.outputs) out_bytes += specBytes(o.dtype, o.shape);
  return out_bytes;
}

uint64_t inputBytes(const task::TaskInfo& info) {
  uint64_t in_bytes = 0;
  for (const auto& i : info.inputs)
    if (i.kind == "tensor") in_bytes += specBytes(i.dtype, i.shape);
  return in_bytes;
}

// The harness's own work in a worker, per record and GiB of inputs and
// outputs: on the CPU the canonical inputs (the CPU generator's, 2.7 s a GiB
// on one thread here; on a GPU the device makes them in milliseconds, unless
// get_inputs cannot run there and is copied from the CPU); the outputs copied
// back and written to the channel. KernelBench level1/94_MSELoss (two 4 GiB
// inputs) spent its 60 s in five seeds' CPU inputs and ended `timeout`, an
// honest solution given -1.
constexpr double kHarnessSecondsPerGiB = 4.0;

// A record is the outputs and a header; inputs never travel (the records
// carry their digests only: worker.cpp).
uint64_t honestChannel(uint64_t out_bytes, uint64_t records) { return records * (out_bytes + kRecordHeader) + kChannelBase; }

// One candidate's share of the scratch disk for its channel (its free space
// less 1 GiB, over the candidates kept at once), at most `cap` (0: none);
// nullopt when the disk does not say.
std::optional<uint64_t> channelShare(const fs::path& scratch, uint64_t candidates, uint64_t cap) {
  std::optional<uint64_t> share;
  std::error_code ec;
  fs::space_info space = fs::space(scratch, ec);
  if (!ec && space.available != static_cast<uintmax_t>(-1)) {
    const uint64_t margin = 1ull << 30;
    const uint64_t free = space.available > margin ? space.available - margin : 0;
    share = free / std::max<uint64_t>(1, candidates);
  }
  if (cap) share = share ? std::min(*share, cap) : cap;
  return share;
}

}  // namespace

void sizeWorkerForTask(const task::TaskInfo& info, uint64_t records, uint64_t candidates, const fs::path& scratch,
                       WorkerRequest& request, WorkerLimits& limits, uint64_t channel_cap) {
  candidates = std::max<uint64_t>(1, candidates);
  const uint64_t out_bytes = outputBytes(info);
  request.max_output_bytes = out_bytes ? 4 * out_bytes + (1u << 20) : (1ull << 30);
  const uint64_t honest = honestChannel(out_bytes, records);
  // Room for an honest candidate's larger outputs, but a flood stops at
  // twice the honest size (4 GiB at least) and at this candidate's share of
  // the disk: every candidate of a batch keeps its channel until the
  // reference has read them all.
  uint64_t roomy = std::min(records * (request.max_output_bytes + kRecordHeader) + kChannelBase,
                            std::max<uint64_t>(2 * honest, 4ull << 30));
  if (std::optional<uint64_t> share = channelShare(scratch, candidates, channel_cap)) {
    if (honest > *share) {
      std::error_code ec;
      const uint64_t available = fs::space(scratch, ec).available;
      throw Error("the task's outputs need " + std::to_string(honest >> 20) + " MiB for the result channel" +
                  (candidates > 1 ? " of each of " + std::to_string(candidates) + " candidates" : std::string()) +
                  " in " + scratch.string() + ", which has " + std::to_string(ec ? 0 : available >> 20) +
                  " MiB free (1 GiB kept back)" +
                  (channel_cap ? ", or over the channel limit of " + std::to_string(channel_cap >> 20) + " MiB"
                               : std::string()) +
                  "; free space there or point the scratch directory elsewhere");
    }
    roomy = std::min(roomy, *share);
  }
  limits.result_limit = std::max(honest, roomy);
  // The time limits are the candidate's: the harness's share is added.
  const double harness_s =
      static_cast<double>(records) * static_cast<double>(inputBytes(info) + out_bytes) / (1ull << 30) * kHarnessSecondsPerGiB;
  limits.wall_seconds += harness_s;
  limits.cpu_seconds += static_cast<uint64_t>(std::ceil(harness_s));
  // The host memory budget is the candidate's too: the harness's host copy
  // of a record's outputs (made in the worker to write the channel, one
  // record at a time) is added. KernelBench level1/19_ReLU's 6 GiB output
  // failed an honest solution under the default 4 GiB ("reading the results
  // failed: ... can't allocate memory").
  if (request.memory_budget_bytes) request.memory_budget_bytes += out_bytes;
}

size_t seedsPerRun(const task::TaskInfo& info, size_t seeds, uint64_t candidates, const fs::path& scratch,
                   uint64_t channel_cap) {
  std::optional<uint64_t> share = channelShare(scratch, candidates, channel_cap);
  if (!share) return seeds;
  const uint64_t out_bytes = outputBytes(info);
  size_t fit = *share > kChannelBase ? static_cast<size_t>((*share - kChannelBase) / (out_bytes + kRecordHeader)) : 0;
  return std::clamp<size_t>(fit, 1, std::max<size_t>(1, seeds));
}

std::string checkDevice(const std::string& name) {
  if (name == "cpu") return name;
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
    std::string index = name == "cuda" ? "0" : name.substr(5);
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("bad device '" + name + "' (use cpu, cuda or cuda:N)");
    requireNvidiaGpu("device " + name);
    return "cuda:" + index;
  }
  throw UsageError("unknown device '" + name + "' (use cpu, cuda or cuda:N)");
}

struct ReferenceWorker::State {
  fs::path dir;  // its working directory (the verdict), removed with it
  std::shared_ptr<const ScratchOwner> dir_owner;  // its lock (core/scratch_dir.h)
  std::optional<WaitingProcess> process;
  bool device_pending = false;  // started with device_later, not yet named
  bool finished = false;
};

ReferenceWorker::ReferenceWorker(const fs::path& task_dir, const std::string& device,
                                 const std::vector<uint64_t>& known_seeds, const fs::path& scratch,
                                 const fs::path& binary, double wall_seconds, bool device_later)
    : state_(std::make_unique<State>()) {
  state_->device_pending = device_later;
  ScratchDir made = makeScratchDir(scratch, "kb-reference");  // reclaims killed runs' first
  state_->dir = made.path;
  state_->dir_owner = made.owner;
  ProcessSpec spec;
  spec.argv = {binary.string(), "reference", "--task", fs::absolute(task_dir).string(), "--device",
               device_later ? std::string("-") : device};
  if (!known_seeds.empty()) {
    std::string list;
    for (uint64_t seed : known_seeds) list += (list.empty() ? "" : ",") + std::to_string(seed);
    spec.argv.push_back("--seeds");
    spec.argv.push_back(list);
  }
  spec.env = scrubbedEnvironment({"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
                                  "HOME", "TMPDIR"},
                                 {"PATH=/usr/bin:/bin", "LC_ALL=C", "OMP_NUM_THREADS=1",
                                  "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"});
  spec.cwd = state_->dir;
  spec.limits.wall_seconds = wall_seconds;
  spec.output_limit = 16 * 1024;
  spec.result_file = state_->dir / "verdict.bin";
  spec.result_limit = 64u << 20;
  state_->process.emplace(spec);
}

ReferenceWorker::~ReferenceWorker() {
  if (!state_) return;
  state_->process.reset();  // never asked: it leaves without a verdict
  std::error_code ec;
  fs::remove_all(state_->dir, ec);
}

void ReferenceWorker::nameDevice(const std::string& device) {
  State& st = *state_;
  if (!st.device_pending) throw Error("ReferenceWorker::nameDevice: the worker was not started waiting for its device");
  st.device_pending = false;
  st.process->send(device + "\n");  // a dead worker: finish() says why
}

WaitingProcess::Word ReferenceWorker::awaitReady(double timeout_seconds) {
  State& st = *state_;
  if (st.finished) throw Error("ReferenceWorker::awaitReady after finish");
  if (st.device_pending) throw Error("ReferenceWorker::awaitReady before nameDevice");
  return st.process->awaitWord("ready", timeout_seconds);
}

namespace {
// The last line of `text` that starts with `prefix`, less the prefix;
// without one, the last line.
std::string lastLineStarting(const std::string& text, const std::string& prefix) {
  std::string last, found;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    last = text.substr(begin, end - begin);
    if (last.rfind(prefix, 0) == 0) found = last.substr(prefix.size());
    begin = end + 1;
  }
  return found.empty() ? last : found;
}
}  // namespace

ReferenceVerdict ReferenceWorker::finish(const CompareRequest& cmp) {
  if (cmp.candidate_results.size() != 1) throw Error("ReferenceWorker::finish takes one candidate (finishAll: several)");
  return finishAll(cmp).front();
}

std::vector<ReferenceVerdict> ReferenceWorker::finishAll(const CompareRequest& cmp) {
  State& st = *state_;
  if (st.finished) throw Error("ReferenceWorker::finish called twice");
  if (st.device_pending) throw Error("ReferenceWorker::finish before nameDevice");
  st.finished = true;
  const size_t n = cmp.candidate_results.size();
  auto tr = Clock::now();
  const ProcessResult ref = st.process->finish(cmp.toJson().dump());
  const double seconds = since(tr);
  std::string problem;
  std::vector<WireRecord> verdicts = readRecords(st.dir / "verdict.bin", &problem);
  bool well_formed = ref.ok() && verdicts.size() == n;
  for (size_t k = 0; well_formed && k < n; ++k)
    well_formed = verdicts[k].header["type"] == "verdict" && verdicts[k].header.value("candidate", size_t{0}) == k;
  std::vector<ReferenceVerdict> out(n);
  if (!well_formed) {
    std::string text = ref.output;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    // task.json and reference.pt disagree: the task's fault, bad input
    // (exit 2), never a verdict on the candidate.
    if (ref.end == ProcessEnd::Exited && ref.exit_code == kBadBundleExit) {
      throw UsageError("task bundle " + cmp.task_dir.string() + " is inconsistent: " +
                       lastLineStarting(text, "kbcheck-worker reference: "));
    }
    // Its own last word ("kbcheck-worker reference: ..."), not the last
    // line: a CUDA error's text ends in torch's advice on device-side
    // assertions, which says nothing of what failed.
    const std::string why = lastLineStarting(text, "kbcheck-worker reference: ");
    const std::string message = "the reference worker failed (" + describeEnd(ref) + ")" + (why.empty() ? "" : ": " + why);
    for (ReferenceVerdict& v : out) {
      v.status = Status::InfraError;
      v.message = message;
      v.worker_failed = ref.end != ProcessEnd::TimedOut;  // (one past its deadline would be again)
      v.seconds = seconds;
    }
    return out;
  }
  for (size_t k = 0; k < n; ++k) {
    const Json& v = verdicts[k].header;
    ReferenceVerdict& o = out[k];
    o.seconds = seconds;
    o.status = parseStatus(v.value("status", "infra_error")).value_or(Status::InfraError);
    o.message = v.value("message", "");
    if (v.contains("torch_version") && v["torch_version"].is_string()) o.torch_version = v["torch_version"];
    if (v.contains("gpu") && v["gpu"].is_string()) o.gpu = v["gpu"];
    for (const auto& s : v.value("seeds", Json::array())) o.seeds.push_back(SeedCheck::fromJson(s));
    o.phases = v.value("phases", Json::object());
  }
  return out;
}

ReferenceVerdict compareWithReference(const CompareRequest& cmp, const fs::path& scratch, const fs::path& binary,
                                      double timeout_seconds) {
  ReferenceWorker worker(cmp.task_dir, cmp.device, cmp.seeds, scratch, binary, timeout_seconds);
  return worker.finish(cmp);
}

Json VerifyResult::toJson() const {
  Json j;
  j["status"] = std::string(statusName(status));
  j["message"] = message;
  j["task_id"] = task_id;
  j["device"] = device;
  j["gpu"] = gpu.empty() ? Json(nullptr) : Json(gpu);
  j["driver"] = driver.empty() ? Json(nullptr) : Json(driver);
  j["torch_version"] = torch_version.empty() ? Json(nullptr) : Json(torch_version);
  j["atol"] = atol;
  j["rtol"] = rtol;
  j["contract"] = contract;
  j["seconds"] = seconds;
  j["reference_seconds"] = reference_seconds;
  j["reference_phases"] = reference_phases;
  j["seed_runs"] = seed_runs;
  Json seeds_json = Json::array();
  for (const auto& s : seeds) seeds_json.push_back(s.toJson());
  j["seeds"] = seeds_json;
  j["worker"] = worker.toJson();
  return j;
}

namespace {

// Seeds in runs of `per_run`, each a verifySolutions of its own (fresh
// candidate and reference workers, one run's channels on disk at a time);
// a candidate that fails a run is not run again. Its result: the seeds of
// all its runs, the status of its first run that was not ok, the times
// added up, the last run's worker and reference phases.
std::vector<VerifyResult> verifyInRuns(const fs::path& task_dir, const std::vector<fs::path>& libraries,
                                       const VerifyOptions& options, const std::vector<uint64_t>& seeds,
                                       size_t per_run) {
  std::vector<VerifyResult> results;
  std::vector<size_t> alive(libraries.size());
  for (size_t k = 0; k < alive.size(); ++k) alive[k] = k;
  for (size_t first = 0; first < seeds.size() && !alive.empty(); first += per_run) {
    VerifyOptions run = options;
    run.seeds.assign(seeds.begin() + static_cast<std::ptrdiff_t>(first),
                     seeds.begin() + static_cast<std::ptrdiff_t>(std::min(seeds.size(), first + per_run)));
    std::vector<fs::path> libs;
    for (size_t k : alive) libs.push_back(libraries[k]);
    std::vector<VerifyResult> part = verifySolutions(task_dir, libs, run);
    if (results.empty()) {
      results = std::move(part);
    } else {
      for (size_t j = 0; j < alive.size(); ++j) {
        VerifyResult& r = results[alive[j]];
        VerifyResult& p = part[j];
        r.seeds.insert(r.seeds.end(), p.seeds.begin(), p.seeds.end());
        r.seconds += p.seconds;
        r.reference_seconds += p.reference_seconds;
        r.reference_phases = std::move(p.reference_phases);
        r.worker = std::move(p.worker);
        r.status = p.status;
        r.message = std::move(p.message);
        r.seed_runs += p.seed_runs;
        if (r.gpu.empty()) r.gpu = p.gpu;
        if (r.torch_version.empty()) r.torch_version = p.torch_version;
      }
    }
    std::vector<size_t> still;
    for (size_t k : alive)
      if (results[k].status == Status::Ok) still.push_back(k);
    alive = std::move(still);
  }
  return results;
}

}  // namespace

VerifyResult verifySolution(const fs::path& task_dir, const fs::path& library,
                            const VerifyOptions& options) {
  return verifySolutions(task_dir, {library}, options).front();
}

std::vector<VerifyResult> verifySolutions(const fs::path& task_dir, const std::vector<fs::path>& libraries,
                                          const VerifyOptions& options) {
  auto t0 = Clock::now();
  if (libraries.empty()) throw UsageError("verify: no solution to verify");
  sandbox::protectMemoryFromSiblings();
  VerifyResult base;
  task::TaskBundle bundle = task::openBundle(task_dir);  // a bad task is a usage error
  const task::TaskInfo& info = bundle.info;
  base.task_id = info.id;
  base.device = checkDevice(options.device);
  if (base.device != "cpu") base.driver = nvidiaDriverVersion();
  std::optional<std::string> override;
  if (!options.precision.empty()) override = options.precision;
  task::PrecisionContract contract = task::resolveContract(info, override);
  base.contract = contract.toJson();
  base.atol = options.atol.value_or(contract.atol);
  base.rtol = options.rtol.value_or(contract.rtol);
  // The task's correctness seeds and their domain draws (task/bundle.h
  // verificationSeeds): every count below (records, runs, channel) is of
  // these.
  std::vector<uint64_t> seeds = options.seeds.empty() ? task::verificationSeeds(info) : options.seeds;
  if (seeds.empty()) throw UsageError(bundle.taskJson().string() + ": no correctness seeds");

  WorkerRequest req;
  req.task_dir = bundle.dir;
  req.device = base.device;
  req.seeds = seeds;
  req.max_scratch_bytes = options.max_scratch_bytes;
  req.memory_budget_bytes = options.memory_budget_bytes;
  req.seccomp = options.seccomp;
  req.landlock = options.landlock;
  req.allow_open_rdwr = options.allow_open_rdwr;
  WorkerLimits limits = options.limits;
  fs::path scratch = scratchRootOr(options.scratch_dir);
  if (options.hide_private_dirs)  // other candidates' channels and builds
    req.hidden_dirs = hiddenFromWorkers(scratch, options.hidden_dirs);
  // Output and channel sizes from what the task says it produces; seeds whose
  // records do not fit on the disk together are verified in several runs.
  if (size_t per_run = seedsPerRun(info, seeds.size(), libraries.size(), scratch, options.channel_limit_bytes);
      per_run < seeds.size())
    return verifyInRuns(task_dir, libraries, options, seeds, per_run);
  sizeWorkerForTask(info, seeds.size(), libraries.size(), scratch, req, limits, options.channel_limit_bytes);
  fs::path binary = options.worker.empty() ? findWorkerBinary() : options.worker;

  // 1. The candidates, one after the other. Their directories are kept
  //    until the reference has read the result channels. The reference
  //    worker starts beside the first and gets ready on the CPU
  //    (ReferenceWorker: nothing on the GPU, nothing a candidate can write,
  //    until it is handed the request).
  ReferenceWorker reference(bundle.dir, base.device, seeds, scratch, binary,
                            limits.wall_seconds * static_cast<double>(libraries.size()) +
                                options.reference_timeout_seconds);
  std::vector<VerifyResult> results(libraries.size(), base);
  std::vector<std::unique_ptr<WorkerDirGuard>> cleanup;
  std::vector<size_t> ran;  // the candidates whose worker ended ok
  for (size_t k = 0; k < libraries.size(); ++k) {
    auto tk = Clock::now();
    req.library = fs::absolute(libraries[k]);
    VerifyResult& r = results[k];
    r.worker = runWorker(req, limits, binary, scratch, /*keep_dir=*/true);
    cleanup.push_back(std::make_unique<WorkerDirGuard>(r.worker, options.keep_worker_dir));
    r.seconds = since(tk);
    if (r.worker.status != Status::Ok) {
      r.status = r.worker.status;
      r.message = r.worker.message;
      continue;
    }
    ran.push_back(k);
  }
  if (ran.empty()) {
    if (libraries.size() == 1) results[0].seconds = since(t0);
    return results;
  }

  // 2. The reference and the comparison, in a process of their own, handed
  //    the request after the last candidate's process group is gone.
  CompareRequest cmp;
  cmp.task_dir = bundle.dir;
  cmp.device = base.device;
  cmp.seeds = seeds;
  cmp.atol = base.atol;
  cmp.rtol = base.rtol;
  for (size_t k : ran) cmp.candidate_results.push_back(results[k].worker.dir / "result.bin");
  std::vector<ReferenceVerdict> verdicts = reference.finishAll(cmp);
  // A reference worker that failed on a batch is asked again about each
  // candidate alone: what one candidate's channel did to it (a record it
  // could not read, memory it could not get) costs that candidate's
  // verdict, never its neighbours'.
  if (ran.size() > 1 && verdicts.front().worker_failed) {
    for (size_t j = 0; j < ran.size(); ++j) {
      ReferenceWorker alone(bundle.dir, base.device, seeds, scratch, binary,
                            limits.wall_seconds + options.reference_timeout_seconds);
      CompareRequest one = cmp;
      one.candidate_results = {cmp.candidate_results[j]};
      verdicts[j] = alone.finish(one);
    }
  }
  for (size_t j = 0; j < ran.size(); ++j) {
    VerifyResult& r = results[ran[j]];
    ReferenceVerdict& v = verdicts[j];
    r.reference_seconds = v.seconds;
    r.reference_phases = v.phases;
    r.status = v.status;
    r.message = v.message;
    r.torch_version = v.torch_version;
    r.gpu = v.gpu;
    r.seeds = std::move(v.seeds);
    r.seconds += v.seconds;
  }
  if (libraries.size() == 1) results[0].seconds = since(t0);  // as before: all of it
  return results;
}

uint64_t taskOutputBytes(const task::TaskInfo& info) { return outputBytes(info); }
uint64_t taskInputBytes(const task::TaskInfo& info) { return inputBytes(info); }

}  // namespace kb::verify
