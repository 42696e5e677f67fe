// The reference worker: the reference and the comparison, in a process of
// its own. The only translation unit of lib/verify with torch headers.
#include "verify/compare.h"
#include "verify/compare_output.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/process.h"
#include "verify/dtype.h"
#include "verify/poison.h"
#include "verify/wire.h"
#include "kb/solution.h"
#include "sandbox/confine.h"
#include "task/task.h"
#include "task/timed_call.h"

#if KB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace fs = std::filesystem;

namespace kb::verify {
namespace {

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

// A read-only tensor over the record's bytes where they lie in the mapped
// result channel (valid while the record lives), or a copy when they are
// not aligned for the dtype (a record the harness did not write).
at::Tensor fromWire(const WireTensor& w) {
  auto options = at::TensorOptions().dtype(scalarTypeOf(w.dtype).value_or(at::kBool));
  auto address = reinterpret_cast<std::uintptr_t>(w.bytes.data());
  if (!w.bytes.empty() && address % std::max<std::size_t>(dtypeSize(w.dtype), 1) == 0)
    return at::from_blob(const_cast<char*>(w.bytes.data()), w.sizes, options);
  at::Tensor t = at::empty(w.sizes, options);
  if (!w.bytes.empty()) std::memcpy(t.data_ptr(), w.bytes.data(), w.bytes.size());
  return t;
}

// Byte-for-byte equality (NaN payloads included), on the GPU when both are
// there: no copy to the host.
bool sameBytes(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  at::Tensor x = a.contiguous(), y = b.contiguous();
  if (x.device() != y.device()) y = y.to(x.device());
  if (x.numel() == 0) return true;
  if (!x.is_cpu()) return at::equal(x.reshape({-1}).view(at::kByte), y.reshape({-1}).view(at::kByte));
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

std::vector<int64_t> unravel(int64_t flat, c10::IntArrayRef sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    idx[d] = sizes[d] ? flat % sizes[d] : 0;
    flat = sizes[d] ? flat / sizes[d] : 0;
  }
  return idx;
}

}  // namespace

// Compares one output (verify/compare_output.h): non-finite reference
// values must be matched exactly, finite ones within the tolerance.
bool compareOutput(const at::Tensor& cand, const at::Tensor& ref, double atol, double rtol, OutputCheck& oc,
                   int64_t chunk) {
  oc.elements = static_cast<uint64_t>(ref.numel());
  if (kbDtypeOf(ref.scalar_type()) != kbDtypeOf(cand.scalar_type())) {
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
  // On the reference's device (the GPU for CUDA tasks): the element-wise
  // comparison of a large output in float64 on one CPU thread took most of
  // a profile's reference check (0.8 s per 4M-element seed on the H200
  // machine). In pieces of `chunk` elements: the float64 temporaries of a
  // whole KernelBench level-1 output (1.6 G elements) took the H200's
  // 140 GB in the reference worker.
  chunk = std::max<int64_t>(1, chunk);
  const at::Tensor cand_flat = cand.reshape({-1}), ref_flat = ref.reshape({-1});
  const int64_t n = ref_flat.numel();
  // One piece's masks, in float64 on the reference's device.
  struct Piece {
    at::Tensor c, r, diff, tol, close, wrong_nonfinite, finite, c_fin, r_fin, unwritten;
  };
  auto piece = [&](int64_t begin) {
    Piece p;
    const int64_t len = std::min(chunk, n - begin);
    at::Tensor c_raw = cand_flat.narrow(0, begin, len).to(ref.device());
    // Never written: the harness's poison is still there (verify/poison.h),
    // wrong whatever the reference holds at that element.
    p.unwritten = unwrittenMask(c_raw);
    p.c = c_raw.to(at::kDouble);
    p.r = ref_flat.narrow(0, begin, len).to(at::kDouble);
    p.c_fin = at::isfinite(p.c);
    p.r_fin = at::isfinite(p.r);
    p.diff = (p.c - p.r).abs();
    p.tol = atol + rtol * p.r.abs();
    // Where the reference is finite, the tolerance; where it is not, the
    // same value exactly (the tolerance there is infinite and would pass
    // anything).
    at::Tensor same_nonfinite = p.c.eq(p.r).logical_or(at::isnan(p.c).logical_and(at::isnan(p.r)));
    p.close = at::where(p.r_fin, p.c_fin.logical_and(p.diff.le(p.tol)), same_nonfinite).logical_and(~p.unwritten);
    p.wrong_nonfinite = (~p.r_fin).logical_and(~same_nonfinite);
    p.finite = p.c_fin.logical_and(p.r_fin);
    return p;
  };
  uint64_t nonfinite_missed = 0, unwritten = 0;
  bool any_finite = false;
  for (int64_t begin = 0; begin < n; begin += chunk) {
    Piece p = piece(begin);
    // Every figure of a piece in one transfer: one synchronisation per
    // piece, not six (counts below 2^53 are exact in float64).
    at::Tensor zero = at::zeros({}, p.diff.options());
    at::Tensor figures =
        at::stack({(~p.close).sum().to(at::kDouble), (~p.c_fin).logical_and(p.r_fin).sum().to(at::kDouble),
                   p.wrong_nonfinite.sum().to(at::kDouble), p.finite.any().to(at::kDouble),
                   at::where(p.finite, p.diff, zero).max(),
                   at::where(p.finite, p.diff / p.r.abs().clamp_min(1e-12), zero).max(),
                   p.unwritten.sum().to(at::kDouble)})
            .cpu();
    const double* f = figures.data_ptr<double>();
    oc.mismatches += static_cast<uint64_t>(f[0]);
    oc.nonfinite_unexpected += static_cast<uint64_t>(f[1]);
    nonfinite_missed += static_cast<uint64_t>(f[2]);
    unwritten += static_cast<uint64_t>(f[6]);
    if (f[3] != 0) {
      oc.max_abs_error = any_finite ? std::max(oc.max_abs_error, f[4]) : f[4];
      oc.max_rel_error = any_finite ? std::max(oc.max_rel_error, f[5]) : f[5];
      any_finite = true;
    }
  }
  if (oc.mismatches == 0) return true;

  // The element shown: the first missed non-finite value, else the first
  // where the tolerance is exceeded most. A second pass, on failures only.
  const bool floating = at::isFloatingType(cand.scalar_type());
  int64_t worst = -1;
  double worst_excess = -INFINITY;
  bool cand_all_nan = floating, ref_all_nan = floating;
  for (int64_t begin = 0; begin < n; begin += chunk) {
    Piece p = piece(begin);
    if (unwritten > 0) {
      if (worst < 0 && p.unwritten.any().item<bool>()) worst = begin + p.unwritten.to(at::kByte).argmax().item<int64_t>();
    } else if (nonfinite_missed > 0) {
      if (worst < 0 && p.wrong_nonfinite.any().item<bool>())
        worst = begin + p.wrong_nonfinite.to(at::kByte).argmax().item<int64_t>();
    } else {
      at::Tensor excess = at::where(p.close, at::full_like(p.diff, -INFINITY),
                                    at::nan_to_num(p.diff - p.tol, INFINITY, INFINITY, INFINITY));
      at::Tensor at_max = at::stack({excess.max(), excess.argmax().to(at::kDouble)}).cpu();
      const double* m = at_max.data_ptr<double>();
      if (worst < 0 || m[0] > worst_excess) {
        worst_excess = m[0];
        worst = begin + static_cast<int64_t>(m[1]);
      }
    }
    if (cand_all_nan) cand_all_nan = p.c.isnan().all().item<bool>();
    if (ref_all_nan) ref_all_nan = p.r.isnan().all().item<bool>();
  }
  oc.worst_index = unravel(worst, ref.sizes());
  oc.worst_candidate = cand_flat[worst].item<double>();
  oc.worst_reference = ref_flat[worst].item<double>();
  const std::string name = "output " + std::to_string(oc.index);
  if (unwritten == oc.elements) {
    oc.problem = name + " was never written (it still holds the harness's fill)";
  } else if (unwritten > 0) {
    oc.problem = name + " has " + std::to_string(unwritten) + " of " + std::to_string(oc.elements) +
                 " elements the solution never wrote (they still hold the harness's fill), first at " +
                 shapeText(oc.worst_index) + ": never-written is wrong whatever the reference holds there";
  } else if (cand_all_nan && !ref_all_nan) {
    oc.problem = name + " was never written (it still holds the harness's NaN fill)";
  } else if (nonfinite_missed > 0) {
    oc.problem = name + " has " + std::to_string(nonfinite_missed) +
                 " values that differ from the reference's Inf/NaN (non-finite values must match exactly), first at " +
                 shapeText(oc.worst_index) + ": candidate " + num(oc.worst_candidate) + ", reference " +
                 num(oc.worst_reference);
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

namespace {

struct Range {
  std::string what;
  uint64_t begin = 0, bytes = 0;
};

bool overlaps(const Range& a, const Range& b) {
  return a.bytes > 0 && b.bytes > 0 && a.begin < b.begin + b.bytes && b.begin < a.begin + a.bytes;
}

// The output tensors a seed or call record carries, with their indices;
// `missing` is the first index the solution never allocated (-1: none).
// Advances *offset past them. Throws on a malformed record.
std::vector<WireTensor> takeOutputs(const WireRecord& rec, std::vector<int>& index, int& missing,
                                    std::size_t* offset = nullptr) {
  std::size_t off = 0;
  Json present = Json::array();
  for (const auto& o : rec.header.at("outputs")) {
    if (o.value("missing", false)) {
      if (missing < 0) missing = o.at("index").get<int>();
      continue;
    }
    present.push_back(o);
    index.push_back(o.at("index").get<int>());
  }
  std::vector<WireTensor> outs = takeTensors(present, rec.payload, offset ? offset : &off);
  if (!offset && off != rec.payload.size()) throw Error("payload longer than described");
  return outs;
}

// Count, dtypes, shapes, values of a record's outputs against the
// reference's; the first failure becomes `sc`'s status.
SeedCheck compareOutputs(const std::vector<WireTensor>& outs, const std::vector<int>& out_index, int missing,
                         const std::vector<at::Tensor>& expected, const std::vector<at::Tensor>& rounding,
                         double atol, double rtol, SeedCheck sc) {
  auto set = [&](Status s, const std::string& m) {
    sc.status = s;
    sc.message = m;
    return sc;
  };
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
    oc.expected_dtype = dtypeName(kbDtypeOf(ref.scalar_type()));
    oc.shape = outs[k].sizes;
    oc.expected_shape.assign(ref.sizes().begin(), ref.sizes().end());
    if (oc.index != static_cast<int>(k)) {
      oc.problem = "outputs are not numbered 0.." + std::to_string(expected.size() - 1);
      sc.outputs.push_back(oc);
      return set(Status::Incorrect, oc.problem);
    }
    // The tolerance widens by twice the reference's own rounding error
    // (`rounding`: |float32 reference - float64 reference| plus a floor of
    // four times its RMS over the output, where the float64 copy could be
    // run): an fp32 candidate, more or less accurate than the fp32
    // reference (a 3xTF32 or a split-K GEMM), must not fail a tight
    // contract for rounding that neither can avoid. Measured on the H200
    // (docs/gpu-validation.md): cuBLAS's own SGEMM is outside 1e-4 of the
    // float64 result on 6 of 4M elements at K = 2048. TF32 or half
    // precision errors are ~100-1000x the widened band.
    at::Tensor cand = fromWire(outs[k]);
    if (k < rounding.size() && rounding[k].defined() && cand.sizes() == ref.sizes() &&
        cand.scalar_type() == ref.scalar_type()) {
      // A copy on the reference's device, changed in place piece by piece
      // (float64 temporaries of a gigabyte output would not fit the GPU).
      at::Tensor c = cand.to(ref.device(), cand.scalar_type(), /*non_blocking=*/false, /*copy=*/true).contiguous();
      const at::Tensor c_flat = c.view({-1}), ref_flat = ref.reshape({-1}), round_flat = rounding[k].reshape({-1});
      for (int64_t begin = 0, n = c_flat.numel(); begin < n; begin += kCompareChunkElements) {
        const int64_t len = std::min(kCompareChunkElements, n - begin);
        at::Tensor cp = c_flat.narrow(0, begin, len), rp = ref_flat.narrow(0, begin, len),
                   up = round_flat.narrow(0, begin, len);
        // Only where the reference and its rounding are finite: an infinite
        // band (a float32 overflow the float64 copy does not have) would
        // pass any value, the hole the exact non-finite rule closes.
        const at::Tensor r64 = rp.to(at::kDouble);
        at::Tensor band = (cp.to(at::kDouble) - r64).abs().le(up.to(at::kDouble) * 2.0 + r64.abs() * rtol + atol)
                              .logical_and(at::isfinite(up)).logical_and(at::isfinite(rp));
        cp.copy_(at::where(band, rp, cp));
      }
      cand = c;
    }
    bool ok = compareOutput(cand, ref, atol, rtol, oc);
    sc.outputs.push_back(oc);
    if (!ok && sc.status == Status::Ok) set(Status::Incorrect, oc.problem);
  }
  return sc;
}

// Checks one seed's record against the reference's outputs. `input_digests`
// holds the digest of each input as made (empty for a non-tensor input).
SeedCheck checkSeed(const WireRecord& rec, const std::vector<std::string>& input_digests,
                    const std::vector<bool>& ref_modified, const std::vector<at::Tensor>& expected,
                    const std::vector<at::Tensor>& rounding, double atol, double rtol) {
  SeedCheck sc;
  sc.seed = rec.header.value("seed", uint64_t{0});
  sc.forward_seconds = rec.header.value("forward_seconds", 0.0);
  auto set = [&](Status s, const std::string& m) {
    sc.status = s;
    sc.message = m;
    return sc;
  };
  struct InputEcho {
    int index = -1;
    uint64_t data_ptr = 0, storage_bytes = 0;
    std::string digest;
  };
  std::vector<WireTensor> outs;
  std::vector<InputEcho> ins;
  std::vector<int> out_index;
  int missing = -1;
  try {
    outs = takeOutputs(rec, out_index, missing);
    for (const auto& i : rec.header.at("inputs"))
      ins.push_back({i.at("index").get<int>(), i.at("data_ptr").get<uint64_t>(),
                     i.at("storage_bytes").get<uint64_t>(), i.at("digest").get<std::string>()});
  } catch (const std::exception& e) {
    return set(Status::HackDetected,
               std::string("the seed's record is malformed (") + e.what() + "): forged result channel");
  }

  // Aliasing: outputs against every other piece of memory the call saw.
  std::vector<Range> others;
  for (const auto& in : ins)
    others.push_back({"input " + std::to_string(in.index), in.data_ptr, in.storage_bytes});
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
  for (const auto& d : input_digests) tensor_inputs += d.empty() ? 0 : 1;
  if (ins.size() != tensor_inputs)
    return set(Status::HackDetected, "the seed's record lists " + std::to_string(ins.size()) +
                                         " tensor inputs, the task has " + std::to_string(tensor_inputs));
  for (const auto& in : ins) {
    int i = in.index;
    if (i < 0 || i >= static_cast<int>(input_digests.size()) || input_digests[i].empty())
      return set(Status::HackDetected, "the seed's record names input " + std::to_string(i) + ", which is not a tensor");
    if (ref_modified[i]) continue;
    if (in.digest != input_digests[i])
      return set(Status::HackDetected, "input " + std::to_string(i) +
                                           " was modified by the solution (inputs are read-only)");
  }

  return compareOutputs(outs, out_index, missing, expected, rounding, atol, rtol, sc);
}

// One timed call's outputs, as its commit record carried them (they left
// the worker right after the call: no later code could change them),
// against the reference on the same inputs.
SeedCheck checkCall(const WireRecord& rec, const std::vector<at::Tensor>& expected,
                    const std::vector<at::Tensor>& rounding, double atol, double rtol) {
  SeedCheck sc;
  sc.seed = rec.header.value("seed", uint64_t{0});
  sc.timed_call = rec.header.value("call", int64_t{-1});
  std::vector<WireTensor> outs;
  std::vector<int> out_index;
  int missing = -1;
  try {
    outs = takeOutputs(rec, out_index, missing);
  } catch (const std::exception& e) {
    sc.status = Status::HackDetected;
    sc.message = std::string("the timed call's commit is malformed (") + e.what() + "): forged result channel";
    return sc;
  }
  return compareOutputs(outs, out_index, missing, expected, rounding, atol, rtol, sc);
}

// Every record after init carries the state's digests; they must be what
// init left (state is read-only in forward). Empty when they are.
std::string stateChange(const std::vector<WireRecord>& records) {
  const Json* init = nullptr;
  for (const auto& r : records)
    if (r.header.value("type", "") == "init") init = &r.header;
  if (!init || !init->contains("state_digests")) return "";
  const Json& want = (*init)["state_digests"];
  for (const auto& r : records) {
    std::string type = r.header.value("type", "");
    if (type != "seed" && type != "commit") continue;
    if (!r.header.contains("state_digests") && r.header.value("ok", true) == false) continue;
    const Json& got = r.header.value("state_digests", Json());
    if (got == want) continue;
    std::string where = type == "seed" ? "correctness seed " + std::to_string(r.header.value("seed", uint64_t{0}))
                                       : "timed call " + std::to_string(r.header.value("call", uint64_t{0}));
    for (auto it = want.begin(); it != want.end(); ++it)
      if (!got.is_object() || !got.contains(it.key()) || got[it.key()] != it.value())
        return "state '" + it.key() + "' was changed by forward (" + where + "): state is read-only after init";
    return "the state's digests after " + where + " are not init's";
  }
  return "";
}

}  // namespace

namespace {

// task.json and reference.pt disagree (compare.h kBadBundleExit).
struct BadBundle : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The reference's outputs against task.json's `outputs`, by count, dtype and
// shape (a dimension below 0 in task.json matches any size).
void checkDeclaredOutputs(const task::TaskInfo& info, const std::vector<at::Tensor>& got) {
  if (info.outputs.empty()) return;
  if (info.outputs.size() != got.size())
    throw BadBundle("task.json lists " + std::to_string(info.outputs.size()) + " outputs, reference.pt gives " +
                    std::to_string(got.size()));
  for (std::size_t i = 0; i < got.size(); ++i) {
    const task::OutputSpec& want = info.outputs[i];
    const std::string dtype = dtypeName(kbDtypeOf(got[i].scalar_type()));
    std::vector<int64_t> shape(got[i].sizes().begin(), got[i].sizes().end());
    bool same = want.shape.size() == shape.size() && want.dtype == dtype;
    for (std::size_t d = 0; same && d < shape.size(); ++d) same = want.shape[d] < 0 || want.shape[d] == shape[d];
    if (!same)
      throw BadBundle("task.json says output " + std::to_string(i) + " is " + want.dtype + " " + shapeText(want.shape) +
                      ", reference.pt gives " + dtype + " " + shapeText(shape));
  }
}

}  // namespace

int referenceMain(int argc, char** argv) {
  const char* usage =
      "usage: kbcheck-worker reference --task DIR --device DEV [--seeds S,...] < REQUEST.json\n"
      "(started by kbcheck verify and kbprof; the request comes on stdin, after a line naming\n"
      "the device where DEV is '-')\n";
  std::string task_dir, device_name;
  std::vector<uint64_t> known_seeds;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fputs(usage, stderr);
      return 2;
    }
    std::string v = argv[++i];
    if (a == "--task") task_dir = v;
    else if (a == "--device") device_name = v;
    else if (a == "--seeds") {
      for (std::size_t p = 0; p < v.size();) {
        std::size_t q = v.find(',', p);
        known_seeds.push_back(std::stoull(v.substr(p, q - p)));
        p = q == std::string::npos ? v.size() : q + 1;
      }
    } else {
      std::fputs(usage, stderr);
      return 2;
    }
  }
  if (task_dir.empty() || device_name.empty()) {
    std::fputs(usage, stderr);
    return 2;
  }
  sandbox::protectMemoryFromSiblings();
  try {
    if (device_name == "-") {
      // Started ahead of its GPU lease (kbserve): no CUDA call until the
      // parent names the device, one line before the request; nothing (EOF)
      // means it is not needed.
      std::optional<std::string> named = readLine(0, "the device");
      if (!named || named->empty()) return 0;
      if (c10::Device d(*named); !d.is_cpu() && !d.is_cuda())  // a malformed name throws here
        throw Error("the device named on stdin is not cpu or cuda:N: '" + *named + "'");
      device_name = *named;
    }
    // Before the request: what the task bundle gives anyone, nothing
    // computed and nothing of the candidate's read (it may still be running,
    // and its directory is not ours to read yet): the seeds' inputs on the
    // CPU, the device's context and the reference's weights on it. No
    // reference output exists until the request has come.
    auto t0 = Clock::now();
    Json phases;
    task::Task task = task::Task::open(task_dir);
    // On a GPU the seeds' inputs are made there after the request (as the
    // candidate's worker makes them, task::CallInputs: milliseconds).
    std::size_t prefetched = device_name == "cpu" ? task.prefetchInputs(known_seeds) : 0;
    phases["inputs_prefetched"] = prefetched;
    c10::InferenceMode inference;
    // The reference computes in full float32, so that a candidate is
    // judged against fp32 math under any contract.
    task::useFullFloat32();
    c10::Device device(device_name);
    Json gpu = nullptr;
#if KB_WITH_CUDA
    if (device.is_cuda()) gpu = std::string(at::cuda::getDeviceProperties(device.index())->name);
#endif
    auto tl = Clock::now();
    task::Reference reference = task.reference(device);
    phases["load_seconds"] = since(tl);
    // More of what the bundle gives anyone, so that the check after the
    // request only computes: the reference's float64 copy (for its rounding
    // error), the device's BLAS handles (a product of constants, nothing of
    // the reference's), and the timed calls' input generator.
    std::optional<task::Reference> wide;
    bool wide_failed = false;
    try {
      wide.emplace(reference.inFloat64());
    } catch (const std::exception&) {
      wide_failed = true;  // no float64 copy: no rounding allowance
    }
    if (device.is_cuda()) {
      for (auto dtype : {at::kFloat, at::kDouble}) {
        at::Tensor a = at::ones({16, 16}, at::TensorOptions().dtype(dtype).device(device));
        (void)at::mm(a, a).sum().item<double>();
      }
      // The comparison's kernels, on constants of each output dtype: the
      // device loads a kernel's module on its first launch (CUDA's lazy
      // loading), which would otherwise land in the first check after the
      // request.
      for (auto dtype : {at::kFloat, at::kHalf, at::kBFloat16, at::kDouble, at::kInt, at::kLong, at::kBool}) {
        const std::string name = dtypeName(kbDtypeOf(dtype));
        bool used = dtype == at::kFloat;
        for (const auto& out : task.info().outputs) used = used || out.dtype == name;
        if (!used) continue;
        at::Tensor a = at::zeros({16}, at::TensorOptions().dtype(dtype).device(device));
        OutputCheck oc;
        oc.dtype = oc.expected_dtype = name;
        (void)compareOutput(a, a, 1e-4, 1e-4, oc);
      }
    }
    std::optional<task::CallInputs> callInputs;  // made once; a failure is raised when a timed call needs it
    std::string call_inputs_problem;
    try {
      callInputs.emplace(task, device);
    } catch (const std::exception& e) {
      call_inputs_problem = e.what();
    }
    // Ready, and nothing of ours left running on the device: kbprof starts
    // the candidate's baselines and timed calls only once it has read this
    // (ReferenceWorker::awaitReady). Stdin is the parent's socket; on
    // anything else (a file, by hand) the word goes nowhere.
#if KB_WITH_CUDA
    if (device.is_cuda()) c10::cuda::device_synchronize();
#endif
    (void)::send(0, "ready\n", 6, MSG_NOSIGNAL);
    phases["prepare_seconds"] = since(t0);
    std::string text;
    char buf[1 << 16];
    for (ssize_t n; (n = ::read(0, buf, sizeof buf)) != 0;) {
      if (n < 0) {
        if (errno == EINTR) continue;
        throw Error(std::string("reading the request: ") + std::strerror(errno));
      }
      text.append(buf, static_cast<std::size_t>(n));
    }
    if (text.empty()) return 0;  // not needed after all (the candidate failed)
    auto tc = Clock::now();
    CompareRequest req = CompareRequest::fromJson(Json::parse(text));
    if (fs::absolute(req.task_dir) != fs::absolute(task_dir) || req.device != device_name)
      throw Error("the request names task " + req.task_dir.string() + " on " + req.device + ", this worker was started for " +
                  task_dir + " on " + device_name);
    // One seed's reference side. With several candidates each seed's
    // reference runs once and is kept for the others.
    struct SeedReference {
      std::vector<std::string> input_digests;  // the inputs as made, to compare with the candidate's record
      std::vector<c10::IValue> pristine;       // the inputs as made, for the float64 copy (rounding)
      std::vector<at::Tensor> expected;
      std::vector<at::Tensor> rounding;  // |float32 - float64 reference| per float32 output, in float32 (undefined: none)
      bool rounding_done = false;        // made only where the plain tolerance fails (recheck below)
      std::vector<bool> ref_modified;  // inputs the reference itself writes into
    };
    // The float32 reference's own rounding error, from its float64 copy on
    // the same inputs (a reference that cannot run in float64 gets no
    // allowance).
    auto roundingOf = [&](const std::vector<c10::IValue>& inputs, const std::vector<at::Tensor>& expected) {
      std::vector<at::Tensor> err;
      bool any32 = false;
      for (const auto& t : expected) any32 = any32 || t.scalar_type() == at::kFloat;
      if (!any32 || wide_failed) return err;
      try {
        if (!wide) throw Error("no float64 copy of the reference");
        std::vector<at::Tensor> r64;
        {
          std::vector<c10::IValue> x;  // freed before the error is computed
          for (const auto& v : inputs) {
            if (v.isTensor() && at::isFloatingType(v.toTensor().scalar_type()))
              x.emplace_back(v.toTensor().to(at::kDouble));
            else
              x.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
          }
          r64 = wide->run(x);
        }
        if (r64.size() != expected.size()) throw Error("float64 outputs differ in number");
        for (std::size_t i = 0; i < expected.size(); ++i) {
          if (expected[i].scalar_type() != at::kFloat || r64[i].sizes() != expected[i].sizes()) {
            err.emplace_back();
            continue;
          }
          // In pieces, kept in float32 (an allowance: its own rounding does
          // not matter), 0 where not finite: float64 temporaries of a
          // gigabyte output would not fit the GPU beside the rest.
          at::Tensor e = at::empty(expected[i].sizes(), expected[i].options());
          const at::Tensor e_flat = e.view({-1}), want = expected[i].reshape({-1}), wide_out = r64[i].reshape({-1});
          at::Tensor sum_sq = at::zeros({}, e.options().dtype(at::kDouble));
          for (int64_t begin = 0, n = e_flat.numel(); begin < n; begin += kCompareChunkElements) {
            const int64_t len = std::min(kCompareChunkElements, n - begin);
            at::Tensor d = (want.narrow(0, begin, len).to(at::kDouble) - wide_out.narrow(0, begin, len).to(at::kDouble)).abs();
            d = at::where(at::isfinite(d), d, at::zeros_like(d));
            sum_sq += d.square().sum();
            e_flat.narrow(0, begin, len).copy_(d);
          }
          // The floor: where the float32 reference happens to be exact, a
          // candidate's own float32 rounding is still of this size.
          if (e_flat.numel() > 0) e.add_(4.0 * std::sqrt(sum_sq.item<double>() / static_cast<double>(e_flat.numel())));
          r64[i] = at::Tensor();
          err.push_back(e);
        }
      } catch (const std::exception&) {
        wide_failed = true;  // e.g. an op with a hard-coded float32 tensor inside
        err.clear();
      }
      return err;
    };
    const bool keep = req.candidate_results.size() > 1;
    // The first reference run's and the first comparison's seconds (of the
    // totals below): what is paid once per worker, not per call.
    double first_run_s = -1, first_compare_s = -1;
    std::map<uint64_t, SeedReference> kept;
    double inputs_s = 0, run_s = 0;
    auto referenceFor = [&](uint64_t seed) {
      if (auto it = kept.find(seed); it != kept.end()) return it->second;
      // The seed's inputs where the candidate's worker made them: on the
      // CPU the canonical ones (made beside the candidate, for the known
      // seeds); on a GPU the device generator's (task::CallInputs). Their
      // digests are compared with the record's.
      SeedReference r;
      auto ti = Clock::now();
      if (!device.is_cpu() && !callInputs) throw Error(call_inputs_problem);
      const std::vector<c10::IValue> pristine =
          device.is_cpu() ? task.makeInputs(seed, device) : callInputs->make(seed);
      for (const auto& v : pristine)
        r.input_digests.push_back(v.isTensor() ? task::digestHex(task::tensorDigest(v.toTensor())) : "");
      std::vector<c10::IValue> ref_inputs;
      for (const auto& v : pristine)
        ref_inputs.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
      inputs_s += since(ti);
      auto tr = Clock::now();
      try {
        for (const auto& t : reference.run(ref_inputs)) r.expected.push_back(t.detach());
      } catch (const c10::OutOfMemoryError&) {
        throw;  // the machine's, not the bundle's
      } catch (const c10::Error& e) {
        throw BadBundle("reference.pt cannot run on the inputs task.json describes (" + task::seedName(seed) +
                        "): " + std::string(e.what_without_backtrace()).substr(0, std::string(e.what_without_backtrace()).find('\n')));
      }
      checkDeclaredOutputs(task.info(), r.expected);
      if (first_run_s < 0) first_run_s = since(tr);
      run_s += since(tr);
      r.ref_modified.assign(pristine.size(), false);
      for (size_t i = 0; i < pristine.size(); ++i)
        if (pristine[i].isTensor())
          r.ref_modified[i] = !sameBytes(ref_inputs[i].toTensor(), pristine[i].toTensor());
      r.pristine = pristine;
      if (keep) kept.emplace(seed, r);
      return r;
    };
    // The rounding allowance only widens the band (an element within
    // atol + rtol |r| is within atol + rtol |r| + 2 u), so the float64 copy
    // runs only where the plain check finds values wrong: the same verdict,
    // without a second reference run per call for a candidate that passes.
    // `check(rounding)` is the check; `pristine()` makes the inputs as they were made.
    double rounding_s = 0;  // the last recheck's float64 run (reference time, not compare time)
    auto recheck = [&](SeedCheck sc, const std::function<SeedCheck(const std::vector<at::Tensor>&)>& check,
                       const std::function<std::vector<c10::IValue>()>& pristine,
                       const std::vector<at::Tensor>& expected,
                       std::vector<at::Tensor>& rounding, bool& rounding_done) {
      if (sc.status != Status::Incorrect || wide_failed) return sc;
      auto tr = Clock::now();
      if (!rounding_done) rounding = roundingOf(pristine(), expected);
      rounding_done = true;
      rounding_s = since(tr);
      run_s += rounding_s;
      bool any = false;
      for (const auto& t : rounding) any = any || t.defined();
      return any ? check(rounding) : sc;
    };
    for (size_t k = 0; k < req.candidate_results.size(); ++k) {
      auto tk = Clock::now();
      inputs_s = run_s = 0;
      std::string problem;
      std::vector<WireRecord> records = readRecords(req.candidate_results[k], &problem);
      phases["read_seconds"] = since(tk);
      double compare_s = 0;
      Status status = Status::Ok;
      std::string message;
      Json seeds = Json::array();
      // One candidate's forged record is its own hack_detected, never an
      // exception that ends this worker and every other candidate's check.
      try {
        for (uint64_t seed : req.seeds) {
          const WireRecord* rec = nullptr;
          for (const auto& r : records)
            if (r.header["type"] == "seed" && r.header.value("seed", uint64_t{0}) == seed) rec = &r;
          if (!rec) {
            status = Status::HackDetected;
            message = "no result for seed " + std::to_string(seed) + " although the worker finished";
            break;
          }
          SeedReference ref = referenceFor(seed);
          auto tc2 = Clock::now();
          rounding_s = 0;
          auto check = [&](const std::vector<at::Tensor>& rounding) {
            return checkSeed(*rec, ref.input_digests, ref.ref_modified, ref.expected, rounding, req.atol, req.rtol);
          };
          SeedCheck sc = check(ref.rounding_done ? ref.rounding : std::vector<at::Tensor>{});
          if (!ref.rounding_done) {
            sc = recheck(sc, check, [&] { return ref.pristine; }, ref.expected, ref.rounding, ref.rounding_done);
            if (ref.rounding_done && keep) kept[seed] = ref;
          }
          compare_s += since(tc2) - rounding_s;
          if (first_compare_s < 0) first_compare_s = since(tc2) - rounding_s;
          if (sc.status != Status::Ok &&
              (status == Status::Ok ||
               (sc.status == Status::HackDetected && status != Status::HackDetected))) {
            status = sc.status;
            message = task::describeSeed(seed) + ": " + sc.message;
          }
          seeds.push_back(sc.toJson());
        }
        // Every timed call (kbprof): its commit carries its outputs.
        if (!req.calls.empty() && !callInputs) throw Error(call_inputs_problem);
        for (uint64_t call : req.calls) {
          const WireRecord* rec = nullptr;
          for (const auto& r : records)
            if (r.header["type"] == "commit" && r.header.value("call", uint64_t{~0ull}) == call) rec = &r;
          if (!rec) {
            status = Status::HackDetected;
            message = "no commit of timed call " + std::to_string(call) + ", which the parent paced";
            break;
          }
          uint64_t seed = rec->header.value("seed", uint64_t{0});
          auto ti = Clock::now();
          std::vector<c10::IValue> inputs = callInputs->make(seed);
          inputs_s += since(ti);
          auto tr = Clock::now();
          std::vector<at::Tensor> expected;
          for (const auto& t : reference.run(inputs)) expected.push_back(t.detach());
          run_s += since(tr);
          auto tc2 = Clock::now();
          rounding_s = 0;
          auto check = [&](const std::vector<at::Tensor>& rounding) {
            return checkCall(*rec, expected, rounding, req.atol, req.rtol);
          };
          std::vector<at::Tensor> rounding;
          bool rounding_done = false;
          // The pristine inputs only for a re-check: made again from the seed
          // (the reference may have written into `inputs`; the generator is
          // deterministic, as the candidate's worker relies on), not cloned per call.
          SeedCheck sc = recheck(check({}), check, [&] { return callInputs->make(seed); }, expected, rounding,
                                 rounding_done);
          compare_s += since(tc2) - rounding_s;
          if (sc.status != Status::Ok &&
              (status == Status::Ok || (sc.status == Status::HackDetected && status != Status::HackDetected))) {
            status = sc.status;
            message = "timed call " + std::to_string(call) + " (input seed " + std::to_string(seed) +
                      "): " + sc.message;
          }
          seeds.push_back(sc.toJson());
        }
        if (std::string change = stateChange(records); !change.empty()) {
          status = Status::HackDetected;
          message = change;
        }
      } catch (const Json::exception& e) {
        status = Status::HackDetected;
        message = std::string("a result record the harness did not write (") + e.what() + ")";
      }
      Json verdict;
      verdict["type"] = "verdict";
      verdict["candidate"] = k;
      verdict["torch_version"] = task::torchVersion();
      verdict["gpu"] = gpu;
      verdict["status"] = std::string(statusName(status));
      verdict["message"] = message;
      verdict["seeds"] = seeds;
      verdict["seconds"] = since(t0);
      phases["inputs_seconds"] = inputs_s;
      phases["reference_seconds"] = run_s;
      phases["compare_seconds"] = compare_s;
      phases["first_reference_seconds"] = std::max(0.0, first_run_s);
      phases["first_compare_seconds"] = std::max(0.0, first_compare_s);
      phases["check_seconds"] = k == 0 ? since(tc) : since(tk);
      verdict["phases"] = phases;
      if (!writeRecord(3, verdict, "")) {
        std::fprintf(stderr, "kbcheck-worker reference: cannot write the verdict\n");
        return 70;
      }
    }
    // The caller waits for this process to end: skip LibTorch's and CUDA's
    // teardown (~0.1 s), as the candidate's worker does.
    std::fflush(nullptr);
    ::_exit(0);
  } catch (const BadBundle& e) {
    std::fprintf(stderr, "kbcheck-worker reference: %s\n", e.what());
    return kBadBundleExit;
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "kbcheck-worker reference: %s\n", e.what_without_backtrace());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbcheck-worker reference: %s\n", e.what());
  }
  return 70;
}

}  // namespace kb::verify
