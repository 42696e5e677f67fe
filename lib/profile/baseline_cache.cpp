#include "profile/baseline_cache.h"

#include <unistd.h>

#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/hash.h"

namespace fs = std::filesystem;

namespace kb::profile {
namespace {

std::string clean(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return out.empty() ? "none" : out;
}

}  // namespace

std::string timingMethodName(double head_start_us) {
  // v3: the baselines run in full float32 (task::useFullFloat32; before it,
  // LibTorch's eager convolutions and RNNs ran in TF32 on the GPU).
  if (head_start_us <= 0) return "events+l2flush+fp32/v3";
  return "events+l2flush+headstart" + std::to_string(static_cast<long long>(head_start_us)) + "us+fp32/v3";
}

std::string baselineKindsName(const std::string& eager, const std::string& compile) {
  return eager + "+" + (compile.empty() ? "none" : compile);
}

Json baselineKeyJson(const BaselineKey& key) {
  Json j{{"task_hash", key.task_hash}, {"gpu", key.gpu}, {"driver", key.driver},
         {"torch_version", key.torch_version}, {"method", key.method}};
  // Entries written before the baselines had kinds are LibTorch and AOTInductor's.
  if (key.baselines != baselineKindsName("libtorch", "aoti")) j["baselines"] = key.baselines;
  if (!key.model_hash.empty()) j["model_hash"] = key.model_hash;
  return j;
}

bool kindsRunModelPy(const std::string& kinds) { return kinds.find("python") != std::string::npos; }

std::string modelSourceHash(const fs::path& task_dir) {
  std::ifstream in(task_dir / "model.py", std::ios::binary);
  if (!in) return "";
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return "sha256:" + sha256Hex(bytes);
}

fs::path baselineCacheFile(const fs::path& dir, const BaselineKey& key) {
  std::string hash = key.task_hash.substr(key.task_hash.find(':') == std::string::npos ? 0 : key.task_hash.find(':') + 1);
  std::string kinds = key.baselines == baselineKindsName("libtorch", "aoti") ? "" : "-" + clean(key.baselines);
  return dir / (clean(hash.substr(0, 16)) + "-" + clean(key.gpu) + "-" + clean(key.driver) + "-" +
                clean(key.torch_version) + kinds + ".json");
}

std::optional<Json> readBaselineCache(const fs::path& dir, const BaselineKey& key) {
  fs::path file = baselineCacheFile(dir, key);
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  try {
    Json entry = readJsonFile(file);
    if (!entry.is_object() || entry.value("key", Json()) != baselineKeyJson(key)) return std::nullopt;
    return entry;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void writeBaselineCache(const fs::path& dir, const BaselineKey& key, const Json& entry) {
  fs::create_directories(dir);
  fs::path file = baselineCacheFile(dir, key);
  fs::path tmp = file;
  tmp += ".tmp." + std::to_string(::getpid());
  Json e = entry;
  e["key"] = baselineKeyJson(key);
  writeJsonFile(tmp, e);
  fs::rename(tmp, file);
}

std::string taskContentHash(const fs::path& task_dir, const std::string& arch) {
  Sha256 h;
  for (const fs::path& rel : {fs::path("task.json"), fs::path("reference.pt"), fs::path("inputs.pt"),
                             fs::path("compiled") / (arch + ".pt2")}) {
    std::ifstream in(task_dir / rel, std::ios::binary);
    if (!in) continue;
    // Large files (weights, compiled packages of hundreds of MB): their size
    // and their first and last MiB, so that a profile does not re-read them.
    std::error_code ec;
    uint64_t size = fs::file_size(task_dir / rel, ec);
    h.update(rel.string());
    h.update(std::to_string(size));
    constexpr uint64_t kWhole = 16u << 20, kPart = 1u << 20;
    std::string bytes(size <= kWhole ? size : kPart, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    h.update(bytes);
    if (size > kWhole) {
      in.seekg(static_cast<std::streamoff>(size - kPart));
      in.read(bytes.data(), static_cast<std::streamsize>(kPart));
      h.update(bytes);
    }
  }
  return "sha256:" + h.hexDigest();
}

}  // namespace kb::profile
