// The profiling parent: torch-free (see profile.h for the order of events).
#include "profile/profile.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <random>
#include <optional>
#include <set>
#include <sstream>

#include "core/clock.h"
#include "core/error.h"
#include "core/gpu_info.h"
#include "build/python_build.h"
#include "core/file.h"
#include "core/hash.h"
#include "core/speedup.h"
#include "profile/baseline_cache.h"
#include "profile/elf_symbols.h"
#include "profile/gpu_neighbours.h"
#include "profile/gpu_peak.h"
#include "profile/judges.h"
#include "profile/pacing.h"
#include "profile/sass.h"
#include "sandbox/confine.h"
#include "task/bundle.h"
#include "task/precision.h"
#include "python/scripts.h"
#include "verify/private_dirs.h"
#include "verify/verify.h"

namespace fs = std::filesystem;

namespace kb::profile {
namespace {

// The verdict's message when the reference refused the run: it must agree
// with the report's "seeds" (issue 38: "although the verification calls were
// right" was once said of runs whose correctness seeds were all incorrect).
// Correctness seeds failed: the reference's own message (the first failure)
// and how many seeds and timed calls failed. Only timed calls failed: the
// first of them, and how many. No correctness seeds ran (--no-verify): said so.
std::string referenceFailureMessage(const std::vector<verify::SeedCheck>& seeds, Status verdict,
                                    const std::string& reference_message, uint64_t timed_calls) {
  std::size_t seeds_run = 0, seeds_failed = 0, calls_failed = 0;
  const verify::SeedCheck* first_call = nullptr;
  for (const auto& s : seeds) {
    if (s.timed_call < 0) {
      ++seeds_run;
      seeds_failed += s.status != Status::Ok;
    } else if (s.status != Status::Ok) {
      ++calls_failed;
      if (!first_call && s.status == verdict) first_call = &s;
    }
  }
  auto of = [](std::size_t n, std::size_t m, const char* what) {
    return std::to_string(n) + " of " + std::to_string(m) + " " + what;
  };
  if (seeds_failed > 0) {
    std::string msg = reference_message + " (" + of(seeds_failed, seeds_run, "correctness seeds");
    if (timed_calls > 0) msg += " and " + of(calls_failed, timed_calls, "timed calls");
    return msg + " failed)";
  }
  if (!first_call) return reference_message;
  std::string what = first_call->status == Status::Incorrect ? "gave a wrong result"
                                                              : "ended " + std::string(statusName(first_call->status));
  std::string msg = "timed call " + std::to_string(first_call->timed_call) + " (input seed " +
                    std::to_string(first_call->seed) + ") " + what +
                    (seeds_run > 0 ? " although all " + std::to_string(seeds_run) + " correctness seeds were right: "
                                   : " (no correctness seeds were run): ") +
                    first_call->message;
  if (calls_failed > 1) msg += " (" + of(calls_failed, timed_calls, "timed calls") + " failed)";
  return msg;
}

// Whether `library` is a Python-format solution's (pymodel.json beside it)
// and byte for byte the trusted adapter (build::pythonAdapterPath).
bool isTrustedPythonAdapter(const fs::path& library) {
  if (!fs::exists(library.parent_path() / "pymodel.json")) return false;
  const fs::path adapter = build::pythonAdapterPath();
  std::error_code ec;
  if (adapter.empty() || fs::file_size(adapter, ec) != fs::file_size(library, ec) || ec) return false;
  return sha256Hex(readFile(adapter)) == sha256Hex(readFile(library));
}

// "cuda:N" -> N ("cuda" is GPU 0).
int gpuIndex(const std::string& device) {
  return device.size() > 5 ? std::atoi(device.c_str() + 5) : 0;
}

}  // namespace

std::string detectGpuArch(const std::string& device) { return gpuComputeCapability(gpuIndex(device)); }

namespace {

std::vector<double> numbers(const Json& j) {
  std::vector<double> v;
  if (j.is_array())
    for (const auto& x : j)
      if (x.is_number()) v.push_back(x.get<double>());
  return v;
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string text(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

// The baselines of the worker's "baselines" record `tj` (the figures it
// measured, or the cache entry whose eager time it re-checked) into r's
// eager and compile figures and their kinds. `build_error`: why the
// AOTInductor package could not be built here ("" none).
void readBaselines(const Json& tj, const std::string& build_error, const ProfileOptions& o, ProfileResult& r) {
  auto participant = [&](const char* name, TimingStats& out) {
    if (!tj.contains(name)) return;
    out.event = summarize(numbers(tj[name]["event_ms"]));
    out.device = summarize(numbers(tj[name]["device_ms"]));
  };
  r.eager_baseline = text(tj, "eager_baseline");
  r.compile_baseline = text(tj, "compile_baseline");
  r.compile_baseline_reason = text(tj, "compile_baseline_reason");
  r.python_baselines = tj.value("python_baselines", Json());
  r.baselines_cached = tj.value("baselines_cached", false);
  if (r.baselines_cached) {
    const Json& c = tj["cached"];
    if (c.contains("eager")) r.eager = TimingStats::fromJson(c["eager"]);
    if (c.contains("compile") && c["compile"].contains("median_ms")) r.compile = TimingStats::fromJson(c["compile"]);
    // No compile baseline chosen ("+none": not asked, or no package): this
    // run's own reason, not the one of the run that wrote the entry.
    else if (text(tj, "baseline_kinds").ends_with("+none") && tj.contains("compile_error"))
      r.compile.error = text(tj, "compile_error");
    else if (c.contains("compile")) r.compile.error = c["compile"].value("error", "not timed");
    // What the cached figures are (the entry says; the key's kinds are what
    // was chosen before a fallback).
    if (c.contains("eager_baseline")) r.eager_baseline = text(c, "eager_baseline");
    if (c.contains("compile_baseline")) r.compile_baseline = text(c, "compile_baseline");
    if (c.contains("compile_baseline_reason")) r.compile_baseline_reason = text(c, "compile_baseline_reason");
  } else {
    participant("eager", r.eager);
    participant("compile", r.compile);
  }
  if (!r.compile.present() && r.compile.error.empty())
    r.compile.error = tj.contains("compile_error") ? tj["compile_error"].get<std::string>()
                      : !build_error.empty()         ? build_error
                      : !o.compile_baseline          ? "not asked (--no-compile)"
                                                     : "not timed";
  if (!r.compile.present()) {
    r.compile_baseline.clear();
    r.compile_baseline_reason = r.compile.error;
  }
}

}  // namespace

Json TimingStats::toJson() const {
  if (!present()) {
    Json j;
    j["error"] = error.empty() ? Json(nullptr) : Json(error);
    return j;
  }
  Json j = event.toJson();
  j["cached"] = cached;
  j["device"] = device.n ? device.toJson() : Json(nullptr);
  return j;
}

TimingStats TimingStats::fromJson(const Json& j) {
  TimingStats t;
  t.event = SampleStats::fromJson(j);
  if (j.is_object() && j.contains("device")) t.device = SampleStats::fromJson(j["device"]);
  t.cached = true;
  return t;
}

fs::path defaultBaselineCacheDir() {
  if (const char* d = std::getenv("KB_BASELINE_CACHE"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "kernelbench-rl/baselines";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache/kernelbench-rl/baselines";
  return fs::temp_directory_path() / "kernelbench-rl-baselines";
}

void allowLibrariesForOps(const std::vector<std::string>& ops, ProvenancePolicy& policy) {
  static const std::set<std::string> gemm = {
      "aten::linear", "aten::matmul", "aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm",
      "aten::addbmm", "aten::einsum", "aten::bilinear", "aten::scaled_dot_product_attention",
      "aten::addmv", "aten::mv", "aten::dot", "aten::tensordot", "aten::_scaled_dot_product_attention"};
  for (const auto& op : ops) {
    if (gemm.count(op) || op.find("lstm") != std::string::npos || op.find("gru") != std::string::npos ||
        op.find("rnn") != std::string::npos || op.find("multi_head_attention") != std::string::npos)
      policy.allow_gemm_library = true;
    if (op.find("conv") != std::string::npos || op == "aten::_convolution" || op == "aten::convolution")
      policy.allow_conv_library = true;
  }
}

Json ProfileResult::toJson() const {
  ReportHeader h = makeHeader("kbprof", "profile", task_id, solution_hash, status, started_at, finished_at);
  h.gpu = gpu;
  h.driver = driver;
  h.torch_version = torch_version;
  Json j = headerToJson(h);
  j["message"] = message;
  j["evidence"] = evidence;
  j["device"] = device;
  j["arch"] = arch.empty() ? Json(nullptr) : Json(arch);
  j["timing_method"] = timing_method.empty() ? Json(nullptr) : Json(timing_method);
  Json t;
  t["eager"] = eager.toJson();
  t["compile"] = compile.toJson();
  t["candidate"] = candidate.toJson();
  // Which baseline each figure is (docs/kbprof.md "Baselines"); kbreward
  // carries these names with the speed-ups.
  auto kind = [](const std::string& k) { return k.empty() ? Json(nullptr) : Json(k); };
  t["eager"]["baseline"] = eager.present() ? kind(eager_baseline) : Json(nullptr);
  t["compile"]["baseline"] = compile.present() ? kind(compile_baseline) : Json(nullptr);
  j["timings"] = t;
  j["speedup_vs_eager"] = speedup_vs_eager ? Json(*speedup_vs_eager) : Json(nullptr);
  j["speedup_vs_compile"] = speedup_vs_compile ? Json(*speedup_vs_compile) : Json(nullptr);
  j["eager_baseline"] = eager.present() ? kind(eager_baseline) : Json(nullptr);
  j["compile_baseline"] = compile.present() ? kind(compile_baseline) : Json(nullptr);
  j["compile_baseline_reason"] = kind(compile_baseline_reason);
  j["python_baselines"] = python_baselines;
  Json k = Json::array();
  for (const auto& x : kernels) k.push_back(x.toJson());
  j["kernels"] = k;
  j["provenance"] = provenance.toJson();
  j["plausibility"] = plausibility.toJson();
  j["precision"] = precision.toJson();
  j["clamped_samples"] = clamped_samples;
  Json s = Json::array();
  for (const auto& x : seeds) s.push_back(x.toJson());
  j["seeds"] = s;
  j["timed_calls"] = timed_calls;
  j["checked_calls"] = checked_calls;
  j["parent_clock"] = parent_clock;
  j["input_method"] = input_method.empty() ? Json(nullptr) : Json(input_method);
  j["baseline_check"] = baseline_check;
  j["baselines_written"] = baselines_written;
  j["baselines_cached"] = baselines_cached;
  j["baseline_cache_note"] = baseline_cache_note.empty() ? Json(nullptr) : Json(baseline_cache_note);
  j["rounds"] = rounds;
  j["stop"] = stop;
  j["bandwidth_gbps"] = bandwidth_gbps;
  j["head_start_us"] = head_start_us;
  j["seconds"] = seconds;
  j["worker_seconds"] = worker_seconds;
  j["reference_seconds"] = reference_seconds;
  j["prepare_seconds"] = prepare_seconds;
  j["reference_ready_wait_seconds"] = reference_ready_wait_seconds;
  j["reference_retry_after"] = reference_retry_after.empty() ? Json(nullptr) : Json(reference_retry_after);
  j["exclusive_wait_seconds"] = exclusive_wait_seconds;
  j["after_seconds"] = after_seconds;
  j["reference_phases"] = reference_phases;
  j["baseline_build_seconds"] = baseline_build_seconds;
  j["worker"] = worker.toJson();
  return j;
}

struct PreparedProfile::State {
  Clock::time_point t0 = Clock::now();
  std::optional<Clock::time_point> verdict_at;  // when the reference's verdict came
  ProfileOptions o;
  ProfileResult r;
  bool ended = false;  // r is final (a failure while preparing)
  std::string device_error;  // thrown by run(), after the import check: a UsageError (a bad name) or
  bool device_missing = false;  // a kb::Error (no GPU here: the machine's fault, exit 3)
  task::TaskBundle bundle;
  std::string compile_error, task_hash;
  std::string package_missing;  // why there is no usable package (build_compiled off)
  fs::path cache_dir, binary, scratch;
  verify::WorkerRequest req;
  verify::WorkerLimits limits;  // o.limits with the result channel sized for the task
  std::optional<verify::CandidateWorker> worker;
  std::optional<verify::ReferenceWorker> reference;
  // Other processes with a context on the GPU when the profile started,
  // this process's own workers left out as they were listed
  // (gpuNeighboursNow; nullopt: nvidia-smi could not say); baselines
  // measured beside one are not cached.
  std::optional<std::vector<long>> foreign_before;
  // The most timed calls the result channel is sized for (each call's
  // outputs travel in its commit, and every one is checked).
  uint64_t max_timed = 0;
  bool device_pending = false;  // the workers wait for nameDevice()

  ProfileResult& done(Status s, const std::string& message) {
    r.status = s;
    r.message = message;
    r.seconds = since(t0);
    if (verdict_at) r.after_seconds = since(*verdict_at);
    r.finished_at = nowIso8601();
    ended = true;
    return r;
  }
};

PreparedProfile::PreparedProfile() : state_(std::make_unique<State>()) {}
PreparedProfile::~PreparedProfile() = default;

std::unique_ptr<PreparedProfile> prepareProfile(const fs::path& task_dir, const ProfileOptions& o, bool with_candidate) {
  std::unique_ptr<PreparedProfile> p(new PreparedProfile());
  PreparedProfile::State& st = *p->state_;
  st.o = o;
  sandbox::protectMemoryFromSiblings();
  ProfileResult& r = st.r;
  r.started_at = nowIso8601();
  st.bundle = task::openBundle(task_dir);
  task::TaskBundle& bundle = st.bundle;
  r.task_id = bundle.info.id;
  // The precision contract every check of this profile uses (task/precision.h).
  r.precision.policy = PrecisionPolicy::fromJson(task::resolveContract(bundle.info, o.precision).toJson());
  // A device that cannot run this is an error (a bad name: usage; no GPU
  // here: the machine's), but only once the library's imports have been
  // read (run()): a build or import failure is reported on any machine.
  try {
    r.device = verify::checkDevice(o.device);
  } catch (const UsageError& e) {
    st.device_error = e.what();
    return p;
  } catch (const Error& e) {
    st.device_error = e.what();
    st.device_missing = true;
    return p;
  }
  const bool cpu = r.device == "cpu";
  r.driver = cpu ? "" : nvidiaDriverVersion();
  // Held workers: the GPU's other processes are listed when it is named.
  st.device_pending = o.device_named_later && o.start_workers_early && with_candidate;

  // 2. The compiled baseline, once per task and architecture.
  r.arch = cpu ? "cpu" : o.arch.empty() ? detectGpuArch(r.device) : o.arch;
  // With build_compiled off (kbserve) a package missing or unusable is not
  // built: no "aoti" figure, and the worker says why.
  const bool wants_package = o.compile_baseline && o.compile_baseline_mode != "none" &&
                             o.compile_baseline_mode != "python" && !r.arch.empty() && !cpu;
  if (wants_package && !o.build_compiled) {
    if (auto why = task::checkCompiled(bundle, r.arch)) st.package_missing = *why;
  } else if (wants_package) {
    auto tb = Clock::now();
    try {
      bundle = python::ensureCompiled(bundle, r.arch, r.device, o.python);
    } catch (const std::exception& e) {
      st.compile_error = e.what();
    }
    r.baseline_build_seconds = since(tb);
  }

  // 3. The worker's request: correctness seeds, then the timed rounds (the
  // seeds of the timed calls are drawn by the worker, one right before each
  // call, and the inputs made from them on the device).
  Json profile;
  profile["baselines"] = true;
  // Which compile figure (the worker chooses once it knows the candidate's
  // format, timing.cpp chooseBaselines): AOTInductor's package when it is
  // here ("compile"); torch.compile in Python where it is not, on a GPU
  // ("python_compile"; on the CPU only for Python-format candidates or when
  // asked: CPU timings are the harness's tests); why there is no package.
  const std::string mode = o.compile_baseline ? o.compile_baseline_mode : "none";
  profile["compile"] =
      mode != "none" && mode != "python" && st.compile_error.empty() && st.package_missing.empty() && !cpu;
  profile["compile_baseline"] = mode;
  profile["python_compile"] = !cpu;
  profile["aoti_missing"] = cpu ? std::string("no AOTInductor package for CPU timings")
                          : !st.compile_error.empty() ? "AOTInductor: " + st.compile_error.substr(0, st.compile_error.find('\n'))
                          : !st.package_missing.empty() ? "no AOTInductor package (not built here: " + st.package_missing + ")"
                                                        : std::string("no AOTInductor package");
  // The worker reads the cache (and re-checks a hit); --baseline-only
  // measures afresh. Host-clock times on a CPU are cached only when asked
  // (--cache-cpu-baselines: the harness's tests).
  st.cache_dir = o.baseline_cache_dir.empty() ? defaultBaselineCacheDir() : o.baseline_cache_dir;
  st.task_hash = taskContentHash(bundle.dir, r.arch);
  if (o.use_baseline_cache && with_candidate && (!cpu || o.cache_cpu_baselines)) {
    profile["baseline_cache_dir"] = st.cache_dir.string();
    profile["task_hash"] = st.task_hash;
  }
  profile["baseline_seed"] = bundle.info.correctness_seeds.empty() ? uint64_t{0} : bundle.info.correctness_seeds.front();
  profile["keep_bytes"] = o.keep_bytes;
  profile["null_calls"] = with_candidate ? std::max(1, o.null_calls) : 0;
  profile["check_rounds"] = o.check_rounds;
  profile["check_tolerance"] = o.check_tolerance;
  profile["warmup"] = o.warmup;
  profile["head_start_us"] = o.head_start_us;
  profile["min_rounds"] = o.min_rounds;
  profile["max_rounds"] = o.max_rounds;
  profile["target_ci"] = o.target_ci;
  profile["budget_seconds"] = o.budget_seconds;

  verify::WorkerRequest& req = st.req;
  req.task_dir = bundle.dir;
  req.device = r.device;
  if (o.verify && with_candidate) req.seeds = task::verificationSeeds(bundle.info);
  req.seccomp = o.seccomp;
  req.landlock = o.landlock;
  req.allow_open_rdwr = o.allow_open_rdwr;
  req.profile = profile;
  st.binary = o.worker.empty() ? verify::findWorkerBinary() : o.worker;
  if (!cpu && !st.device_pending) st.foreign_before = gpuNeighboursNow(gpuIndex(r.device), st.binary);
  st.scratch = verify::scratchRootOr(o.scratch_dir);
  // Other candidates' channels and builds, and the baselines: never readable.
  std::vector<fs::path> hidden = o.hidden_dirs;
  hidden.push_back(st.cache_dir);
  if (o.hide_private_dirs) req.hidden_dirs = verify::hiddenFromWorkers(st.scratch, hidden);
  // The result channel carries the seeds' outputs and every timed call's.
  st.limits = o.limits;
  const uint64_t out_bytes = std::max<uint64_t>(1, verify::taskOutputBytes(bundle.info));
  st.max_timed = std::min<uint64_t>(static_cast<uint64_t>(std::max(1, o.max_rounds)),
                                    std::max<uint64_t>(1, o.keep_bytes / out_bytes));
  verify::sizeWorkerForTask(bundle.info, with_candidate ? req.seeds.size() + st.max_timed : 0,
                    /*candidates=*/1, st.scratch, req, st.limits);
  // torch.compile in the trusted phase writes files far larger than a
  // candidate may (a preprocessed header of tens of MiB): the worker starts
  // with room for them and lowers the limit again before any candidate code
  // (timing.cpp runBaselines).
  if (mode != "none") {
    // (Never below the result channel's bound: fd 3 is a file the worker
    // appends to, and RLIMIT_FSIZE applies to it: core/process.h.)
    req.profile["file_size_bytes_after"] = std::max(st.limits.file_size_bytes, st.limits.result_limit + 1);
    st.limits.file_size_bytes = std::max<uint64_t>(st.limits.file_size_bytes, 4ull << 30);
  }
  if (!with_candidate || !o.start_workers_early) return p;

  // Both workers start now and get ready while the caller builds: the
  // candidate's waits for its library before it confines itself and loads
  // candidate code (CandidateWorker); the reference's does CPU work only
  // until it is handed its request, after the candidate's process group is
  // gone (ReferenceWorker).
  // Held (device_named_later), neither makes a CUDA call before nameDevice().
  r.prepare_seconds = since(st.t0);
  const double wait = st.device_pending ? o.hold_seconds : 600.0;
  req.device_on_stdin = st.device_pending;
  st.worker.emplace(req, st.limits, st.binary, st.scratch, /*keep_dir=*/true, wait);
  st.reference.emplace(bundle.dir, r.device, req.seeds, st.scratch, st.binary,
                       o.limits.wall_seconds + o.reference_timeout_seconds + wait, st.device_pending);
  return p;
}

bool PreparedProfile::waitsForDevice() const { return state_->device_pending; }

void PreparedProfile::nameDevice(const std::string& device) {
  State& st = *state_;
  if (!st.device_pending) return;
  // The placeholder's checks (device, architecture) hold for the named GPU:
  // the caller names one of the same kind.
  st.r.device = verify::checkDevice(device);
  st.req.device = st.r.device;
  if (st.r.device != "cpu") st.foreign_before = gpuNeighboursNow(gpuIndex(st.r.device), st.binary);
  st.worker->nameDevice(st.r.device);
  st.reference->nameDevice(st.r.device);
  st.device_pending = false;
}

ProfileResult profileSolution(const fs::path& task_dir, const fs::path& library, const std::string& solution_hash,
                              const ProfileOptions& o) {
  return prepareProfile(task_dir, o, !library.empty())->run(library, solution_hash);
}

ProfileResult PreparedProfile::run(const fs::path& library, const std::string& solution_hash) {
  try {
    return judge(library, solution_hash);
  } catch (const Json::exception& e) {
    // Every field the parent reads was checked by its kind as the record
    // arrived (verify/wire.h recordProblem); one that still does not read
    // came from the candidate's side of the channel, never from the harness.
    return state_->done(Status::HackDetected, std::string("a result record the harness did not write (") + e.what() +
                                                  "): something other than the harness wrote to the channel");
  }
}

ProfileResult PreparedProfile::judge(const fs::path& library, const std::string& solution_hash) {
  State& st = *state_;
  if (st.ended) return st.r;
  if (st.device_pending) throw Error("PreparedProfile::run before nameDevice");
  const ProfileOptions& o = st.o;
  ProfileResult& r = st.r;
  task::TaskBundle& bundle = st.bundle;
  r.solution_hash = solution_hash;
  auto done = [&](Status s, const std::string& message) { return st.done(s, message); };

  // 1. What the library imports (none: --baseline-only).
  ElfSymbols symbols;
  try {
    // A Python-format solution's library is the trusted adapter, copied in
    // by the build stage (lib/pymodel): its imports are the harness's, not
    // the candidate's (its Python runs under the Python rules and CUPTI).
    if (!library.empty() && !isTrustedPythonAdapter(library)) symbols = readElfSymbols(library);
  } catch (const std::exception& e) {
    return done(Status::InfraError, e.what());
  }
  // Each judge's verdict ends the profile when it is not ok (the judges,
  // in registry order: profile/judges.h, docs/judges/).
  auto judged = [&](const Judgement& j) {
    r.evidence.insert(r.evidence.end(), j.evidence.begin(), j.evidence.end());
    return done(j.status, j.message);
  };
  if (Judgement j = judgeImports(forbiddenImports(symbols)); !j.ok()) return judged(j);
  if (!st.device_error.empty()) {
    if (st.device_missing) throw Error(st.device_error);
    throw UsageError(st.device_error);
  }
  // The own kernels' SASS (profile/sass.h), read beside the worker: their
  // precision classes, information for the report.
  std::future<SassScan> sass;
  if (!library.empty() && r.device != "cpu") sass = std::async(std::launch::async, readLibrarySass, library, 60);
  // kbprof's own reading of the GPU's name (an nvidia-smi process), beside
  // the worker too: the peak FLOPs table is looked up by it.
  std::future<std::string> own_gpu_name;
  if (r.device != "cpu") own_gpu_name = std::async(std::launch::async, gpuName, gpuIndex(r.device));

  // The worker's questions on its stdin socket are the timed-call protocol
  // (profile/pacing.h): this process draws every timed call's seed, keeps
  // the loop in step with the result channel and times each call itself.
  fs::path channel;
  std::optional<CallPacer> pacer;
  // The shorter limit until the timed loop (untimed_wall_seconds) gives way
  // to the profile's at its first seed the pacer grants (never at a refused
  // question: asking is not enough to buy time).
  bool timed_loop_started = false;
  auto respond = [&](const std::string& line) -> std::string {
    if (!pacer) return "refused: no timed calls here";
    std::string answer = pacer->answer(line);
    if (!timed_loop_started && line.rfind("seed ", 0) == 0 && answer.rfind("refused", 0) != 0) {
      timed_loop_started = true;
      if (st.worker) st.worker->extendWall();
    }
    return answer;
  };
  const double untimed_wall =
      o.untimed_wall_seconds > 0 ? o.untimed_wall_seconds + (st.limits.wall_seconds - o.limits.wall_seconds) : 0;

  auto tw = Clock::now();
  if (library.empty()) {  // --baseline-only: no candidate, no question to answer
    st.req.library.clear();
    r.worker = verify::runWorker(st.req, st.limits, st.binary, st.scratch, /*keep_dir=*/true);
  } else {
    if (!st.worker)  // --late-start: started now
      st.worker.emplace(st.req, st.limits, st.binary, st.scratch, /*keep_dir=*/true, /*wait_seconds=*/0);
    channel = st.worker->dir() / "result.bin";
    std::set<uint64_t> taken(bundle.info.correctness_seeds.begin(), bundle.info.correctness_seeds.end());
    taken.insert(st.req.seeds.begin(), st.req.seeds.end());
    pacer.emplace(channel, taken, st.max_timed);
    // The reference worker started beside the candidate's prepares on the
    // same device (its context, the weights, warm-up kernels): the
    // candidate's worker gets its library, and with it the go for the
    // baselines and every timed call, only once that work is done. Nothing
    // is timed beside our own GPU work. (No candidate code exists yet: the
    // wait is the harness's alone.)
    if (st.reference) {
      auto tr = Clock::now();
      WaitingProcess::Word ready = st.reference->awaitReady(o.reference_ready_seconds);
      r.reference_ready_wait_seconds = since(tr);
      if (ready == WaitingProcess::Word::TimedOut)
        return done(Status::InfraError, "the reference worker was not ready within " +
                                            std::to_string(static_cast<int>(o.reference_ready_seconds)) +
                                            " s of the timed phase; nothing was timed");
      // Ended: it is gone, so nothing of it runs beside the timing; its
      // finish() below says why.
    }
    // The caller's gate (kbserve: the GPU shared by several evaluations'
    // untimed work) closes now, once this worker's own set-up is done too:
    // from the baselines to the end of the candidate's process group the
    // GPU runs nothing else.
    ExclusiveGpu exclusive;
    if (o.exclusive_gpu) {
      if (st.worker->awaitReady(o.reference_ready_seconds) == WaitingProcess::Word::TimedOut)
        return done(Status::InfraError, "the candidate's worker did not end its set-up within " +
                                            std::to_string(static_cast<int>(o.reference_ready_seconds)) +
                                            " s; nothing was timed");
      auto tg = Clock::now();
      exclusive = o.exclusive_gpu();
      r.exclusive_wait_seconds = since(tg);
    }
    r.worker = st.worker->finish(library, respond, untimed_wall);
    exclusive.reset();  // the candidate's process group is gone: the GPU is shared again
  }
  r.worker_seconds = since(tw);
  if (untimed_wall > 0 && !timed_loop_started && r.worker.status == Status::Timeout)
    r.worker.message = "no result within the wall-clock limit of " + std::to_string(static_cast<int>(untimed_wall)) +
                       " s for start-up, init and the correctness seeds (verify's limit: this profile is the "
                       "evaluation's verification); the worker's process group was killed";
  verify::WorkerDirGuard cleanup(r.worker, o.keep_worker_dir);
  // What the trusted phase measured: the "baselines" record, which left the
  // worker before its "hello" (before the candidate's library was opened).
  const Json* baselines = nullptr;
  const Json* timing = nullptr;
  bool hello_seen = false, forged_baselines = false;
  for (const auto& rec : r.worker.records) {
    std::string type = rec.header.value("type", "");
    if (type == "hello") hello_seen = true;
    if (type == "baselines") {
      if (baselines || hello_seen) forged_baselines = true;  // a second one, or one after hello
      else baselines = &rec.header;
    }
    if (type == "timing") timing = &rec.header;
  }
  // The baselines this run measured (in the worker before any candidate
  // code was loaded) go to the cache, unless another process had the GPU
  // when the run began or ended: then they may be slowed by a neighbour.
  // Also when the candidate then failed: the record left the worker before
  // its library was opened, whatever the candidate did afterwards (a
  // channel with a second or late baselines record is not read for them,
  // and an infra_error says nothing about the candidate, so maybe about
  // the machine: neither is cached).
  auto storeBaselines = [&](const Json& tj, const ProfileResult& b) {
    bool measured_here = !b.baselines_cached && b.eager.present() && !tj.value("gpu", "").empty();
    if (!measured_here || !o.use_baseline_cache) return;
    if (tj.contains("not_cacheable")) {
      r.baseline_cache_note = "not cached: " + text(tj, "not_cacheable");
    } else if (r.device != "cpu") {
      // Both lists were filtered as they were taken, while their processes
      // lived (a neighbour's worker that has ended cannot be told from anyone's).
      std::optional<std::vector<long>> after = gpuNeighboursNow(gpuIndex(r.device), st.binary, /*drop_ended=*/false);
      if (!st.foreign_before || !after)
        r.baseline_cache_note = "not cached: nvidia-smi could not list the GPU's processes";
      else if (!st.foreign_before->empty() || !after->empty())
        r.baseline_cache_note = "not cached: other processes had the GPU (pids " +
                                std::to_string((st.foreign_before->empty() ? *after : *st.foreign_before).front()) + "...)";
    } else if (!o.cache_cpu_baselines) {
      r.baseline_cache_note = "not cached: host-clock times on a CPU";
    }
    if (!r.baseline_cache_note.empty()) return;
    BaselineKey key;
    key.task_hash = st.task_hash;
    key.gpu = tj.value("gpu", "");
    key.driver = tj.value("driver", r.driver);
    key.torch_version = tj.value("torch_version", "");
    // As the worker keys it (timing.cpp runBaselines): no head start on the CPU.
    key.method = timingMethodName(r.device == "cpu" ? 0.0 : o.head_start_us);
    key.baselines = tj.value("baseline_kinds", key.baselines);
    if (kindsRunModelPy(key.baselines)) key.model_hash = modelSourceHash(st.bundle.dir);
    Json entry;
    entry["eager"] = b.eager.toJson();
    entry["compile"] = b.compile.present() ? b.compile.toJson() : Json{{"error", b.compile.error}};
    entry["eager_baseline"] = b.eager_baseline;
    entry["compile_baseline"] = b.compile_baseline.empty() ? Json(nullptr) : Json(b.compile_baseline);
    entry["compile_baseline_reason"] = b.compile_baseline_reason.empty() ? Json(nullptr) : Json(b.compile_baseline_reason);
    entry["measured_at"] = nowIso8601();
    try {
      writeBaselineCache(st.cache_dir, key, entry);
      r.baselines_written = true;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kbprof: warning: cannot write the baseline cache: %s\n", e.what());
    }
  };
  // The candidate failed after the baselines were measured: the report is
  // the failure's, the baselines still go to the cache.
  auto failedAfterBaselines = [&](Status s, const std::string& message) {
    if (baselines && !forged_baselines && r.worker.status != Status::InfraError && s != Status::InfraError) {
      // The reference worker holds a device context while it waits: gone
      // (it is not asked any more) before nvidia-smi says who has the GPU.
      st.reference.reset();
      ProfileResult b;
      readBaselines(*baselines, st.compile_error, o, b);
      storeBaselines(*baselines, b);
    }
    return done(s, message);
  };
  // A broken protocol is the candidate's doing whatever else the worker's
  // end says (the harness asks only in turn).
  if (pacer && !pacer->violation().empty())
    if (Judgement j = judgeProtocol(pacer->violation(), pacer->done(), 0, 0); !j.ok()) {
      r.evidence.insert(r.evidence.end(), j.evidence.begin(), j.evidence.end());
      return failedAfterBaselines(j.status, j.message);
    }
  if (forged_baselines && (r.worker.status == Status::Ok || r.worker.status == Status::RuntimeError))
    return done(Status::HackDetected, "a baselines record after the candidate's code was loaded: "
                                      "something other than the harness wrote to the channel");
  if (r.worker.status != Status::Ok) return failedAfterBaselines(r.worker.status, r.worker.message);
  if (!baselines || !timing) return done(Status::InfraError, "the worker finished without its baselines or timing record");

  const Json& tj = *baselines;
  r.gpu = tj.value("gpu", "");
  r.torch_version = tj.value("torch_version", "");
  r.rounds = timing->value("rounds", 0);
  r.stop = timing->value("stop", "");
  r.bandwidth_gbps = tj.value("bandwidth_gbps", 0.0);
  r.head_start_us = tj.value("head_start_us", 0.0);
  r.input_method = tj.value("input_method", "");
  r.timing_method = tj.value("timing_method", "");
  r.baseline_check = tj.value("baseline_check", Json());

  // The timed calls, as their commits carried them (the pacer checked their
  // order and seeds as they came), with this process's own clock.
  std::vector<const Json*> commits;
  for (const auto& rec : r.worker.records)
    if (rec.header.value("type", "") == "commit") commits.push_back(&rec.header);
  if (!library.empty()) {
    if (Judgement j = judgeProtocol("", pacer->done(), commits.size(), pacer->calls().size()); !j.ok())
      return judged(j);
    r.timed_calls = commits.size();
    for (uint64_t k = 0; k < commits.size(); ++k) r.checked_calls.push_back(k);
  }

  // 4. The reference checks the correctness seeds and every timed call.
  verify::CompareRequest cmp;
  cmp.task_dir = bundle.dir;
  cmp.device = r.device;
  cmp.seeds = st.req.seeds;
  cmp.calls = r.checked_calls;
  cmp.atol = r.precision.policy.atol;
  cmp.rtol = r.precision.policy.rtol;
  cmp.candidate_results = {r.worker.dir / "result.bin"};
  if (!cmp.seeds.empty() || !cmp.calls.empty()) {
    verify::ReferenceVerdict v = st.reference ? st.reference->finish(cmp)
                                      : verify::compareWithReference(cmp, st.scratch, st.binary, o.reference_timeout_seconds);
    // The reference's process failed (no verdict, e.g. a CUDA error of its
    // own): the check is ours and repeatable, the candidate's outputs are on
    // disk and the candidate is gone, so a fresh reference process checks
    // them once more; its verdict stands, and the first failure is reported.
    if (v.worker_failed) {
      r.reference_retry_after = v.message;
      const double first_seconds = v.seconds;
      v = verify::compareWithReference(cmp, st.scratch, st.binary, o.reference_timeout_seconds);
      v.seconds += first_seconds;
    }
    r.reference_seconds = v.seconds;
    st.verdict_at = Clock::now();
    r.reference_phases = v.phases;
    r.seeds = v.seeds;
    if (v.status != Status::Ok)
      return failedAfterBaselines(v.status, referenceFailureMessage(r.seeds, v.status, v.message, r.timed_calls));
  }

  // 5. Timings, provenance, timer consistency, plausibility: each from a
  // record that left the worker before candidate code could touch it (the
  // baselines before the library was opened, each timed call's commit
  // before the next call's seed was given), or from this process itself.
  readBaselines(tj, st.compile_error, o, r);

  // The candidate's activities: the calls outside the loop by the ids they
  // were launched under (their "activities" records), each timed call by
  // structure and time (classifyTimedCall).
  const bool cuda = r.timing_method == "cuda_events";
  // One record per call, in the order the harness made the calls: on a GPU
  // every call (init, seeds, warm-ups, timed) has exactly one "activities"
  // record or commit, indices 0, 1, 2, ...; a record of its own (a fake
  // seed call without kernels would empty skipped-work's common set) is
  // not the harness's.
  {
    int64_t expect = 0, last = -1;
    for (const auto& rec : r.worker.records) {
      std::string type = rec.header.value("type", "");
      if (type != "activities" && type != "commit") continue;
      int64_t index = rec.header.value(type == "commit" ? "index" : "call", int64_t{-1});
      if ((cuda && index != expect) || index <= last)
        return done(Status::HackDetected, "the result channel carries a call record out of the harness's order (call " +
                                              std::to_string(index) + "): something other than the harness wrote to it");
      last = index;
      ++expect;
    }
  }
  const uint32_t launch_stream = tj.value("launch_stream", uint32_t{0});
  std::vector<Activity> activities;
  std::vector<CallWindow> calls;
  std::vector<std::string> id_problems;
  for (const auto& rec : r.worker.records) {
    if (rec.header.value("type", "") != "activities") continue;
    CallWindow w;
    w.index = rec.header.value("call", int64_t{-1});
    w.kind = rec.header.value("kind", "");
    for (const auto& aj : rec.header.value("activities", Json::array())) {
      Activity a = Activity::fromJson(aj);
      if (a.external == harness_ids::kMarkerBase + static_cast<uint64_t>(w.index)) {
        w.marker_start_ns = a.start_ns;
        continue;
      }
      if (a.owner == kOwnerHarness) continue;
      if (a.owner >= 0) a.owner = w.index;  // launched under some call's id during this one
      activities.push_back(a);
    }
    calls.push_back(w);
  }
  std::vector<double> ev, host, dev, window;
  for (const Json* c : commits) {
    ev.push_back(c->value("event_ms", 0.0));
    host.push_back(c->value("host_ms", 0.0));
    if (!cuda) continue;
    std::vector<Activity> raw;
    for (const auto& aj : c->value("activities", Json::array())) raw.push_back(Activity::fromJson(aj));
    TimedCallActivities t = classifyTimedCall(raw, c->value("index", int64_t{-1}));
    for (const auto& p : t.problems) id_problems.push_back(p);
    if (t.window.marker_start_ns == 0 || t.window.start_ns == 0)
      id_problems.push_back("timed call " + std::to_string(c->value("call", 0)) + " has no head-start spin or end marker of the harness's");
    else if (launch_stream != 0 && t.marker_stream != launch_stream)
      id_problems.push_back("timed call " + std::to_string(c->value("call", 0)) + "'s end marker ran on stream " +
                            std::to_string(t.marker_stream) + ", not the launch stream " + std::to_string(launch_stream));
    dev.push_back(busyMilliseconds(t.owned));
    activities.insert(activities.end(), t.owned.begin(), t.owned.end());
    calls.push_back(t.window);
  }
  for (std::size_t k = 0; k < commits.size() && pacer; ++k) window.push_back(pacer->calls()[k].windowMs());

  // This process's clock bounds every call from below: its window around
  // the call less the longest null call's. A call's time is the larger of
  // its events and that bound, so no speed-up exceeds what this clock allows.
  std::vector<double> null_ms = pacer ? pacer->nullWindowsMs() : std::vector<double>{};
  std::size_t bounded = 0;
  std::vector<double> timed = boundByParentClock(ev, window, null_ms, &bounded);
  if (!library.empty()) {
    r.candidate.event = summarize(timed);
    r.candidate.device = summarize(dev);
    Json pc;
    pc["null_calls"] = null_ms.size();
    pc["null_max_ms"] = null_ms.empty() ? 0.0 : *std::max_element(null_ms.begin(), null_ms.end());
    pc["null_median_ms"] = null_ms.empty() ? 0.0 : summarize(null_ms).median;
    pc["window_median_ms"] = window.empty() ? 0.0 : summarize(window).median;
    pc["event_median_ms"] = ev.empty() ? 0.0 : summarize(ev).median;
    pc["bounded_calls"] = bounded;
    r.parent_clock = pc;
  }

  // The candidate's own code: a native solution's library, or a Python
  // solution's load_inline extensions (pymodel.json beside the trusted
  // adapter, which defines none of the candidate's kernels).
  std::optional<OwnCode> own;
  std::string own_error;
  if (!library.empty()) {
    try {
      own = readOwnCode(library.string());
    } catch (const std::exception& e) {
      own_error = e.what();
    }
  }
  ProvenancePolicy policy;
  policy.own_kernels = symbols.defined_functions;
  if (own && isTrustedPythonAdapter(library)) {
    policy.own_kernels.insert(own->kernels.begin(), own->kernels.end());
    policy.torch_ops_allowed = o.torch_ops_allowed;
    // Its extensions' <<<grid, block>>> launches: the legacy default
    // stream, ordered inside the call by the adapter (provenance.h).
    policy.legacy_stream = tj.value("legacy_stream", uint32_t{0});
  }
  allowLibrariesForOps(tj.value("ops", std::vector<std::string>{}), policy);
  r.provenance = checkProvenance(activities, calls, launch_stream, policy);
  for (const auto& p : id_problems) r.provenance.findings.insert(r.provenance.findings.begin(), {"harness-id", p});
  SassScan own_sass = sass.valid() ? sass.get() : SassScan{{}, library.empty() ? "none" : "not read (CPU device)"};
  r.precision = judgePrecision(activities, policy.own_kernels, r.precision.policy, own_sass.kernels, own_sass.status);
  // The breakdown covers the timed calls only.
  std::set<int64_t> timed_index;
  for (const auto& c : calls)
    if (c.kind == "timed") timed_index.insert(c.index);
  std::vector<Activity> timed_activities;
  for (const auto& a : activities)
    if (timed_index.count(a.owner)) timed_activities.push_back(a);
  // Whose kernels the timed calls ran: the candidate's own code (its
  // library, or a Python solution's extensions) against library kernels.
  // Information for the report, never a verdict.
  if (own) {
    r.kernels = kernelBreakdown(timed_activities, &*own);
    r.provenance.own_kernel_share = ownKernelShare(timed_activities, *own).toJson();
  } else if (!library.empty()) {
    r.kernels = kernelBreakdown(timed_activities);
    r.provenance.own_kernel_share = Json{{"error", own_error}};
  }

  // The plausibility floor's inputs: the task's bytes from its own
  // description, the bandwidth measured before the candidate's library was
  // opened, the task's FLOPs and the GPU's peak from this process's tables.
  PlausibilityInput pin;
  pin.input_bytes = verify::taskInputBytes(bundle.info);
  if (pin.input_bytes == 0) pin.input_bytes = tj.value("input_bytes", uint64_t{0});
  pin.output_bytes = verify::taskOutputBytes(bundle.info);
  if (pin.output_bytes == 0) pin.output_bytes = tj.value("reference_output_bytes", uint64_t{0});
  pin.bandwidth_gbps = r.bandwidth_gbps;
  pin.flops = bundle.info.json.value("flops", 0.0);
  // The GPU whose peak is looked up: kbprof's own reading (nvidia-smi),
  // else the trusted phase's name (sent before the library was opened).
  std::string judged_gpu = own_gpu_name.valid() ? own_gpu_name.get() : "";
  if (judged_gpu.empty()) judged_gpu = r.gpu;
  FlopsPeakChoice peak = chooseFlopsPeak(judged_gpu, r.arch, r.precision.policy.contract, r.precision.policy.task_float_dtype);
  pin.peak_tflops = peak.peak_tflops;
  pin.peak_basis = peak.basis;
  if (r.candidate.present())
    r.plausibility = checkPlausibility(pin, r.candidate.event.median, r.eager.event.median, o.plausibility_slack);
  if (r.candidate.present() && r.plausibility.floor_ms > 0) {
    std::vector<double> raised = timed;
    for (double& x : raised)
      if (x < r.plausibility.floor_ms) {
        x = r.plausibility.floor_ms;
        ++r.clamped_samples;
      }
    if (r.clamped_samples) {
      SampleStats dev_stats = r.candidate.device;
      r.candidate.event = summarize(raised);
      r.candidate.device = dev_stats;
    }
  }
  if (r.candidate.present() && r.eager.present()) r.speedup_vs_eager = speedup(r.eager.event.median, r.candidate.event.median);
  if (r.candidate.present() && r.compile.present())
    r.speedup_vs_compile = speedup(r.compile.event.median, r.candidate.event.median);

  storeBaselines(tj, r);

  if (Judgement j = judgeProvenance(r.provenance); !j.ok()) return judged(j);
  if (Judgement j = judgePrecision(r.precision); !j.ok()) return judged(j);
  if (Judgement j = judgeTimers(ev, host, dev, window); !j.ok()) return judged(j);
  if (Judgement j = judgePlausibility(r.plausibility); !j.ok()) return judged(j);
  return done(Status::Ok, "");
}

std::string renderProfileText(const ProfileResult& r, std::size_t max_kernels) {
  std::string out;
  out += "kbprof: " + r.task_id + " on " + (r.gpu.empty() ? r.device : r.gpu) + ": " +
         std::string(statusName(r.status)) + (r.message.empty() ? "" : " — " + r.message) + "\n";
  for (const auto& e : r.evidence) out += "  evidence: " + e + "\n";
  out += "  " + r.precision.summary() + "\n";
  if (!r.candidate.present()) return out;
  char line[256];
  std::snprintf(line, sizeof line, "\n  %-10s %10s %10s %10s %10s %8s %6s  %s\n", "", "median ms", "mean ms",
                "min ms", "device ms", "ci95 ±", "n", "speed-up");
  out += line;
  auto row = [&](const char* name, const TimingStats& t, std::optional<double> speedup) {
    if (!t.present()) {
      std::snprintf(line, sizeof line, "  %-10s %s\n", name, t.error.empty() ? "-" : t.error.substr(0, 120).c_str());
    } else {
      std::snprintf(line, sizeof line, "  %-10s %10.4f %10.4f %10.4f %10.4f %7.2f%% %6zu  %s%s\n", name, t.event.median,
                    t.event.mean, t.event.min, t.device.median, 100 * t.event.ciHalfWidth(), t.event.n,
                    speedup ? fmt("%.2fx", *speedup).c_str() : "", t.cached ? " (cached)" : "");
    }
    out += line;
  };
  row("eager", r.eager, std::nullopt);
  row("compile", r.compile, std::nullopt);
  // Which baselines (docs/kbprof.md "Baselines").
  if (r.eager.present())
    out += "  (eager: " + (r.eager_baseline.empty() ? std::string("libtorch") : r.eager_baseline) + "; compile: " +
           (r.compile_baseline.empty() ? std::string("none") : r.compile_baseline) +
           (r.compile_baseline_reason.empty() ? std::string() : ", " + r.compile_baseline_reason.substr(0, 160)) + ")\n";
  out += "  ";
  row("candidate", r.candidate, std::nullopt);
  std::string vs;
  if (r.speedup_vs_eager) vs += fmt("%.2fx vs eager", *r.speedup_vs_eager);
  if (r.speedup_vs_compile) vs += (vs.empty() ? "" : ", ") + fmt("%.2fx vs torch.compile", *r.speedup_vs_compile);
  if (!vs.empty())
    out += "\n  candidate: " + vs + " (medians of " + (r.timing_method == "host_clock" ? "host-clock" : "CUDA-event") + " times" +
           (r.head_start_us > 0 ? fmt(", %.0f us head start", r.head_start_us) : std::string()) + ")\n";
  if (const Json& own = r.provenance.own_kernel_share; own.is_object() && own.contains("share") && own["share"].is_number())
  {
    std::snprintf(line, sizeof line, "  own kernels: %.1f%% of the kernel time (%.4f ms own, %.4f ms library) over %llu timed calls\n",
                  100 * own["share"].get<double>(), own.value("own_ms", 0.0), own.value("library_ms", 0.0),
                  static_cast<unsigned long long>(own.value("timed_calls", uint64_t{0})));
    out += line;
  }
  if (!r.kernels.empty()) {
    std::snprintf(line, sizeof line, "\n  %-60s %6s %10s %10s %6s  %s\n", "candidate kernel", "calls", "total ms", "mean ms", "share",
                  "origin");
    out += line;
    for (std::size_t i = 0; i < r.kernels.size() && i < max_kernels; ++i) {
      const auto& k = r.kernels[i];
      std::string name = k.name.size() > 60 ? k.name.substr(0, 57) + "..." : k.name;
      std::snprintf(line, sizeof line, "  %-60s %6llu %10.4f %10.4f %5.1f%%  %s\n", name.c_str(),
                    static_cast<unsigned long long>(k.calls), k.total_ms, k.mean_ms, 100 * k.share, k.origin.c_str());
      out += line;
    }
  }
  std::snprintf(line, sizeof line, "\n  %d rounds (%s), %zu timed calls checked against the reference, %.1f s\n",
                r.rounds, r.stop.c_str(), r.checked_calls.size(), r.seconds);
  out += line;
  return out;
}

}  // namespace kb::profile
