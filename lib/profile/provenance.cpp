#include "profile/provenance.h"

#include <cxxabi.h>

#include <filesystem>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "core/error.h"
#include "profile/elf_symbols.h"

namespace kb::profile {
namespace {

std::string kindName(ActivityKind k) {
  switch (k) {
    case ActivityKind::Kernel: return "kernel";
    case ActivityKind::Memcpy: return "memcpy";
    case ActivityKind::Memset: return "memset";
  }
  return "?";
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }
bool startsWith(const std::string& s, const char* part) { return s.rfind(part, 0) == 0; }

std::string ownerName(int64_t owner) {
  if (owner == kOwnerHarness) return "the harness";
  if (owner == kOwnerUnknown) return "no call";
  return "call " + std::to_string(owner);
}

std::string describe(const Activity& a) {
  std::string what = a.kind == ActivityKind::Kernel ? "kernel " + demangle(a.name)
                                                    : kindName(a.kind) + " " + a.name + " (" +
                                                          std::to_string(a.bytes) + " bytes)";
  if (what.size() > 200) what = what.substr(0, 197) + "...";
  return what + " on stream " + std::to_string(a.stream) + ", " + ownerName(a.owner);
}

}  // namespace

std::string demangle(const std::string& name) {
  if (!startsWith(name, "_Z")) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

std::string kernelFramework(const std::string& name) {
  std::string d = demangle(name);
  // ATen's CUDA kernels live in namespace at (at::native, at::cuda, ...);
  // their mangled names start _ZN2at or mention at:: in template arguments.
  if (startsWith(name, "_ZN2at") || startsWith(d, "at::") || contains(d, "void at::") ||
      contains(d, "at::native::") || contains(d, "at_cuda_detail"))
    return "aten";
  if (startsWith(name, "triton_") || startsWith(d, "triton_")) return "triton";
  return "";
}

std::string kernelLibrary(const std::string& name) {
  std::string d = demangle(name);
  std::string lower = d;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  // cuDNN first: some of its kernels are GEMM-shaped ("xmma_fprop").
  for (const char* p : {"cudnn", "fprop", "dgrad", "wgrad", "implicit_convolve", "winograd", "convolve_",
                        "nchwtonhwc", "nhwctonchw", "fft2d", "fft_"})
    if (contains(lower, p)) return "cudnn";
  // cuBLAS / cuBLASLt: sm80_xmma_gemm_..., sm90_xmma_..., nvjet_... (Hopper),
  // cutlass::Kernel<...gemm...>, gemv2T_kernel, splitKreduce_kernel, ...
  for (const char* p : {"gemm", "gemv", "nvjet", "xmma", "cublas", "splitkreduce", "dot_kernel",
                        "reduce_1block_kernel", "cutlass"})
    if (contains(lower, p)) return "cublas";
  return "";
}

Json Activity::toJson() const {
  return Json::array({kindName(kind), name, stream, start_ns, end_ns, bytes, owner, thread, external, graph});
}

Activity Activity::fromJson(const Json& j) {
  Activity a;
  std::string k = j.at(0).get<std::string>();
  a.kind = k == "memcpy" ? ActivityKind::Memcpy : k == "memset" ? ActivityKind::Memset : ActivityKind::Kernel;
  a.name = j.at(1).get<std::string>();
  a.stream = j.at(2).get<uint32_t>();
  a.start_ns = j.at(3).get<uint64_t>();
  a.end_ns = j.at(4).get<uint64_t>();
  a.bytes = j.at(5).get<uint64_t>();
  a.owner = j.at(6).get<int64_t>();
  a.thread = j.at(7).get<uint32_t>();
  if (j.size() > 8) a.external = j.at(8).get<uint64_t>();
  if (j.size() > 9) a.graph = j.at(9).get<uint32_t>();
  return a;
}

double busyMilliseconds(const std::vector<Activity>& activities) {
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& a : activities)
    if (a.end_ns > a.start_ns) spans.push_back({a.start_ns, a.end_ns});
  std::sort(spans.begin(), spans.end());
  uint64_t total = 0, cur_begin = 0, cur_end = 0;
  bool open = false;
  for (const auto& [b, e] : spans) {
    if (open && b <= cur_end) {
      cur_end = std::max(cur_end, e);
      continue;
    }
    if (open) total += cur_end - cur_begin;
    cur_begin = b;
    cur_end = e;
    open = true;
  }
  if (open) total += cur_end - cur_begin;
  return static_cast<double>(total) * 1e-6;
}

namespace {

// The harness's poison fill of an output or scratch block it made inside a
// call (verify/worker.cpp: alloc_output / alloc_scratch of a size no
// prepared block has): ATen's fill kernel.
bool isHarnessFill(const Activity& a) {
  if (a.kind == ActivityKind::Memset) return true;
  if (a.kind != ActivityKind::Kernel) return false;
  std::string d = demangle(a.name);
  return contains(d, "at::native::") && contains(d, "FillFunctor");
}

}  // namespace

TimedCallActivities classifyTimedCall(const std::vector<Activity>& raw, int64_t index) {
  using namespace harness_ids;
  TimedCallActivities out;
  out.window.index = index;
  out.window.kind = "timed";
  const uint64_t call_id = static_cast<uint64_t>(index) + 1, spin_id = kSpinBase + static_cast<uint64_t>(index),
                 marker_id = kMarkerBase + static_cast<uint64_t>(index), in_call_id = kInCallBase + static_cast<uint64_t>(index);
  const Activity* spin = nullptr;
  const Activity* marker = nullptr;
  int spins = 0, markers = 0;
  for (const auto& a : raw) {
    if (a.external == spin_id) ++spins, spin = &a;
    if (a.external == marker_id) ++markers, marker = &a;
  }
  if (spins > 1 || markers > 1)
    out.problems.push_back("timed call " + std::to_string(index) + " has " + std::to_string(spins) + " head-start spins and " +
                           std::to_string(markers) + " end markers by their ids (one of each is the harness's): the call labelled its own work as the harness's");
  uint64_t spin_start = spin ? spin->start_ns : 0;
  out.window.start_ns = spin ? spin->end_ns : 0;
  out.window.marker_start_ns = marker ? marker->start_ns : 0;
  out.marker_stream = marker ? marker->stream : 0;
  for (const auto& a : raw) {
    if (&a == spin || &a == marker) continue;
    // The harness's work before the call (inputs, poison, the L2 flush)
    // ended before the spin began: it ran on the launch stream ahead of it.
    bool before = spin && a.end_ns <= spin_start;
    // Only the harness's own ids pass there: work with no id (another
    // thread's, run between two calls) or an earlier call's id (launched
    // after that call's end) is not the harness's.
    if (before && a.external >= kHarness && a.external != in_call_id) continue;
    if (a.external == in_call_id && isHarnessFill(a)) continue;
    if (a.external == kHarness || (a.external >= kMarkerBase && a.external != in_call_id))
      out.problems.push_back("timed call " + std::to_string(index) + ": " + describe(a) +
                             " ran during the call under a harness id (" + std::to_string(a.external) +
                             "): the call's own work labelled as the harness's");
    // Launched from another thread (no id at all): the call's window holds
    // it, but no call launched it (unowned-work).
    Activity owned = a;
    owned.owner = a.external == 0 ? kOwnerUnknown : index;
    out.owned.push_back(owned);
  }
  return out;
}

Json ProvenanceFinding::toJson() const { return Json{{"rule", rule}, {"evidence", evidence}}; }

Json ProvenanceReport::toJson() const {
  Json j;
  j["ok"] = ok();
  j["activities"] = activities;
  Json f = Json::array();
  for (const auto& x : findings) f.push_back(x.toJson());
  j["findings"] = f;
  j["own_kernel_share"] = own_kernel_share;
  return j;
}

// A kernel's name with what differs between its host stub's symbol and
// CUPTI's report taken out: demangled, anonymous-namespace markers and
// nvcc's per-file "_INTERNAL_<hash>_" prefixes dropped.
std::string normalizedKernelName(const std::string& name) {
  std::string d = demangle(name);
  for (const std::string marker : {"(anonymous namespace)::"}) {
    for (auto p = d.find(marker); p != std::string::npos; p = d.find(marker)) d.erase(p, marker.size());
  }
  for (auto p = d.find("_INTERNAL_"); p != std::string::npos; p = d.find("_INTERNAL_", p)) {
    auto end = d.find("::", p);
    if (end == std::string::npos) break;
    d.erase(p, end + 2 - p);
  }
  return d;
}

ProvenanceReport checkProvenance(const std::vector<Activity>& activities,
                                 const std::vector<CallWindow>& calls, uint32_t launch_stream,
                                 const ProvenancePolicy& policy, std::size_t max_findings) {
  ProvenanceReport report;
  std::set<std::string> own_normalized;
  for (const auto& k : policy.own_kernels) own_normalized.insert(normalizedKernelName(k));
  std::map<int64_t, uint64_t> marker, start;
  std::set<int64_t> timed;
  for (const auto& c : calls) {
    marker[c.index] = c.marker_start_ns;
    start[c.index] = c.start_ns;
    if (c.kind == "timed") timed.insert(c.index);
  }
  std::map<std::string, std::size_t> count;
  std::map<std::string, std::string> first_seen;  // one finding per distinct evidence
  auto add = [&](const std::string& rule, const std::string& evidence) {
    if (first_seen.count(rule + evidence)) return;
    first_seen[rule + evidence] = rule;
    if (count[rule]++ < max_findings) report.findings.push_back({rule, evidence});
  };
  for (const auto& a : activities) {
    if (a.owner == kOwnerHarness) continue;
    if (a.owner == kOwnerUnknown) {
      add("unowned-work", describe(a) + ": launched outside every call and not by the harness (another host thread?)");
      continue;
    }
    ++report.activities;
    auto m = marker.find(a.owner);
    auto st = start.find(a.owner);
    // The call's window: from its start event to its end marker. 1 us of
    // slack: the start event sits between the spin and the call's first
    // kernel, and CUPTI's timestamps are not finer than that. A call
    // outside the timed loop (init, seed, warm-up) has no start event; the
    // harness synchronised the device before it and every activity here was
    // launched under its id, so its window opens with the call.
    const bool has_start = st != start.end() && st->second != 0;
    const bool in_window = m != marker.end() && m->second != 0 && a.end_ns <= m->second &&
                           (has_start ? a.start_ns + 1000 >= st->second : !timed.count(a.owner));
    if (st != start.end() && st->second != 0 && a.start_ns + 1000 < st->second)
      add("before-start", describe(a) + ": began " + std::to_string((st->second - a.start_ns) / 1000) +
                              " us before the call's start event (outside the timed region)");
    const bool legacy_in_window = policy.legacy_stream != 0 && a.stream == policy.legacy_stream && in_window;
    if (a.stream != launch_stream && !(a.graph != 0 && in_window) && !legacy_in_window)
      add("other-stream", describe(a) + ": not the launch stream " + std::to_string(launch_stream));
    if (m != marker.end() && m->second != 0 && a.end_ns > m->second)
      add("after-return", describe(a) + ": still running " +
                              std::to_string((a.end_ns - m->second) / 1000) + " us after the call returned");
    if (a.kind != ActivityKind::Kernel || policy.own_kernels.count(a.name) ||
        own_normalized.count(normalizedKernelName(a.name)))
      continue;
    std::string framework = kernelFramework(a.name);
    if (policy.torch_ops_allowed && framework != "triton") continue;
    if (!framework.empty()) {
      add("foreign-kernel", describe(a) + ": a " + (framework == "aten" ? "PyTorch ATen" : "Triton") +
                                " kernel, not the solution's own");
      continue;
    }
    std::string lib = kernelLibrary(a.name);
    if (lib == "cublas" && policy.allow_gemm_library) continue;
    if (lib == "cudnn" && policy.allow_conv_library) continue;
    if (!lib.empty())
      add("foreign-kernel", describe(a) + ": a " + lib + " kernel, not allowed for this task's ops (" +
                                (lib == "cublas" ? "no GEMM in the reference" : "no convolution in the reference") + ")");
    else
      add("foreign-kernel", describe(a) + ": not defined by the solution's library nor by an allowed library");
  }
  // skipped-work: the kernels every verified call launched (the warm-up
  // calls' when nothing was verified) must appear in every timed call.
  std::map<int64_t, std::set<std::string>> launched;
  for (const auto& a : activities)
    if (a.owner >= 0 && a.kind == ActivityKind::Kernel) launched[a.owner].insert(a.name);
  for (const char* reference_kind : {"seed", "warmup"}) {
    std::optional<std::set<std::string>> common;
    for (const auto& c : calls) {
      if (c.kind != reference_kind) continue;
      const auto& k = launched[c.index];
      if (!common) {
        common = k;
      } else {
        std::set<std::string> both;
        for (const auto& n : *common)
          if (k.count(n)) both.insert(n);
        common = both;
      }
    }
    if (!common) continue;
    for (const auto& c : calls) {
      if (c.kind != "timed") continue;
      for (const auto& n : *common)
        if (!launched[c.index].count(n)) {
          std::string name = demangle(n);
          if (name.size() > 160) name = name.substr(0, 157) + "...";
          add("skipped-work", "timed call " + std::to_string(c.index) + " did not launch " + name +
                                  ", which every " + (std::string(reference_kind) == "seed" ? "verified" : "warm-up") +
                                  " call launched (a result replayed instead of computed?)");
          break;
        }
    }
    break;
  }
  for (const auto& [rule, n] : count)
    if (n > max_findings)
      report.findings.push_back({rule, "... and " + std::to_string(n - max_findings) + " more"});
  return report;
}

Json KernelStat::toJson() const {
  Json j{{"name", name}, {"calls", calls}, {"total_ms", total_ms}, {"mean_ms", mean_ms}, {"share", share}};
  if (!origin.empty()) j["origin"] = origin;
  return j;
}

std::vector<KernelStat> kernelBreakdown(const std::vector<Activity>& activities, const OwnCode* own) {
  std::map<std::string, KernelStat> by;
  double total = 0;
  for (const auto& a : activities) {
    if (a.owner < 0) continue;
    std::string key = a.kind == ActivityKind::Kernel ? demangle(a.name) : "[" + kindName(a.kind) + " " + a.name + "]";
    KernelStat& k = by[key];
    k.name = key;
    if (own && k.origin.empty()) k.origin = kernelOrigin(a, *own);
    ++k.calls;
    k.total_ms += a.ms();
    total += a.ms();
  }
  std::vector<KernelStat> out;
  for (auto& [name, k] : by) {
    k.mean_ms = k.calls ? k.total_ms / static_cast<double>(k.calls) : 0;
    k.share = total > 0 ? k.total_ms / total : 0;
    out.push_back(k);
  }
  std::sort(out.begin(), out.end(), [](const KernelStat& a, const KernelStat& b) { return a.total_ms > b.total_ms; });
  return out;
}

void OwnCode::add(const std::set<std::string>& functions) {
  for (const auto& f : functions) {
    kernels.insert(f);
    normalized.insert(normalizedKernelName(f));
  }
}

bool OwnCode::owns(const std::string& kernel_name) const {
  return kernels.count(kernel_name) || normalized.count(normalizedKernelName(kernel_name));
}

OwnCode readOwnCode(const std::string& library) {
  namespace fs = std::filesystem;
  OwnCode own;
  if (library.empty()) return own;
  const fs::path lib(library);
  const fs::path config = lib.parent_path() / "pymodel.json";
  if (!fs::exists(config)) {  // a native solution: its own library
    own.from = "solution_library";
    own.libraries.push_back(lib.filename().string());
    own.add(readElfSymbols(lib).defined_functions);
    return own;
  }
  // A Python solution: the library is the trusted adapter; the candidate's
  // own native code is in the extensions the build made from its
  // load_inline calls (lib/build/python_build.h: name -> file, relative to
  // the library's folder).
  Json j = readJsonFile(config);
  own.from = "extension_libraries";
  if (j.contains("extensions") && j["extensions"].is_object())
    for (const auto& [name, file] : j["extensions"].items()) {
      if (!file.is_string()) throw Error(config.string() + ": extension " + name + " has no library file");
      fs::path rel = file.get<std::string>();
      if (rel.is_absolute() || rel.lexically_normal().string().rfind("..", 0) == 0)
        throw Error(config.string() + ": extension " + name + "'s library is outside the build's folder");
      own.libraries.push_back(rel.string());
      own.add(readElfSymbols(lib.parent_path() / rel).defined_functions);
    }
  return own;
}

std::string kernelOrigin(const Activity& a, const OwnCode& own) {
  if (a.kind != ActivityKind::Kernel) return "copy";
  if (own.owns(a.name)) return "own";
  std::string framework = kernelFramework(a.name);
  if (!framework.empty()) return framework;
  std::string lib = kernelLibrary(a.name);
  return lib.empty() ? "other" : lib;
}

std::optional<double> OwnKernelShare::share() const {
  if (own_ms + library_ms <= 0) return std::nullopt;
  return own_ms / (own_ms + library_ms);
}

Json OwnKernelShare::toJson() const {
  Json j;
  std::optional<double> s = share();
  j["share"] = s ? Json(*s) : Json(nullptr);
  j["own_ms"] = own_ms;
  j["library_ms"] = library_ms;
  j["copy_ms"] = copy_ms;
  Json by = Json::object();
  for (const auto& [origin, ms] : library_by_origin) by[origin] = ms;
  j["library_by_origin"] = by;
  j["own_kernels"] = own_kernels;
  j["library_kernels"] = library_kernels;
  j["own_from"] = own_from;
  j["own_libraries"] = own_libraries;
  j["timed_calls"] = timed_calls;
  Json amb = Json::array();
  for (const auto& a : ambiguous) amb.push_back(Json{{"name", a.name}, {"also", a.also}, {"ms", a.ms}});
  j["ambiguous"] = amb;
  j["ambiguous_ms"] = ambiguous_ms;
  return j;
}

OwnKernelShare ownKernelShare(const std::vector<Activity>& activities, const OwnCode& own) {
  OwnKernelShare out;
  out.own_from = own.from;
  out.own_libraries = own.libraries;
  std::set<int64_t> calls;
  std::set<std::string> own_names, library_names;
  std::map<std::string, std::size_t> ambiguous_at;  // kernel name -> index in out.ambiguous
  for (const auto& a : activities) {
    if (a.owner < 0) continue;
    calls.insert(a.owner);
    const double ms = a.end_ns > a.start_ns ? a.ms() : 0.0;
    const std::string origin = kernelOrigin(a, own);
    if (origin == "copy") {
      out.copy_ms += ms;
    } else if (origin == "own") {
      out.own_ms += ms;
      own_names.insert(a.name);
      // Also a framework's or a library's name: the same name may come
      // from either module, and CUPTI does not say which.
      std::string also = kernelFramework(a.name);
      if (also.empty()) also = kernelLibrary(a.name);
      if (!also.empty()) {
        auto [it, fresh] = ambiguous_at.try_emplace(a.name, out.ambiguous.size());
        if (fresh) out.ambiguous.push_back({demangle(a.name), also, 0.0});
        out.ambiguous[it->second].ms += ms;
        out.ambiguous_ms += ms;
      }
    } else {
      out.library_ms += ms;
      out.library_by_origin[origin] += ms;
      library_names.insert(a.name);
    }
  }
  out.timed_calls = calls.size();
  out.own_kernels = own_names.size();
  out.library_kernels = library_names.size();
  for (auto& a : out.ambiguous)
    if (a.name.size() > 200) a.name = a.name.substr(0, 197) + "...";
  return out;
}

}  // namespace kb::profile
