// The toy family's "kbcheck" environment (environment.h): lib/eval's build and
// verify, batched by task ahead of the loop, with the verdict cache.
#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "eval/eval.h"
#include "toy/environment.h"
#include "solution/solution.h"

namespace fs = std::filesystem;

namespace kb::toy {

namespace {

using VerdictKey = std::pair<std::string, std::string>;  // task id, answer's SHA-256

// One pair's verdict: where it stopped (build or verify) and why.
struct Verdict {
  Status status = Status::InfraError;
  bool built = false;  // the build passed: the status is the verifier's
  std::string message;
  bool cached = false;  // from the verdict cache
};

std::string reasonOf(Status s) { return s == Status::Ok ? "ok" : std::string(statusName(s)); }

std::map<VerdictKey, Verdict> readVerdicts(const fs::path& file) {
  std::map<VerdictKey, Verdict> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("task") || !j.contains("answer_sha256")) continue;  // a torn last line
    const std::optional<Status> status = parseStatus(j.value("status", ""));
    if (!status) continue;
    out[{j["task"].get<std::string>(), j["answer_sha256"].get<std::string>()}] =
        {*status, *status != Status::CompileError, j.value("message", ""), true};
  }
  return out;
}

class KbcheckToyEnvironment : public ToyEnvironment {
 public:
  explicit KbcheckToyEnvironment(const ToyEnvOptions& o)
      : ToyEnvironment(o.work_dir, o.device.rfind("cuda", 0) == 0), o_(o), devices_(toyEnvDevices(o.device)) {}

  agent::StageResult compile(const fs::path& dir) override {
    const Verdict v = verdict(dir);
    return toyStage("compile", v.built ? Status::Ok : v.status, reasonOf(v.built ? Status::Ok : v.status),
                    v.built ? "" : v.message, v.cached);
  }

  agent::StageResult verify(const fs::path& dir) override {
    const Verdict v = verdict(dir);
    return toyStage("verify", v.status, reasonOf(v.status), v.message, v.cached);
  }

  // The pair's one verdict: the stages the session ran (verify only when it built).
  std::vector<agent::StageResult> check(const fs::path& dir) override {
    const Verdict v = verdict(dir);
    std::vector<agent::StageResult> out{compile(dir)};
    if (v.built) out.push_back(verify(dir));
    return out;
  }

  void prepare(const std::vector<ToyTask>& tasks, const std::vector<std::string>& answers) override;
  Json stats() const override { return stats_; }

 private:
  eval::Request request(const ToyTask& task, const std::string& device) const {
    eval::Request q;
    q.task_dir = toyBundleDir(o_.bundles, task);
    q.stages = {.static_check = false, .build = true, .verify = true, .profile = false};
    q.build.target = device.rfind("cuda", 0) == 0 ? build::BuildTarget::Cuda : build::BuildTarget::Cpu;
    q.build.arch = o_.arch;
    q.build.jobs = 1;
    if (!o_.build_cache.empty()) q.build.cache_dir = o_.build_cache;
    q.verify.device = device;
    q.tool = "kbtrain";
    q.stage_errors_as_infra = true;  // a verdict for every answer, never an exception out of a job
    return q;
  }

  std::optional<Verdict> known(const fs::path& dir) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = verdicts_.find(dir);
    if (it == verdicts_.end()) return std::nullopt;
    return it->second;
  }

  // What prepare found, or the pair scored now (kept unless infra_error).
  Verdict verdict(const fs::path& dir) {
    if (std::optional<Verdict> v = known(dir)) return *v;
    const Verdict v = scoreTask(written(dir).task, {dir}, devices_.front()).front();
    if (v.status != Status::InfraError) {
      std::lock_guard<std::mutex> lock(mu_);
      verdicts_[dir] = v;
    }
    return v;
  }

  // Reads a solution; a verdict when it is not one (a NUL byte, over the
  // size limits: the answer's fault, a compile error).
  static std::optional<Verdict> load(const fs::path& dir, solution::Solution& sol) {
    try {
      sol = solution::loadSolution(dir);
      return std::nullopt;
    } catch (const UsageError& e) {
      return Verdict{Status::CompileError, false, e.what(), false};
    } catch (const std::exception& e) {
      return Verdict{Status::InfraError, false, e.what(), false};
    }
  }

  // One task's answers: built, then the built ones verified together.
  std::vector<Verdict> scoreTask(const ToyTask& task, const std::vector<fs::path>& dirs, const std::string& device) {
    std::vector<Verdict> out(dirs.size());
    std::vector<solution::Solution> solutions;
    std::vector<size_t> loaded;
    for (size_t k = 0; k < dirs.size(); ++k) {
      solution::Solution sol;
      if (std::optional<Verdict> bad = load(dirs[k], sol)) {
        out[k] = *bad;
      } else {
        solutions.push_back(std::move(sol));
        loaded.push_back(k);
      }
    }
    if (solutions.empty()) return out;
    std::vector<eval::Result> results;
    try {
      results = eval::evaluateBatch(request(task, device), solutions);
    } catch (const std::exception& e) {
      for (size_t k : loaded) out[k] = {Status::InfraError, false, e.what(), false};
      return out;
    }
    for (size_t j = 0; j < loaded.size(); ++j) {
      const eval::Result& r = results[j];
      Verdict& v = out[loaded[j]];
      v.status = r.status();
      v.built = r.verify.has_value();
      v.message = r.verify ? r.verify->message : r.build ? r.build->message : r.message;
      if (v.built && v.status != Status::InfraError) ++verified_;
    }
    return out;
  }

  ToyEnvOptions o_;
  std::vector<std::string> devices_;
  mutable std::mutex mu_;
  std::map<fs::path, Verdict> verdicts_;
  std::atomic<int> verified_{0};
  Json stats_ = nullptr;
};

void KbcheckToyEnvironment::prepare(const std::vector<ToyTask>& tasks, const std::vector<std::string>& answers) {
  if (tasks.size() != answers.size()) throw UsageError("toy environment: one answer per task expected");
  const auto t0 = Clock::now();
  verified_ = 0;
  // Distinct pairs (a directory each), in first-seen order. One that cannot
  // be written is left to the loop's final check, which says so.
  std::vector<fs::path> distinct;
  std::set<fs::path> seen;
  for (size_t i = 0; i < tasks.size(); ++i) {
    toyBundleDir(o_.bundles, tasks[i]);
    try {
      fs::path dir = writeAnswer(tasks[i], answers[i]);
      if (seen.insert(dir).second) distinct.push_back(dir);
    } catch (const std::exception&) {
    }
  }
  // Verdicts from earlier calls; infra errors are not kept, so they are tried again.
  std::map<VerdictKey, Verdict> cache;
  if (!o_.verdict_cache.empty()) cache = readVerdicts(o_.verdict_cache);
  std::map<std::string, std::vector<fs::path>> by_task;  // task id -> pairs to score
  std::map<std::string, ToyTask> task_of;
  int cached = 0;
  for (const fs::path& dir : distinct) {
    const Written w = written(dir);
    auto it = cache.find({w.task.id, w.answer_sha256});
    if (it != cache.end()) {
      std::lock_guard<std::mutex> lock(mu_);
      verdicts_[dir] = it->second;
      ++cached;
    } else {
      by_task[w.task.id].push_back(dir);
      task_of.emplace(w.task.id, w.task);
    }
  }
  // Each verdict is appended as soon as its task's batch is done, so an
  // interrupted call (a time limit) loses none of the batches it finished.
  std::ofstream cache_file;
  if (!o_.verdict_cache.empty()) {
    if (o_.verdict_cache.has_parent_path()) fs::create_directories(o_.verdict_cache.parent_path());
    cache_file.open(o_.verdict_cache, std::ios::app);
    if (!cache_file) throw Error("cannot write the verdict cache " + o_.verdict_cache.string());
  }
  std::vector<const std::pair<const std::string, std::vector<fs::path>>*> batches;
  for (const auto& b : by_task) batches.push_back(&b);
  std::atomic<size_t> next{0};
  auto job = [&](const std::string& device) {
    for (size_t b; (b = next++) < batches.size();) {
      const auto& [id, dirs] = *batches[b];
      const std::vector<Verdict> scored = scoreTask(task_of.at(id), dirs, device);
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t j = 0; j < dirs.size(); ++j) {
        verdicts_[dirs[j]] = scored[j];
        if (cache_file.is_open() && scored[j].status != Status::InfraError)  // infra errors are tried again
          cache_file << Json{{"task", id}, {"answer_sha256", written(dirs[j]).answer_sha256},
                             {"status", statusName(scored[j].status)}, {"reason", reasonOf(scored[j].status)},
                             {"message", scored[j].message}}.dump()
                     << '\n' << std::flush;
      }
    }
  };
  std::vector<std::thread> threads;
  const size_t n_threads = std::min<size_t>(static_cast<size_t>(std::max(1, o_.jobs)), batches.size());
  for (size_t k = 0; k < n_threads; ++k) threads.emplace_back(job, devices_[k % devices_.size()]);
  for (auto& t : threads) t.join();
  if (cache_file.is_open() && !cache_file) throw Error("cannot write the verdict cache " + o_.verdict_cache.string());

  int compile_errors = 0, correct = 0, infra = 0;
  for (const fs::path& dir : distinct) {
    const Verdict v = *known(dir);
    compile_errors += v.status == Status::CompileError;
    correct += v.status == Status::Ok;
    infra += v.status == Status::InfraError;
  }
  stats_ = {{"distinct", distinct.size()}, {"cached", cached},    {"compile_errors", compile_errors},
            {"verified", verified_.load()}, {"correct", correct}, {"infra_errors", infra},
            {"seconds", since(t0)}};
}

}  // namespace

std::unique_ptr<ToyEnvironment> makeKbcheckToyEnvironment(const ToyEnvOptions& options) {
  return std::make_unique<KbcheckToyEnvironment>(options);
}

}  // namespace kb::toy
