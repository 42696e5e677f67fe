#include "serve/service.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <fstream>
#include <random>

#include "core/clock.h"
#include "core/error.h"
#include "core/policy_file.h"
#include "eval/session.h"
#include "reward/reward.h"
#include "solution/solution.h"

namespace fs = std::filesystem;

namespace kb::serve {

std::string_view stateName(State s) {
  switch (s) {
    case State::Queued: return "queued";
    case State::Running: return "running";
    case State::Done: return "done";
    case State::Cancelled: return "cancelled";
  }
  return "?";
}

namespace {

double epochSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string isoTime(double epoch) {
  if (epoch <= 0) return "";
  std::time_t t = static_cast<std::time_t>(epoch);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>((epoch - std::floor(epoch)) * 1000));
  return out;
}

}  // namespace

bool outOfDeviceMemory(const eval::Result& result) {
  if (result.status() != Status::RuntimeError && result.status() != Status::InfraError) return false;
  std::string m = result.message;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  return m.find("out of memory") != std::string::npos;
}

// One accepted evaluation. Fields below `mu_` of the service are guarded by it;
// `solution` is the runner's alone once the job is running.
struct Service::Job {
  std::string id;
  uint64_t seq = 0;
  EvaluationRequest request;
  std::string request_digest;  // request.digest(), computed once (it hashes every file)
  Json stages_json;            // request.toJson()["stages"], likewise
  std::string task_dir;
  bool task_cuda = false;
  State state = State::Queued;
  std::optional<Status> status;
  std::string message;
  Json report = nullptr, profile = nullptr, reward = nullptr;
  double submitted_at = 0, started_at = 0, finished_at = 0;
  int starts = 0;
  bool cancel_requested = false;
  std::vector<Json> events;
  std::optional<solution::Solution> solution;
  std::string solution_hash;
  fs::path work_dir;
  Json finished_json = nullptr;  // set when read back from the journal
  // A shared GPU's out-of-memory failure, after which the GPU stages ran
  // again with the GPU alone (Service::run); empty: no such retry.
  std::string retried_alone_after;
};

Service::Service(TaskStore& tasks, ServiceOptions options)
    : tasks_(tasks), options_(std::move(options)), checker_(options_.static_policy),
      torch_ops_allowed_(policyAllowsTorchOps(options_.static_policy)) {
  serviceProfileOptions(options_);  // a bad compile_baseline: UsageError before anything starts
  std::error_code ec;
  fs::create_directories(options_.state_dir / "work", ec);
  fs::create_directories(options_.state_dir / "scratch", ec);
  if (ec) throw Error("cannot create the state directory " + options_.state_dir.string() + ": " + ec.message());
  ::chmod(options_.state_dir.c_str(), 0700);
  std::vector<std::string> cpu_slots;
  for (size_t i = 0; i < std::max<size_t>(1, options_.cpu_slots); ++i) cpu_slots.push_back("cpu" + std::to_string(i));
  cpu_pool_ = std::make_shared<agent::ResourcePool>("cpu", cpu_slots);
  if (options_.gpu_share < 1) throw UsageError("the GPU share must be at least 1");
  if (!options_.gpus.empty()) {
    std::vector<std::string> gpu_slots;
    for (const auto& g : options_.gpus)
      for (size_t k = 0; k < options_.gpu_share; ++k) gpu_slots.push_back(g);
    if (options_.gpu_share > 1)
      for (const auto& g : options_.gpus) gates_[g] = std::make_unique<GpuGate>();
    gpu_pool_ = std::make_shared<agent::ResourcePool>("gpu", gpu_slots);
  }
  // Held profile workers are started for the first GPU and named another
  // (eval::Session::startProfileWorkers): only where all are of one kind.
  if (options_.early_workers && !options_.gpus.empty()) {
    bool one_kind = true;
    if (options_.gpus.size() > 1) {
      std::string first = profile::detectGpuArch("cuda:" + options_.gpus.front());
      for (const auto& g : options_.gpus) one_kind = one_kind && !first.empty() && profile::detectGpuArch("cuda:" + g) == first;
    }
    if (one_kind) max_held_profiles_ = 2 * options_.gpu_share * options_.gpus.size();
  }
  if (max_held_profiles_ > 0) {
    std::vector<std::string> hold_slots;
    for (size_t i = 0; i < max_held_profiles_; ++i) hold_slots.push_back("hold" + std::to_string(i));
    hold_pool_ = std::make_shared<agent::ResourcePool>("held-profile", hold_slots);
  }
  started_at_ = epochSeconds();

  metrics_.describe("kbserve_evaluations_accepted_total", "counter", "Evaluations accepted (journaled).");
  metrics_.describe("kbserve_evaluations_total", "counter", "Evaluations finished, by status (cancelled: state).");
  metrics_.describe("kbserve_rejected_total", "counter", "Submissions refused, by reason.");
  metrics_.describe("kbserve_stage_seconds", "histogram", "Seconds per evaluation stage.");
  metrics_.describe("kbserve_queue_seconds", "histogram", "Seconds from acceptance to start.");
  metrics_.describe("kbserve_evaluation_seconds", "histogram", "Seconds from start to finish.");
  metrics_.describe("kbserve_build_cache_total", "counter", "Builds by cache outcome (hit, miss).");
  metrics_.describe("kbserve_baseline_cache_total", "counter",
                    "Profiles by baseline cache outcome (hit, written, not_cached).");
  metrics_.describe("kbserve_queue_depth", "gauge", "Evaluations accepted and not started.");
  metrics_.describe("kbserve_running", "gauge", "Evaluations running.");
  metrics_.describe("kbserve_held_profiles", "gauge",
                    "Evaluations whose profile workers wait, held before CUDA, for their GPU lease.");
  metrics_.describe("kbserve_gpu_busy_fraction", "gauge", "Share of uptime the GPUs were leased (all GPUs).");
  if (!gates_.empty())
    metrics_.describe("kbserve_gpu_exclusive_fraction", "gauge",
                      "Share of uptime the GPUs ran a profile's baselines and candidate alone (--gpu-share).");
  metrics_.describe("kbserve_cpu_busy_fraction", "gauge", "Share of uptime the CPU slots were leased.");
  metrics_.describe("kbserve_uptime_seconds", "gauge", "Seconds since the server started.");
  metrics_.describe("kbserve_batch_size", "histogram", "CPU verifications run together on one reference worker.");
  metrics_.describe("kbserve_journal_recovered_total", "counter", "Evaluations found unfinished in the journal at start, by outcome.");

  journal_ = std::make_unique<Journal>(options_.state_dir / "journal.jsonl", JournalLimits{.keep_finished = options_.keep_results});
  replayJournal();
  size_t runners = std::max<size_t>(1, options_.cpu_slots) + (options_.gpu_share + 1) * options_.gpus.size();
  for (size_t i = 0; i < runners; ++i) runners_.emplace_back([this] { runner(); });
}

Service::~Service() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  changed_.notify_all();
  for (auto& t : runners_) t.join();
}

std::string randomId(const std::string& prefix) {
  std::random_device rd;
  static const char* hex = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 16; ++i) id.push_back(hex[rd() & 15]);
  return id;
}

// Writes the files into the evaluation's own directory and reads them as
// kbcheck would; throws RequestError(422) for a solution loadSolution refuses.
void Service::prepare(Job& job) {
  job.work_dir = options_.state_dir / "work" / job.id;
  std::error_code ec;
  fs::remove_all(job.work_dir, ec);
  fs::create_directories(job.work_dir, ec);
  ::chmod(job.work_dir.c_str(), 0700);
  try {
    writeSolutionFiles(job.work_dir / "solution", job.request.files);
  } catch (...) {  // (a full disk): nothing of it left behind
    fs::remove_all(job.work_dir, ec);
    throw;
  }
  try {
    solution::SolutionLimits lim;
    lim.max_file_bytes = options_.limits.max_file_bytes;
    lim.max_total_bytes = options_.limits.max_total_bytes;
    lim.max_files = options_.limits.max_files;
    job.solution = solution::loadSolution(job.work_dir / "solution", lim);
    job.solution_hash = job.solution->hash;
  } catch (const UsageError& e) {
    fs::remove_all(job.work_dir, ec);
    throw RequestError(422, e.what());
  }
}

// withoutFiles (journal.h): a finished entry is answered from its result,
// and 10,000 kept results of requests near the size limit would otherwise be
// gigabytes of journal and of memory at every restart (a review by attack,
// 2026-12-07).
void Service::replayJournal() {
  JournalReplay replay = Journal::replay(journal_->path());
  std::vector<JournalEntry> keep;
  size_t requeued = 0, answered = 0;
  for (JournalEntry& e : replay.entries) {
    auto job = std::make_shared<Job>();
    job->id = e.id;
    job->seq = next_seq_++;
    job->submitted_at = e.submitted_at;
    job->starts = e.starts;
    if (e.result) {
      job->state = e.result->value("state", "done") == "cancelled" ? State::Cancelled : State::Done;
      job->finished_json = *e.result;
      if (e.result->contains("idempotency_key") && (*e.result)["idempotency_key"].is_string())
        by_key_[(*e.result)["idempotency_key"].get<std::string>()] = e.id;
      jobs_[e.id] = job;
      finished_order_.push_back(e.id);
      keep.push_back(withoutFiles(e));
      continue;
    }
    std::string why;
    try {
      job->request = parseEvaluationRequest(e.request, options_.limits);
      job->request_digest = job->request.digest();
      job->stages_json = job->request.toJson()["stages"];
      auto task = tasks_.find(job->request.task);
      if (!task) throw RequestError(404, "the task " + job->request.task + " is no longer in the store");
      job->task_dir = task->dir.string();
      job->task_cuda = task->cuda;
      if (!job->request.idempotency_key.empty()) by_key_[job->request.idempotency_key] = job->id;
      if (e.starts >= 2) why = "the server stopped twice while this evaluation ran; it is not tried a third time";
      else prepare(*job);
    } catch (const std::exception& ex) {
      why = std::string("could not be resumed after a restart: ") + ex.what();
    }
    jobs_[e.id] = job;
    JournalEntry kept = e;
    if (!why.empty()) {
      // Answered, never scored: infra_error with the reason.
      job->state = State::Done;
      job->status = Status::InfraError;
      job->message = why;
      job->finished_at = epochSeconds();
      job->events.push_back({{"seq", 0}, {"event", "done"}, {"data", {{"status", "infra_error"}, {"message", why}}}});
      job->finished_json = toJson(*job);
      kept.result = job->finished_json;
      kept = withoutFiles(kept);
      finished_order_.push_back(e.id);
      ++answered;
    } else {
      pending_.insert({-job->request.priority, job->seq});
      by_seq_[job->seq] = job->id;
      job->events.push_back({{"seq", 0}, {"event", "state"}, {"data", {{"state", "queued"}, {"resumed", true}}}});
      ++requeued;
    }
    keep.push_back(kept);
  }
  // Only what is still worth answering is carried into the new journal.
  if (keep.size() > options_.keep_results + pending_.size()) {
    std::vector<JournalEntry> trimmed;
    size_t finished_seen = 0, finished_total = 0;
    for (const auto& e : keep) finished_total += e.result ? 1 : 0;
    for (auto& e : keep) {
      if (e.result && finished_total - finished_seen++ > options_.keep_results) {
        jobs_.erase(e.id);
        continue;
      }
      trimmed.push_back(std::move(e));
    }
    keep = std::move(trimmed);
    finished_order_.erase(std::remove_if(finished_order_.begin(), finished_order_.end(),
                                         [&](const std::string& id) { return !jobs_.count(id); }),
                          finished_order_.end());
  }
  journal_->rewrite(keep);
  if (requeued) metrics_.count("kbserve_journal_recovered_total", "outcome=\"requeued\"", static_cast<double>(requeued));
  if (answered) metrics_.count("kbserve_journal_recovered_total", "outcome=\"infra_error\"", static_cast<double>(answered));
  if (replay.torn_lines) metrics_.count("kbserve_journal_recovered_total", "outcome=\"torn_line\"", static_cast<double>(replay.torn_lines));
}

Submitted Service::submit(const EvaluationRequest& request) {
  auto task = tasks_.find(request.task);
  if (!task) throw RequestError(404, "no task \"" + request.task + "\" in this server's store (GET /v1/tasks lists them)");
  if (request.device == "cuda" && !gpu_pool_)
    throw RequestError(422, "this server has no GPU: give \"device\": \"cpu\" (a CPU solution) or use a GPU server");
  if (request.device == "cpu" && task->cuda && request.stages.verify)
    throw RequestError(422, "the task " + request.task + " runs on CUDA: give \"device\": \"cuda\"");
  auto job = std::make_shared<Job>();
  job->request = request;
  job->request_digest = request.digest();  // before the lock: it hashes every file
  job->stages_json = request.toJson()["stages"];
  job->task_dir = task->dir.string();
  job->task_cuda = task->cuda;
  {
    std::lock_guard lock(mu_);
    if (!request.idempotency_key.empty()) {
      auto it = by_key_.find(request.idempotency_key);
      if (it != by_key_.end() && jobs_.count(it->second)) {
        const Job& old = *jobs_.at(it->second);
        std::string old_digest = old.finished_json.is_null() ? old.request_digest : old.finished_json.value("request_digest", "");
        // The other evaluation's id is not named: a key is no way into another client's results.
        if (old_digest != job->request_digest)
          throw RequestError(409, "the idempotency key \"" + request.idempotency_key + "\" was used for another request");
        return {toJson(old), true};
      }
    }
    if (draining_) {
      metrics_.count("kbserve_rejected_total", "reason=\"draining\"");
      throw RetryLater(503, "the server is shutting down; submit to another or retry", 5);
    }
    size_t load = pending_.size() + running_ + preparing_;
    if (load >= options_.queue_limit) {
      metrics_.count("kbserve_rejected_total", "reason=\"queue_full\"");
      double slots = static_cast<double>(std::max<size_t>(1, options_.cpu_slots + options_.gpus.size()));
      int after = static_cast<int>(std::ceil(seconds_per_evaluation_ * static_cast<double>(pending_.size() + 1) / slots));
      throw RetryLater(429, "the queue is full (" + std::to_string(load) + " evaluations accepted and not finished)",
                       std::clamp(after, 1, 600));
    }
    // The id and the key are taken now, under the lock, so that two
    // submissions with one key never both run.
    job->id = randomId("ev-");
    job->seq = next_seq_++;
    jobs_[job->id] = job;
    if (!request.idempotency_key.empty()) by_key_[request.idempotency_key] = job->id;
    ++preparing_;
  }
  auto forget = [&] {
    std::lock_guard lock(mu_);
    --preparing_;
    jobs_.erase(job->id);
    if (!request.idempotency_key.empty()) by_key_.erase(request.idempotency_key);
  };
  try {
    prepare(*job);  // outside the lock: file writes
  } catch (...) {
    forget();
    throw;
  }
  job->submitted_at = epochSeconds();
  try {
    journal_->accepted(job->id, request.toJson(), job->submitted_at);
  } catch (const std::exception& e) {
    std::error_code ec;
    fs::remove_all(job->work_dir, ec);
    forget();
    metrics_.count("kbserve_rejected_total", "reason=\"journal\"");
    throw RetryLater(503, std::string("cannot keep the evaluation: ") + e.what(), 30);
  }
  metrics_.count("kbserve_evaluations_accepted_total");
  Json out;
  {
    std::lock_guard lock(mu_);
    --preparing_;
    pending_.insert({-request.priority, job->seq});
    by_seq_[job->seq] = job->id;
    job->events.push_back({{"seq", 0}, {"event", "state"}, {"data", {{"state", "queued"}}}});
    out = toJson(*job);
  }
  work_.notify_one();
  changed_.notify_all();
  return {out, false};
}

Json Service::toJson(const Job& job) const {
  if (!job.finished_json.is_null()) return job.finished_json;
  Json j;
  j["id"] = job.id;
  j["state"] = std::string(stateName(job.state));
  j["status"] = job.status ? Json(std::string(statusName(*job.status))) : Json(nullptr);
  j["message"] = job.message;
  j["task"] = job.request.task;
  j["device"] = job.request.device;
  j["stages"] = job.stages_json;
  j["priority"] = job.request.priority;
  j["idempotency_key"] = job.request.idempotency_key.empty() ? Json(nullptr) : Json(job.request.idempotency_key);
  j["request_digest"] = job.request_digest;
  j["solution_hash"] = job.solution_hash.empty() ? Json(nullptr) : Json(job.solution_hash);
  j["submitted_at"] = isoTime(job.submitted_at);
  j["started_at"] = job.started_at > 0 ? Json(isoTime(job.started_at)) : Json(nullptr);
  j["finished_at"] = job.finished_at > 0 ? Json(isoTime(job.finished_at)) : Json(nullptr);
  j["queue_seconds"] = job.started_at > 0 ? Json(job.started_at - job.submitted_at) : Json(nullptr);
  j["seconds"] = job.finished_at > 0 && job.started_at > 0 ? Json(job.finished_at - job.started_at) : Json(nullptr);
  j["attempts"] = job.starts;
  j["retried_alone_after"] = job.retried_alone_after.empty() ? Json(nullptr) : Json(job.retried_alone_after);
  j["reward"] = job.reward;
  j["report"] = job.report;
  if (!job.profile.is_null()) j["profile"] = job.profile;
  return j;
}

std::optional<Json> Service::get(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return toJson(*it->second);
}

std::optional<Json> Service::wait(const std::string& id, double timeout_seconds) const {
  std::unique_lock lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  std::shared_ptr<Job> job = it->second;
  changed_.wait_for(lock, std::chrono::duration<double>(std::max(0.0, timeout_seconds)), [&] {
    return job->state == State::Done || job->state == State::Cancelled || stopping_;
  });
  return toJson(*job);
}

bool Service::events(const std::string& id, size_t from, double timeout_seconds, std::vector<Json>& out,
                     bool& finished) const {
  std::unique_lock lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return false;
  std::shared_ptr<Job> job = it->second;
  auto done = [&] { return job->state == State::Done || job->state == State::Cancelled; };
  changed_.wait_for(lock, std::chrono::duration<double>(std::max(0.0, timeout_seconds)),
                    [&] { return job->events.size() > from || done() || stopping_; });
  if (job->events.empty() && !job->finished_json.is_null()) {
    // Read back from the journal: one event says how it ended.
    if (from == 0) out.push_back({{"seq", 0}, {"event", "done"}, {"data", {{"status", job->finished_json["status"]}, {"state", job->finished_json["state"]}}}});
    finished = true;
    return true;
  }
  for (size_t i = from; i < job->events.size(); ++i) out.push_back(job->events[i]);
  finished = done() && from + out.size() >= job->events.size();
  return true;
}

std::optional<Json> Service::cancel(const std::string& id) {
  std::shared_ptr<Job> job;
  bool now = false;
  {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return std::nullopt;
    job = it->second;
    if (job->state == State::Queued && pending_.erase({-job->request.priority, job->seq})) {
      by_seq_.erase(job->seq);
      now = true;
    } else if (job->state == State::Running) {
      job->cancel_requested = true;
      publish(*job, "state", {{"state", "running"}, {"cancel_requested", true}});
    }
  }
  if (now) finish(*job, std::nullopt, "cancelled by the client before it started", nullptr, nullptr, nullptr, State::Cancelled);
  changed_.notify_all();
  return get(id);
}

// Under mu_.
void Service::publish(Job& job, const std::string& event, Json data) {
  job.events.push_back({{"seq", job.events.size()}, {"event", event}, {"data", std::move(data)}});
}

void Service::finish(Job& job, std::optional<Status> status, const std::string& message, Json report, Json profile,
                     Json reward, State state) {
  Json out;
  {
    std::lock_guard lock(mu_);
    job.state = state;
    job.status = status;
    job.message = message;
    job.report = std::move(report);
    job.profile = std::move(profile);
    job.reward = std::move(reward);
    job.finished_at = epochSeconds();
    publish(job, "done", {{"state", std::string(stateName(state))},
                          {"status", status ? Json(std::string(statusName(*status))) : Json(nullptr)},
                          {"message", message}});
    out = toJson(job);
  }
  std::string label = state == State::Cancelled ? "cancelled" : std::string(statusName(status.value_or(Status::InfraError)));
  metrics_.count("kbserve_evaluations_total", "status=\"" + label + "\"");
  if (job.started_at > 0) metrics_.observe("kbserve_evaluation_seconds", "", job.finished_at - job.started_at);
  try {
    journal_->finished(job.id, out);
  } catch (const std::exception&) {
    // The result is still answered from memory; a restart would run it again.
  }
  std::error_code ec;
  if (!job.work_dir.empty()) fs::remove_all(job.work_dir, ec);
  {
    std::lock_guard lock(mu_);
    job.solution.reset();
    job.request.files.clear();  // answered from its result from now on (withoutFiles)
    finished_order_.push_back(job.id);
    evictFinished();
  }
  changed_.notify_all();
}

// Under mu_: forgets the oldest finished evaluations beyond keep_results.
void Service::evictFinished() {
  while (finished_order_.size() > options_.keep_results) {
    std::string id = finished_order_.front();
    finished_order_.erase(finished_order_.begin());
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    const std::string& key = it->second->request.idempotency_key;
    if (!key.empty() && by_key_.count(key) && by_key_[key] == id) by_key_.erase(key);
    jobs_.erase(it);
  }
}

void Service::runner() {
  while (true) {
    std::vector<std::shared_ptr<Job>> batch;
    {
      std::unique_lock lock(mu_);
      work_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (stopping_) return;
      auto take = [&](std::set<std::pair<int, uint64_t>>::iterator it) {
        std::shared_ptr<Job> job = jobs_.at(by_seq_.at(it->second));
        by_seq_.erase(it->second);
        pending_.erase(it);
        job->state = State::Running;
        job->started_at = epochSeconds();
        ++job->starts;
        ++running_;
        publish(*job, "state", {{"state", "running"}});
        batch.push_back(job);
      };
      take(pending_.begin());
      const EvaluationRequest& lead = batch.front()->request;
      if (batchable(lead))
        for (auto it = pending_.begin(); it != pending_.end() && batch.size() < options_.batch_max;) {
          const EvaluationRequest& r = jobs_.at(by_seq_.at(it->second))->request;
          auto next = std::next(it);
          if (batchable(r) && r.task == lead.task && r.stages.static_check == lead.stages.static_check) take(it);
          it = next;
        }
    }
    changed_.notify_all();
    for (auto& job : batch) {
      metrics_.observe("kbserve_queue_seconds", "", job->started_at - job->submitted_at);
      try {
        journal_->started(job->id);
      } catch (const std::exception&) {
      }
    }
    try {
      if (batch.size() == 1) run(*batch.front());
      else runBatch(batch);
    } catch (const std::exception& e) {
      for (auto& job : batch) {
        bool finished;
        {
          std::lock_guard lock(mu_);
          finished = job->state == State::Done || job->state == State::Cancelled;
        }
        if (!finished)
          finish(*job, Status::InfraError, std::string("the server failed running it: ") + e.what(), nullptr, nullptr,
                 nullptr, State::Done);
      }
    }
    {
      std::lock_guard lock(mu_);
      running_ -= batch.size();
      for (auto& job : batch) {
        double took = job->finished_at - job->started_at;
        seconds_per_evaluation_ = 0.9 * seconds_per_evaluation_ + 0.1 * std::max(0.01, took / static_cast<double>(batch.size()));
      }
    }
    changed_.notify_all();
  }
}

// A CPU verification without profile: one that may share a reference worker.
bool Service::batchable(const EvaluationRequest& r) const {
  return options_.batch_max > 1 && r.device == "cpu" && r.stages.verify && !r.stages.profile;
}

bool Service::cancelRequested(Job& job) {
  std::lock_guard lock(mu_);
  return job.cancel_requested;
}

bool Service::pastDeadline(const Job& job) const {
  return job.request.deadline_seconds > 0 && epochSeconds() > job.submitted_at + job.request.deadline_seconds;
}

// Publishes and measures the stages of `r` named in `names` that ran.
void Service::recordStages(Job& job, const eval::Result& r, std::initializer_list<const char*> names) {
  {
    std::lock_guard lock(mu_);
    for (const char* n : names) {
      const eval::StageResult& s = r.stage(n);
      if (s.skipped) continue;
      publish(job, "stage", {{"stage", n}, {"status", std::string(statusName(s.status))}, {"seconds", s.seconds}});
    }
  }
  for (const char* n : names) {
    const eval::StageResult& s = r.stage(n);
    if (!s.skipped) metrics_.observe("kbserve_stage_seconds", std::string("stage=\"") + n + "\"", s.seconds);
  }
  if (r.build && !r.stage("build").skipped)
    metrics_.count("kbserve_build_cache_total", r.build->cached ? "outcome=\"hit\"" : "outcome=\"miss\"");
  // The baseline cache: a profile whose baselines were measured and not
  // stored (a neighbour on the GPU, a CPU run) shows here, not only in its report.
  if (r.profile && !r.stage("profile").skipped) {
    const profile::ProfileResult& p = *r.profile;
    // No outcome: no baselines measured (the profile failed first) or the cache not used.
    const char* outcome = p.baselines_cached ? "hit"
                          : p.baselines_written ? "written"
                          : p.baseline_cache_note.empty() ? nullptr
                                                          : "not_cached";
    if (outcome) metrics_.count("kbserve_baseline_cache_total", std::string("outcome=\"") + outcome + "\"");
  }
}

std::vector<fs::path> Service::hiddenDirs() const {
  if (!options_.hide_state_from_workers) return {};
  return {options_.state_dir, options_.build_cache.empty() ? build::defaultBuildCacheDir() : options_.build_cache};
}

profile::ProfileOptions serviceProfileOptions(const ServiceOptions& options) {
  const std::string& mode = options.compile_baseline;
  if (mode != "auto" && mode != "aoti" && mode != "python" && mode != "none")
    throw UsageError("--compile-baseline: " + mode + " is none of auto, aoti, python, none");
  profile::ProfileOptions p;
  p.budget_seconds = options.profile_budget_seconds;
  p.compile_baseline_mode = mode;
  p.build_compiled = false;
  return p;
}

eval::Request Service::baseRequest(const Job& job) const {
  const EvaluationRequest& rq = job.request;
  eval::Request q;
  q.task_dir = job.task_dir;
  q.solution = &*job.solution;
  q.static_checker = rq.stages.static_check ? &checker_ : nullptr;
  q.static_options.gpu_arch = options_.arch;
  q.static_options.jobs = 1;
  q.build.target = rq.device == "cpu" ? build::BuildTarget::Cpu : build::BuildTarget::Cuda;
  q.build.arch = options_.arch;
  q.build.jobs = 1;
  q.build.cache_dir = options_.build_cache;
  q.verify.limits.wall_seconds = options_.verify_timeout_seconds;
  q.verify.limits.cpu_seconds = static_cast<uint64_t>(options_.verify_timeout_seconds) + 1;
  q.profile = serviceProfileOptions(options_);
  q.profile.torch_ops_allowed = torch_ops_allowed_;
  // Every client's files are in the state directory and the build cache:
  // no candidate worker may read them (its own library excepted), and the
  // workers' scratch directories (result channels) are in the state too.
  q.verify.hidden_dirs = q.profile.hidden_dirs = hiddenDirs();
  q.verify.hide_private_dirs = q.profile.hide_private_dirs = options_.hide_state_from_workers;
  q.verify.scratch_dir = q.profile.scratch_dir = options_.state_dir / "scratch";
  q.stage_errors_as_infra = true;
  q.tool = "kbserve";
  return q;
}

// The end of a run: the result's reports and reward, or the cancellation.
void Service::complete(Job& job, const eval::Result& result) {
  const EvaluationRequest& rq = job.request;
  if (cancelRequested(job)) {
    finish(job, std::nullopt, "cancelled by the client while it ran; its verdict is dropped", nullptr, nullptr, nullptr,
           State::Cancelled);
    return;
  }
  Status status = result.status();
  Json report = eval::checkReportJson(result, "");
  Json profile = result.profile ? eval::profileReportJson(result) : Json(nullptr);
  Json reward = nullptr;
  if (!rq.reward_scheme.empty()) {
    reward::Scheme scheme;
    scheme.kind = *reward::parseSchemeName(rq.reward_scheme);
    std::optional<reward::Timings> timings;
    if (result.profile) timings = eval::rewardTimings(*result.profile);
    bool verified = rq.stages.verify || rq.stages.profile;
    bool ended = status != Status::Ok || verified;
    Json task_json;  // the degenerate flag (reward/degenerate.h)
    try {
      task_json = readJsonFile(fs::path(job.task_dir) / "task.json");
    } catch (const std::exception&) {
      // a store's bundle without task.json cannot have been evaluated
    }
    std::string contract = result.verify && result.verify->contract.is_object() ? result.verify->contract.value("name", "") : "";
    reward = eval::rewardJson(rq.task, job.solution_hash, ended ? std::optional<Status>(status) : std::nullopt, timings,
                              status == Status::Ok && !result.profile, scheme, task_json, contract);
  }
  finish(job, status, result.message, std::move(report), std::move(profile), std::move(reward), State::Done);
}

// A built evaluation cancelled by its client, or past its deadline, ends
// with what it has (`when`, `when_deadline`: where it stood, for the message).
bool Service::endedAfterBuild(Job& job, const eval::Result& result, const std::string& when,
                              const std::string& when_deadline) {
  if (!cancelRequested(job) && !pastDeadline(job)) return false;
  bool c = cancelRequested(job);
  finish(job, c ? std::nullopt : std::optional<Status>(Status::InfraError),
         c ? "cancelled by the client " + when : "the deadline passed " + when_deadline + "; not scored",
         eval::checkReportJson(result, ""), nullptr, nullptr, c ? State::Cancelled : State::Done);
  return true;
}

bool Service::endedBeforeStart(Job& job) {
  if (!pastDeadline(job)) return false;
  finish(job, Status::InfraError, "the deadline passed before the evaluation started (queued " +
             std::to_string(static_cast<int>(epochSeconds() - job.submitted_at)) + " s); not scored",
         nullptr, nullptr, nullptr, State::Done);
  return true;
}

// One evaluation as one eval::Session asked twice: static and build on a CPU
// slot, then verify and profile on a GPU lease (a CPU slot for a CPU
// solution); the session keeps the build and stops at the first failure, so
// its result is the evaluation's, nothing merged here.
void Service::run(Job& job) {
  const EvaluationRequest& rq = job.request;
  if (endedBeforeStart(job)) return;
  eval::Request q = baseRequest(job);
  // On a GPU the profile runs the task's correctness seeds itself and its
  // reference worker checks them, with the same seeds, contract and
  // reference as the verify stage (kbprof's order): verify and profile asked
  // together are one pair of workers in the lease, not two one after the
  // other. The verify stage is then reported as checked by the profile.
  // (--verify-in-profile; until the timed loop the candidate has verify's
  // wall limit, not the profile's.)
  const bool profile_verifies =
      options_.verify_in_profile && rq.device == "cuda" && rq.stages.verify && rq.stages.profile;
  q.stages = {.static_check = rq.stages.static_check, .build = true,
              .verify = rq.stages.verify && !profile_verifies, .profile = rq.stages.profile};
  // Until its timed loop, the folded profile's candidate has verify's limit:
  // one that hangs in a correctness seed holds the GPU no longer than a
  // verify stage would.
  if (profile_verifies) q.profile.untimed_wall_seconds = q.verify.limits.wall_seconds;
  // On a shared GPU (--gpu-share) the profile holds it alone from its
  // baselines to the end of its candidate; the rest of the lease is shared.
  auto share = std::make_shared<GpuShare>();
  if (!gates_.empty()) q.profile.exclusive_gpu = [share] { return share->exclusive(); };
  eval::Session session(q);
  bool held = false;
  struct EndHeld {
    Service* s;
    bool& held;
    ~EndHeld() { if (held) s->endHeldProfile(); }
  } end_held{this, held};
  // A hold slot free now (nobody waiting for one): the profile's workers
  // start beside the build, as a lone evaluation's should; else after it.
  const bool wants_held = rq.device == "cuda" && hold_pool_ && rq.stages.profile && !session.request().stages.verify;
  std::optional<agent::ResourcePool::Lease> hold;
  {
    agent::ResourcePool::Lease lease = cpu_pool_->acquire(job.id);
    if (wants_held)
      if (std::optional<agent::ResourcePool::Lease> free_now = hold_pool_->tryAcquire(job.id)) {
        hold.emplace(std::move(*free_now));
        held = startHeldProfile(session, job);
      }
    session.run({.static_check = rq.stages.static_check, .build = true});
  }
  recordStages(job, session.result(), {"static", "build"});
  if (session.result().status() != Status::Ok || !(rq.stages.verify || rq.stages.profile)) {
    complete(job, session.result());
    return;
  }
  if (endedAfterBuild(job, session.result(), "after its build", "after the build")) return;
  bool cuda = rq.device == "cuda";
  // The next evaluations in line for a GPU start their profile workers now,
  // held before CUDA (startHeldProfile): a hold slot, first come, first
  // served like the GPU queue after it, so the holders are the ones about to
  // get a GPU, and each gives its slot to the next once it has its lease
  // (its process start-up then overlaps the evaluation before it, not its
  // own lease). Taking the slot at build time instead held workers for the
  // evaluations built last, the back of a long queue: on the H200 (2026-12-06)
  // 31 of 33 started their workers inside their lease.
  if (wants_held && !hold) {
    hold.emplace(hold_pool_->acquire(job.id));
    if (endedAfterBuild(job, session.result(), "while it waited for a device", "while it waited for a device")) return;
    held = startHeldProfile(session, job);
  }
  agent::ResourcePool& pool = cuda ? *gpu_pool_ : *cpu_pool_;
  agent::ResourcePool::Lease lease = pool.acquire(job.id);
  if (held) {  // running now, no longer waiting: the next in line may start its workers
    endHeldProfile();
    held = false;
  }
  hold.reset();
  // The wait for a lease can be long (one GPU, many evaluations built): one
  // cancelled meanwhile, or past its deadline, ends here, before it takes
  // the GPU for verify and profile (and a drain waits for it).
  if (endedAfterBuild(job, session.result(), "while it waited for a device", "while it waited for a device")) return;
  std::string device = cuda ? "cuda:" + lease.slot() : "cpu";
  const bool shared_gpu = cuda && !gates_.empty();
  if (shared_gpu) share->enter(*gates_.at(lease.slot()));  // before any worker touches the GPU
  session.request().verify.device = session.request().profile.device = device;
  session.run();
  // On a shared GPU a neighbour's allocations can leave a verify or a
  // profile without device memory: that failure is not this candidate's to
  // be scored by. Once, the GPU stages run again with the GPU held alone
  // from the start (a fresh session: the build comes from the cache); what
  // that run says stands.
  std::unique_ptr<eval::Session> alone_session;
  if (shared_gpu && outOfDeviceMemory(session.result())) {
    {
      std::lock_guard lock(mu_);  // (read by toJson on other threads)
      job.retried_alone_after = session.result().message;
    }
    eval::Request again = session.request();  // the same stages, limits and device
    again.profile.exclusive_gpu = nullptr;      // held alone already, from before its first worker
    alone_session = std::make_unique<eval::Session>(again);
    alone_session->run({.static_check = rq.stages.static_check, .build = true});
    profile::ExclusiveGpu alone = share->exclusive();
    alone_session->run();
  }
  const eval::Result& ran = alone_session ? alone_session->result() : session.result();
  recordStages(job, ran, {"verify", "profile"});
  if (!profile_verifies) {
    complete(job, ran);
    return;
  }
  eval::Result result = ran;
  if (!result.stage("profile").skipped)
    for (eval::StageResult& st : result.stages)
      if (st.name == "verify") st.detail = {{"checked_by", "profile"}};
  complete(job, result);
}

// A GPU profile's workers start now (beside the build, or while the
// evaluation waits for its GPU) and wait before CUDA until the lease names
// their GPU: the lease then holds their kernels, not their process start-up
// (0.3 s of exec and LibTorch each, on the H100). At most
// max_held_profiles_ evaluations (hold_pool_'s slots) hold workers at once:
// they hold memory while they wait for a GPU.
bool Service::startHeldProfile(eval::Session& session, const Job& job) {
  const EvaluationRequest& rq = job.request;
  if (rq.device != "cuda" || !rq.stages.profile) return false;  // and no verify to run first: the session says
  {
    std::lock_guard lock(mu_);  // (the hold pool bounds them; this is the gauge)
    ++held_profiles_;
  }
  session.request().profile.device = "cuda:" + options_.gpus.front();  // a placeholder of the same kind
  if (session.startProfileWorkers()) return true;
  endHeldProfile();
  return false;
}

void Service::endHeldProfile() {
  std::lock_guard lock(mu_);
  --held_profiles_;
}

// CPU verifications of one task, queued together, share one reference
// worker (eval::evaluateBatch): on a loaded server most of a CPU
// evaluation's cost is starting the two workers, and the reference's half is
// the same for every candidate of the task.
void Service::runBatch(std::vector<std::shared_ptr<Job>>& batch) {
  std::vector<std::shared_ptr<Job>> live;
  for (auto& j : batch)
    if (!endedBeforeStart(*j)) live.push_back(j);
  if (live.empty()) return;
  const Job& lead = *live.front();
  eval::Request q = baseRequest(lead);
  q.solution = nullptr;
  q.stages = {.static_check = lead.request.stages.static_check, .build = true, .verify = true, .profile = false};
  q.verify.device = "cpu";
  std::vector<solution::Solution> sols;
  for (auto& j : live) sols.push_back(*j->solution);
  std::vector<eval::Result> results;
  {
    agent::ResourcePool::Lease lease = cpu_pool_->acquire(lead.id + "+" + std::to_string(live.size() - 1));
    results = eval::evaluateBatch(q, sols);
  }
  metrics_.observe("kbserve_batch_size", "", static_cast<double>(live.size()));
  for (size_t k = 0; k < live.size(); ++k) {
    recordStages(*live[k], results[k], {"static", "build", "verify"});
    complete(*live[k], results[k]);
  }
}

std::string Service::metricsText() const {
  std::vector<std::pair<std::string, double>> g;
  double up = epochSeconds() - started_at_;
  {
    std::lock_guard lock(mu_);
    g.push_back({"kbserve_queue_depth", static_cast<double>(pending_.size())});
    g.push_back({"kbserve_running", static_cast<double>(running_)});
    g.push_back({"kbserve_held_profiles", static_cast<double>(held_profiles_)});
  }
  g.push_back({"kbserve_cpu_busy_fraction", cpu_pool_->busySeconds() / (up * static_cast<double>(cpu_pool_->size()))});
  if (gpu_pool_ && gates_.empty())
    g.push_back({"kbserve_gpu_busy_fraction", gpu_pool_->busySeconds() / (up * static_cast<double>(gpu_pool_->size()))});
  if (!gates_.empty()) {  // shared GPUs: a GPU is busy while anyone holds it
    double occupied = 0, exclusive = 0;
    for (const auto& [gpu, gate] : gates_) {
      occupied += gate->occupiedSeconds();
      exclusive += gate->exclusiveSeconds();
    }
    const double gpus = static_cast<double>(gates_.size());
    g.push_back({"kbserve_gpu_busy_fraction", occupied / (up * gpus)});
    g.push_back({"kbserve_gpu_exclusive_fraction", exclusive / (up * gpus)});
  }
  g.push_back({"kbserve_uptime_seconds", up});
  return metrics_.render(g);
}

bool Service::ready() const {
  std::lock_guard lock(mu_);
  return !draining_ && !stopping_ && pending_.size() + running_ + preparing_ < options_.queue_limit;
}

bool Service::drain(double timeout_seconds) {
  std::unique_lock lock(mu_);
  draining_ = true;
  return changed_.wait_for(lock, std::chrono::duration<double>(timeout_seconds),
                           [&] { return pending_.empty() && running_ == 0; });
}

profile::ExclusiveGpu Service::exclusiveGpu(const std::string& slot) {
  auto it = gates_.find(slot);
  if (it == gates_.end()) return nullptr;
  GpuGate* gate = it->second.get();
  gate->lock();
  return profile::ExclusiveGpu(gate, [](void* p) { static_cast<GpuGate*>(p)->unlock(); });
}

}  // namespace kb::serve
