#include "task/precision.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace kb::task {
namespace {

// Explicit mantissa bits: what "narrower" means between floating dtypes.
int mantissaBits(const std::string& dtype) {
  if (dtype == "float64") return 52;
  if (dtype == "float32") return 23;
  if (dtype == "float16") return 10;
  if (dtype == "bfloat16") return 7;
  return -1;  // not floating
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string narrowestFloatDtype(const TaskInfo& info) {
  std::string best;
  auto consider = [&](const std::string& dtype) {
    int bits = mantissaBits(dtype);
    if (bits >= 0 && (best.empty() || bits < mantissaBits(best))) best = dtype;
  };
  for (const auto& i : info.inputs)
    if (i.kind == "tensor") consider(i.dtype);
  for (const auto& o : info.outputs) consider(o.dtype);
  for (const auto& s : info.state) consider(s.dtype);
  return best;
}

std::string defaultPrecision(const TaskInfo& info) {
  std::string narrowest = narrowestFloatDtype(info);
  return narrowest.empty() || mantissaBits(narrowest) >= mantissaBits("float32") ? "strict" : "paper";
}

PrecisionContract resolveContract(const TaskInfo& info, std::optional<std::string> override) {
  PrecisionContract c;
  c.task_float_dtype = narrowestFloatDtype(info);
  if (override) {
    if (*override != "strict" && *override != "paper")
      throw UsageError("precision contract must be \"strict\" or \"paper\", not \"" + *override + "\"");
    c.name = *override;
    c.source = "override";
  } else if (!info.precision_declared.empty()) {
    c.name = info.precision_declared;
    c.source = "task";
  } else {
    c.name = defaultPrecision(info);
    c.source = "default";
  }
  const double tol = c.name == "strict" ? kStrictTolerance : kPaperTolerance;
  c.reduced_precision_allowed = c.name == "paper";
  c.atol = std::min(tol, info.tolerance_atol.value_or(tol));
  c.rtol = std::min(tol, info.tolerance_rtol.value_or(tol));
  bool looser = info.tolerance_atol.value_or(0) > tol || info.tolerance_rtol.value_or(0) > tol;
  if (looser)
    c.note = "task.json tolerance (atol " + num(info.tolerance_atol.value_or(tol)) + ", rtol " +
             num(info.tolerance_rtol.value_or(tol)) + ") is looser than the " + c.name + " contract's " + num(tol) +
             " and is not used (a stated tolerance can only tighten the contract)";
  return c;
}

Json PrecisionContract::toJson() const {
  Json j;
  j["name"] = name;
  j["source"] = source;
  j["atol"] = atol;
  j["rtol"] = rtol;
  j["reduced_precision_allowed"] = reduced_precision_allowed;
  j["task_float_dtype"] = task_float_dtype.empty() ? Json(nullptr) : Json(task_float_dtype);
  j["note"] = note.empty() ? Json(nullptr) : Json(note);
  return j;
}

}  // namespace kb::task
