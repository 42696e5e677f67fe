#include "synth/check_bundle.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/file.h"
#include "core/json.h"
#include "task/bundle.h"
#include "python/scripts.h"
#include "task/task.h"

namespace fs = std::filesystem;

namespace kb::synth {
namespace {

bool stopped(const BundleCheckOptions& o) { return o.stop_signal && o.stop_signal() != 0; }

// The folder of expected.py's outputs, removed with everything in it at the end.
struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("kbsynth-" + std::to_string(::getpid()));
  fs::path path(const std::string& stem) {
    fs::create_directories(dir);
    return dir / stem;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

constexpr double kInf = std::numeric_limits<double>::infinity();

// JSON has no infinity: a difference no tolerance covers is written 1e300
// (NaN too, though maxAbsDiff never returns one), so that every reader's
// "> threshold" sees it.
double jnum(double v) { return std::isfinite(v) ? v : 1e300; }

}  // namespace

int checkBundles(const std::vector<std::string>& bundles, const BundleCheckOptions& o) {
  std::vector<task::Task> tasks;
  for (const auto& b : bundles) tasks.push_back(task::Task::open(b));  // bad bundle: exit 2 before any work
  c10::Device dev(o.device);
  task::useFullFloat32();  // as expected.py computes (scripts/kbtask.py) and the judge's reference does
  TempDir tmp;
  fs::path exp_dir = tmp.path("expected");
  std::string seed_list;
  for (auto s : o.seeds) seed_list += (seed_list.empty() ? "" : ",") + std::to_string(s);
  std::vector<std::string> args = {"--device", o.device, "--out", exp_dir.string(), "--seeds", seed_list};
  if (o.time_iters > 0)
    args.insert(args.end(), {"--time", std::to_string(o.time_iters), "--warmup", std::to_string(o.warmup),
                             "--repeats", std::to_string(o.repeats)});
  for (const auto& t : tasks) args.push_back(t.bundle().dir.string());
  std::fprintf(stderr, "kbsynth: Python outputs for %zu bundles on %s\n", tasks.size(), o.device.c_str());
  python::ScriptResult py = python::runScript(python::pythonPath(o.python), "expected.py", args);
  if (stopped(o)) {
    std::fprintf(stderr, "kbsynth: check: interrupted before any comparison; run the same command again\n");
    return 128 + o.stop_signal();
  }
  if (py.lines.size() != tasks.size())
    throw Error("expected.py failed (exit " + std::to_string(py.exit_code) + ")");

  int bad = 0;
  for (size_t n = 0; n < tasks.size(); ++n) {
    if (stopped(o)) {
      std::fprintf(stderr, "kbsynth: check: interrupted after %zu of %zu bundles (%d differ); run the same command "
                           "again\n", n, tasks.size(), bad);
      return 128 + o.stop_signal();
    }
    const task::Task& task = tasks[n];
    const Json& pyline = py.lines[n];
    Json line = {{"id", task.id()}, {"device", o.device}, {"seeds", o.seeds}};
    try {
      if (pyline.value("status", "") != "ok")
        throw Error("Python side failed: " + pyline.value("reason", "") + ": " + pyline.value("message", ""));
      std::map<std::string, at::Tensor> want;
      for (auto& nt : task::loadNamedTensors(pyline["file"].get<std::string>())) want[nt.name] = nt.tensor;
      auto expected = [&](const std::string& prefix, uint64_t seed) {
        std::vector<at::Tensor> v;
        for (int i = 0;; ++i) {
          auto it = want.find(prefix + "_s" + std::to_string(seed) + "_" + std::to_string(i));
          if (it == want.end()) break;
          v.push_back(it->second);
        }
        return v;
      };
      task::Reference ref = task.reference(dev);
      std::optional<task::CompiledBaseline> comp;
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
        d_in = worse(d_in, task::maxAbsDiff(xt, expected("in", seed)));
        auto out = expected("out", seed);
        d_ref = worse(d_ref, task::maxAbsDiff(ref.run(x), out));
        if (comp) d_comp = worse(d_comp, task::maxAbsDiff(comp->run(x), out));
      }
      bool ok = d_in <= o.max_diff && d_ref <= o.max_diff && (!comp || d_comp <= o.max_diff);
      line["inputs_max_abs_diff"] = jnum(d_in);
      line["reference_max_abs_diff"] = jnum(d_ref);
      line["compiled_max_abs_diff"] = comp ? Json(jnum(d_comp)) : Json(nullptr);
      if (comp) line["compiled_arch"] = comp->arch();
      if (o.time_iters > 0) {
        auto x = task.makeInputs(o.seeds.front(), dev);
        double e = task::timeCallsMs([&] { ref.forward(x); }, dev, o.warmup, o.time_iters, o.repeats);
        line["eager_ms"] = {{"cpp", e}, {"python", pyline.value("eager_ms", 0.0)},
                            {"ratio", e / pyline.value("eager_ms", 1.0)}};
        if (comp) {
          double c = task::timeCallsMs([&] { comp->run(x); }, dev, o.warmup, o.time_iters, o.repeats);
          line["compile_ms"] = {{"cpp", c}, {"python", pyline.value("compile_ms", 0.0)},
                                {"ratio", c / pyline.value("compile_ms", 1.0)}};
        }
      }
      line["status"] = ok ? "ok" : "mismatch";
      if (!ok) ++bad;
    } catch (const Error& e) {
      line["status"] = "error";
      line["message"] = e.what();
      ++bad;
    }
    printJsonLine(line);
  }
  std::fprintf(stderr, "kbsynth: check: %zu of %zu bundles reproduce Python within %g\n", tasks.size() - bad,
               tasks.size(), o.max_diff);
  return bad ? 1 : 0;
}

int printBundleInfo(const std::vector<std::string>& bundles) {
  for (const auto& b : bundles) {
    task::TaskBundle bundle = task::openBundle(b);
    const task::TaskInfo& i = bundle.info;
    Json line = {{"id", i.id},           {"dir", bundle.dir.string()},     {"capture", i.capture},
                     {"generator", i.generator}, {"reference_args", i.reference_args},
                     {"inputs", i.inputs.size()}, {"outputs", i.outputs.size()}, {"state", i.state.size()},
                     {"torch_version", i.torch_version}, {"compiled", Json::object()}};
    // A degenerate task is kept but earns no reward (docs/task-format.md).
    line["degenerate"] = i.degenerate.empty() ? Json(nullptr)
                                              : Json{{"reason", i.degenerate}, {"contracts", i.degenerate_contracts}};
    for (const auto& arch : bundle.compiledArchs()) {
      auto why = task::checkCompiled(bundle, arch);
      line["compiled"][arch] = why ? *why : "ok";
    }
    printJsonLine(line);
  }
  return 0;
}

}  // namespace kb::synth
