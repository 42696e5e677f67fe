// JSON forms of the comparison's results and request (torch-free: the
// verifying parent reads what the reference worker wrote).
#include "verify/compare.h"

#include <cmath>

#include "task/bundle.h"

namespace kb::verify {
namespace {

// JSON has no NaN or infinity: nlohmann writes them as null; read null back
// as NaN.
double number(const Json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nan("");
  return j[key].get<double>();
}

}  // namespace

Json OutputCheck::toJson() const {
  Json j;
  j["index"] = index;
  j["dtype"] = dtype;
  j["expected_dtype"] = expected_dtype;
  j["shape"] = shape;
  j["expected_shape"] = expected_shape;
  j["elements"] = elements;
  j["mismatches"] = mismatches;
  j["nonfinite_unexpected"] = nonfinite_unexpected;
  j["max_abs_error"] = max_abs_error;
  j["max_rel_error"] = max_rel_error;
  j["worst_index"] = worst_index.empty() ? Json(nullptr) : Json(worst_index);
  j["worst_candidate"] = worst_index.empty() ? Json(nullptr) : Json(worst_candidate);
  j["worst_reference"] = worst_index.empty() ? Json(nullptr) : Json(worst_reference);
  j["problem"] = problem.empty() ? Json(nullptr) : Json(problem);
  return j;
}

Json SeedCheck::toJson() const {
  Json j;
  j["seed"] = seed;
  // Which inputs the seed had (task/bundle.h):
  // get_inputs' own draw, or a domain draw beyond it, of generator_seed
  // (readable where a JSON reader rounds 2^63 + s to a double).
  j["draw"] = task::isDomainSeed(seed) ? "domain" : "generator";
  j["generator_seed"] = task::generatorSeed(seed);
  j["status"] = std::string(statusName(status));
  j["message"] = message;
  j["forward_seconds"] = forward_seconds;
  j["timed_call"] = timed_call >= 0 ? Json(timed_call) : Json(nullptr);
  Json outs = Json::array();
  for (const auto& o : outputs) outs.push_back(o.toJson());
  j["outputs"] = outs;
  return j;
}

Json CompareRequest::toJson() const {
  Json j;
  j["task_dir"] = task_dir.string();
  j["device"] = device;
  j["seeds"] = seeds;
  j["atol"] = atol;
  j["rtol"] = rtol;
  Json files = Json::array();
  for (const auto& f : candidate_results) files.push_back(f.string());
  j["candidate_results"] = files;
  j["calls"] = calls;
  return j;
}

CompareRequest CompareRequest::fromJson(const Json& j) {
  CompareRequest r;
  r.task_dir = j.at("task_dir").get<std::string>();
  r.device = j.at("device").get<std::string>();
  r.seeds = j.at("seeds").get<std::vector<uint64_t>>();
  r.atol = j.at("atol").get<double>();
  r.rtol = j.at("rtol").get<double>();
  for (const auto& f : j.at("candidate_results")) r.candidate_results.push_back(f.get<std::string>());
  r.calls = j.value("calls", std::vector<uint64_t>{});
  return r;
}

OutputCheck OutputCheck::fromJson(const Json& j) {
  OutputCheck o;
  o.index = j.value("index", 0);
  o.dtype = j.value("dtype", "");
  o.expected_dtype = j.value("expected_dtype", "");
  if (j.contains("shape")) o.shape = j["shape"].get<std::vector<int64_t>>();
  if (j.contains("expected_shape")) o.expected_shape = j["expected_shape"].get<std::vector<int64_t>>();
  o.elements = j.value("elements", uint64_t{0});
  o.mismatches = j.value("mismatches", uint64_t{0});
  o.nonfinite_unexpected = j.value("nonfinite_unexpected", uint64_t{0});
  o.max_abs_error = number(j, "max_abs_error");
  o.max_rel_error = number(j, "max_rel_error");
  if (j.contains("worst_index") && j["worst_index"].is_array()) {
    o.worst_index = j["worst_index"].get<std::vector<int64_t>>();
    o.worst_candidate = number(j, "worst_candidate");
    o.worst_reference = number(j, "worst_reference");
  }
  if (j.contains("problem") && j["problem"].is_string()) o.problem = j["problem"].get<std::string>();
  return o;
}

SeedCheck SeedCheck::fromJson(const Json& j) {
  SeedCheck s;
  s.seed = j.value("seed", uint64_t{0});
  s.status = parseStatus(j.value("status", "infra_error")).value_or(Status::InfraError);
  s.message = j.value("message", "");
  s.forward_seconds = number(j, "forward_seconds");
  if (j.contains("timed_call") && j["timed_call"].is_number_integer()) s.timed_call = j["timed_call"].get<int64_t>();
  if (j.contains("outputs"))
    for (const auto& o : j["outputs"]) s.outputs.push_back(OutputCheck::fromJson(o));
  return s;
}

}  // namespace kb::verify
