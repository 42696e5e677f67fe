#include "rl/metrics.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace kb::rl {

Json finiteOrNull(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

MetricsWriter::MetricsWriter(const std::filesystem::path& path, int64_t keep_through_step) {
  if (path.empty()) return;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::string kept;
  if (keep_through_step >= 0) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
          j["step"].get<int64_t>() <= keep_through_step)
        kept += line + "\n";
    }
  }
  file_ = std::fopen(path.c_str(), "w");
  if (file_ && !kept.empty()) {
    std::fwrite(kept.data(), 1, kept.size(), file_);
    std::fflush(file_);
  }
  if (!file_) throw UsageError("cannot write metrics file " + path.string());
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

void MetricsWriter::write(const Json& record) {
  if (!file_) return;
  Json clean = record;
  for (auto& [k, v] : clean.items())
    if (v.is_number_float() && !std::isfinite(v.get<double>())) v = nullptr;
  const std::string line = clean.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

std::string progressLine(const Json& r) {
  std::string s = r.value("stage", "") + " step " + std::to_string(r.value("step", 0)) + "/" +
                  std::to_string(r.value("steps", 0));
  char buf[64];
  for (const char* k : {"loss", "nll", "mean_reward", "entropy", "approx_kl", "clip_frac", "value_loss",
                        "explained_var", "grad_norm"}) {
    if (!r.contains(k) || !r[k].is_number()) continue;
    std::snprintf(buf, sizeof buf, " %s %.4g", k, r[k].get<double>());
    s += buf;
  }
  if (r.contains("tokens_per_s") && r["tokens_per_s"].is_number()) {
    std::snprintf(buf, sizeof buf, " %.0f tok/s", r["tokens_per_s"].get<double>());
    s += buf;
  }
  return s;
}

}  // namespace kb::rl
