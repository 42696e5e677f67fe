#include "synth/pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "core/file.h"
#include "core/hash.h"
#include "python/scripts.h"

namespace fs = std::filesystem;

namespace kb::synth {

namespace {

std::string pad5(int64_t i) {
  char b[32];
  std::snprintf(b, sizeof b, "%05lld", static_cast<long long>(i));
  return b;
}

void writeText(const fs::path& p, const std::string& text) { writeFileAtomic(p, text); }

void printLine(const Json& j) {
  std::cout << j.dump() << '\n';
  std::cout.flush();
}

struct Run {
  fs::path out;
  fs::path config() const { return out / "synth.json"; }
  fs::path manifest() const { return out / "manifest.jsonl"; }
  fs::path programs() const { return out / "programs"; }
  fs::path times() const { return out / "times.jsonl"; }
  fs::path work() const { return out / ".work"; }
};

Json readConfig(const Run& run) {
  if (!fs::exists(run.config()))
    throw UsageError(run.out.string() + ": not a kbsynth run folder (no synth.json; make one with kbsynth compose)");
  Json c = readJsonFile(run.config());
  if (!c.is_object() || c.value("format", "") != "kb-synth-run")
    throw UsageError(run.config().string() + ": not a kbsynth run file");
  return c;
}

}  // namespace

// ---- manifest ------------------------------------------------------------------

std::vector<Json> readManifest(const fs::path& path) {
  std::vector<Json> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    Json j = Json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("index")) out.push_back(std::move(j));
  }
  std::sort(out.begin(), out.end(), [](const Json& a, const Json& b) { return a["index"] < b["index"]; });
  return out;
}

void writeManifest(const fs::path& path, const std::vector<Json>& records) {
  std::string text;
  for (const auto& r : records) text += r.dump() + "\n";
  writeText(path, text);
}

const std::vector<std::string>& filterStages() {
  static const std::vector<std::string> s = {"parse", "eager", "deterministic", "nondegenerate", "decontam",
                                             "timing", "compile"};
  return s;
}

// ---- seeds -----------------------------------------------------------------------

int runSeeds(const fs::path& catalog_path, bool list_all) {
  Catalog c = loadCatalog(catalog_path.empty() ? defaultCatalogPath() : catalog_path);
  std::map<std::string, int> rules;
  for (const auto& op : c.ops) ++rules[op.rule];
  Json excluded = Json::array();
  size_t uncurated = 0;
  for (const auto& e : c.entries) {
    if (e.value("status", "") == "excluded") excluded.push_back({{"name", e["name"]}, {"reason", e["reason"]}});
    if (e.value("status", "") == "uncurated") ++uncurated;
  }
  if (list_all) {
    for (const auto& e : c.entries) {
      Json line = {{"name", e["name"]}, {"source", e["source"]}, {"kind", e["kind"]}, {"status", e["status"]}};
      if (e.contains("rule")) line["rule"] = e["rule"];
      if (e.contains("ranks")) line["ranks"] = e["ranks"];
      if (e.contains("args")) line["args"] = e["args"];
      if (e.contains("reason")) line["reason"] = e["reason"];
      printLine(line);
    }
  } else {
    Json summary = {{"catalog", c.path.string()}, {"sha256", c.sha256}, {"torch_version", c.torch_version},
                    {"transformers_version", c.transformers_version}, {"crawled", c.entries.size()},
                    {"composable", c.ops.size()}, {"composable_transformers", c.transformers.size()},
                    {"uncurated", uncurated}, {"excluded", excluded.size()}, {"rules", rules},
                    {"counts", c.counts}, {"excluded_ops", excluded}};
    printLine(summary);
  }
  std::fprintf(stderr,
               "kbsynth: seeds: %zu operators crawled (torch %s, transformers %s): %zu composable torch operators in "
               "%zu shape rules, %zu standalone transformers modules, %zu excluded (stochastic or not operators), %zu "
               "without a shape rule\n",
               c.entries.size(), c.torch_version.c_str(),
               c.transformers_version.empty() ? "not installed" : c.transformers_version.c_str(), c.ops.size(),
               rules.size(), c.transformers.size(), static_cast<size_t>(excluded.size()), uncurated);
  return 0;
}

// ---- compose -------------------------------------------------------------------

int runCompose(const ComposeOptions& o) {
  if (o.n <= 0) throw UsageError("compose needs -n N > 0");
  if (o.composer != "rule" && o.composer != "llm") throw UsageError("--composer must be rule or llm");
  Catalog cat = loadCatalog(o.catalog.empty() ? defaultCatalogPath() : o.catalog);
  Profile prof = Profile::byName(o.profile);
  Run run{fs::absolute(o.out).lexically_normal()};
  fs::create_directories(run.programs());

  Json config = {{"format", "kb-synth-run"},
                 {"format_version", 1},
                 {"composer", o.composer},
                 {"seed", o.seed},
                 {"mix", o.mix.json()},
                 {"profile", o.profile},
                 {"catalog", cat.path.string()},
                 {"catalog_sha256", cat.sha256}};
  if (o.composer == "llm")
    config["llm"] = {{"base_url", o.llm.base_url}, {"model", o.llm.model}, {"temperature", o.llm.temperature},
                     {"max_tokens", o.llm.max_tokens}};
  if (fs::exists(run.config())) {
    Json old = readConfig(run);
    for (const char* k : {"composer", "seed", "mix", "profile", "catalog_sha256"})
      if (old.value(k, Json()) != config[k])
        throw UsageError(run.out.string() + " was composed with another " + k + " (" + old.value(k, Json()).dump() +
                         ", now " + config[k].dump() + "): use another -o folder");
    config = old;
  }
  config["n"] = std::max<int64_t>(o.n, config.value("n", int64_t(0)));
  writeText(run.config(), config.dump(2) + "\n");

  std::vector<Json> records = readManifest(run.manifest());
  std::set<int64_t> done;
  LlmSpend carried;
  for (const auto& r : records) {
    done.insert(r["index"].get<int64_t>());
    if (r.contains("llm") && r["llm"].contains("usage")) {
      carried.requests += r["llm"]["usage"].value("requests", int64_t(0));
      carried.prompt_tokens += r["llm"]["usage"].value("prompt_tokens", int64_t(0));
      carried.completion_tokens += r["llm"]["usage"].value("completion_tokens", int64_t(0));
    }
  }
  std::unique_ptr<LlmClient> llm;
  if (o.composer == "llm") {
    if (o.llm.model.empty()) throw UsageError("the LLM composer needs a model: --llm-model or $OPENAI_MODEL");
    llm = std::make_unique<LlmClient>(o.llm);
    llm->carryOver(carried);
  }
  int64_t todo = 0;
  for (int64_t i = 0; i < o.n; ++i) todo += done.count(i) ? 0 : 1;
  std::fprintf(stderr, "kbsynth: composing %lld tasks (%lld already in %s) with the %s composer, seed %llu, profile %s\n",
               static_cast<long long>(todo), static_cast<long long>(o.n - todo), run.manifest().string().c_str(),
               o.composer.c_str(), static_cast<unsigned long long>(o.seed), o.profile.c_str());

  auto start = Clock::now(), last_save = Clock::now(), last_note = Clock::now();
  int64_t made = 0, failed = 0;
  int rc = 0;
  std::string stop_reason;
  auto save = [&] {
    std::sort(records.begin(), records.end(), [](const Json& a, const Json& b) { return a["index"] < b["index"]; });
    writeManifest(run.manifest(), records);
    last_save = Clock::now();
  };
  for (int64_t i = 0; i < o.n; ++i) {
    if (done.count(i)) continue;
    if (int sig = o.stop_signal ? o.stop_signal() : 0) {
      stop_reason = "interrupted (signal " + std::to_string(sig) + ")";
      rc = 128 + sig;
      break;
    }
    if (o.stop_after > 0 && made + failed >= o.stop_after) {
      stop_reason = "stopped after " + std::to_string(o.stop_after) + " new tasks (--stop-after)";
      break;
    }
    std::string id = "synth/s" + std::to_string(o.seed) + "/" + pad5(i);
    Json rec = {{"id", id}, {"index", i}, {"composer", o.composer}, {"seed", o.seed}};
    Composed c;
    int op_count = opCountFor(o.mix, o.seed, static_cast<uint64_t>(i));
    if (o.composer == "rule" || op_count == 0) {
      c = composeRule(cat, prof, o.mix, o.seed, static_cast<uint64_t>(i));
    } else {
      c = sampleChain(cat, prof, op_count, o.seed, static_cast<uint64_t>(i));
      if (c.ok) {
        std::string why;
        if (!llm->withinBudget(&why)) {
          stop_reason = "LLM budget exhausted: " + why;
          rc = 1;
          break;
        }
        LlmResult r;
        try {
          r = llm->completeProgram(llmSystemPrompt(), llmUserPrompt(c, cat));
        } catch (const LlmFatal&) {
          save();
          throw;
        }
        if (r.reason == "budget_exhausted") {
          stop_reason = "LLM budget exhausted: " + r.message;
          rc = 1;
          break;
        }
        Json lj = r.json();
        lj["model"] = o.llm.model;
        rec["llm"] = lj;
        if (r.ok) {
          c.code = r.code;
          // The LLM chooses its own sizes: the chain's shapes are a hint, not a prediction.
          c.output.clear();
          c.est_ms = 0;
        } else {
          c.ok = false;
          c.error = r.reason + ": " + r.message;
        }
      }
    }
    Json cj = c.json();
    for (auto it = cj.begin(); it != cj.end(); ++it) rec[it.key()] = it.value();
    if (o.composer == "llm" && c.ok && op_count != 0) rec["output"] = nullptr;
    if (c.ok) {
      std::string rel = "programs/" + pad5(i) + ".py";
      writeText(run.out / rel, c.code);
      rec["program"] = rel;
      rec["code_sha256"] = "sha256:" + sha256Hex(c.code);
      rec["status"] = "composed";
      ++made;
    } else {
      rec["status"] = "compose_failed";
      rec["compose_error"] = c.error;
      ++failed;
    }
    records.push_back(rec);
    printLine({{"id", id}, {"index", i}, {"status", rec["status"]}, {"category", rec["category"]},
               {"op_count", rec["op_count"]}, {"ops", rec["ops"]}});
    if (since(last_save) > 1.0 || (o.composer == "llm")) save();
    if (since(last_note) > 2.0 || o.composer == "llm") {
      std::fprintf(stderr, "kbsynth: compose [%lld/%lld] %.1f tasks/s%s\n", static_cast<long long>(made + failed),
                   static_cast<long long>(todo), (made + failed) / std::max(since(start), 1e-9),
                   llm ? (", " + std::to_string(llm->spent().prompt_tokens + llm->spent().completion_tokens) +
                          " tokens spent").c_str()
                       : "");
      last_note = Clock::now();
    }
  }
  save();
  std::fprintf(stderr, "kbsynth: composed %lld tasks, %lld failed, in %.1f s; manifest %s\n",
               static_cast<long long>(made), static_cast<long long>(failed), since(start),
               run.manifest().string().c_str());
  if (!stop_reason.empty()) std::fprintf(stderr, "kbsynth: %s; run the same command again to resume\n", stop_reason.c_str());
  return rc;
}

// ---- filter --------------------------------------------------------------------

namespace {

struct FilterState {
  std::mutex mu;
  std::vector<Json> records;
  std::map<std::string, size_t> by_id;
  Run run;
  Clock::time_point start = Clock::now(), last_save = Clock::now();
  size_t done = 0, total = 0;
  std::ofstream times;
  // --time-limit: no task is started after it, and a task still running is
  // stopped unrecorded (a later run resumes it).
  bool has_deadline = false;
  Clock::time_point deadline;
  // SIGINT / SIGTERM (FilterOptions::stop_signal): treated as a deadline now.
  std::function<int()> stop_signal;
  // Worker processes started in the current group, and their start-up seconds.
  int starts = 0;
  double startup_seconds = 0;

  void save() {
    writeManifest(run.manifest(), records);
    last_save = Clock::now();
  }
  int stopSignal() const { return stop_signal ? stop_signal() : 0; }
  bool outOfTime() const { return (has_deadline && Clock::now() >= deadline) || stopSignal() != 0; }
  double timeLeft() const {
    return has_deadline ? std::chrono::duration<double>(deadline - Clock::now()).count() : 1e9;
  }
};

// Merges one script result into its record (under the lock).
void mergeResult(FilterState& st, const Json& res, const std::vector<std::string>& stages, const std::string& group) {
  auto it = st.by_id.find(res.value("id", ""));
  if (it == st.by_id.end()) return;
  Json& rec = st.records[it->second];
  if (!rec.contains("filter")) rec["filter"] = {{"stages", Json::object()}, {"dropped_at", nullptr}, {"reason", nullptr}};
  Json times = {{"id", res["id"]}, {"group", group}, {"seconds", res.value("seconds", 0.0)}, {"stages", Json::object()}};
  for (const auto& s : stages) {
    if (!res["stages"].contains(s)) continue;
    Json r = res["stages"][s];
    if (r.value("status", "") == "not_run") continue;
    for (const char* k : {"seconds", "compile_seconds"})
      if (r.contains(k)) {
        times["stages"][std::string(k) == "seconds" ? s : "torch.compile"] = r[k];
        r.erase(k);
      }
    rec["filter"]["stages"][s] = r;
  }
  if (res.value("verdict", "") == "dropped") {
    rec["filter"]["dropped_at"] = res["dropped_at"];
    rec["filter"]["reason"] = res["reason"];
    rec["status"] = "dropped";
  }
  st.times << times.dump() << "\n";
  st.times.flush();
}

bool finished(const Json& rec, const std::vector<std::string>& stages) {
  if (rec.value("status", "") == "dropped") return true;
  if (!rec.contains("filter")) return false;
  for (const auto& s : stages)
    if (!rec["filter"]["stages"].contains(s)) return false;
  return true;
}

// Records one task's result and prints a progress line (under the lock).
void noteResult(FilterState& st, const Json& res, const std::vector<std::string>& group, const std::string& label) {
  mergeResult(st, res, group, label);
  ++st.done;
  std::string what = res.value("verdict", "") == "dropped"
                         ? "dropped at " + res.value("dropped_at", std::string("?")) + " (" +
                               res.value("reason", std::string("?")) + ")"
                         : "passed";
  for (const auto& g : group)
    if (res["stages"].contains(g) && res["stages"][g].value("status", "") == "skipped")
      what += " (" + g + " skipped: " + res["stages"][g].value("reason", std::string("?")) + ")";
  double el = since(st.start);
  std::fprintf(stderr, "kbsynth: filter %s [%zu/%zu, %.0f s, %.2f s/task] %s: %s\n", label.c_str(), st.done, st.total,
               el, el / std::max<size_t>(st.done, 1), res.value("id", std::string("?")).c_str(), what.c_str());
  if (since(st.last_save) > 2.0) st.save();
}

// The result of a task whose worker was killed (timeout) or died (crash):
// the stages it reported before, and a failure at the stage it was in.
Json failedResult(const std::string& id, const std::vector<std::string>& stages, const Json& partial,
                  const std::string& reason, const std::string& message, double seconds) {
  Json res = {{"id", id}, {"stages", partial}, {"verdict", "kept"}, {"dropped_at", nullptr}, {"reason", nullptr},
              {"seconds", seconds}};
  for (const auto& s : stages) {
    if (partial.contains(s)) continue;
    res["stages"][s] = {{"status", "fail"}, {"reason", reason}, {"message", message}};
    res["verdict"] = "dropped";
    res["dropped_at"] = s;
    res["reason"] = reason;
    break;
  }
  return res;
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// Seconds a task may take in its worker: --task-timeout, else
// $KB_SYNTH_TASK_TIMEOUT, else 600. The script stops itself at that (SIGALRM,
// between Python steps); the driver kills the worker as much again later
// (at most 30 s).
double taskTimeout(const FilterOptions& o) {
  if (o.task_timeout > 0) return o.task_timeout;
  if (const char* e = std::getenv("KB_SYNTH_TASK_TIMEOUT"); e && std::atof(e) > 0) return std::atof(e);
  return 600;
}

// Runs the stages of `group` on `ids` with `jobs` long-lived
// scripts/synth_filter.py workers, each fed one task at a time over its
// stdin (the next task goes to whichever worker is free). A task whose
// worker dies is tried once more in a fresh worker and recorded as `crash`
// if that one dies too; a task over the time limit has its worker killed
// and is recorded as `timeout`. With `gpu_lock`, the workers share one GPU
// and time their forwards under an exclusive lock (synth_filter.py).
void runGroup(FilterState& st, const FilterOptions& o, const std::vector<std::string>& group,
              const std::vector<std::string>& ids, int jobs, const std::string& label, bool gpu_lock) {
  if (ids.empty()) return;
  jobs = std::max(1, std::min<int>(jobs, static_cast<int>(ids.size())));
  const double task_limit = taskTimeout(o);
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<std::string> args = {"--jobs", "-", "--device", o.device, "--stages", joined(group, ","),
                                   "--max-similarity", std::to_string(o.max_similarity),
                                   "--min-ms", std::to_string(o.min_ms), "--max-ms", std::to_string(o.max_ms),
                                   "--timeout", std::to_string(static_cast<int>(std::ceil(task_limit))),
                                   "--threads", std::to_string(std::max(1, cores / jobs))};
  for (const auto& r : o.references) args.insert(args.end(), {"--reference", r});
  if (gpu_lock && jobs > 1) {
    fs::path dir = st.run.work() / "gpu-lock";
    fs::create_directories(dir);
    args.insert(args.end(), {"--gpu-lock", dir.string()});
  }
  const std::string python = python::pythonPath(o.python);
  std::atomic<size_t> next{0};
  std::atomic<bool> no_device{false};
  std::string start_error;  // under st.mu

  auto slot = [&] {
    std::unique_ptr<python::ScriptWorker> w;
    int served = 0, failed_starts = 0;
    auto stopping = [&] {
      if (no_device || st.outOfTime()) return true;
      std::lock_guard<std::mutex> lock(st.mu);
      return !start_error.empty();
    };
    // A fresh worker that has said hello; false when none could be started.
    auto start = [&]() -> bool {
      while (!stopping()) {
        auto t0 = Clock::now();
        w = std::make_unique<python::ScriptWorker>(python, "synth_filter.py", args);
        served = 0;
        std::string line;
        for (;;) {
          auto r = w->readLine(line, std::min(300.0, st.timeLeft()));
          if (r != python::ScriptWorker::Read::line) break;
          Json j = Json::parse(line, nullptr, false);
          if (j.is_object() && j.contains("hello")) {
            std::lock_guard<std::mutex> lock(st.mu);
            ++st.starts;
            st.startup_seconds += since(t0);
            return true;
          }
        }
        w->kill();
        int code = w->wait();
        w.reset();
        if (st.outOfTime()) return false;
        if (code == 3) {
          no_device = true;
          return false;
        }
        if (++failed_starts >= 2) {
          std::lock_guard<std::mutex> lock(st.mu);
          start_error = "synth_filter.py exited (status " + std::to_string(code) + ") before it was ready, twice";
          return false;
        }
      }
      return false;
    };
    for (size_t k; !stopping() && (k = next++) < ids.size();) {
      const std::string& id = ids[k];
      Json job;
      std::vector<std::string> job_stages;
      {
        std::lock_guard<std::mutex> lock(st.mu);
        const Json& rec = st.records[st.by_id[id]];
        job = {{"id", id}, {"program", (st.run.out / rec["program"].get<std::string>()).string()}};
        if (rec.contains("output") && rec["output"].is_object() && rec["output"].contains("shape"))
          job["expect"] = rec["output"];
        for (const auto& s : group)  // a resumed task: only the stages it lacks
          if (!rec.contains("filter") || !rec["filter"]["stages"].contains(s)) job_stages.push_back(s);
        job["stages"] = job_stages;
      }
      for (int attempt = 1;; ++attempt) {
        if (w && o.chunk > 0 && served >= o.chunk) {  // a fresh process every --chunk tasks
          w->wait();
          w.reset();
        }
        if (!w && !start()) return;
        ++served;
        auto t0 = Clock::now();
        Json partial = Json::object();
        bool sent = w->send(job.dump());
        enum { done, died, timed_out, interrupted } outcome = died;
        std::string line;
        while (sent) {
          double left = std::min(task_limit + std::min(30.0, task_limit) - since(t0), st.timeLeft());
          auto r = w->readLine(line, left);
          if (r == python::ScriptWorker::Read::eof) break;
          if (r == python::ScriptWorker::Read::timeout) {
            outcome = st.outOfTime() ? interrupted : timed_out;
            break;
          }
          Json j = Json::parse(line, nullptr, false);
          if (!j.is_object() || j.value("id", "") != id) continue;
          if (j.contains("verdict")) {
            std::lock_guard<std::mutex> lock(st.mu);
            noteResult(st, j, group, label);
            outcome = done;
            break;
          }
          if (j.contains("stage") && j.contains("result")) partial[j["stage"].get<std::string>()] = j["result"];
        }
        if (outcome == done) break;
        w->kill();
        int code = w->wait();
        w.reset();
        if (outcome == interrupted) return;  // unrecorded: resumed by a later run
        if (outcome == died && attempt < 2) continue;  // once more, in a fresh worker
        std::lock_guard<std::mutex> lock(st.mu);
        if (outcome == timed_out)
          noteResult(st, failedResult(id, job_stages, partial, "timeout",
                                      "no result within the per-task limit of " + std::to_string(static_cast<int>(task_limit)) +
                                          " s; the worker was killed",
                                      since(t0)),
                     group, label);
        else
          noteResult(st, failedResult(id, job_stages, partial, "crash",
                                      "the filter process died on this task twice (exit status " + std::to_string(code) + ")",
                                      since(t0)),
                     group, label);
        break;
      }
    }
    if (w) {
      if (st.outOfTime()) w->kill();
      w->wait();  // end of input: the worker exits
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < jobs; ++t) threads.emplace_back(slot);
  for (auto& t : threads) t.join();
  if (no_device) throw Error("synth_filter.py: no CUDA device for --device " + o.device);
  if (!start_error.empty()) throw Error(start_error);
}

}  // namespace

int runFilter(const FilterOptions& o) {
  Run run{fs::absolute(o.out).lexically_normal()};
  Json config = readConfig(run);
  std::vector<std::string> stages;
  for (const auto& s : filterStages())
    if (o.stages.empty() || std::find(o.stages.begin(), o.stages.end(), s) != o.stages.end()) stages.push_back(s);
  for (const auto& s : o.stages)
    if (std::find(filterStages().begin(), filterStages().end(), s) == filterStages().end())
      throw UsageError("unknown filter stage \"" + s + "\" (stages: parse, eager, deterministic, nondegenerate, "
                       "decontam, timing, compile)");
  if (stages.empty() || stages.front() != "parse") stages.insert(stages.begin(), "parse");
  std::vector<std::string> refs;
  for (const auto& r : o.references) {
    if (!fs::exists(r)) throw UsageError("--reference " + r + ": no such file or folder");
    refs.push_back(fs::absolute(r).lexically_normal().string());
  }
  bool has_decontam = std::find(stages.begin(), stages.end(), "decontam") != stages.end();
  if (has_decontam && refs.empty())
    std::fprintf(stderr, "kbsynth: warning: no --reference: the decontam stage records every task as skipped\n");
  if (o.device != "cpu" && o.device != "cuda" && o.device.rfind("cuda:", 0) != 0 && o.device != "meta")
    throw UsageError("--device must be cpu, cuda, cuda:N or meta");
  if (o.device == "meta")  // shapes without data: the programs' structure only
    for (const auto& s : stages)
      if (s != "parse" && s != "eager" && s != "decontam")
        throw UsageError("--device meta runs only the parse, eager and decontam stages (shapes, no values)");
  Json settings = {{"device", o.device}, {"stages", stages}, {"references", refs},
                   {"max_similarity", o.max_similarity}, {"min_ms", o.min_ms}, {"max_ms", o.max_ms}};

  FilterState st;
  st.run = run;
  st.stop_signal = o.stop_signal;
  st.records = readManifest(run.manifest());
  if (st.records.empty()) throw UsageError(run.manifest().string() + ": no tasks (run kbsynth compose first)");
  if (config.contains("filter") && config["filter"] != settings) {
    if (!o.force)
      throw UsageError(run.out.string() + " was filtered with other settings (" + config["filter"].dump() +
                       "); pass --force to filter every task again with the new ones");
  }
  if (o.force || (config.contains("filter") && config["filter"] != settings)) {
    for (auto& r : st.records) {
      r.erase("filter");
      r.erase("bundle");
      r.erase("bundle_error");
      if (r.value("status", "") != "compose_failed") r["status"] = "composed";
    }
  }
  if (o.force || (config.contains("filter") && config["filter"] != settings)) {
    std::error_code ec;
    fs::remove(run.times(), ec);  // times of the earlier filtering
  }
  config["filter"] = settings;
  writeText(run.config(), config.dump(2) + "\n");
  for (size_t i = 0; i < st.records.size(); ++i) st.by_id[st.records[i]["id"].get<std::string>()] = i;
  st.times.open(run.times(), std::ios::app);

  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const bool cuda = o.device != "cpu" && o.device != "meta";
  int jobs = o.jobs > 0 ? o.jobs : std::max(1, std::min(cuda ? 12 : cores, cores));
  // torch.compile is CPU-bound (Inductor, Triton): as many workers as cores on a GPU machine.
  int compile_jobs = o.compile_jobs > 0 ? o.compile_jobs : cuda ? std::min(cores, 16) : jobs;
  // Stage groups: every stage but compile in one pass per task (one model,
  // one set of inputs; the timed forwards hold the GPU alone through the
  // workers' shared lock), then torch.compile for the tasks that survived.
  std::vector<std::vector<std::string>> groups(1);
  for (const auto& s : stages) {
    if (s == "compile") groups.push_back({});
    groups.back().push_back(s);
  }
  size_t pending = 0;
  for (const auto& r : st.records)
    if (r.value("status", "") != "compose_failed" && !finished(r, stages)) ++pending;
  std::fprintf(stderr, "kbsynth: filtering %zu tasks on %s (%zu already filtered), stages %s, %d worker processes%s\n",
               pending, o.device.c_str(), st.records.size() - pending, settings["stages"].dump().c_str(), jobs,
               groups.size() > 1 ? (" (" + std::to_string(compile_jobs) + " for torch.compile)").c_str() : "");
  auto start = Clock::now();
  if (o.time_limit > 0) {
    st.has_deadline = true;
    st.deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.time_limit));
  }
  for (const auto& group : groups) {
    if (group.empty() || st.outOfTime()) continue;
    std::vector<std::string> ids;
    for (const auto& r : st.records) {
      if (r.value("status", "") != "composed") continue;
      bool need = false;
      for (const auto& s : group)
        if (!r.contains("filter") || !r["filter"]["stages"].contains(s)) need = true;
      if (need) ids.push_back(r["id"]);
    }
    std::string label = joined(group, "+");
    int workers = std::max(1, std::min<int>(group.front() == "compile" ? compile_jobs : jobs, static_cast<int>(ids.size())));
    st.done = 0;
    st.total = ids.size();
    st.start = Clock::now();
    st.starts = 0;
    st.startup_seconds = 0;
    if (!ids.empty())
      std::fprintf(stderr, "kbsynth: filter %s: %zu tasks, %d worker processes\n", label.c_str(), ids.size(), workers);
    runGroup(st, o, group, ids, workers, label, cuda);
    if (!ids.empty())
      st.times << Json({{"group", label}, {"tasks", st.done}, {"workers", workers},
                        {"worker_starts", st.starts},
                        {"startup_seconds", std::round(st.startup_seconds * 1000) / 1000},
                        {"wall_seconds", std::round(since(st.start) * 1000) / 1000}}).dump() << "\n";
    st.times.flush();
    // Out of memory under parallel load: once more, one task at a time.
    if (workers > 1 && !st.outOfTime()) {
      std::vector<std::string> oom;
      for (const auto& id : ids) {
        Json& r = st.records[st.by_id[id]];
        if (r.value("status", "") == "dropped" && r["filter"].value("reason", Json()) == "out_of_memory") {
          r["status"] = "composed";
          for (const auto& s : group) r["filter"]["stages"].erase(s);
          r["filter"]["dropped_at"] = nullptr;
          r["filter"]["reason"] = nullptr;
          oom.push_back(id);
        }
      }
      if (!oom.empty()) {
        std::fprintf(stderr, "kbsynth: filter: %zu tasks ran out of memory in parallel; again one at a time\n", oom.size());
        st.done = 0;
        st.total = oom.size();
        st.start = Clock::now();
        runGroup(st, o, group, oom, 1, label + " (alone)", false);
        st.times << Json({{"group", label + " (alone)"}, {"tasks", st.done}, {"workers", 1},
                          {"wall_seconds", std::round(since(st.start) * 1000) / 1000}}).dump() << "\n";
      }
    }
    st.save();
  }
  const bool stopped = st.outOfTime();
  // Verdicts.
  for (auto& r : st.records)
    if (r.value("status", "") == "composed" && finished(r, stages)) r["status"] = "kept";
  st.save();

  // Bundles of the kept tasks (scripts/capture.py, CPU).
  if (o.bundles && !stopped) {
    std::vector<Json> jobs_list;
    for (auto& r : st.records) {
      if (r.value("status", "") != "kept" || r.contains("bundle")) continue;
      fs::path dir = run.out / "tasks" / r["id"].get<std::string>();
      fs::create_directories(dir);
      fs::copy_file(run.out / r["program"].get<std::string>(), dir / "model.py", fs::copy_options::overwrite_existing);
      Json prov = {{"source", "synth"}, {"composer", r["composer"]}, {"seed", r["seed"]}, {"index", r["index"]},
                   {"ops", r["ops"]}, {"category", r["category"]}, {"code_sha256", r["code_sha256"]}};
      jobs_list.push_back({{"dir", dir.string()}, {"id", r["id"]}, {"provenance", prov}, {"keep", Json::object()}});
    }
    std::fprintf(stderr, "kbsynth: capturing %zu kept tasks as bundles under %s\n", jobs_list.size(),
                 (run.out / "tasks").string().c_str());
    std::atomic<size_t> next{0};
    size_t per = std::clamp<size_t>(jobs_list.size() / (jobs * 2) + 1, 1, 16);
    std::mutex mu;
    size_t captured = 0;
    auto worker = [&] {
      for (size_t k; (k = next.fetch_add(per)) < jobs_list.size();) {
        fs::path jf = run.work() / ("capture-" + std::to_string(::getpid()) + "-" + std::to_string(k) + ".jsonl");
        fs::create_directories(run.work());
        {
          std::ofstream f(jf);
          for (size_t i = k; i < std::min(jobs_list.size(), k + per); ++i) f << jobs_list[i].dump() << "\n";
        }
        python::ScriptResult r = python::runScript(python::pythonPath(o.python), "capture.py", {jf.string()}, [&](const Json& line) {
          std::lock_guard<std::mutex> lock(mu);
          Json& rec = st.records[st.by_id[line.value("id", "")]];
          if (line.value("status", "") == "ok") {
            rec["bundle"] = "tasks/" + rec["id"].get<std::string>();
          } else {
            rec["bundle_error"] = line.value("reason", std::string("?")) + ": " + line.value("message", std::string(""));
            rec["status"] = "dropped";
            rec["filter"]["dropped_at"] = "bundle";
            rec["filter"]["reason"] = line.value("reason", std::string("capture_error"));
            std::error_code ec;
            fs::remove_all(run.out / "tasks" / rec["id"].get<std::string>(), ec);
          }
          ++captured;
          std::fprintf(stderr, "kbsynth: bundle [%zu/%zu] %s: %s\n", captured, jobs_list.size(),
                       rec["id"].get<std::string>().c_str(), line.value("status", std::string("?")).c_str());
        });
        std::error_code ec;
        fs::remove(jf, ec);
        (void)r;
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < std::max(1, std::min<int>(jobs, static_cast<int>(jobs_list.size()))); ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
    st.save();
  }
  std::error_code ec;
  fs::remove_all(run.work(), ec);

  size_t kept = 0, dropped = 0;
  for (const auto& r : st.records) {
    if (r.value("status", "") == "kept") ++kept;
    if (r.value("status", "") == "dropped") ++dropped;
  }
  std::fprintf(stderr, "kbsynth: filter: %zu kept, %zu dropped, in %.1f s (%s)\n", kept, dropped, since(start),
               run.manifest().string().c_str());
  if (runStats(run.out, false) != 0) return 3;
  if (stopped) {
    size_t left = 0;
    for (const auto& r : st.records) left += r.value("status", "") == "composed" ? 1 : 0;
    if (int sig = st.stopSignal()) {
      std::fprintf(stderr, "kbsynth: filter: interrupted (signal %d) with %zu tasks unfinished; run the same "
                           "command again to resume\n", sig, left);
      return 128 + sig;
    }
    std::fprintf(stderr, "kbsynth: filter: stopped by --time-limit %g s with %zu tasks unfinished; run the same "
                         "command again to resume\n", o.time_limit, left);
    return 1;
  }
  return 0;
}

// ---- stats ---------------------------------------------------------------------

int runStats(const fs::path& out_dir, bool as_json) {
  Run run{fs::absolute(out_dir).lexically_normal()};
  Json config = readConfig(run);
  std::vector<Json> recs = readManifest(run.manifest());
  Json s = Json::object();
  std::map<std::string, int64_t> mix, status;
  for (const auto& r : recs) {
    ++status[r.value("status", "?")];
    std::string k = r.value("category", "") == "transformers" ? "transformers" : std::to_string(r.value("op_count", 0));
    ++mix[k];
  }
  int64_t total = static_cast<int64_t>(recs.size());
  // Funnel: per stage in order, how many entered, passed, failed (by reason), skipped.
  std::vector<std::string> stages;
  if (config.contains("filter"))
    for (const auto& x : config["filter"]["stages"]) stages.push_back(x);
  bool bundles = false;
  for (const auto& r : recs)
    if (r.contains("bundle") || r.contains("bundle_error")) bundles = true;
  if (bundles) stages.push_back("bundle");
  Json funnel = Json::array();
  for (const auto& stg : stages) {
    int64_t in = 0, pass = 0, fail = 0, skipped = 0;
    std::map<std::string, int64_t> reasons;
    for (const auto& r : recs) {
      if (!r.contains("filter")) continue;
      if (stg == "bundle") {
        if (r.contains("bundle")) ++in, ++pass;
        if (r.contains("bundle_error")) ++in, ++fail, ++reasons[r["filter"].value("reason", std::string("?"))];
        continue;
      }
      const Json& ss = r["filter"]["stages"];
      if (!ss.contains(stg)) continue;
      std::string v = ss[stg].value("status", "");
      ++in;
      if (v == "pass") ++pass;
      if (v == "skipped") ++skipped;
      if (v == "fail") ++fail, ++reasons[ss[stg].value("reason", std::string("?"))];
    }
    funnel.push_back({{"stage", stg}, {"in", in}, {"pass", pass}, {"fail", fail}, {"skipped", skipped}, {"reasons", reasons}});
  }
  // Similarity histogram (decontam stage), ten bins of 0.1.
  std::vector<int64_t> hist(10, 0);
  int64_t with_sim = 0;
  double max_sim = 0;
  std::string max_id, max_nearest;
  for (const auto& r : recs) {
    if (!r.contains("filter") || !r["filter"]["stages"].contains("decontam")) continue;
    const Json& d = r["filter"]["stages"]["decontam"];
    if (!d.contains("similarity") || !d["similarity"].is_number()) continue;
    double v = d["similarity"];
    ++with_sim;
    ++hist[std::min(9, static_cast<int>(v * 10))];
    if (v > max_sim) max_sim = v, max_id = r["id"], max_nearest = d.value("nearest", std::string(""));
  }
  // Time per task (times.jsonl).
  std::map<std::string, std::vector<double>> per_stage;
  std::map<std::string, double> per_task, wall;
  {
    std::ifstream f(run.times());
    std::string line;
    while (std::getline(f, line)) {
      Json t = Json::parse(line, nullptr, false);
      if (!t.is_object()) continue;
      if (t.contains("wall_seconds")) {
        wall[t.value("group", std::string("?"))] += t["wall_seconds"].get<double>();
        continue;
      }
      per_task[t.value("id", "")] += t.value("seconds", 0.0);
      for (auto it = t["stages"].begin(); it != t["stages"].end(); ++it) per_stage[it.key()].push_back(it.value());
    }
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / v.size();
  };
  std::vector<double> task_secs;
  for (const auto& [id, sec] : per_task) task_secs.push_back(sec);
  std::sort(task_secs.begin(), task_secs.end());
  Json eager_ms = Json::array();
  for (const auto& r : recs)
    if (r.contains("filter") && r["filter"]["stages"].contains("timing") && r["filter"]["stages"]["timing"].contains("eager_ms"))
      eager_ms.push_back(r["filter"]["stages"]["timing"]["eager_ms"]);

  s["run"] = run.out.string();
  s["composer"] = config.value("composer", "");
  s["seed"] = config.value("seed", 0);
  s["profile"] = config.value("profile", "");
  s["tasks"] = total;
  s["status"] = status;
  s["op_count_mix"] = mix;
  s["mix_wanted"] = config.value("mix", Json::object());
  s["filter"] = config.value("filter", Json());
  s["funnel"] = funnel;
  s["similarity_histogram"] = {{"bins", hist}, {"tasks", with_sim}, {"max", max_sim}, {"max_id", max_id},
                               {"max_nearest", max_nearest}};
  Json stage_means = Json::object();
  for (const auto& [k, v] : per_stage) stage_means[k] = std::round(mean(v) * 1000) / 1000;
  s["seconds_per_task"] = {{"tasks", task_secs.size()}, {"mean", mean(task_secs)},
                           {"median", task_secs.empty() ? 0.0 : task_secs[task_secs.size() / 2]},
                           {"by_stage_mean", stage_means}};
  double wall_total = 0;
  for (const auto& [g, w] : wall) wall_total += w;
  s["wall_seconds"] = {{"total", wall_total}, {"by_group", wall},
                       {"per_task", total ? wall_total / static_cast<double>(total) : 0.0}};
  if (!eager_ms.empty()) s["eager_ms"] = eager_ms;
  if (as_json) {
    printLine(s);
    return 0;
  }
  FILE* o = as_json ? stderr : stdout;
  std::fprintf(o, "run %s: %lld tasks (%s composer, seed %lld, profile %s)\n", run.out.string().c_str(),
               static_cast<long long>(total), s["composer"].get<std::string>().c_str(),
               static_cast<long long>(s["seed"].get<int64_t>()), s["profile"].get<std::string>().c_str());
  std::fprintf(o, "status:");
  for (const auto& [k, v] : status) std::fprintf(o, " %s %lld", k.c_str(), static_cast<long long>(v));
  std::fprintf(o, "\nop-count mix (got / wanted):\n");
  for (const char* k : {"1", "2", "3", "4", "5", "transformers"}) {
    int64_t n = mix.count(k) ? mix[k] : 0;
    double want = s["mix_wanted"].value(k, 0.0) * 100;
    std::fprintf(o, "  %-13s %6lld  %5.1f%%   (%4.1f%%)\n", (std::string(k) + (std::string(k) == "transformers" ? "" : std::string(k) == "1" ? " op" : " ops")).c_str(),
                 static_cast<long long>(n), total ? 100.0 * n / total : 0.0, want);
  }
  if (!funnel.empty()) {
    std::fprintf(o, "filter funnel (device %s):\n  %-14s %6s %6s %6s %8s  reasons dropped\n",
                 s["filter"].value("device", std::string("?")).c_str(), "stage", "in", "pass", "fail", "skipped");
    for (const auto& f : funnel) {
      std::string rs;
      for (auto it = f["reasons"].begin(); it != f["reasons"].end(); ++it)
        rs += (rs.empty() ? "" : ", ") + it.key() + " " + std::to_string(it.value().get<int64_t>());
      std::fprintf(o, "  %-14s %6lld %6lld %6lld %8lld  %s\n", f["stage"].get<std::string>().c_str(),
                   static_cast<long long>(f["in"].get<int64_t>()), static_cast<long long>(f["pass"].get<int64_t>()),
                   static_cast<long long>(f["fail"].get<int64_t>()), static_cast<long long>(f["skipped"].get<int64_t>()),
                   rs.c_str());
    }
    std::fprintf(o, "  kept %lld of %lld (%.1f%%)\n", static_cast<long long>(status["kept"]), static_cast<long long>(total),
                 total ? 100.0 * status["kept"] / total : 0.0);
  }
  if (with_sim) {
    std::fprintf(o, "AST similarity to the nearest reference (%lld tasks; threshold %g):\n", static_cast<long long>(with_sim),
                 s["filter"].value("max_similarity", 0.9));
    int64_t peak = *std::max_element(hist.begin(), hist.end());
    for (int b = 0; b < 10; ++b) {
      int bar = peak ? static_cast<int>(std::lround(40.0 * hist[b] / peak)) : 0;
      std::fprintf(o, "  [%.1f, %.1f%c %6lld  %s\n", b / 10.0, (b + 1) / 10.0, b == 9 ? ']' : ')',
                   static_cast<long long>(hist[b]), std::string(bar, '#').c_str());
    }
    std::fprintf(o, "  most similar: %s %.3f to %s\n", max_id.c_str(), max_sim, max_nearest.c_str());
  }
  if (!task_secs.empty()) {
    std::fprintf(o, "filter time per task: mean %.2f s, median %.2f s over %zu tasks (worker time; workers run in parallel)\n",
                 mean(task_secs), task_secs[task_secs.size() / 2], task_secs.size());
    std::fprintf(o, "  mean by stage:");
    for (const auto& [k, v] : per_stage) std::fprintf(o, " %s %.2f s", k.c_str(), mean(v));
    std::fprintf(o, "\n");
  }
  if (wall_total > 0) {
    std::fprintf(o, "filter wall time: %.1f s for %lld tasks = %.2f s per task (", wall_total,
                 static_cast<long long>(total), wall_total / std::max<int64_t>(total, 1));
    bool first = true;
    for (const auto& [g, w] : wall) std::fprintf(o, "%s%s %.1f s", first ? "" : ", ", g.c_str(), w), first = false;
    std::fprintf(o, "; process start-up included)\n");
  }
  return 0;
}

// ---- similarity ------------------------------------------------------------------

int runSimilarity(const std::vector<std::string>& programs, const std::vector<std::string>& references,
                  double max_similarity, const std::string& python) {
  if (references.empty()) throw UsageError("similarity needs --reference DIR (a KernelBench checkout or .py files)");
  std::vector<std::string> args = {"--max-similarity", std::to_string(max_similarity)};
  for (const auto& r : references) {
    if (!fs::exists(r)) throw UsageError("--reference " + r + ": no such file or folder");
    args.insert(args.end(), {"--reference", r});
  }
  for (const auto& p : programs) {
    if (!fs::exists(p)) throw UsageError(p + ": no such file");
    args.push_back(p);
  }
  int flagged = 0;
  python::ScriptResult r = python::runScript(python::pythonPath(python), "synth_ast.py", args, [&](const Json& line) {
    printLine(line);
    if (line.value("flagged", false)) ++flagged;
  });
  if (r.lines.size() != programs.size()) throw Error("synth_ast.py failed (exit " + std::to_string(r.exit_code) + ")");
  std::fprintf(stderr, "kbsynth: similarity: %d of %zu programs above %g\n", flagged, programs.size(), max_similarity);
  return flagged ? 1 : 0;
}

}  // namespace kb::synth
