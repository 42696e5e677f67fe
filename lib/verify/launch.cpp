// The parent side of the worker (verify/worker.h): torch-free.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <cstdlib>
#include <set>

#include "core/error.h"
#include "core/gpu_info.h"
#include "core/paths.h"
#include "verify/worker.h"
#include "sandbox/confine.h"
#include "task/bundle.h"

namespace fs = std::filesystem;

namespace kb::verify {

Json WorkerRequest::toJson() const {
  Json j;
  j["task_dir"] = task_dir.string();
  j["library"] = library.string();
  j["device"] = device;
  j["seeds"] = seeds;
  j["max_output_bytes"] = max_output_bytes;
  j["max_scratch_bytes"] = max_scratch_bytes;
  j["memory_budget_bytes"] = memory_budget_bytes;
  j["seccomp"] = seccomp;
  j["landlock"] = landlock;
  j["allow_open_rdwr"] = allow_open_rdwr;
  if (!hidden_dirs.empty()) j["hidden_dirs"] = hidden_dirs;
  j["library_on_stdin"] = library_on_stdin;
  if (device_on_stdin) j["device_on_stdin"] = true;
  if (!profile.is_null()) j["profile"] = profile;
  return j;
}

WorkerRequest WorkerRequest::fromJson(const Json& j) {
  WorkerRequest r;
  r.task_dir = j.at("task_dir").get<std::string>();
  r.library = j.at("library").get<std::string>();
  r.device = j.at("device").get<std::string>();
  r.seeds = j.at("seeds").get<std::vector<uint64_t>>();
  r.max_output_bytes = j.at("max_output_bytes").get<uint64_t>();
  r.max_scratch_bytes = j.at("max_scratch_bytes").get<uint64_t>();
  r.memory_budget_bytes = j.at("memory_budget_bytes").get<uint64_t>();
  r.seccomp = j.at("seccomp").get<bool>();
  r.landlock = j.at("landlock").get<bool>();
  r.allow_open_rdwr = j.at("allow_open_rdwr").get<bool>();
  r.hidden_dirs = j.value("hidden_dirs", std::vector<std::string>{});
  r.library_on_stdin = j.value("library_on_stdin", false);
  r.device_on_stdin = j.value("device_on_stdin", false);
  if (j.contains("profile")) r.profile = j.at("profile");
  return r;
}

Json WorkerRun::toJson() const {
  Json j;
  j["status"] = std::string(statusName(status));
  j["message"] = message;
  j["end"] = describeEnd(process);
  j["exit_code"] = process.end == ProcessEnd::Exited ? Json(process.exit_code) : Json(nullptr);
  j["signal"] = process.end == ProcessEnd::Signaled ? Json(signalName(process.signal)) : Json(nullptr);
  j["blocked_syscall"] = blocked_syscall.empty() ? Json(nullptr) : Json(blocked_syscall);
  j["wall_seconds"] = process.wall_seconds;
  j["cpu_seconds"] = process.cpu_seconds;
  j["max_rss_kib"] = process.max_rss_kib;
  // No hello when the worker died during start-up.
  j["startup_seconds"] = hello.is_object() ? hello.value("startup_seconds", 0.0) : 0.0;
  j["confinement"] = hello.is_object() ? hello.value("confinement", "") : "";
  j["output"] = process.output;
  j["output_bytes"] = process.output_bytes;
  j["output_truncated"] = process.output_truncated;
  j["result_bytes"] = process.result_bytes;
  j["protocol_problem"] = protocol_problem.empty() ? Json(nullptr) : Json(protocol_problem);
  // Where the time went, from the worker's own records (its clock starts
  // in main(); outside_main is exec, loading LibTorch, and the exit).
  Json phases = Json::object();
  double seeds = 0.0;
  for (const auto& r : records) {
    std::string type = r.header.value("type", "");
    if (type == "hello") {
      phases["startup_seconds"] = r.header.value("startup_seconds", 0.0);
      phases["prefetch_seconds"] = r.header.value("prefetch_seconds", 0.0);
      phases["waited_seconds"] = r.header.value("waited_seconds", 0.0);
      if (r.header.contains("startup_phases")) phases["startup"] = r.header["startup_phases"];
    } else if (type == "init") {
      phases["init_seconds"] = r.header.value("seconds", 0.0);
    } else if (type == "seed" && !r.header.contains("timed_call")) {
      seeds += r.header.value("seconds", 0.0);
    } else if (type == "timing") {
      phases["timing_seconds"] = r.header.value("seconds", 0.0);
      if (r.header.contains("parts")) phases["timing"] = r.header["parts"];
    } else if (type == "done") {
      phases["outside_main_seconds"] = process.wall_seconds - r.header.value("seconds", 0.0);
    }
  }
  phases["seeds_seconds"] = seeds;
  j["phases"] = phases;
  return j;
}

WorkerDirGuard::~WorkerDirGuard() {
  std::error_code ec;
  if (dir_.empty()) return;
  if (keep_)
    keepScratchDir(dir_);
  else
    fs::remove_all(dir_, ec);
}

fs::path findWorkerBinary() {
  if (const char* w = std::getenv("KB_WORKER"); w && *w) {
    if (::access(w, X_OK) == 0) return w;
    throw Error(std::string("KB_WORKER=") + w + " is not an executable");
  }
  fs::path next = selfExecutableDir() / "kbcheck-worker";
  if (::access(next.c_str(), X_OK) == 0) return next;
  if (fs::path installed = installedHelper("kbcheck-worker"); !installed.empty()) {
    if (::access(installed.c_str(), X_OK) == 0) return installed;
    throw Error("kbcheck-worker not found at " + installed.string() + " (set KB_WORKER to its path)");
  }
#ifdef KB_WORKER_BUILD_PATH
  if (::access(KB_WORKER_BUILD_PATH, X_OK) == 0) return KB_WORKER_BUILD_PATH;
#endif
  throw Error("kbcheck-worker not found next to " + selfExecutableDir().string() +
              " (set KB_WORKER to its path)");
}

namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

// The name in "kb-sandbox: blocked system call NAME" if the output has one.
std::string blockedSyscall(const std::string& output) {
  auto pos = output.find(sandbox::kBlockedSyscallMarker);
  if (pos == std::string::npos) return "";
  pos += std::string(sandbox::kBlockedSyscallMarker).size();
  auto end = output.find_first_of("\n ", pos);
  return output.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

void classify(WorkerRun& run, const WorkerLimits& limits) {
  const ProcessResult& p = run.process;
  for (const auto& r : run.records) {
    const std::string type = r.header["type"].get<std::string>();
    if (type == "hello" && !run.started) {
      run.started = true;
      run.hello = r.header;
    }
    if (type == "done") run.finished = true;
  }
  // A record sequence the worker never writes (a second hello, a seed
  // twice) means the candidate wrote to the result channel itself.
  std::set<uint64_t> seen;
  int hellos = 0, inits = 0, dones = 0, timings = 0, baselines = 0;
  std::set<uint64_t> calls_sent;
  for (const auto& r : run.records) {
    const std::string type = r.header["type"].get<std::string>();
    if (type == "violation") {
      // The harness saw the solution break the interface's contract (a
      // context it was not handed): a deviation, never a runtime error.
      run.status = Status::HackDetected;
      run.message = r.header.value("message", std::string("the solution broke the harness's protocol"));
      return;
    }
    if (type == "hello") ++hellos;
    if (type == "timing") ++timings;
    if (type == "baselines") ++baselines;
    if (type == "commit" && !calls_sent.insert(r.header.value("call", ~0ull)).second) ++timings;  // a call committed twice
    if (type == "init") ++inits;
    if (type == "done") ++dones;
    if (type == "seed") {
      uint64_t s = r.header.value("seed", uint64_t{0});
      if (!seen.insert(s).second) {
        run.status = Status::HackDetected;
        run.message = "the result channel carries seed " + std::to_string(s) +
                      " twice: something other than the harness wrote to it";
        return;
      }
    }
  }
  if (hellos > 1 || inits > 1 || dones > 1 || timings > 1 || baselines > 1) {
    run.status = Status::HackDetected;
    run.message = "the result channel carries records the harness did not write";
    return;
  }

  if (!run.started) {
    // Candidate code has not run yet: whatever happened is ours.
    run.status = Status::InfraError;
    run.message = "the worker failed during start-up (" + describeEnd(p) + ")";
    if (!p.output.empty()) {
      std::string out = p.output;
      while (!out.empty() && out.back() == '\n') out.pop_back();
      run.message += ": " + out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
    }
    if (p.end == ProcessEnd::SpawnFailed) run.message = "cannot start the worker: " + p.message;
    return;
  }
  switch (p.end) {
    case ProcessEnd::TimedOut:
      run.status = Status::Timeout;
      run.message = "no result within the wall-clock limit of " + seconds(limits.wall_seconds) +
                    "; the worker's process group was killed";
      return;
    case ProcessEnd::Signaled:
      if (p.signal == SIGXCPU || (p.signal == SIGKILL && p.cpu_seconds >= limits.cpu_seconds)) {
        run.status = Status::Timeout;
        run.message = "CPU time limit of " + seconds(static_cast<double>(limits.cpu_seconds)) + " reached";
        return;
      }
      // Past the result channel's bound (RLIMIT_FSIZE, core/process.h):
      // the protocol's problem below, not a crash.
      if (p.signal == SIGXFSZ && p.result_truncated) break;
      if (p.signal == SIGSYS) {
        run.blocked_syscall = blockedSyscall(p.output);
        run.status = Status::HackDetected;
        run.message = "the sandbox stopped a forbidden system call" +
                      (run.blocked_syscall.empty()
                           ? std::string(" (not named: it was made with signals blocked)")
                           : ": " + run.blocked_syscall);
        return;
      }
      run.status = Status::Crash;
      run.message = "the worker was killed by " + signalName(p.signal);
      return;
    case ProcessEnd::Exited:
      break;
    case ProcessEnd::SpawnFailed:
      run.status = Status::InfraError;
      run.message = p.message;
      return;
  }
  if (!run.protocol_problem.empty()) {
    run.status = Status::HackDetected;
    run.message = "the result channel is malformed (" + run.protocol_problem +
                  "): something other than the harness wrote to it";
    return;
  }
  // Exited. A failure the worker reported (init or a seed) is a runtime error.
  for (const auto& r : run.records) {
    if (r.header.contains("ok") && r.header["ok"].is_boolean() && !r.header["ok"].get<bool>()) {
      run.status = Status::RuntimeError;
      run.message = r.header.value("message", std::string("failed"));
      if (r.header["type"] == "seed")
        run.message = task::describeSeed(r.header.value("seed", uint64_t{0})) + ": " + run.message;
      return;
    }
  }
  if (!run.finished || p.exit_code != 0) {
    run.status = Status::RuntimeError;
    run.message = "the worker ended (" + describeEnd(p) +
                  ") before it finished: the solution ended the process itself";
    return;
  }
  run.status = Status::Ok;
}

}  // namespace

namespace {

// The worker's directory (request.json, result.bin, work/) and its process
// spec; false (and run.status set) when the directory cannot be made.
bool prepareWorker(const WorkerRequest& request, const WorkerLimits& limits, const fs::path& binary,
                   const fs::path& scratch, WorkerRun& run, ProcessSpec& spec) {
  std::error_code ec;
  try {
    // Reclaims what killed runs left in `scratch` first (core/scratch_dir.h).
    ScratchDir made = makeScratchDir(scratch, "kbcheck-worker");
    run.dir = made.path;
    run.dir_owner = made.owner;
  } catch (const std::exception& e) {
    run.status = Status::InfraError;
    run.message = std::string("cannot create a worker directory: ") + e.what();
    return false;
  }
  fs::path work = run.dir / "work";
  fs::create_directories(work, ec);
  fs::path request_file = run.dir / "request.json";
  try {
    writeJsonFile(request_file, request.toJson());
  } catch (const std::exception& e) {
    run.status = Status::InfraError;
    run.message = e.what();
    fs::remove_all(run.dir, ec);
    return false;
  }
  spec.argv = {binary.string(), "candidate", request_file.string()};
  // Only what the CUDA runtime needs; HOME and TMPDIR point into the worker's
  // own directory; no LD_PRELOAD, no PYTHONPATH, no tokens. Large host
  // buffers (input sets, results on their way out) on transparent huge
  // pages where the kernel offers them: fewer page faults.
  spec.env = scrubbedEnvironment(
      {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"},
      {"PATH=/usr/bin:/bin", "HOME=" + work.string(), "TMPDIR=" + work.string(), "LC_ALL=C",
       "OMP_NUM_THREADS=1", "CUDA_CACHE_DISABLE=1", "CUDA_MODULE_LOADING=LAZY", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"});
  spec.cwd = work;
  spec.limits.wall_seconds = limits.wall_seconds;
  spec.limits.cpu_seconds = limits.cpu_seconds;
  spec.limits.file_size_bytes = limits.file_size_bytes;
  spec.limits.processes = limits.processes;
  spec.output_limit = limits.output_limit;
  spec.result_file = run.dir / "result.bin";
  spec.result_limit = limits.result_limit;
  return true;
}

// What the ended worker sent, classified.
void collectWorker(WorkerRun& run, const WorkerLimits& limits, bool keep_dir, const std::string& device) {
  run.records = readRecords(run.dir / "result.bin", &run.protocol_problem, /*headers_only=*/true);
  if (run.process.result_truncated)
    run.protocol_problem = "more than " + std::to_string(limits.result_limit) + " bytes";
  try {
    classify(run, limits);
  } catch (const Json::exception& e) {
    // readRecords checked every field's kind (wire.h recordProblem); a
    // header that still does not read is not the harness's.
    run.status = Status::HackDetected;
    run.message = std::string("a result record the harness did not write (") + e.what() +
                  "): something other than the harness wrote to the channel";
  }
  // A failure on a GPU that has since stopped answering its driver is the
  // machine's, not the candidate's: infra_error, never a reward.
  if ((run.status == Status::Crash || run.status == Status::RuntimeError || run.status == Status::Timeout) &&
      device.rfind("cuda", 0) == 0) {
    int index = device.size() > 5 ? std::atoi(device.c_str() + 5) : 0;
    if (std::string fault = gpuFault(index); !fault.empty()) {
      run.message = "the GPU failed during the run (" + fault + "); the worker had ended with " +
                    std::string(statusName(run.status)) + ": " + run.message;
      run.status = Status::InfraError;
    }
  }
  std::error_code ec;
  if (!keep_dir) fs::remove_all(run.dir, ec);
}

}  // namespace

WorkerRun runWorker(const WorkerRequest& request, const WorkerLimits& limits,
                    const fs::path& binary, const fs::path& scratch, bool keep_dir) {
  WorkerRun run;
  ProcessSpec spec;
  if (!prepareWorker(request, limits, binary, scratch, run, spec)) return run;
  run.process = runProcess(spec);
  collectWorker(run, limits, keep_dir, request.device);
  return run;
}

struct CandidateWorker::State {
  WorkerLimits limits;
  std::string device;
  bool device_pending = false;  // started with device_on_stdin, not yet named
  bool ready = false;           // its "ready" read (awaitReady)
  bool keep_dir = false;
  WorkerRun run;
  std::shared_ptr<std::atomic<double>> wall = std::make_shared<std::atomic<double>>(0.0);
  std::optional<WaitingProcess> process;
  bool finished = false;
};

CandidateWorker::CandidateWorker(WorkerRequest request, const WorkerLimits& limits, const fs::path& binary,
                                 const fs::path& scratch, bool keep_dir, double wait_seconds)
    : state_(std::make_unique<State>()) {
  State& st = *state_;
  st.limits = limits;
  st.keep_dir = keep_dir;
  st.device = request.device;
  st.device_pending = request.device_on_stdin;
  request.library.clear();
  request.library_on_stdin = true;
  ProcessSpec spec;
  if (!prepareWorker(request, limits, binary, scratch, st.run, spec)) return;
  // Until it has its library the worker may wait as long as a build takes;
  // then it gets its own limit (finish()).
  st.wall->store(limits.wall_seconds + wait_seconds);
  spec.live_wall_seconds = st.wall;
  st.process.emplace(spec);
}

CandidateWorker::~CandidateWorker() {
  if (!state_) return;
  State& st = *state_;
  st.process.reset();  // unfinished: the worker reads EOF and leaves before any candidate code
  std::error_code ec;
  if (!st.finished && !st.run.dir.empty()) fs::remove_all(st.run.dir, ec);
}

const fs::path& CandidateWorker::dir() const { return state_->run.dir; }

void CandidateWorker::nameDevice(const std::string& device) {
  State& st = *state_;
  if (!st.device_pending) throw Error("CandidateWorker::nameDevice: the worker was not started waiting for its device");
  st.device_pending = false;
  st.device = device;
  if (st.process) st.process->send(device + "\n");  // a dead worker: finish() says why
}

WaitingProcess::Word CandidateWorker::awaitReady(double timeout_seconds) {
  State& st = *state_;
  if (st.finished) throw Error("CandidateWorker::awaitReady after finish");
  if (st.device_pending) throw Error("CandidateWorker::awaitReady before nameDevice");
  if (st.ready) return WaitingProcess::Word::Ready;
  if (!st.process) return WaitingProcess::Word::Ended;
  WaitingProcess::Word w = st.process->awaitWord("ready", timeout_seconds);
  st.ready = w == WaitingProcess::Word::Ready;
  return w;
}

void CandidateWorker::extendWall() {
  State& st = *state_;
  if (st.process) st.wall->store(st.process->secondsSinceStart() + st.limits.wall_seconds);
}

WorkerRun CandidateWorker::finish(const fs::path& library,
                                  const std::function<std::string(const std::string&)>& respond,
                                  double first_wall_seconds) {
  State& st = *state_;
  if (st.finished) throw Error("CandidateWorker::finish called twice");
  if (st.device_pending) throw Error("CandidateWorker::finish before nameDevice");
  st.finished = true;
  if (!st.process) return st.run;  // the directory could not be made: run says why
  // Its own wall-clock limit counts from here.
  st.wall->store(st.process->secondsSinceStart() +
                 (first_wall_seconds > 0 ? std::min(first_wall_seconds, st.limits.wall_seconds) : st.limits.wall_seconds));
  // Its "ready" comes first on the socket (read here unless the caller
  // waited for it): never taken for a question of the timed loop. A worker
  // that ends or says something else instead is answered by its end.
  if (!st.ready) st.ready = st.process->awaitWord("ready", st.limits.wall_seconds + 5) == WaitingProcess::Word::Ready;
  st.run.process = st.process->finish(fs::absolute(library).string() + "\n", respond);
  collectWorker(st.run, st.limits, st.keep_dir, st.device);
  return st.run;
}

}  // namespace kb::verify
