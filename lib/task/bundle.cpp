#include "task/bundle.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/error.h"
#include "core/hash.h"
#include "task/precision.h"

namespace fs = std::filesystem;

namespace kb::task {
namespace {

// Field access with errors that name the file and the field.
class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw UsageError(where_ + ": field \"" + field + "\" " + why);
  }
  const Json& get(const Json& obj, const std::string& key, const std::string& path) const {
    if (!obj.is_object() || !obj.contains(key)) fail(path, "is missing");
    return obj.at(key);
  }
  std::string str(const Json& obj, const std::string& key, const std::string& path) const {
    const Json& v = get(obj, key, path);
    if (!v.is_string()) fail(path, "must be a string");
    return v.get<std::string>();
  }
  double num(const Json& obj, const std::string& key, const std::string& path) const {
    const Json& v = get(obj, key, path);
    if (!v.is_number()) fail(path, "must be a number");
    return v.get<double>();
  }
  std::vector<int64_t> shape(const Json& obj, const std::string& key, const std::string& path) const {
    const Json& v = get(obj, key, path);
    if (!v.is_array()) fail(path, "must be an array of sizes");
    std::vector<int64_t> out;
    for (const Json& d : v) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) fail(path, "must hold non-negative integers");
      out.push_back(d.get<int64_t>());
    }
    return out;
  }

 private:
  std::string where_;
};

bool knownDtype(const std::string& d) { return dtypeBytes(d) != 0; }

std::string bundleFileSha256(const fs::path& p) {
  try {
    return fileSha256(p.string());
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

uint64_t dtypeBytes(const std::string& dtype) {
  static const std::pair<const char*, uint64_t> sizes[] = {
      {"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"float64", 8}, {"int8", 1},
      {"uint8", 1},   {"int16", 2},   {"int32", 4},    {"int64", 8},   {"bool", 1}};
  for (const auto& [name, bytes] : sizes)
    if (dtype == name) return bytes;
  return 0;
}

TaskInfo parseTaskInfo(const Json& doc, const std::string& where) {
  Reader r(where);
  if (!doc.is_object()) throw UsageError(where + ": not a JSON object");
  if (!doc.contains("format_version") || !doc["format_version"].is_number_integer())
    r.fail("format_version", "is missing (not a task.json?)");
  int version = doc["format_version"].get<int>();
  if (version != kTaskFormatVersion)
    throw UsageError(where + ": format_version " + std::to_string(version) +
                     " is not supported (this build reads version " +
                     std::to_string(kTaskFormatVersion) + "); re-export the bundle with kbsynth export");
  TaskInfo info;
  info.json = doc;
  info.id = r.str(doc, "id", "id");
  if (info.id.empty()) r.fail("id", "is empty");
  const Json& files = r.get(doc, "files", "files");
  info.model_sha256 = r.str(files, "model.py", "files.model.py");
  info.torch_version = r.str(doc, "torch_version", "torch_version");
  const Json& init = r.get(doc, "init", "init");
  info.init_seed = static_cast<uint64_t>(r.num(init, "seed", "init.seed"));
  info.capture = r.str(doc, "capture", "capture");
  if (info.capture != "script" && info.capture != "trace")
    r.fail("capture", "must be \"script\" or \"trace\", not \"" + info.capture + "\"");
  info.generator = r.str(doc, "generator", "generator");
  if (info.generator != "scripted" && info.generator != "spec")
    r.fail("generator", "must be \"scripted\" or \"spec\", not \"" + info.generator + "\"");

  if (doc.contains("reference_args")) {
    info.reference_args = r.str(doc, "reference_args", "reference_args");
    if (info.reference_args != "all" && info.reference_args != "tensors")
      r.fail("reference_args", "must be \"all\" or \"tensors\"");
  }

  const Json& inputs = r.get(doc, "inputs", "inputs");
  if (!inputs.is_array()) r.fail("inputs", "must be an array");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Json& in = inputs[i];
    std::string path = "inputs[" + std::to_string(i) + "]";
    InputSpec s;
    s.kind = r.str(in, "kind", path + ".kind");
    if (s.kind == "tensor") {
      s.dtype = r.str(in, "dtype", path + ".dtype");
      if (!knownDtype(s.dtype)) r.fail(path + ".dtype", "has unknown dtype \"" + s.dtype + "\"");
      s.shape = r.shape(in, "shape", path + ".shape");
      s.distribution = r.str(in, "distribution", path + ".distribution");
      const Json& p = r.get(in, "params", path + ".params");
      if (s.distribution == "normal") {
        s.a = r.num(p, "mean", path + ".params.mean");
        s.b = r.num(p, "std", path + ".params.std");
      } else if (s.distribution == "uniform" || s.distribution == "randint") {
        s.a = r.num(p, "low", path + ".params.low");
        s.b = r.num(p, "high", path + ".params.high");
        if (s.distribution == "randint" && !(s.b > s.a))
          r.fail(path + ".params", "needs high > low for randint");
      } else if (s.distribution == "choice") {
        const Json& v = r.get(p, "values", path + ".params.values");
        if (!v.is_array() || v.empty()) r.fail(path + ".params.values", "must be a non-empty array of numbers");
        for (const Json& e : v) {
          if (!e.is_number()) r.fail(path + ".params.values", "must be a non-empty array of numbers");
          s.values.push_back(e.get<double>());
        }
      } else if (s.distribution == "bernoulli") {
        s.a = r.num(p, "p", path + ".params.p");
      } else if (s.distribution == "constant") {
        s.a = r.num(p, "value", path + ".params.value");
      } else {
        r.fail(path + ".distribution", "is unknown: \"" + s.distribution + "\"");
      }
    } else if (s.kind == "int" || s.kind == "float") {
      s.value = r.num(in, "value", path + ".value");
    } else if (s.kind == "bool") {
      const Json& v = r.get(in, "value", path + ".value");
      if (!v.is_boolean()) r.fail(path + ".value", "must be true or false");
      s.value = v.get<bool>() ? 1.0 : 0.0;
    } else {
      r.fail(path + ".kind", "must be tensor, int, float or bool, not \"" + s.kind + "\"");
    }
    info.inputs.push_back(std::move(s));
  }

  const Json& outputs = r.get(doc, "outputs", "outputs");
  if (!outputs.is_array()) r.fail("outputs", "must be an array");
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string path = "outputs[" + std::to_string(i) + "]";
    OutputSpec o;
    o.dtype = r.str(outputs[i], "dtype", path + ".dtype");
    o.shape = r.shape(outputs[i], "shape", path + ".shape");
    info.outputs.push_back(std::move(o));
  }

  const Json& state = r.get(doc, "state", "state");
  if (!state.is_array()) r.fail("state", "must be an array");
  for (size_t i = 0; i < state.size(); ++i) {
    std::string path = "state[" + std::to_string(i) + "]";
    StateSpec s;
    s.name = r.str(state[i], "name", path + ".name");
    s.dtype = r.str(state[i], "dtype", path + ".dtype");
    s.shape = r.shape(state[i], "shape", path + ".shape");
    std::string kind = r.str(state[i], "kind", path + ".kind");
    if (kind != "parameter" && kind != "buffer") r.fail(path + ".kind", "must be parameter or buffer");
    s.buffer = kind == "buffer";
    info.state.push_back(std::move(s));
  }

  if (doc.contains("tolerance")) {
    const Json& t = doc["tolerance"];
    auto tolerance = [&](const std::string& k) {
      double v = r.num(t, k, "tolerance." + k);
      if (!std::isfinite(v) || v < 0) r.fail("tolerance." + k, "must be a finite number >= 0");
      return v;
    };
    info.tolerance_atol = tolerance("atol");
    info.tolerance_rtol = tolerance("rtol");
  }
  if (doc.contains("precision")) {
    info.precision_declared = r.str(doc, "precision", "precision");
    if (info.precision_declared != "strict" && info.precision_declared != "paper")
      r.fail("precision", "must be \"strict\" or \"paper\", not \"" + info.precision_declared + "\"");
  }
  if (doc.contains("correctness_seeds")) {
    const Json& seeds = doc["correctness_seeds"];
    if (!seeds.is_array()) r.fail("correctness_seeds", "must be an array");
    for (const Json& s : seeds) {
      if (!s.is_number_unsigned() && !(s.is_number_integer() && s.get<int64_t>() >= 0))
        r.fail("correctness_seeds", "must hold non-negative integers");
      info.correctness_seeds.push_back(s.get<uint64_t>());
    }
  } else {
    info.correctness_seeds = {0, 1, 2, 3, 4};
  }
  for (uint64_t s : info.correctness_seeds)
    if (isDomainSeed(s)) r.fail("correctness_seeds", "must be below 2^63 (larger seeds name domain draws)");
  if (doc.contains("inputs_exhaustive")) {
    const Json& v = doc["inputs_exhaustive"];
    if (!v.is_boolean()) r.fail("inputs_exhaustive", "must be true or false");
    info.inputs_exhaustive = v.get<bool>();
  }
  if (doc.contains("degenerate") && !doc["degenerate"].is_null()) {
    const Json& d = doc["degenerate"];
    if (!d.is_object()) r.fail("degenerate", "must be null or an object with a \"reason\"");
    info.degenerate = r.str(d, "reason", "degenerate.reason");
    if (info.degenerate.empty()) r.fail("degenerate.reason", "must say why the task is degenerate");
    if (d.contains("contracts")) {
      const Json& c = d["contracts"];
      if (!c.is_array()) r.fail("degenerate.contracts", "must be an array of contract names");
      for (const Json& name : c) {
        if (!name.is_string() || (name != "strict" && name != "paper"))
          r.fail("degenerate.contracts", "must hold \"strict\" or \"paper\"");
        info.degenerate_contracts.push_back(name.get<std::string>());
      }
    }
  }
  // The contract every reader compares with (task/precision.h).
  PrecisionContract contract = resolveContract(info);
  info.precision = contract.name;
  info.atol = contract.atol;
  info.rtol = contract.rtol;
  return info;
}

std::vector<uint64_t> verificationSeeds(const TaskInfo& info) {
  std::vector<uint64_t> seeds = info.correctness_seeds;
  if (info.inputs_exhaustive || seeds.empty()) return seeds;
  std::vector<uint64_t> domain;
  auto add = [&](uint64_t s) {
    uint64_t d = domainSeed(s);
    if (std::find(domain.begin(), domain.end(), d) == domain.end()) domain.push_back(d);
  };
  for (std::size_t i = 0; i < seeds.size() && domain.size() < kDomainDraws; ++i) add(seeds[i]);
  for (uint64_t next = generatorSeed(seeds.back() + 1); domain.size() < kMinDomainDraws; next = generatorSeed(next + 1))
    add(next);
  seeds.insert(seeds.end(), domain.begin(), domain.end());
  return seeds;
}

std::string seedName(uint64_t seed) {
  if (!isDomainSeed(seed)) return "seed " + std::to_string(seed);
  return "domain draw of seed " + std::to_string(generatorSeed(seed));
}

std::string describeSeed(uint64_t seed) {
  if (!isDomainSeed(seed)) return seedName(seed);
  return seedName(seed) + " (inputs rescaled/broadened beyond get_inputs)";
}

std::vector<std::string> TaskBundle::compiledArchs() const {
  std::vector<std::string> out;
  if (info.json.contains("compiled") && info.json["compiled"].is_object())
    for (const auto& [arch, entry] : info.json["compiled"].items()) out.push_back(arch);
  return out;
}

TaskBundle openBundle(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw UsageError(dir.string() + ": not a task bundle directory");
  TaskBundle b;
  b.dir = fs::absolute(dir).lexically_normal();
  fs::path tj = b.taskJson();
  if (!fs::exists(tj)) throw UsageError(b.dir.string() + ": no task.json (not a task bundle; see kbsynth export)");
  Json doc;
  try {
    doc = readJsonFile(tj);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(std::string(e.what()) + " (corrupt task.json)");
  }
  b.info = parseTaskInfo(doc, tj.string());

  // Every file task.json records must be there and unchanged.
  std::vector<std::string> required = {"model.py", "reference.pt"};
  if (b.info.generator == "scripted") required.push_back("inputs.pt");
  const Json& files = doc["files"];
  for (const std::string& name : required) {
    fs::path p = b.dir / name;
    if (!fs::exists(p)) throw UsageError(b.dir.string() + ": missing " + name);
    if (!files.contains(name) || !files[name].is_string())
      throw UsageError(tj.string() + ": field \"files." + name + "\" is missing");
    std::string want = files[name].get<std::string>();
    std::string got = bundleFileSha256(p);
    if (got != want)
      throw UsageError(p.string() + ": corrupt or modified (sha256 differs from task.json; re-export the bundle)");
  }
  return b;
}

std::optional<std::string> checkCompiled(const TaskBundle& bundle, const std::string& arch) {
  fs::path p = bundle.compiledPath(arch);
  const Json& doc = bundle.info.json;
  if (!doc.contains("compiled") || !doc["compiled"].contains(arch))
    return "no compiled baseline for " + arch + " in " + bundle.taskJson().string();
  const Json& entry = doc["compiled"][arch];
  if (!fs::exists(p)) return "missing " + p.string();
  if (entry.value("arch", arch) != arch)
    return p.string() + " was built for " + entry.value("arch", std::string("?")) + ", not " + arch;
  if (entry.contains("sha256") && entry["sha256"].is_string() &&
      bundleFileSha256(p) != entry["sha256"].get<std::string>())
    return p.string() + ": corrupt or modified (sha256 differs from task.json)";
  return std::nullopt;
}

std::string cudaArch(int device_index) {
  // The driver API through dlopen: no toolkit headers or link-time CUDA.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw Error("no CUDA driver (libcuda.so.1 not found)");
  using InitFn = int (*)(unsigned);
  using GetFn = int (*)(int*, int);
  using AttrFn = int (*)(int*, int, int);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto get = reinterpret_cast<GetFn>(dlsym(lib, "cuDeviceGet"));
  auto attr = reinterpret_cast<AttrFn>(dlsym(lib, "cuDeviceGetAttribute"));
  if (!init || !get || !attr) throw Error("libcuda.so.1 lacks cuInit/cuDeviceGet/cuDeviceGetAttribute");
  int dev = 0, major = 0, minor = 0;
  if (init(0) != 0) throw Error("cuInit failed (no usable GPU)");
  if (get(&dev, device_index) != 0) throw Error("no CUDA device " + std::to_string(device_index));
  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76
  if (attr(&major, 75, dev) != 0 || attr(&minor, 76, dev) != 0)
    throw Error("cannot read the compute capability of CUDA device " + std::to_string(device_index));
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

}  // namespace kb::task
