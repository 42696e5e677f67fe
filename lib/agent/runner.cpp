#include "agent/runner.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "agent/trajectory.h"
#include "chat/client.h"
#include "reward/reward.h"

namespace kb::agent {
namespace fs = std::filesystem;

namespace {

TaskRef taskAt(const fs::path& dir, bool default_cuda) {
  TaskRef t;
  t.cuda = default_cuda;
  t.dir = fs::absolute(dir).lexically_normal();
  if (t.dir.filename().empty()) t.dir = t.dir.parent_path();
  t.id = t.dir.filename().string();
  if (fs::exists(t.dir / "task.json")) {
    Json j = readJsonFile(t.dir / "task.json");
    if (j.contains("id") && j["id"].is_string()) t.id = j["id"];
    if (j.contains("device") && j["device"].is_string()) t.cuda = j["device"] == "cuda";
  }
  return t;
}

}  // namespace

namespace {

std::vector<TaskRef> findTasksIn(const fs::path& path, bool default_cuda) {
  if (!fs::is_directory(path)) throw UsageError("no such task directory: " + path.string());
  if (fs::is_regular_file(path / "model.py")) return {taskAt(path, default_cuda)};
  std::vector<TaskRef> out;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::recursive_directory_iterator(path))
    if (e.is_regular_file() && e.path().filename() == "model.py") dirs.push_back(e.path().parent_path());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& d : dirs) out.push_back(taskAt(d, default_cuda));
  if (out.empty()) throw UsageError("no task (a directory with model.py) under " + path.string());
  return out;
}

}  // namespace

// An unreadable folder or task.json is the user's input: kb::UsageError
// (exit 2), not an infrastructure fault.
std::vector<TaskRef> findTasks(const fs::path& path, bool default_cuda) {
  try {
    return findTasksIn(path, default_cuda);
  } catch (const UsageError&) {
    throw;
  } catch (const fs::filesystem_error& e) {
    throw UsageError("cannot read the tasks at " + path.string() + ": " + e.code().message());
  } catch (const Error& e) {
    throw UsageError(std::string("cannot read the tasks at ") + path.string() + ": " + e.what());
  }
}

std::string workspaceName(const std::string& task_id, int sample) {
  std::string s;
  for (char c : task_id) s.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_');
  return s + "-s" + std::to_string(sample);
}

RunSummary runRollouts(const RunOptions& o, chat::Policy& policy) {
  RunSummary sum;
  if (!reward::parseSchemeName(o.rollout.reward_scheme))
    throw UsageError("unknown reward scheme \"" + o.rollout.reward_scheme + "\"");
  std::shared_ptr<TrajectoryWriter> writer_owner = o.writer ? o.writer : std::make_shared<TrajectoryWriter>(o.output);
  TrajectoryWriter& writer = *writer_owner;
  std::set<std::string> finished = writer.finished();
  struct Job {
    TaskRef task;
    int sample;
  };
  std::deque<Job> queue;
  for (const TaskRef& t : o.tasks)
    for (int s = 0; s < o.samples; ++s) {
      ++sum.total;
      if (finished.count(rolloutId(t.id, s))) ++sum.skipped;
      else queue.push_back({t, s});
    }
  std::mutex mu;
  int running = 0;
  const bool tty = ::isatty(2);

  auto progress = [&](bool final) {  // mu held
    if (!o.progress) return;
    char mean[32] = "-";
    if (sum.rewarded) std::snprintf(mean, sizeof mean, "%.3f", sum.reward_sum / sum.rewarded);
    std::fprintf(stderr,
                 "%s[kbrollout] %d/%d done (%d resumed), %d running, %d failed, %d infra_error, mean reward %s (n=%d)%s",
                 tty ? "\r\033[K" : "", sum.done + sum.skipped, sum.total, sum.skipped, running,
                 sum.failed, sum.infra, mean, sum.rewarded, (final || !tty) ? "\n" : "");
    std::fflush(stderr);
  };
  {
    std::lock_guard lock(mu);
    progress(false);
  }

  auto worker = [&] {
    for (;;) {
      Job job;
      {
        std::lock_guard lock(mu);
        if (queue.empty() || chat::stopRequested()) return;
        job = queue.front();
        queue.pop_front();
        ++running;
        progress(false);
      }
      std::string id = rolloutId(job.task.id, job.sample);
      RolloutSpec spec{job.task.id, job.task.dir, job.sample, o.work_dir / workspaceName(job.task.id, job.sample),
                       o.guide, o.interface_header};
      Json rec;
      std::string error;
      bool interrupted = false;
      try {
        std::unique_ptr<Environment> env;
        if (o.make_environment) {
          env = o.make_environment(job.task);
        } else {
          EnvironmentOptions eo;
          eo.task_dir = job.task.dir;
          eo.task_id = job.task.id;
          eo.cuda = job.task.cuda;
          eo.cpu_pool = o.cpu_pool;
          eo.gpu_pool = o.gpu_pool;
          env = makeLibraryEnvironment(eo);
        }
        rec = runRollout(spec, policy, *env, o.rollout);
        writer.append(rec);
        if (!o.keep_workspaces) {
          std::error_code ec;
          fs::remove_all(spec.workspace_dir, ec);
        }
      } catch (const Interrupted&) {
        interrupted = true;
      } catch (const std::exception& e) {
        error = id + ": " + e.what();
      }
      std::lock_guard lock(mu);
      --running;
      if (interrupted) {
        ++sum.interrupted;
      } else if (!error.empty()) {
        ++sum.failed;
        sum.errors.push_back(error);
        if (o.progress) std::fprintf(stderr, "%s[kbrollout] error: %s\n", tty ? "\r\033[K" : "", error.c_str());
      } else {
        ++sum.done;
        const Json& end = rec["end"];
        if (end.value("reason", "") == "policy_error") ++sum.failed;
        if (rec.value("status", Json()) == "infra_error") {
          ++sum.infra;
          if (sum.first_infra.empty() && rec.contains("infra_error"))
            sum.first_infra = id + ": " + rec["infra_error"].value("stage", "") + ": " +
                              rec["infra_error"].value("message", "");
        }
        const Json& v = rec["reward"]["value"];
        if (v.is_number()) {
          ++sum.rewarded;
          sum.reward_sum += v.get<double>();
        }
      }
      progress(false);
    }
  };
  int n = std::max(1, std::min<int>(o.parallel, static_cast<int>(queue.size())));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  std::lock_guard lock(mu);
  progress(true);
  return sum;
}

}  // namespace kb::agent
