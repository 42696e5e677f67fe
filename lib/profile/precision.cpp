#include "profile/precision.h"

#include <algorithm>
#include <cstdio>
#include <regex>

namespace kb::profile {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Narrowest first; the rank orders classes, the mantissa bits compare a
// class with the task's dtype.
struct ClassInfo {
  const char* name;
  int rank;
  int mantissa;
};
constexpr ClassInfo kClasses[] = {
    {"fp4", 0, 1},  {"int8", 1, 0},  {"fp8", 2, 3},   {"bf16", 3, 7},
    {"fp16", 4, 10}, {"tf32", 5, 10}, {"fp32", 6, 23}, {"fp64", 7, 52},
};

const ClassInfo* classInfo(const std::string& cls) {
  for (const auto& c : kClasses)
    if (cls == c.name) return &c;
  return nullptr;
}

int dtypeMantissa(const std::string& dtype) {
  if (dtype == "float64") return 52;
  if (dtype == "float32") return 23;
  if (dtype == "float16") return 10;
  if (dtype == "bfloat16") return 7;
  return -1;
}

// nvjet (cuBLASLt's Hopper/Blackwell tensor-core kernels):
// nvjet_[sm<NN>_]<ab><scale><d>_..., e.g. nvjet_hsh_ (fp16), nvjet_tst_
// (bf16), nvjet_sm90_hss_ (fp16 in, fp32 out). Every nvjet kernel runs on
// tensor cores, so fp32 operands ('s') mean TF32.
std::string nvjetClass(const std::string& n) {
  static const std::regex re(R"(nvjet_(?:sm\d+_)?([a-z])[a-z][a-z]_)");
  std::smatch m;
  if (!std::regex_search(n, m, re)) return "";
  switch (m.str(1)[0]) {
    case 'h': return "fp16";
    case 't': return "bf16";
    case 's': return "tf32";
    case 'd': return "fp64";
    case 'i': return "int8";
    case 'q': case 'e': return "fp8";
    default: return "tensor";
  }
}

}  // namespace

int precisionMantissaBits(const std::string& cls) {
  const ClassInfo* c = classInfo(cls);
  return c ? c->mantissa : -1;
}

std::string narrowerPrecision(const std::string& a, const std::string& b) {
  const ClassInfo* ca = classInfo(a);
  const ClassInfo* cb = classInfo(b);
  if (!ca && !cb) return a == "tensor" || b == "tensor" ? "tensor" : "unknown";
  if (!ca) return b;
  if (!cb) return a;
  return ca->rank <= cb->rank ? a : b;
}

bool isReducedPrecision(const std::string& cls, const std::string& task_float_dtype) {
  int task = dtypeMantissa(task_float_dtype);
  if (task < 0) return false;
  if (cls == "tensor") return task >= dtypeMantissa("float32");
  const ClassInfo* c = classInfo(cls);
  return c && c->mantissa < task;
}

std::string libraryKernelPrecision(const std::string& name) {
  const std::string n = lower(demangle(name));
  // Each marker with the class it states; a name may carry several (an
  // fp16 GEMM with fp32 accumulation: f16f16_f16f32_f32), the narrowest wins.
  static const std::vector<std::pair<std::regex, const char*>> markers = [] {
    std::vector<std::pair<std::regex, const char*>> m;
    auto add = [&](const char* re, const char* cls) { m.emplace_back(std::regex(re), cls); };
    add(R"(e2m1|nvfp4|mxfp4|fp4)", "fp4");
    add(R"(e4m3|e5m2|fp8|qgmma|f8f6f4)", "fp8");
    add(R"(int8|imma|igmma|i8i8|i8i32|(^|[^a-z0-9])i(8816|16832)|igemm|(^|[^a-z0-9])[su]8([^a-z0-9]|$))", "int8");
    add(R"(bf16|bfloat16)", "bf16");
    add(R"((^|[^b])f16|fp16|half|hmma|hgemm|(^|[^a-z0-9])h(884|1688|16816|32816)|(^|[^a-z0-9])s(884|16816)gemm)",
        "fp16");
    add(R"(tf32|xf32|(^|[^a-z0-9])s168[48])", "tf32");
    add(R"(sgemm|simt|ffma|scudnn|f32f32_f32f32|(^|[^a-z0-9])float([^a-z0-9]|$))", "fp32");
    add(R"(dgemm|dmma|(^|[^a-z0-9])d884|f64|fp64|(^|[^a-z0-9])double([^a-z0-9]|$))", "fp64");
    return m;
  }();
  std::string found = nvjetClass(n);
  if (found.empty()) found = "unknown";
  for (const auto& [re, cls] : markers)
    if (std::regex_search(n, re)) found = narrowerPrecision(found, cls);
  // Tensor-core math whose operand type the name does not state.
  static const std::regex tensor(R"(tensorop|gmma|(^|[^a-z0-9])mma([^a-z0-9]|$))");
  if (found == "unknown" && std::regex_search(n, tensor)) found = "tensor";
  return found;
}

PrecisionPolicy PrecisionPolicy::fromJson(const Json& c) {
  PrecisionPolicy p;
  auto str = [&](const char* k) { return c.contains(k) && c[k].is_string() ? c[k].get<std::string>() : std::string(); };
  p.contract = str("name").empty() ? p.contract : str("name");
  p.source = str("source").empty() ? p.source : str("source");
  p.atol = c.value("atol", p.atol);
  p.rtol = c.value("rtol", p.rtol);
  p.reduced_precision_allowed = c.value("reduced_precision_allowed", p.contract == "paper");
  p.task_float_dtype = str("task_float_dtype");
  p.note = str("note");
  return p;
}

Json KernelPrecision::toJson() const {
  Json j;
  j["name"] = name;
  j["origin"] = origin;
  j["library"] = library.empty() ? Json(nullptr) : Json(library);
  j["class"] = cls;
  j["source"] = source;
  j["sass"] = sass.empty() ? Json(nullptr) : Json(sass);
  j["reduced"] = reduced;
  return j;
}

Json PrecisionReport::toJson() const {
  Json j;
  Json c;
  c["name"] = policy.contract;
  c["source"] = policy.source;
  c["atol"] = policy.atol;
  c["rtol"] = policy.rtol;
  c["reduced_precision_allowed"] = policy.reduced_precision_allowed;
  c["task_float_dtype"] = policy.task_float_dtype.empty() ? Json(nullptr) : Json(policy.task_float_dtype);
  c["note"] = policy.note.empty() ? Json(nullptr) : Json(policy.note);
  j["contract"] = c;
  j["candidate_class"] = candidate_class;
  j["ok"] = ok();
  Json k = Json::array();
  for (const auto& x : kernels) k.push_back(x.toJson());
  j["kernels"] = k;
  Json f = Json::array();
  for (const auto& x : findings) f.push_back(x.toJson());
  j["findings"] = f;
  j["sass"] = sass_status;
  return j;
}

std::string PrecisionReport::summary(std::size_t max_kernels) const {
  char tol[96];
  std::snprintf(tol, sizeof tol, "atol %g, rtol %g", policy.atol, policy.rtol);
  std::string out = "precision: " + policy.contract + " contract (" + policy.source + ", " + tol +
                    (policy.reduced_precision_allowed ? ", any math" : ", no reduced-precision library math") + ")";
  if (kernels.empty()) return out;
  out += "; candidate kernels: " + candidate_class + " (";
  for (std::size_t i = 0; i < kernels.size() && i < max_kernels; ++i) {
    const auto& k = kernels[i];
    std::string name = k.name.substr(0, k.name.find('('));
    if (name.size() > 48) name = name.substr(0, 45) + "...";
    out += (i ? "; " : "") + name + ": " + k.cls + ", " + (k.source == "name" ? "by name" : k.source == "sass" ? "SASS" : "not known");
  }
  if (kernels.size() > max_kernels) out += "; +" + std::to_string(kernels.size() - max_kernels) + " more";
  return out + ")";
}

PrecisionReport judgePrecision(const std::vector<Activity>& activities, const std::set<std::string>& own_kernels,
                               const PrecisionPolicy& policy, const std::map<std::string, SassKernel>& own_sass,
                               const std::string& sass_status, std::size_t max_findings) {
  PrecisionReport r;
  r.policy = policy;
  r.sass_status = sass_status;
  std::set<std::string> own_normalized;
  for (const auto& k : own_kernels) own_normalized.insert(normalizedKernelName(k));
  std::set<std::string> seen;
  std::size_t reduced_library = 0;
  for (const auto& a : activities) {
    if (a.owner < 0 || a.kind != ActivityKind::Kernel || !seen.insert(a.name).second) continue;
    if (!kernelFramework(a.name).empty()) continue;  // provenance refuses these
    KernelPrecision k;
    k.name = demangle(a.name);
    std::string normalized = normalizedKernelName(a.name);
    if (own_kernels.count(a.name) || own_normalized.count(normalized)) {
      k.origin = "own";
      auto it = own_sass.find(normalized);
      if (it != own_sass.end()) {
        k.cls = it->second.cls;
        k.source = "sass";
        for (const auto& op : it->second.opcodes) k.sass += (k.sass.empty() ? "" : " ") + op;
      } else {
        k.cls = "unknown";
        k.source = "none";
      }
    } else {
      k.library = kernelLibrary(a.name);
      k.origin = k.library.empty() ? "other" : "library";
      k.cls = libraryKernelPrecision(a.name);
      k.source = "name";
    }
    k.reduced = isReducedPrecision(k.cls, policy.task_float_dtype);
    if (k.cls != "unknown") r.candidate_class = narrowerPrecision(r.candidate_class, k.cls);
    if (k.origin == "library" && k.reduced && !policy.reduced_precision_allowed) {
      std::string shown = k.name.size() > 200 ? k.name.substr(0, 197) + "..." : k.name;
      if (reduced_library++ < max_findings)
        r.findings.push_back({"reduced-precision",
                              "library kernel " + shown + " computes in " + k.cls + ", narrower than the task's " +
                                  policy.task_float_dtype + "; the " + policy.contract +
                                  " precision contract allows no reduced-precision library math"});
    }
    r.kernels.push_back(std::move(k));
  }
  if (reduced_library > max_findings)
    r.findings.push_back({"reduced-precision", "... and " + std::to_string(reduced_library - max_findings) + " more"});
  return r;
}

}  // namespace kb::profile
