#include "synth/import_run.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/file.h"
#include "core/gpu_info.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/report.h"
#include "synth/baseline_pool.h"
#include "synth/capture_pool.h"
#include "task/bundle.h"
#include "python/scripts.h"

namespace fs = std::filesystem;

namespace kb::synth {
namespace {

bool stopped(const CaptureOptions& o) { return o.stop_signal && o.stop_signal() != 0; }

// KernelBench's level of a task ("level2" from ".../level2/..."), "" when none.
std::string levelOf(const Json& r) {
  for (const char* key : {"id", "dir"}) {
    std::string v = r.value(key, "");
    for (size_t p = v.find("level"); p != std::string::npos; p = v.find("level", p + 1)) {
      size_t e = p + 5;
      while (e < v.size() && std::isdigit(static_cast<unsigned char>(v[e]))) ++e;
      if (e > p + 5 && (e == v.size() || v[e] == '/' || v[e] == '_')) return v.substr(p, e - p);
    }
  }
  return "";
}

struct Counts {
  std::map<std::string, int> by_reason;
  int ok = 0, failed = 0, interrupted = 0;
  // The funnel per KernelBench level: ok, failed, and the failures by reason.
  std::map<std::string, Json> by_level;
  void add(const Json& r) {
    std::string level = levelOf(r);
    Json* lv = nullptr;
    if (!level.empty()) {
      auto [it, fresh] = by_level.try_emplace(level, Json{{"ok", 0}, {"failed", 0}, {"by_reason", Json::object()}});
      lv = &it->second;
    }
    if (r.value("status", "") == "ok") {
      ++ok;
      if (lv) (*lv)["ok"] = (*lv)["ok"].get<int>() + 1;
    } else if (r.value("status", "") == "interrupted") {
      ++interrupted;
    } else {
      ++failed;
      std::string reason = r.value("reason", "unknown");
      ++by_reason[reason];
      if (lv) {
        (*lv)["failed"] = (*lv)["failed"].get<int>() + 1;
        (*lv)["by_reason"][reason] = (*lv)["by_reason"].value(reason, 0) + 1;
      }
    }
  }
  std::string summary(const std::string& verb) const {
    std::ostringstream s;
    s << verb << " " << ok << " of " << ok + failed + interrupted << " tasks";
    if (failed) {
      s << "; skipped " << failed << ":";
      for (const auto& [reason, n] : by_reason) s << " " << reason << "=" << n;
    }
    if (interrupted) s << "; " << interrupted << " not done (interrupted)";
    return s.str();
  }
  Json json() const {
    Json j = {{"total", ok + failed + interrupted}, {"ok", ok}, {"failed", failed},
                  {"interrupted", interrupted}, {"by_reason", Json::object()}};
    for (const auto& [reason, n] : by_reason) j["by_reason"][reason] = n;
    if (!by_level.empty()) {
      j["by_level"] = Json::object();
      for (const auto& [level, c] : by_level) j["by_level"][level] = c;
    }
    return j;
  }
};

// What an older task.json of a bundle carries over into a re-capture.
Json keepFrom(const fs::path& dir, Json& job) {
  Json keep = Json::object();
  fs::path tj = dir / "task.json";
  if (!fs::exists(tj)) return keep;
  Json old;
  try {
    old = readJsonFile(tj);
  } catch (const Error&) {
    return keep;  // corrupt: start afresh
  }
  if (!old.is_object()) return keep;
  if (old.contains("files") && old["files"].contains("model.py")) keep["model_sha256"] = old["files"]["model.py"];
  for (const char* k : {"compiled", "baselines"})
    if (old.contains(k)) keep[k] = old[k];
  for (const char* k : {"tolerance", "correctness_seeds", "inputs_exhaustive"})
    if (old.contains(k) && !job.contains(k)) job[k] = old[k];
  if (old.contains("init") && old["init"].contains("seed") && !job.contains("init_seed"))
    job["init_seed"] = old["init"]["seed"];
  if (old.contains("provenance") && !job.contains("provenance")) job["provenance"] = old["provenance"];
  if (old.contains("id") && !job.contains("id")) job["id"] = old["id"];
  return keep;
}

Json reportHeader(const std::string& stage, const std::string& started, const std::string& torch_version) {
  ReportHeader h = makeHeader("kbsynth", stage, "", "", Status::Ok, started, nowIso8601());
  h.torch_version = torch_version;
  return headerToJson(h);
}

// The device capture runs its forwards on: --capture-device, else
// $KB_CAPTURE_DEVICE, else "auto" (the GPU when torch sees one, capture.py
// decides) on a machine with an NVIDIA GPU and "cpu" on one without. A GPU
// asked for by name on a machine without one is a usage error before
// anything is written.
std::string captureDevice(const CaptureOptions& o) {
  const char* env = std::getenv("KB_CAPTURE_DEVICE");
  std::string device = !o.capture_device.empty() ? o.capture_device
                       : env && *env             ? env
                       : hasNvidiaGpu()          ? "auto"
                                                 : "cpu";
  if (device.rfind("cuda", 0) == 0)
    requireNvidiaGpu("capture device " + device + " (" +
                     (o.capture_device.empty() ? "$KB_CAPTURE_DEVICE" : "--capture-device") + ")");
  return device;
}

// Captures the jobs in kbsynth's capture pool (synth/capture_pool.h), with a
// progress line per task: its outcome, the rate and the time left;
// `on_done` gets each bundle's folder as its capture ends, and whether it is ok.
std::map<std::string, Json> runCapture(const std::vector<Json>& jobs, const CaptureOptions& o,
                                       const std::function<void(const std::string&, bool)>& on_done) {
  if (jobs.empty()) return {};
  CapturePlan plan = planCapture(jobs.size(), o.jobs, static_cast<uint64_t>(o.memory_budget_gib * (1ull << 30)));
  CapturePoolOptions po;
  po.python = python::pythonPath(o.python);
  po.workers = plan.workers;
  po.memory_budget_bytes = plan.memory_budget_bytes;
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  po.threads = std::max(1, cores / plan.workers);
  const char* env = std::getenv("KB_CAPTURE_TIMEOUT");
  po.task_timeout_s = o.timeout_s > 0 ? o.timeout_s : env && *env ? std::atof(env) : 300.0;
  if (po.task_timeout_s <= 0) po.task_timeout_s = 300.0;
  po.device = captureDevice(o);
  po.stop = [&o] { return stopped(o); };
  // A task that failed while its bundle's disk (or the capture's temporary
  // one) was full failed for the machine: no verdict on the task.
  po.machine_fault = [](const Json& failed) -> std::optional<std::string> {
    if (auto full = outOfSpace(failed.value("dir", ""))) return full;
    return outOfSpace(fs::temp_directory_path());
  };
  auto t0 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "kbsynth: capturing %zu tasks with %d worker(s) within %.1f GiB of host memory, forwards on %s\n",
               jobs.size(), plan.workers, static_cast<double>(plan.memory_budget_bytes) / (1ull << 30),
               po.device == "auto" ? "cuda when torch sees a GPU (auto)" : po.device.c_str());
  po.on_result = [&](const Json& line, size_t done, size_t total) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double rate = s > 0 ? static_cast<double>(done) / s : 0;
    int eta = rate > 0 ? static_cast<int>(static_cast<double>(total - done) / rate) : 0;
    std::string what = line.value("status", "") == "ok" ? "ok"
                                                          : line.value("reason", "") + ": " + line.value("message", "");
    std::fprintf(stderr, "kbsynth: [%zu/%zu] %s: %s (%.2f tasks/s, about %dm%02ds left)\n", done, total,
                 line.value("id", "?").c_str(), what.c_str(), rate, eta / 60, eta % 60);
    if (on_done) on_done(line.value("dir", ""), line.value("status", "") == "ok");
  };
  std::map<std::string, Json> results = runCapturePool(jobs, po);
  std::fprintf(stderr, "kbsynth: capture ended after %.0f s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::string fault;
  for (const auto& [dir, r] : results)
    if (r.value("reason", "") == "machine_fault") fault = r.value("message", "");
  for (const auto& j : jobs) {
    std::string dir = j["dir"].get<std::string>();
    if (results.count(dir)) continue;
    if (!fault.empty())
      results[dir] = {{"dir", dir}, {"id", j["id"]}, {"status", "interrupted"}, {"reason", "machine_fault"},
                      {"message", "not started: " + fault}};
    else if (stopped(o))  // SIGINT / SIGTERM: not done, not the task's fault
      results[dir] = {{"dir", dir}, {"id", j["id"]}, {"status", "interrupted"}, {"reason", "interrupted"},
                      {"message", "stopped before this task was captured"}};
    else
      results[dir] = {{"dir", dir}, {"id", j["id"]}, {"status", "failed"}, {"reason", "internal_error"},
                      {"message", "the capture pool ended before this task"}};
  }
  return results;
}

// What captureAndBuild made: capture's line and the baseline's line of each
// bundle, by folder.
struct CaptureOutcome {
  std::map<std::string, Json> captured, built;
};

// Captures the jobs and, when o.compiled asks, builds the baseline of each
// bundle as soon as its capture ends (and of `kept`, bundles captured before),
// so that the CPU-bound builds overlap the captures.
CaptureOutcome captureAndBuild(std::vector<Json> jobs, const std::vector<std::string>& kept,
                               const CaptureOptions& o) {
  if (o.compiled != "none") {
    // The largest programs first: their baselines build longest (minutes for
    // KernelBench level 3's networks, seconds for level 1's operators) and
    // start as their captures end, so they should not be the last to start.
    std::map<std::string, uintmax_t> size;
    for (const auto& j : jobs) {
      std::error_code ec;
      uintmax_t n = fs::file_size(fs::path(j.value("dir", "")) / "model.py", ec);
      size[j.value("dir", "")] = ec ? 0 : n;
    }
    std::stable_sort(jobs.begin(), jobs.end(),
                     [&](const Json& a, const Json& b) { return size[a.value("dir", "")] > size[b.value("dir", "")]; });
  }
  std::optional<BaselinePool> pool;
  if (o.compiled != "none")
    pool.emplace(BaselinePoolOptions{.device = o.compiled,
                                     .weights = o.weights,
                                     .python = python::pythonPath(o.python),
                                     .jobs = o.baseline_jobs,
                                     .expected = jobs.size() + kept.size(),
                                     .stop = [&o] { return stopped(o); }});
  if (pool)
    for (const auto& d : kept) pool->add(d);
  CaptureOutcome out;
  out.captured = runCapture(jobs, o, [&pool](const std::string& dir, bool ok) {
    if (pool && ok) pool->add(dir);
    if (pool && !ok) pool->expectOneFewer();
  });
  if (pool) out.built = pool->finish();
  return out;
}

// The captured tasks a trivial solution passes (capture's "degenerate"
// field, scripts/degenerate.py), as (id, {reason, contracts}), in import
// order. Kept bundles (--skip-existing) are read from their task.json.
std::vector<std::pair<std::string, Json>> degenerateTasks(const std::vector<Json>& entries) {
  std::vector<std::pair<std::string, Json>> out;
  for (const auto& e : entries) {
    if (e.value("status", "") != "ok") continue;
    Json d = e.value("degenerate", Json(nullptr));
    if (d.is_null() && e.contains("skipped") && e.contains("dir")) {
      try {
        d = readJsonFile(fs::path(e["dir"].get<std::string>()) / "task.json").value("degenerate", Json(nullptr));
      } catch (const Error&) {
        continue;  // capturedFrom opened it a moment ago; nothing to name if it is gone
      }
    }
    if (d.is_object())
      out.emplace_back(e.value("id", ""), Json{{"reason", d.value("reason", "degenerate")},
                                               {"contracts", d.value("contracts", Json::array())}});
  }
  return out;
}

int finishCapture(const std::string& stage, const std::string& started, std::vector<Json> entries,
                  const CaptureOutcome& outcome, const std::set<std::string>& created,
                  const CaptureOptions& o, const fs::path& report_default) {
  const auto& captured = outcome.captured;
  // Bundles that failed and were made by this run are removed again.
  for (auto& e : entries) {
    if (e.value("status", "") == "failed" && !e.contains("dir")) continue;
    auto it = captured.find(e.value("dir", ""));
    if (it == captured.end()) continue;
    Json r = it->second;
    for (const char* k : {"status", "reason", "message", "capture", "generator", "reference_args", "notes", "device",
                          "inputs_on", "init_device", "seconds", "ran_alone", "degenerate"})
      if (r.contains(k)) e[k] = r[k];
    if (e["status"] != "ok" && created.count(e["dir"])) {
      std::error_code ec;
      fs::remove_all(e["dir"].get<std::string>(), ec);
      e["removed"] = true;
    }
  }
  if (o.compiled != "none") {
    for (auto& e : entries) {
      auto it = outcome.built.find(e.value("dir", ""));
      if (it == outcome.built.end()) continue;
      Json c = {{"status", it->second.value("status", "failed")}};
      for (const char* k : {"arch", "weights", "reason", "message", "max_abs_diff", "seconds", "phases",
                            "ran_alone"})
        if (it->second.contains(k)) c[k] = it->second[k];
      e["compiled"] = c;
    }
  }
  Counts counts;
  for (const auto& e : entries) {
    counts.add(e);
    printJsonLine(e);
  }
  Json report = reportHeader(stage, started, o.torch_version);
  report["summary"] = counts.json();
  if (o.compiled != "none") {
    int built = 0, failed = 0, not_done = 0;  // not_done: captured, the build stopped or not started
    for (const auto& e : entries)
      if (e.contains("compiled")) (e["compiled"]["status"] == "failed" ? failed : built)++;
      else if (e.value("status", "") == "ok") ++not_done;
    report["summary"]["compiled"] = {{"device", o.compiled}, {"ok", built}, {"failed", failed}, {"not_done", not_done}};
  }
  // Degenerate tasks are kept (they are valid bundles) but named, since
  // lib/reward gives them no reward (docs/task-format.md "degenerate").
  std::vector<std::pair<std::string, Json>> degenerate = degenerateTasks(entries);
  report["summary"]["degenerate"] = Json::object();
  for (const auto& [id, d] : degenerate) report["summary"]["degenerate"][id] = d;
  report["tasks"] = entries;
  if (stopped(o)) report["interrupted"] = true;
  fs::path report_path = o.report.empty() ? report_default : fs::path(o.report);
  if (!report_path.empty()) writeJsonOutput(report_path.string(), report);
  const std::string done = counts.summary(stage == "import" ? "imported" : "exported");
  const std::string where = report_path.empty() ? "" : " (report: " + report_path.string() + ")";
  if (stopped(o)) {
    // One line: what was done, where it is written, how to go on.
    std::fprintf(stderr, "kbsynth: interrupted: %s%s; unfinished bundles removed; run the same command%s to %s\n",
                 done.c_str(), where.c_str(), stage == "import" ? " with --skip-existing" : "",
                 stage == "import" ? "resume" : "capture the rest");
    return 128 + o.stop_signal();
  }
  // A machine fault (a full disk) ends the run as an infrastructure error,
  // exit 3, its cause on the last line; the tasks it stopped got no verdict.
  for (const auto& e : entries)
    if (e.value("reason", "") == "machine_fault" && e.value("message", "").rfind("not started: ", 0) != 0) {
      std::fprintf(stderr, "kbsynth: stopped: %s%s; unfinished bundles removed\n", done.c_str(), where.c_str());
      throw Error(stage + ": " + e.value("message", "") + " (while capturing " + e.value("dir", "") +
                  "); free space and run the same command" + (stage == "import" ? " with --skip-existing" : ""));
    }
  std::fprintf(stderr, "kbsynth: %s%s\n", done.c_str(), where.c_str());
  for (const auto& [level, c] : counts.by_level) {
    std::string reasons;
    for (const auto& [reason, n] : c["by_reason"].items()) reasons += " " + reason + "=" + std::to_string(n.get<int>());
    std::fprintf(stderr, "kbsynth:   %s: %d ok, %d failed%s\n", level.c_str(), c["ok"].get<int>(),
                 c["failed"].get<int>(), reasons.c_str());
  }
  if (!degenerate.empty()) {
    std::fprintf(stderr, "kbsynth: %zu degenerate (kept, flagged in task.json, no reward under the contracts named):\n",
                 degenerate.size());
    for (const auto& [id, d] : degenerate)
      std::fprintf(stderr, "kbsynth:   %s: %s\n", id.c_str(), d["reason"].get<std::string>().c_str());
  }
  if (o.compiled != "none")
    std::fprintf(stderr, "kbsynth: compiled baselines (%s): %d built or cached, %d failed\n", o.compiled.c_str(),
                 report["summary"]["compiled"]["ok"].get<int>(), report["summary"]["compiled"]["failed"].get<int>());
  if (counts.ok == 0 && counts.failed > 0) return 1;  // nothing imported / exported
  if (o.strict && counts.failed) return 1;
  return 0;
}

// Whether DIR holds a complete bundle captured from exactly this model.py
// (import --skip-existing).
bool capturedFrom(const fs::path& dir, const std::string& code) {
  if (!fs::exists(dir / "task.json") || !fs::exists(dir / "model.py")) return false;
  try {
    task::TaskBundle b = task::openBundle(dir);  // files present and unchanged
    std::string want = sha256Hex(code);
    std::string have = b.info.json.value("files", Json::object()).value("model.py", "");
    return have == want || have == "sha256:" + want;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::vector<ImportItem> findImportItems(const std::vector<std::string>& sources, const ImportOptions& io) {
  std::vector<ImportItem> items;
  for (const auto& s : sources) {
    auto found = findProblems(s, io);
    items.insert(items.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  }
  if (items.empty()) throw UsageError("no problems found in the given sources");
  return items;
}

int runImport(const std::vector<ImportItem>& items, const fs::path& out, const CaptureOptions& o) {
  std::string started = o.started_at.empty() ? nowIso8601() : o.started_at;
  captureDevice(o);
  std::vector<Json> entries, jobs;
  std::set<std::string> ids, created;
  for (auto& item : items) {
    Json e = {{"id", item.id}};
    if (!item.error.empty()) {
      e.update({{"status", "failed"}, {"reason", "bad_row"}, {"message", item.error}});
      entries.push_back(e);
      continue;
    }
    if (!ids.insert(item.id).second) {
      e.update({{"status", "failed"}, {"reason", "duplicate_id"},
                {"message", "another problem of this import has the id " + item.id}});
      entries.push_back(e);
      continue;
    }
    fs::path dir = out / item.id;
    e["dir"] = dir.string();
    if (o.skip_existing && capturedFrom(dir, item.code)) {
      e.update({{"status", "ok"}, {"skipped", "already captured from this program (--skip-existing)"}});
      entries.push_back(e);
      continue;
    }
    if (!fs::exists(dir)) created.insert(dir.string());
    fs::create_directories(dir);
    writeFileAtomic(dir / "model.py", item.code);  // a full disk: an error naming ENOSPC, exit 3
    Json job = {{"dir", dir.string()}, {"id", item.id}, {"provenance", item.provenance}};
    if (o.init_seed >= 0) job["init_seed"] = o.init_seed;
    Json keep = keepFrom(dir, job);
    job["id"] = item.id;
    job["provenance"] = item.provenance;
    job["keep"] = keep;
    jobs.push_back(job);
    entries.push_back(e);
  }
  std::fprintf(stderr, "kbsynth: importing %zu problems into %s\n", jobs.size(), out.string().c_str());
  std::vector<std::string> kept;  // --skip-existing: the kept bundles count as done
  for (const auto& e : entries)
    if (e.contains("skipped")) kept.push_back(e["dir"]);
  CaptureOutcome outcome = captureAndBuild(jobs, kept, o);
  for (const auto& e : entries)
    if (e.contains("skipped")) outcome.captured[e["dir"].get<std::string>()] = e;
  return finishCapture("import", started, entries, outcome, created, o, out / "import-report.json");
}

int runExport(const std::vector<std::string>& bundles, const std::string& id, const CaptureOptions& o) {
  std::string started = o.started_at.empty() ? nowIso8601() : o.started_at;
  if (!id.empty() && bundles.size() != 1) throw UsageError("--id needs exactly one bundle");
  captureDevice(o);
  std::vector<Json> entries, jobs;
  for (const auto& b : bundles) {
    fs::path dir = fs::absolute(b).lexically_normal();
    if (dir.filename().empty()) dir = dir.parent_path();
    if (!fs::is_directory(dir)) throw UsageError(b + ": not a folder");
    if (!fs::exists(dir / "model.py")) throw UsageError(b + ": no model.py (a bundle starts from model.py)");
    Json job = {{"dir", dir.string()}};
    if (!id.empty()) job["id"] = id;
    if (o.init_seed >= 0) job["init_seed"] = o.init_seed;
    Json keep = keepFrom(dir, job);
    if (!job.contains("id")) job["id"] = "file/" + sanitizeIdPart(dir.filename().string());
    if (!job.contains("provenance")) job["provenance"] = {{"source", "file"}, {"path", (dir / "model.py").string()}};
    if (!validTaskId(job["id"])) throw UsageError("task id \"" + job["id"].get<std::string>() + "\" is not a safe relative path");
    job["keep"] = keep;
    jobs.push_back(job);
    entries.push_back({{"id", job["id"]}, {"dir", dir.string()}});
  }
  return finishCapture("export", started, entries, captureAndBuild(jobs, {}, o), {}, o, "");
}

int buildBaselines(const std::vector<std::string>& bundles, const std::string& device, bool force,
                 const std::string& weights, const std::string& python, int jobs,
                 const std::function<int()>& stop_signal) {
  auto stopped = [&] { return stop_signal && stop_signal() != 0; };
  std::vector<std::string> dirs;
  for (const auto& b : bundles) dirs.push_back(task::openBundle(b).dir.string());  // validates first
  BaselinePool pool({.device = device,
                      .weights = weights,
                      .python = python::pythonPath(python),
                      .force = force,
                      .jobs = jobs,
                      .expected = dirs.size(),
                      .stop = stopped});
  for (const auto& d : dirs) pool.add(d);
  auto built = pool.finish();
  int failed = 0, done = 0;
  for (const auto& d : dirs) {
    if (!built.count(d)) continue;  // not reached before a stop
    printJsonLine(built[d]);
    ++done;
    if (built[d].value("status", "") == "failed") ++failed;
  }
  if (stopped()) {
    std::fprintf(stderr, "kbsynth: baseline: interrupted after %d of %zu bundles (%d failed); run the same "
                         "command again to build the rest (current packages are kept)\n", done, dirs.size(), failed);
    return 128 + stop_signal();
  }
  std::fprintf(stderr, "kbsynth: baseline for %s: %zu ok or cached, %d failed\n", device.c_str(),
               dirs.size() - failed, failed);
  return failed ? 1 : 0;
}

}  // namespace kb::synth
