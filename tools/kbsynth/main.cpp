// kbsynth: task bundles. A thin CLI11 driver over lib/task; docs/kbsynth.md
// is its manual. PyTorch's Python side is reached only through the scripts in
// scripts/ (capture.py, baseline.py, expected.py, read_rows.py).
#include <cctype>
#include <cmath>
#include <limits>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <chrono>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/report.h"
#include "kb_config.h"
#include "task/bundle.h"
#include "task/import.h"
#include "task/scripts.h"
#include "task/task.h"
#include "synth/capture_pool.h"
#include "synth_commands.h"

namespace fs = std::filesystem;

namespace {

const char* kIntro = R"(kbsynth: task bundles (DESIGN.md §4) for the kernelbench-rl toolchain.

A task bundle is a folder: model.py (the PyTorch reference), task.json (id,
provenance, inputs, outputs, tolerances), reference.pt (TorchScript, weights
from a fixed init seed), inputs.pt (scripted get_inputs, when it scripts) and
compiled/<arch>.pt2 (the torch.compile baseline as an AOTInductor package).

  kbsynth import  KernelBench folders, dataset rows, model.py files -> bundles
  kbsynth export  (re)capture bundles from their model.py
  kbsynth baseline  build compiled/<arch>.pt2 for a device (cached)
  kbsynth check   C++ reference/compiled vs Python outputs (and timings)
  kbsynth info    validate bundles and summarise them

Synthesis (DESIGN.md §1; docs/kbsynth-synthesis.md):
  kbsynth seeds   the seed operator catalog (torch, transformers)
  kbsynth compose sample 1-5 seed operators per task into KernelBench programs
  kbsynth filter  execution filters and decontamination; funnel in the manifest
  kbsynth stats   op-count mix, filter funnel, similarity histogram
  kbsynth similarity  Python-AST similarity of programs to a reference set

Examples:
  kbsynth import KernelBench/ -o tasks --compiled cpu
  kbsynth import ops6k.parquet -o tasks --id-prefix ops6k
  kbsynth check tasks/kernelbench/level1/* --device cpu --seeds 0,1,2
  kbsynth compose -n 300 --seed 1 -o run && kbsynth filter run --device cuda --reference KernelBench/

Python (with torch) runs from --python, $KB_PYTHON or /opt/kb-venv/bin/python3.
Exit status: 0 done, 1 some task failed (import: none imported, or any with
--strict; export with --strict; check; baseline; similarity), 2 bad usage or
input, found before any work (one line on stderr), 3 infrastructure failure,
130 / 143 stopped cleanly by SIGINT / SIGTERM (what was done is kept and
reported). See docs/cli.md, docs/kbsynth.md and docs/task-format.md.)";

// KernelBench's level of a task ("level2" from ".../level2/..."), "" when none.
std::string levelOf(const kb::Json& r) {
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
  std::map<std::string, kb::Json> by_level;
  void add(const kb::Json& r) {
    std::string level = levelOf(r);
    kb::Json* lv = nullptr;
    if (!level.empty()) {
      auto [it, fresh] = by_level.try_emplace(level, kb::Json{{"ok", 0}, {"failed", 0}, {"by_reason", kb::Json::object()}});
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
  kb::Json json() const {
    kb::Json j = {{"total", ok + failed + interrupted}, {"ok", ok}, {"failed", failed},
                  {"interrupted", interrupted}, {"by_reason", kb::Json::object()}};
    for (const auto& [reason, n] : by_reason) j["by_reason"][reason] = n;
    if (!by_level.empty()) {
      j["by_level"] = kb::Json::object();
      for (const auto& [level, c] : by_level) j["by_level"][level] = c;
    }
    return j;
  }
};

void printLine(const kb::Json& j) { kb::tools::printJsonLine(j); }

bool stopped() { return kb::tools::StopSignals::stopRequested(); }

std::string deviceArg(const std::string& d) {
  if (d == "none" || d == "cpu" || d == "cuda" || d.rfind("cuda:", 0) == 0) return d;
  throw kb::UsageError("--device/--compiled must be none, cpu, cuda or cuda:N, not \"" + d + "\"");
}

fs::path tempPath(const std::string& stem) {
  fs::path dir = fs::temp_directory_path() / ("kbsynth-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / stem;
}

struct TempDir {
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("kbsynth-" + std::to_string(::getpid())), ec);
  }
};

// What an older task.json of a bundle carries over into a re-capture.
kb::Json keepFrom(const fs::path& dir, kb::Json& job) {
  kb::Json keep = kb::Json::object();
  fs::path tj = dir / "task.json";
  if (!fs::exists(tj)) return keep;
  kb::Json old;
  try {
    old = kb::readJsonFile(tj);
  } catch (const kb::Error&) {
    return keep;  // corrupt: start afresh
  }
  if (!old.is_object()) return keep;
  if (old.contains("files") && old["files"].contains("model.py")) keep["model_sha256"] = old["files"]["model.py"];
  for (const char* k : {"compiled", "baselines"})
    if (old.contains(k)) keep[k] = old[k];
  for (const char* k : {"tolerance", "correctness_seeds"})
    if (old.contains(k) && !job.contains(k)) job[k] = old[k];
  if (old.contains("init") && old["init"].contains("seed") && !job.contains("init_seed"))
    job["init_seed"] = old["init"]["seed"];
  if (old.contains("provenance") && !job.contains("provenance")) job["provenance"] = old["provenance"];
  if (old.contains("id") && !job.contains("id")) job["id"] = old["id"];
  return keep;
}

std::map<std::string, kb::Json> runBaseline(const std::vector<std::string>& dirs, const std::string& device,
                                            bool force, const std::string& weights, const std::string& python) {
  std::map<std::string, kb::Json> results;
  if (dirs.empty()) return results;
  std::vector<std::string> args = {"--device", device, "--weights", weights};
  if (force) args.push_back("--force");
  args.insert(args.end(), dirs.begin(), dirs.end());
  size_t done = 0;
  kb::ScriptResult r = kb::runBaselineScript(python, args, [&](const kb::Json& line) {
    ++done;
    std::fprintf(stderr, "kbsynth: baseline [%zu/%zu] %s: %s\n", done, dirs.size(), line.value("id", "?").c_str(),
                 line.value("status", "") == "failed"
                     ? (line.value("reason", "") + ": " + line.value("message", "")).c_str()
                     : line.value("status", "").c_str());
  });
  if (r.exit_code == 3) throw kb::Error("baseline.py: no CUDA device for --device " + device);
  for (const auto& line : r.lines) results[line.value("dir", "")] = line;
  for (const auto& d : dirs)
    if (!results.count(d))
      results[d] = {{"dir", d}, {"status", "failed"}, {"reason", "internal_error"},
                    {"message", "baseline.py stopped before this task (exit " + std::to_string(r.exit_code) + ")"}};
  return results;
}

kb::Json reportHeader(const std::string& stage, const std::string& started) {
  kb::ReportHeader h;
  h.tool = "kbsynth";
  h.stage = stage;
  h.started_at = started;
  h.finished_at = kb::nowIso8601();
  h.torch_version = kb::torchVersion();
  return kb::headerToJson(h);
}

// ---- import / export ------------------------------------------------------

struct CaptureOptions {
  std::string compiled = "none";
  std::string weights = "external";
  std::string python;
  std::string report;
  bool strict = false;
  bool skip_existing = false;  // import: keep bundles already captured from the same program
  int init_seed = -1;
  int jobs = 0;                    // capture workers (0: planCapture's choice)
  double memory_budget_gib = 0;    // for all workers together (0: 80% of MemAvailable)
  double timeout_s = 0;            // per task (0: $KB_CAPTURE_TIMEOUT, else 300)
};

// Captures the jobs in kbsynth's capture pool (synth/capture_pool.h), with a
// progress line per task: its outcome, the rate and the time left.
std::map<std::string, kb::Json> runCapture(const std::vector<kb::Json>& jobs, const CaptureOptions& o) {
  if (jobs.empty()) return {};
  kb::CapturePlan plan = kb::planCapture(jobs.size(), o.jobs, static_cast<uint64_t>(o.memory_budget_gib * (1ull << 30)));
  kb::CapturePoolOptions po;
  po.python = kb::pythonPath(o.python);
  po.workers = plan.workers;
  po.memory_budget_bytes = plan.memory_budget_bytes;
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  po.threads = std::max(1, cores / plan.workers);
  const char* env = std::getenv("KB_CAPTURE_TIMEOUT");
  po.task_timeout_s = o.timeout_s > 0 ? o.timeout_s : env && *env ? std::atof(env) : 300.0;
  if (po.task_timeout_s <= 0) po.task_timeout_s = 300.0;
  po.stop = stopped;
  auto t0 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "kbsynth: capturing %zu tasks with %d worker(s) within %.1f GiB of host memory\n", jobs.size(),
               plan.workers, static_cast<double>(plan.memory_budget_bytes) / (1ull << 30));
  po.on_result = [&](const kb::Json& line, size_t done, size_t total) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double rate = s > 0 ? static_cast<double>(done) / s : 0;
    int eta = rate > 0 ? static_cast<int>(static_cast<double>(total - done) / rate) : 0;
    std::string what = line.value("status", "") == "ok" ? "ok"
                                                          : line.value("reason", "") + ": " + line.value("message", "");
    std::fprintf(stderr, "kbsynth: [%zu/%zu] %s: %s (%.2f tasks/s, about %dm%02ds left)\n", done, total,
                 line.value("id", "?").c_str(), what.c_str(), rate, eta / 60, eta % 60);
  };
  std::map<std::string, kb::Json> results = kb::runCapturePool(jobs, po);
  for (const auto& j : jobs) {
    std::string dir = j["dir"].get<std::string>();
    if (results.count(dir)) continue;
    if (stopped())  // SIGINT / SIGTERM: not done, not the task's fault
      results[dir] = {{"dir", dir}, {"id", j["id"]}, {"status", "interrupted"}, {"reason", "interrupted"},
                      {"message", "stopped before this task was captured"}};
    else
      results[dir] = {{"dir", dir}, {"id", j["id"]}, {"status", "failed"}, {"reason", "internal_error"},
                      {"message", "the capture pool ended before this task"}};
  }
  return results;
}

int finishCapture(const std::string& stage, const std::string& started, std::vector<kb::Json> entries,
                  const std::map<std::string, kb::Json>& captured, const std::set<std::string>& created,
                  const CaptureOptions& o, const fs::path& report_default) {
  // Bundles that failed and were made by this run are removed again.
  std::vector<std::string> ok_dirs;
  for (auto& e : entries) {
    if (e.value("status", "") == "failed" && !e.contains("dir")) continue;
    auto it = captured.find(e.value("dir", ""));
    if (it == captured.end()) continue;
    kb::Json r = it->second;
    for (const char* k : {"status", "reason", "message", "capture", "generator", "reference_args", "notes", "seconds",
                          "ran_alone"})
      if (r.contains(k)) e[k] = r[k];
    if (e["status"] == "ok") {
      ok_dirs.push_back(e["dir"]);
    } else if (created.count(e["dir"])) {
      std::error_code ec;
      fs::remove_all(e["dir"].get<std::string>(), ec);
      e["removed"] = true;
    }
  }
  if (o.compiled != "none" && !stopped()) {
    auto built = runBaseline(ok_dirs, o.compiled, false, o.weights, kb::pythonPath(o.python));
    for (auto& e : entries) {
      auto it = built.find(e.value("dir", ""));
      if (it == built.end()) continue;
      kb::Json c = {{"status", it->second.value("status", "failed")}};
      for (const char* k : {"arch", "weights", "reason", "message", "max_abs_diff", "seconds"})
        if (it->second.contains(k)) c[k] = it->second[k];
      e["compiled"] = c;
    }
  }
  Counts counts;
  for (const auto& e : entries) {
    counts.add(e);
    printLine(e);
  }
  kb::Json report = reportHeader(stage, started);
  report["summary"] = counts.json();
  if (o.compiled != "none") {
    int built = 0, failed = 0;
    for (const auto& e : entries)
      if (e.contains("compiled")) (e["compiled"]["status"] == "failed" ? failed : built)++;
    report["summary"]["compiled"] = {{"device", o.compiled}, {"ok", built}, {"failed", failed}};
  }
  report["tasks"] = entries;
  if (stopped()) report["interrupted"] = true;
  fs::path report_path = o.report.empty() ? report_default : fs::path(o.report);
  if (!report_path.empty()) kb::tools::writeJsonOutput(report_path.string(), report);
  const std::string done = counts.summary(stage == "import" ? "imported" : "exported");
  const std::string where = report_path.empty() ? "" : " (report: " + report_path.string() + ")";
  if (stopped()) {
    // One line: what was done, where it is written, how to go on.
    std::fprintf(stderr, "kbsynth: interrupted: %s%s; unfinished bundles removed; run the same command%s to %s\n",
                 done.c_str(), where.c_str(), stage == "import" ? " with --skip-existing" : "",
                 stage == "import" ? "resume" : "capture the rest");
    return kb::tools::StopSignals::exitCode();
  }
  std::fprintf(stderr, "kbsynth: %s%s\n", done.c_str(), where.c_str());
  for (const auto& [level, c] : counts.by_level) {
    std::string reasons;
    for (const auto& [reason, n] : c["by_reason"].items()) reasons += " " + reason + "=" + std::to_string(n.get<int>());
    std::fprintf(stderr, "kbsynth:   %s: %d ok, %d failed%s\n", level.c_str(), c["ok"].get<int>(),
                 c["failed"].get<int>(), reasons.c_str());
  }
  if (o.compiled != "none")
    std::fprintf(stderr, "kbsynth: compiled baselines (%s): %d built or cached, %d failed\n", o.compiled.c_str(),
                 report["summary"]["compiled"]["ok"].get<int>(), report["summary"]["compiled"]["failed"].get<int>());
  if (counts.ok == 0 && counts.failed > 0) return kb::tools::kExitFailed;  // nothing imported / exported
  if (o.strict && counts.failed) return kb::tools::kExitFailed;
  return kb::tools::kExitOk;
}

// Whether DIR holds a complete bundle captured from exactly this model.py
// (import --skip-existing).
bool capturedFrom(const fs::path& dir, const std::string& code) {
  if (!fs::exists(dir / "task.json") || !fs::exists(dir / "model.py")) return false;
  try {
    kb::TaskBundle b = kb::openBundle(dir);  // files present and unchanged
    std::string want = kb::sha256Hex(code);
    std::string have = b.info.json.value("files", kb::Json::object()).value("model.py", "");
    return have == want || have == "sha256:" + want;
  } catch (const std::exception&) {
    return false;
  }
}

int cmdImport(const std::vector<std::string>& sources, const std::string& out_dir, const kb::ImportOptions& io,
              const CaptureOptions& o) {
  std::string started = kb::nowIso8601();
  if (out_dir.empty()) throw kb::UsageError("import needs -o OUT (the folder that receives the bundles)");
  // Outputs before any work: an unwritable OUT or --report is bad input.
  kb::tools::checkWritableDir(out_dir, "-o/--out");
  kb::tools::checkWritableFile(o.report, "--report");
  std::vector<kb::ImportItem> items;
  for (const auto& s : sources) {
    auto found = kb::findProblems(s, io);
    items.insert(items.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  }
  if (items.empty()) throw kb::UsageError("no problems found in the given sources");
  fs::path out = fs::absolute(out_dir).lexically_normal();
  fs::create_directories(out);
  kb::tools::OutputLock lock = kb::tools::OutputLock::directory(out, "-o/--out " + out_dir);
  kb::tools::StopSignals stop;  // SIGINT: capture.py stops, the report says what was done
  std::vector<kb::Json> entries, jobs;
  std::set<std::string> ids, created;
  for (auto& item : items) {
    kb::Json e = {{"id", item.id}};
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
    {
      std::ofstream f(dir / "model.py", std::ios::binary);
      f << item.code;
      if (!f) throw kb::Error("cannot write " + (dir / "model.py").string());
    }
    kb::Json job = {{"dir", dir.string()}, {"id", item.id}, {"provenance", item.provenance}};
    if (o.init_seed >= 0) job["init_seed"] = o.init_seed;
    kb::Json keep = keepFrom(dir, job);
    job["id"] = item.id;
    job["provenance"] = item.provenance;
    job["keep"] = keep;
    jobs.push_back(job);
    entries.push_back(e);
  }
  std::fprintf(stderr, "kbsynth: importing %zu problems into %s\n", jobs.size(), out.string().c_str());
  auto captured = runCapture(jobs, o);
  for (auto& e : entries)  // --skip-existing: the kept bundles count as done
    if (e.contains("skipped")) captured[e["dir"].get<std::string>()] = e;
  return finishCapture("import", started, entries, captured, created, o, out / "import-report.json");
}

int cmdExport(const std::vector<std::string>& bundles, const std::string& id, const CaptureOptions& o) {
  std::string started = kb::nowIso8601();
  if (!id.empty() && bundles.size() != 1) throw kb::UsageError("--id needs exactly one bundle");
  kb::tools::checkWritableFile(o.report, "--report");
  std::vector<kb::Json> entries, jobs;
  for (const auto& b : bundles) {
    fs::path dir = fs::absolute(b).lexically_normal();
    if (dir.filename().empty()) dir = dir.parent_path();
    if (!fs::is_directory(dir)) throw kb::UsageError(b + ": not a folder");
    if (!fs::exists(dir / "model.py")) throw kb::UsageError(b + ": no model.py (a bundle starts from model.py)");
    kb::Json job = {{"dir", dir.string()}};
    if (!id.empty()) job["id"] = id;
    if (o.init_seed >= 0) job["init_seed"] = o.init_seed;
    kb::Json keep = keepFrom(dir, job);
    if (!job.contains("id")) job["id"] = "file/" + kb::sanitizeIdPart(dir.filename().string());
    if (!job.contains("provenance")) job["provenance"] = {{"source", "file"}, {"path", (dir / "model.py").string()}};
    if (!kb::validTaskId(job["id"])) throw kb::UsageError("task id \"" + job["id"].get<std::string>() + "\" is not a safe relative path");
    job["keep"] = keep;
    jobs.push_back(job);
    entries.push_back({{"id", job["id"]}, {"dir", dir.string()}});
  }
  kb::tools::StopSignals stop;
  auto captured = runCapture(jobs, o);
  return finishCapture("export", started, entries, captured, {}, o, "");
}

// ---- baseline -------------------------------------------------------------

int cmdBaseline(const std::vector<std::string>& bundles, const std::string& device, bool force,
                const std::string& weights, const std::string& python) {
  std::vector<std::string> dirs;
  for (const auto& b : bundles) dirs.push_back(kb::openBundle(b).dir.string());  // validates first
  kb::tools::StopSignals stop(true, SIGTERM);  // baseline.py has no quiet SIGINT handler
  auto built = runBaseline(dirs, device, force, weights, kb::pythonPath(python));
  int failed = 0, done = 0;
  for (const auto& d : dirs) {
    if (stopped() && built[d].value("reason", "") == "internal_error") continue;  // not reached
    printLine(built[d]);
    ++done;
    if (built[d].value("status", "") == "failed") ++failed;
  }
  if (stopped()) {
    std::fprintf(stderr, "kbsynth: baseline: interrupted after %d of %zu bundles (%d failed); run the same "
                         "command again to build the rest (current packages are kept)\n", done, dirs.size(), failed);
    return kb::tools::StopSignals::exitCode();
  }
  std::fprintf(stderr, "kbsynth: baseline for %s: %zu ok or cached, %d failed\n", device.c_str(),
               dirs.size() - failed, failed);
  return failed ? 1 : 0;
}

// ---- check ----------------------------------------------------------------

struct CheckOptions {
  std::string device = "cpu";
  std::vector<uint64_t> seeds = {0, 1, 2};
  bool compiled = true;
  double max_diff = 1e-5;
  int time_iters = 0, warmup = 10, repeats = 5;
  std::string python;
};

constexpr double kInf = std::numeric_limits<double>::infinity();

// JSON has no infinity: a difference no tolerance covers is written 1e300
// (NaN too, though maxAbsDiff never returns one), so that every reader's
// "> threshold" sees it.
double jnum(double v) { return std::isfinite(v) ? v : 1e300; }

int cmdCheck(const std::vector<std::string>& bundles, const CheckOptions& o) {
  std::vector<kb::Task> tasks;
  for (const auto& b : bundles) tasks.push_back(kb::Task::open(b));  // bad bundle: exit 2 before any work
  c10::Device dev(o.device);
  fs::path exp_dir = tempPath("expected");
  std::string seed_list;
  for (auto s : o.seeds) seed_list += (seed_list.empty() ? "" : ",") + std::to_string(s);
  std::vector<std::string> args = {"--device", o.device, "--out", exp_dir.string(), "--seeds", seed_list};
  if (o.time_iters > 0)
    args.insert(args.end(), {"--time", std::to_string(o.time_iters), "--warmup", std::to_string(o.warmup),
                             "--repeats", std::to_string(o.repeats)});
  for (const auto& t : tasks) args.push_back(t.bundle().dir.string());
  std::fprintf(stderr, "kbsynth: Python outputs for %zu bundles on %s\n", tasks.size(), o.device.c_str());
  kb::tools::StopSignals stop(true, SIGTERM);  // expected.py has no quiet SIGINT handler
  kb::ScriptResult py = kb::runScript(kb::pythonPath(o.python), "expected.py", args);
  if (stopped()) {
    std::fprintf(stderr, "kbsynth: check: interrupted before any comparison; run the same command again\n");
    return kb::tools::StopSignals::exitCode();
  }
  if (py.lines.size() != tasks.size())
    throw kb::Error("expected.py failed (exit " + std::to_string(py.exit_code) + ")");

  int bad = 0;
  for (size_t n = 0; n < tasks.size(); ++n) {
    if (stopped()) {
      std::fprintf(stderr, "kbsynth: check: interrupted after %zu of %zu bundles (%d differ); run the same command "
                           "again\n", n, tasks.size(), bad);
      return kb::tools::StopSignals::exitCode();
    }
    const kb::Task& task = tasks[n];
    const kb::Json& pyline = py.lines[n];
    kb::Json line = {{"id", task.id()}, {"device", o.device}, {"seeds", o.seeds}};
    try {
      if (pyline.value("status", "") != "ok")
        throw kb::Error("Python side failed: " + pyline.value("reason", "") + ": " + pyline.value("message", ""));
      std::map<std::string, at::Tensor> want;
      for (auto& nt : kb::loadNamedTensors(pyline["file"].get<std::string>())) want[nt.name] = nt.tensor;
      auto expected = [&](const std::string& prefix, uint64_t seed) {
        std::vector<at::Tensor> v;
        for (int i = 0;; ++i) {
          auto it = want.find(prefix + "_s" + std::to_string(seed) + "_" + std::to_string(i));
          if (it == want.end()) break;
          v.push_back(it->second);
        }
        return v;
      };
      kb::Reference ref = task.reference(dev);
      std::optional<kb::CompiledBaseline> comp;
      if (o.compiled) comp = task.compiled(dev);
      double d_in = 0, d_ref = 0, d_comp = 0;
      // The larger difference, NaN counting as the largest: std::max(d,
      // NaN) is d, which let a NaN disagreement read as no difference.
      auto worse = [](double a, double b) { return std::isnan(a) || std::isnan(b) ? kInf : std::max(a, b); };
      for (uint64_t seed : o.seeds) {
        auto x = task.makeInputs(seed, dev);
        std::vector<at::Tensor> xt;
        for (auto& v : x)
          if (v.isTensor()) xt.push_back(v.toTensor());
        d_in = worse(d_in, kb::maxAbsDiff(xt, expected("in", seed)));
        auto out = expected("out", seed);
        d_ref = worse(d_ref, kb::maxAbsDiff(ref.run(x), out));
        if (comp) d_comp = worse(d_comp, kb::maxAbsDiff(comp->run(x), out));
      }
      bool ok = d_in <= o.max_diff && d_ref <= o.max_diff && (!comp || d_comp <= o.max_diff);
      line["inputs_max_abs_diff"] = jnum(d_in);
      line["reference_max_abs_diff"] = jnum(d_ref);
      line["compiled_max_abs_diff"] = comp ? kb::Json(jnum(d_comp)) : kb::Json(nullptr);
      if (comp) line["compiled_arch"] = comp->arch();
      if (o.time_iters > 0) {
        auto x = task.makeInputs(o.seeds.front(), dev);
        double e = kb::timeCallsMs([&] { ref.forward(x); }, dev, o.warmup, o.time_iters, o.repeats);
        line["eager_ms"] = {{"cpp", e}, {"python", pyline.value("eager_ms", 0.0)},
                            {"ratio", e / pyline.value("eager_ms", 1.0)}};
        if (comp) {
          double c = kb::timeCallsMs([&] { comp->run(x); }, dev, o.warmup, o.time_iters, o.repeats);
          line["compile_ms"] = {{"cpp", c}, {"python", pyline.value("compile_ms", 0.0)},
                                {"ratio", c / pyline.value("compile_ms", 1.0)}};
        }
      }
      line["status"] = ok ? "ok" : "mismatch";
      if (!ok) ++bad;
    } catch (const kb::Error& e) {
      line["status"] = "error";
      line["message"] = e.what();
      ++bad;
    }
    printLine(line);
  }
  std::fprintf(stderr, "kbsynth: check: %zu of %zu bundles reproduce Python within %g\n", tasks.size() - bad,
               tasks.size(), o.max_diff);
  return bad ? 1 : 0;
}

// ---- info -----------------------------------------------------------------

int cmdInfo(const std::vector<std::string>& bundles) {
  for (const auto& b : bundles) {
    kb::TaskBundle bundle = kb::openBundle(b);
    const kb::TaskInfo& i = bundle.info;
    kb::Json line = {{"id", i.id},           {"dir", bundle.dir.string()},     {"capture", i.capture},
                     {"generator", i.generator}, {"reference_args", i.reference_args},
                     {"inputs", i.inputs.size()}, {"outputs", i.outputs.size()}, {"state", i.state.size()},
                     {"torch_version", i.torch_version}, {"compiled", kb::Json::object()}};
    for (const auto& arch : bundle.compiledArchs()) {
      auto why = kb::checkCompiled(bundle, arch);
      line["compiled"][arch] = why ? *why : "ok";
    }
    printLine(line);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kIntro, "kbsynth"};
  app.set_version_flag("--version", std::string("kbsynth ") + KB_VERSION, "Print the version and exit");
  app.require_subcommand(1);
  app.fallthrough();  // --python may follow the subcommand

  std::string python;
  app.add_option("--python", python, "Python interpreter with torch (default $KB_PYTHON, /opt/kb-venv/bin/python3)");

  CaptureOptions co;
  kb::ImportOptions io;
  std::vector<std::string> sources;
  std::string out_dir;
  auto* imp = app.add_subcommand("import",
      "Turn existing problems into task bundles OUT/<id>/: a KernelBench checkout or levelN/ folder "
      "(ids kernelbench/levelN/<name>), JSONL or Parquet rows with a `code` column (CUDA-Agent-Ops-6K "
      "layout; ids <prefix>/<row>), or single model.py files (id file/<name>). Each program is run under "
      "PyTorch and captured; bad ones are reported with a reason and skipped. Prints one JSON line per task, "
      "writes OUT/import-report.json.");
  imp->add_option("sources", sources, "KernelBench folders, .jsonl/.parquet datasets, .py files")
      ->required()
      ->check(kb::tools::readablePath());
  imp->add_option("-o,--out", out_dir, "Folder that receives the bundles")->required();
  imp->add_option("--compiled", co.compiled, "Also build the torch.compile baseline for: none (default), cpu, cuda, cuda:N")
      ->check(CLI::IsMember({"none"}) | kb::tools::deviceValidator());
  imp->add_option("--weights", co.weights, "Compiled baseline weights: external (default; supplied at load) or in_package")
      ->check(CLI::IsMember({"external", "in_package"}));
  imp->add_option("--id", io.id, "Task id for a single .py source");
  imp->add_option("--id-prefix", io.id_prefix, "Id prefix for dataset rows and plain folders (default: the file or folder name)");
  imp->add_option("--init-seed", co.init_seed, "torch.manual_seed before Model(*get_init_inputs()) (default 42)");
  imp->add_option("--report", co.report, "Where to write the JSON report (default OUT/import-report.json)");
  imp->add_flag("--strict", co.strict, "Exit 1 when any task failed (without it: only when none was imported)");
  auto captureFlags = [&co](CLI::App* sub) {
    sub->add_option("-j,--jobs", co.jobs, "Capture workers at once, one Python each (default: one per two cores, at most 8)")
        ->check(CLI::Range(1, 256));
    sub->add_option("--memory-budget", co.memory_budget_gib,
                    "Host memory in GiB for all capture workers together (default: 80% of what is available); "
                    "over it the largest worker's task runs again alone, and a task over it alone fails out_of_memory")
        ->check(CLI::Range(0.1, 1e6));
    sub->add_option("--timeout", co.timeout_s, "Seconds per task's capture (default $KB_CAPTURE_TIMEOUT, else 300)")
        ->check(CLI::Range(1.0, 1e6));
  };
  captureFlags(imp);
  imp->add_flag("--skip-existing", co.skip_existing,
                "Keep bundles in OUT already captured from the same model.py instead of capturing them again "
                "(resumes an interrupted import)");

  std::vector<std::string> bundles;
  std::string export_id;
  auto* exp = app.add_subcommand("export",
      "(Re)capture bundles from their model.py: reference.pt (torch.jit.script, else torch.jit.trace; weights "
      "from the init seed), the input generator (inputs.pt or a recorded spec) and task.json. Id, provenance, "
      "tolerances and seeds of an existing task.json are kept.");
  exp->add_option("bundles", bundles, "Bundle folders holding model.py")->required()->check(kb::tools::readablePath());
  exp->add_option("--id", export_id, "Task id (one bundle; default: from task.json, else file/<folder>)");
  exp->add_option("--compiled", co.compiled, "Also build the torch.compile baseline for: none (default), cpu, cuda, cuda:N")
      ->check(CLI::IsMember({"none"}) | kb::tools::deviceValidator());
  exp->add_option("--weights", co.weights, "Compiled baseline weights: external (default) or in_package")
      ->check(CLI::IsMember({"external", "in_package"}));
  exp->add_option("--init-seed", co.init_seed, "Init seed (default: task.json's, else 42)");
  exp->add_option("--report", co.report, "Also write a JSON report here");
  exp->add_flag("--strict", co.strict, "Exit 1 when any task failed");
  captureFlags(exp);

  std::string device = "cpu";
  bool force = false;
  std::string weights = "external";
  auto* base = app.add_subcommand("baseline",
      "Build the torch.compile baseline compiled/<arch>.pt2 (torch.export + AOTInductor) for a device, unless "
      "a current one is cached. Run on the machine whose device it is for (cuda on the GPU machine).");
  base->add_option("bundles", bundles, "Bundle folders")->required()->check(kb::tools::readablePath());
  base->add_option("--device", device, "cpu (default), cuda or cuda:N")->check(kb::tools::deviceValidator());
  base->add_flag("--force", force, "Rebuild even when a current package exists");
  base->add_option("--weights", weights, "external (default; weights out of the package, supplied at load) or in_package")
      ->check(CLI::IsMember({"external", "in_package"}));

  CheckOptions ck;
  std::string seeds = "0,1,2";
  bool no_compiled = false;
  auto* chk = app.add_subcommand("check",
      "Check that C++ reproduces Python: for each seed, the inputs lib/task makes, the reference.pt outputs and "
      "the compiled baseline outputs against the original model.py run by Python. Prints max abs diffs (and "
      "with --time, C++ vs Python milliseconds per call) as one JSON line per bundle; exit 1 if any exceeds "
      "--max-diff.");
  chk->add_option("bundles", bundles, "Bundle folders")->required()->check(kb::tools::readablePath());
  chk->add_option("--device", ck.device, "cpu (default), cuda or cuda:N")->check(kb::tools::deviceValidator());
  chk->add_option("--seeds", seeds, "Seeds, comma-separated (default 0,1,2)")->type_name("LIST");
  chk->add_flag("--no-compiled", no_compiled, "Skip the compiled baseline");
  chk->add_option("--max-diff", ck.max_diff, "Largest max abs diff accepted (default 1e-5)")->check(CLI::Range(0.0, 1e30));
  chk->add_option("--time", ck.time_iters, "Also time eager and compiled with ITERS calls per round (0: off)")
      ->check(CLI::Range(0, 100000000));
  chk->add_option("--warmup", ck.warmup, "Untimed calls before timing (default 10)")->check(CLI::Range(0, 100000000));
  chk->add_option("--repeats", ck.repeats, "Timed rounds; the median is reported (default 5)")->check(CLI::Range(1, 100000));

  auto* info = app.add_subcommand("info", "Validate bundles (files present and unchanged, format version, compiled "
                                          "packages) and print one JSON summary line each.");
  info->add_option("bundles", bundles, "Bundle folders")->required()->check(kb::tools::readablePath());

  kb::SynthCli synth;
  kb::addSynthCommands(app, synth);

  if (auto rc = kb::tools::parseOrExit(app, argc, argv, "kbsynth")) return *rc;

  TempDir cleanup;
  try {
    co.python = python;
    io.python = python;
    ck.python = python;
    if (*imp) return cmdImport(sources, out_dir, io, (co.compiled = deviceArg(co.compiled), co));
    if (*exp) return cmdExport(bundles, export_id, (co.compiled = deviceArg(co.compiled), co));
    if (*base) return cmdBaseline(bundles, deviceArg(device), force, weights, python);
    if (*chk) {
      ck.seeds = kb::tools::parseSeedList(seeds);
      ck.compiled = !no_compiled;
      deviceArg(ck.device);
      if (ck.device == "none") throw kb::UsageError("check needs a device: cpu, cuda or cuda:N");
      return cmdCheck(bundles, ck);
    }
    if (*info) return cmdInfo(bundles);
    if (auto rc = kb::runSynthCommands(synth, python)) return *rc;
  } catch (const kb::UsageError& e) {
    kb::tools::printError("kbsynth", e.what());
    return kb::tools::kExitUsage;
  } catch (const c10::Error& e) {
    kb::tools::printError("kbsynth", std::string("torch: ") + e.what_without_backtrace());
    return kb::tools::kExitInfra;
  } catch (const std::exception& e) {
    kb::tools::printError("kbsynth", e.what());
    return kb::tools::kExitInfra;
  }
  return 0;
}
