// The parent side of verification: the reference and the comparison. The
// only translation unit of lib/verify that includes torch headers.
#include "verify/verify.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "core/error.h"
#include "kb/solution.h"
#include "sandbox/confine.h"
#include "task/task.h"

namespace fs = std::filesystem;

namespace kb {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int32_t toKbDtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return KB_FLOAT32;
    case at::kHalf: return KB_FLOAT16;
    case at::kBFloat16: return KB_BFLOAT16;
    case at::kDouble: return KB_FLOAT64;
    case at::kChar: return KB_INT8;
    case at::kByte: return KB_UINT8;
    case at::kShort: return KB_INT16;
    case at::kInt: return KB_INT32;
    case at::kLong: return KB_INT64;
    case at::kBool: return KB_BOOL;
    default: return -1;
  }
}

at::ScalarType toScalarType(int32_t d) {
  switch (d) {
    case KB_FLOAT32: return at::kFloat;
    case KB_FLOAT16: return at::kHalf;
    case KB_BFLOAT16: return at::kBFloat16;
    case KB_FLOAT64: return at::kDouble;
    case KB_INT8: return at::kChar;
    case KB_UINT8: return at::kByte;
    case KB_INT16: return at::kShort;
    case KB_INT32: return at::kInt;
    case KB_INT64: return at::kLong;
    default: return at::kBool;
  }
}

uint64_t specBytes(const std::string& dtype, const std::vector<int64_t>& shape) {
  uint64_t n = dtype == "float64" || dtype == "int64"   ? 8
               : dtype == "float32" || dtype == "int32" ? 4
               : dtype == "float16" || dtype == "bfloat16" || dtype == "int16" ? 2
                                                                               : 1;
  for (int64_t s : shape) n *= static_cast<uint64_t>(s);
  return n;
}

std::string shapeText(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string num(double v) {
  std::ostringstream ss;
  ss.precision(6);
  ss << v;
  return ss.str();
}

at::Tensor fromWire(const WireTensor& w) {
  at::Tensor t = at::empty(w.sizes, at::TensorOptions().dtype(toScalarType(w.dtype)));
  if (!w.bytes.empty()) std::memcpy(t.data_ptr(), w.bytes.data(), w.bytes.size());
  return t;
}

bool sameBytes(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor x = a.contiguous(), y = b.contiguous();
  return x.scalar_type() == y.scalar_type() && x.sizes() == y.sizes() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

std::vector<int64_t> unravel(int64_t flat, c10::IntArrayRef sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    idx[d] = sizes[d] ? flat % sizes[d] : 0;
    flat = sizes[d] ? flat / sizes[d] : 0;
  }
  return idx;
}

// Compares one output; fills `oc` and returns whether it passed.
bool compareOutput(const at::Tensor& cand, const at::Tensor& ref, double atol, double rtol,
                   OutputCheck& oc) {
  oc.elements = static_cast<uint64_t>(ref.numel());
  if (toKbDtype(ref.scalar_type()) != toKbDtype(cand.scalar_type())) {
    oc.problem = "output " + std::to_string(oc.index) + " is " + oc.dtype + ", the reference's is " +
                 oc.expected_dtype;
    return false;
  }
  if (cand.sizes() != ref.sizes()) {
    oc.problem = "output " + std::to_string(oc.index) + " has shape " + shapeText(oc.shape) +
                 ", the reference's is " + shapeText(oc.expected_shape);
    return false;
  }
  if (ref.numel() == 0) return true;
  at::Tensor c = cand.to(at::kDouble).reshape({-1});
  at::Tensor r = ref.to(at::kDouble).reshape({-1});
  at::Tensor c_fin = at::isfinite(c), r_fin = at::isfinite(r);
  at::Tensor both_nan = at::isnan(c).logical_and(at::isnan(r));
  at::Tensor diff = (c - r).abs();
  at::Tensor tol = atol + rtol * r.abs();
  at::Tensor close = diff.le(tol).logical_or(c.eq(r)).logical_or(both_nan);
  oc.mismatches = static_cast<uint64_t>((~close).sum().item<int64_t>());
  oc.nonfinite_unexpected =
      static_cast<uint64_t>((~c_fin).logical_and(r_fin).sum().item<int64_t>());
  at::Tensor finite = c_fin.logical_and(r_fin);
  if (finite.any().item<bool>()) {
    at::Tensor d = diff.masked_select(finite);
    oc.max_abs_error = d.max().item<double>();
    at::Tensor rel = d / r.masked_select(finite).abs().clamp_min(1e-12);
    oc.max_rel_error = rel.max().item<double>();
  }
  if (oc.mismatches == 0) return true;

  at::Tensor excess = at::where(close, at::full_like(diff, -INFINITY),
                                at::nan_to_num(diff - tol, INFINITY, INFINITY, INFINITY));
  int64_t worst = excess.argmax().item<int64_t>();
  oc.worst_index = unravel(worst, ref.sizes());
  oc.worst_candidate = c[worst].item<double>();
  oc.worst_reference = r[worst].item<double>();
  const std::string name = "output " + std::to_string(oc.index);
  bool floating = at::isFloatingType(cand.scalar_type());
  if (floating && c.isnan().all().item<bool>() && !r.isnan().all().item<bool>()) {
    oc.problem = name + " was never written (it still holds the harness's NaN fill)";
  } else if (oc.nonfinite_unexpected > 0) {
    oc.problem = name + " has " + std::to_string(oc.nonfinite_unexpected) +
                 " NaN/Inf values where the reference is finite, first at " +
                 shapeText(oc.worst_index);
  } else {
    oc.problem = name + ": " + std::to_string(oc.mismatches) + " of " +
                 std::to_string(oc.elements) + " elements differ by more than atol + rtol*|ref| (atol " +
                 num(atol) + ", rtol " + num(rtol) + "); worst at " + shapeText(oc.worst_index) +
                 ": candidate " + num(oc.worst_candidate) + ", reference " + num(oc.worst_reference) +
                 "; max abs error " + num(oc.max_abs_error);
  }
  return false;
}

struct Range {
  std::string what;
  uint64_t begin = 0, bytes = 0;
};

bool overlaps(const Range& a, const Range& b) {
  return a.bytes > 0 && b.bytes > 0 && a.begin < b.begin + b.bytes && b.begin < a.begin + a.bytes;
}

// Checks one seed's record against the reference's outputs.
SeedCheck checkSeed(const WireRecord& rec, const std::vector<c10::IValue>& pristine,
                    const std::vector<bool>& ref_modified, const std::vector<at::Tensor>& expected,
                    double atol, double rtol) {
  SeedCheck sc;
  sc.seed = rec.header.value("seed", uint64_t{0});
  sc.forward_seconds = rec.header.value("forward_seconds", 0.0);
  auto set = [&](Status s, const std::string& m) {
    sc.status = s;
    sc.message = m;
    return sc;
  };
  std::vector<WireTensor> outs, ins;
  std::vector<int> out_index, in_index;
  int missing = -1;
  try {
    std::size_t off = 0;
    const Json& ol = rec.header.at("outputs");
    Json present = Json::array();
    for (const auto& o : ol) {
      if (o.value("missing", false)) {
        if (missing < 0) missing = o.at("index").get<int>();
        continue;
      }
      present.push_back(o);
      out_index.push_back(o.at("index").get<int>());
    }
    outs = takeTensors(present, rec.payload, &off);
    for (const auto& i : rec.header.at("inputs")) in_index.push_back(i.at("index").get<int>());
    ins = takeTensors(rec.header.at("inputs"), rec.payload, &off);
    if (off != rec.payload.size()) throw Error("payload longer than described");
  } catch (const std::exception& e) {
    return set(Status::HackDetected,
               std::string("the seed's record is malformed (") + e.what() + "): forged result channel");
  }

  // Aliasing: outputs against every other piece of memory the call saw.
  std::vector<Range> others;
  for (size_t k = 0; k < ins.size(); ++k)
    others.push_back({"input " + std::to_string(in_index[k]), ins[k].data_ptr, ins[k].storage_bytes});
  for (const auto& r : rec.header.value("ranges", Json::array()))
    others.push_back({r.value("kind", std::string("memory")) + " " + r.value("name", std::string()),
                      r.value("data_ptr", uint64_t{0}), r.value("storage_bytes", uint64_t{0})});
  for (size_t k = 0; k < outs.size(); ++k) {
    Range o{"output " + std::to_string(out_index[k]), outs[k].data_ptr, outs[k].storage_bytes};
    for (const auto& other : others)
      if (overlaps(o, other)) return set(Status::HackDetected, o.what + " shares memory with " + other.what);
    others.push_back(o);
  }

  // Inputs must come back as they went in (unless the reference itself
  // writes into that input).
  size_t tensor_inputs = 0;
  for (const auto& v : pristine) tensor_inputs += v.isTensor() ? 1 : 0;
  if (ins.size() != tensor_inputs)
    return set(Status::HackDetected, "the seed's record lists " + std::to_string(ins.size()) +
                                         " tensor inputs, the task has " + std::to_string(tensor_inputs));
  for (size_t k = 0; k < ins.size(); ++k) {
    int i = in_index[k];
    if (i < 0 || i >= static_cast<int>(pristine.size()) || !pristine[i].isTensor())
      return set(Status::HackDetected, "the seed's record names input " + std::to_string(i) + ", which is not a tensor");
    if (ref_modified[i]) continue;
    at::Tensor before = pristine[i].toTensor().to(at::kCPU);
    if (!sameBytes(fromWire(ins[k]), before))
      return set(Status::HackDetected, "input " + std::to_string(i) +
                                           " was modified by the solution (inputs are read-only)");
  }

  // Count, dtypes, shapes, values.
  if (missing >= 0 && missing < static_cast<int>(expected.size()))
    return set(Status::Incorrect, "output " + std::to_string(missing) + " was never allocated");
  if (outs.size() != expected.size())
    return set(Status::Incorrect, "the solution returned " + std::to_string(outs.size()) +
                                      " output(s), the reference returns " + std::to_string(expected.size()));
  for (size_t k = 0; k < outs.size(); ++k) {
    OutputCheck oc;
    oc.index = out_index[k];
    const at::Tensor& ref = expected[k];
    oc.dtype = dtypeName(outs[k].dtype);
    oc.expected_dtype = dtypeName(toKbDtype(ref.scalar_type()));
    oc.shape = outs[k].sizes;
    oc.expected_shape.assign(ref.sizes().begin(), ref.sizes().end());
    if (oc.index != static_cast<int>(k)) {
      oc.problem = "outputs are not numbered 0.." + std::to_string(expected.size() - 1);
      sc.outputs.push_back(oc);
      return set(Status::Incorrect, oc.problem);
    }
    bool ok = compareOutput(fromWire(outs[k]), ref, atol, rtol, oc);
    sc.outputs.push_back(oc);
    if (!ok && sc.status == Status::Ok) set(Status::Incorrect, oc.problem);
  }
  return sc;
}

Json outputJson(const OutputCheck& o) {
  Json j;
  j["index"] = o.index;
  j["dtype"] = o.dtype;
  j["expected_dtype"] = o.expected_dtype;
  j["shape"] = o.shape;
  j["expected_shape"] = o.expected_shape;
  j["elements"] = o.elements;
  j["mismatches"] = o.mismatches;
  j["nonfinite_unexpected"] = o.nonfinite_unexpected;
  j["max_abs_error"] = o.max_abs_error;
  j["max_rel_error"] = o.max_rel_error;
  j["worst_index"] = o.worst_index.empty() ? Json(nullptr) : Json(o.worst_index);
  j["worst_candidate"] = o.worst_index.empty() ? Json(nullptr) : Json(o.worst_candidate);
  j["worst_reference"] = o.worst_index.empty() ? Json(nullptr) : Json(o.worst_reference);
  j["problem"] = o.problem.empty() ? Json(nullptr) : Json(o.problem);
  return j;
}

c10::Device parseDevice(const std::string& name) {
  if (name == "cpu") return c10::Device(c10::kCPU);
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
    if (!at::hasCUDA())
      throw UsageError("device " + name +
                       " is not available here (no GPU, or kbcheck built without -Dtorch_cuda=true)");
    c10::Device d(name);
    return d.has_index() ? d : c10::Device(c10::kCUDA, 0);
  }
  throw UsageError("unknown device '" + name + "' (use cpu, cuda or cuda:N)");
}

}  // namespace

Json VerifyResult::toJson() const {
  Json j;
  j["status"] = std::string(statusName(status));
  j["message"] = message;
  j["task_id"] = task_id;
  j["device"] = device;
  j["atol"] = atol;
  j["rtol"] = rtol;
  j["seconds"] = seconds;
  j["reference_seconds"] = reference_seconds;
  Json seeds_json = Json::array();
  for (const auto& s : seeds) {
    Json sj;
    sj["seed"] = s.seed;
    sj["status"] = std::string(statusName(s.status));
    sj["message"] = s.message;
    sj["forward_seconds"] = s.forward_seconds;
    Json outs = Json::array();
    for (const auto& o : s.outputs) outs.push_back(outputJson(o));
    sj["outputs"] = outs;
    seeds_json.push_back(sj);
  }
  j["seeds"] = seeds_json;
  j["worker"] = worker.toJson();
  return j;
}

VerifyResult verifySolution(const fs::path& task_dir, const fs::path& library,
                            const VerifyOptions& options) {
  auto t0 = Clock::now();
  protectMemoryFromSiblings();
  VerifyResult result;
  Task task = Task::open(task_dir);
  const TaskInfo& info = task.info();
  c10::Device device = parseDevice(options.device);
  result.task_id = info.id;
  result.device = device.str();
  result.atol = options.atol.value_or(info.atol);
  result.rtol = options.rtol.value_or(info.rtol);
  std::vector<uint64_t> seeds = options.seeds.empty() ? info.correctness_seeds : options.seeds;
  if (seeds.empty()) throw UsageError(task.bundle().taskJson().string() + ": no correctness seeds");

  // Limits sized from what the task says it produces.
  uint64_t out_bytes = 0, in_bytes = 0;
  for (const auto& o : info.outputs) out_bytes += specBytes(o.dtype, o.shape);
  for (const auto& i : info.inputs)
    if (i.kind == "tensor") in_bytes += specBytes(i.dtype, i.shape);
  if (info.generator != "spec") in_bytes = 1ull << 30;  // unknown until generated

  WorkerRequest req;
  req.task_dir = fs::absolute(task_dir);
  req.library = fs::absolute(library);
  req.device = result.device;
  req.seeds = seeds;
  req.max_output_bytes = out_bytes ? 4 * out_bytes + (1u << 20) : (1ull << 30);
  req.max_scratch_bytes = options.max_scratch_bytes;
  req.memory_budget_bytes = options.memory_budget_bytes;
  req.seccomp = options.seccomp;
  req.landlock = options.landlock;
  req.allow_open_rdwr = options.allow_open_rdwr;
  WorkerLimits limits = options.limits;
  limits.result_limit = std::min<uint64_t>(
      limits.result_limit, seeds.size() * (req.max_output_bytes + in_bytes + (1u << 20)) + (16u << 20));
  fs::path binary = options.worker.empty() ? findWorkerBinary() : options.worker;
  fs::path scratch = options.scratch_dir.empty() ? fs::temp_directory_path() : options.scratch_dir;

  // 1. The candidate, alone.
  result.worker = runWorker(req, limits, binary, scratch, options.keep_worker_dir);
  if (result.worker.status != Status::Ok) {
    result.status = result.worker.status;
    result.message = result.worker.message;
    result.seconds = since(t0);
    return result;
  }

  // 2. The reference, after the candidate's process is gone.
  auto tr = Clock::now();
  c10::InferenceMode inference;
  Reference reference = task.reference(device);
  result.status = Status::Ok;
  for (uint64_t seed : seeds) {
    const WireRecord* rec = nullptr;
    for (const auto& r : result.worker.records)
      if (r.header["type"] == "seed" && r.header.value("seed", uint64_t{0}) == seed) rec = &r;
    if (!rec) {
      result.status = Status::HackDetected;
      result.message = "no result for seed " + std::to_string(seed) + " although the worker finished";
      break;
    }
    std::vector<c10::IValue> pristine = task.makeInputs(seed, device);
    std::vector<c10::IValue> ref_inputs;
    for (const auto& v : pristine) ref_inputs.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
    std::vector<at::Tensor> expected;
    for (const auto& t : reference.run(ref_inputs)) expected.push_back(t.detach().to(at::kCPU));
    std::vector<bool> ref_modified(pristine.size(), false);
    for (size_t i = 0; i < pristine.size(); ++i)
      if (pristine[i].isTensor()) ref_modified[i] = !sameBytes(ref_inputs[i].toTensor().to(at::kCPU),
                                                               pristine[i].toTensor().to(at::kCPU));
    SeedCheck sc = checkSeed(*rec, pristine, ref_modified, expected, result.atol, result.rtol);
    if (sc.status != Status::Ok && (result.status == Status::Ok ||
                                    (sc.status == Status::HackDetected && result.status != Status::HackDetected))) {
      result.status = sc.status;
      result.message = "seed " + std::to_string(seed) + ": " + sc.message;
    }
    result.seeds.push_back(std::move(sc));
  }
  result.reference_seconds = since(tr);
  result.seconds = since(t0);
  return result;
}

}  // namespace kb
