#include "core/report.h"

#include <array>
#include <chrono>
#include <ctime>
#include <utility>

#include "kb_config.h"

namespace kb {
namespace {

constexpr std::array<std::pair<Status, std::string_view>, 9> kStatusNames{{
    {Status::Ok, "ok"},
    {Status::StaticViolation, "static_violation"},
    {Status::CompileError, "compile_error"},
    {Status::RuntimeError, "runtime_error"},
    {Status::Timeout, "timeout"},
    {Status::Crash, "crash"},
    {Status::Incorrect, "incorrect"},
    {Status::HackDetected, "hack_detected"},
    {Status::InfraError, "infra_error"},
}};

Json orNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

}  // namespace

std::string_view statusName(Status status) {
  for (const auto& [s, name] : kStatusNames)
    if (s == status) return name;
  return "infra_error";
}

std::optional<Status> parseStatus(std::string_view name) {
  for (const auto& [s, n] : kStatusNames)
    if (n == name) return s;
  return std::nullopt;
}

std::string nowIso8601() {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t t = system_clock::to_time_t(now);
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms));
  return out;
}

Json headerToJson(const ReportHeader& h) {
  Json j;
  j["tool"] = h.tool;
  j["stage"] = orNull(h.stage);
  j["version"] = KB_VERSION;
  j["task_id"] = orNull(h.task_id);
  j["solution_hash"] = orNull(h.solution_hash);
  j["gpu"] = orNull(h.gpu);
  j["driver"] = orNull(h.driver);
  j["torch_version"] = orNull(h.torch_version);
  j["started_at"] = orNull(h.started_at);
  j["finished_at"] = orNull(h.finished_at);
  j["status"] = std::string(statusName(h.status));
  return j;
}

}  // namespace kb
