#include "rl/checkpoint_diff.h"

#include <map>

#include "core/error.h"
#include "llm/model.h"

namespace fs = std::filesystem;

namespace kb::rl {

// max |a - b| over the tensors of each *.safetensors file the two share.
Json checkpointDiff(const fs::path& a, const fs::path& b) {
  Json files = Json::object();
  double overall = 0;
  for (const auto& entry : fs::directory_iterator(a)) {
    if (entry.path().extension() != ".safetensors" || !fs::exists(b / entry.path().filename())) continue;
    std::map<std::string, at::Tensor> ta;
    for (auto& [n, t] : llm::readTensors(entry.path())) ta[n] = t;
    double m = 0;
    size_t n = 0;
    for (auto& [name, t] : llm::readTensors(b / entry.path().filename())) {
      if (!ta.count(name)) throw Error("tensor " + name + " is only in " + b.string());
      m = std::max(m, (ta[name].to(at::kDouble) - t.to(at::kDouble)).abs().max().item<double>());
      ++n;
    }
    if (n != ta.size()) throw Error(entry.path().filename().string() + ": the checkpoints hold different tensors");
    files[entry.path().filename().string()] = m;
    overall = std::max(overall, m);
  }
  if (files.empty()) throw UsageError("no safetensors file in common between " + a.string() + " and " + b.string());
  return {{"max_abs_diff", overall}, {"files", files}};
}

}  // namespace kb::rl
