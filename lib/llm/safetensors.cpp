#include "llm/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/file.h"
#include "core/json.h"

namespace fs = std::filesystem;

namespace kb::llm {

namespace {

struct DTypeRow {
  DType dtype;
  std::string_view name;
  size_t size;
};
constexpr DTypeRow kDTypes[] = {
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I64, "I64", 8}, {DType::I32, "I32", 4},
    {DType::I16, "I16", 2}, {DType::I8, "I8", 1}, {DType::U8, "U8", 1},
    {DType::Bool, "BOOL", 1},
};

// The largest header we accept (the reference implementation's limit).
constexpr uint64_t kMaxHeader = 100'000'000;

}  // namespace

std::string_view dtypeName(DType dtype) {
  for (const auto& row : kDTypes)
    if (row.dtype == dtype) return row.name;
  return "?";
}

DType parseDType(std::string_view name) {
  for (const auto& row : kDTypes)
    if (row.name == name) return row.dtype;
  throw Error("unsupported safetensors dtype '" + std::string(name) + "'");
}

size_t dtypeSize(DType dtype) {
  for (const auto& row : kDTypes)
    if (row.dtype == dtype) return row.size;
  return 0;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

SafetensorsFile::SafetensorsFile(const fs::path& path) : path_(path) {
  const std::string where = path.string();
  int fd = ::open(where.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open " + where + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error("cannot stat " + where);
  }
  map_size_ = static_cast<size_t>(st.st_size);
  if (map_size_ < 8) {
    ::close(fd);
    throw Error(where + ": not a safetensors file (" + std::to_string(map_size_) + " bytes)");
  }
  map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw Error("cannot map " + where + ": " + std::strerror(errno));
  }
  const char* base = static_cast<const char*>(map_);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | static_cast<unsigned char>(base[i]);
  try {
    if (header_size > kMaxHeader || 8 + header_size > map_size_)
      throw Error(where + ": header length " + std::to_string(header_size) +
                  " does not fit a file of " + std::to_string(map_size_) + " bytes");
    data_ = base + 8 + header_size;
    const uint64_t data_size = map_size_ - 8 - header_size;
    Json header;
    try {
      header = Json::parse(std::string_view(base + 8, header_size));
    } catch (const Json::parse_error& e) {
      throw Error(where + ": invalid JSON header: " + e.what());
    }
    if (!header.is_object()) throw Error(where + ": header is not a JSON object");
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        if (!entry.is_object()) throw Error(where + ": __metadata__ is not an object");
        for (const auto& [k, v] : entry.items())
          metadata_[k] = v.is_string() ? v.get<std::string>() : v.dump();
        continue;
      }
      const std::string ctx = where + ": tensor '" + name + "'";
      if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
          !entry.contains("data_offsets"))
        throw Error(ctx + ": needs dtype, shape and data_offsets");
      TensorInfo info;
      info.name = name;
      try {
        info.dtype = parseDType(entry["dtype"].get<std::string>());
        info.shape = entry["shape"].get<std::vector<int64_t>>();
        auto offsets = entry["data_offsets"].get<std::vector<uint64_t>>();
        if (offsets.size() != 2) throw Error("data_offsets must have two entries");
        info.begin = offsets[0];
        info.end = offsets[1];
      } catch (const Json::exception& e) {
        throw Error(ctx + ": " + e.what());
      } catch (const Error& e) {
        throw Error(ctx + ": " + e.what());
      }
      for (int64_t d : info.shape)
        if (d < 0) throw Error(ctx + ": negative dimension in " + shapeString(info.shape));
      if (info.end < info.begin || info.end > data_size)
        throw Error(ctx + ": data_offsets [" + std::to_string(info.begin) + ", " +
                    std::to_string(info.end) + "] outside the data section of " +
                    std::to_string(data_size) + " bytes");
      const uint64_t expected = static_cast<uint64_t>(info.numel()) * dtypeSize(info.dtype);
      if (info.end - info.begin != expected)
        throw Error(ctx + ": " + std::to_string(info.end - info.begin) + " bytes for shape " +
                    shapeString(info.shape) + " " + std::string(dtypeName(info.dtype)) +
                    " (needs " + std::to_string(expected) + ")");
      if (info.end > info.begin) ranges.emplace_back(info.begin, info.end);
      tensors_.emplace(name, std::move(info));
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
      if (ranges[i].first < ranges[i - 1].second) throw Error(where + ": tensors overlap");
  } catch (...) {
    ::munmap(map_, map_size_);
    map_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, map_size_);
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::string_view SafetensorsFile::bytes(const std::string& name) const {
  const TensorInfo* info = find(name);
  if (!info) throw Error(path_.string() + ": no tensor '" + name + "'");
  return {data_ + info->begin, info->end - info->begin};
}

void writeSafetensors(const fs::path& path, const std::vector<TensorBytes>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (header.contains(t.name)) throw Error(path.string() + ": duplicate tensor '" + t.name + "'");
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    const uint64_t nbytes = static_cast<uint64_t>(numel) * dtypeSize(t.dtype);
    header[t.name] = {{"dtype", dtypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  // In full or not at all: a full disk leaves no partial model file.
  AtomicFile out(path);
  unsigned char len[8];
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xff);
  out.write(len, 8);
  out.write(text);
  for (const auto& t : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    out.write(t.data, static_cast<size_t>(static_cast<uint64_t>(numel) * dtypeSize(t.dtype)));
  }
  out.commit();
}

Checkpoint::Checkpoint(const fs::path& dir) : dir_(dir) {
  if (!fs::is_directory(dir)) throw UsageError("checkpoint directory not found: " + dir.string());
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index)) {
    Json j = readJsonFile(index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw Error(index.string() + ": no weight_map object");
    for (const auto& [name, shard] : j["weight_map"].items()) {
      if (!shard.is_string()) throw Error(index.string() + ": weight_map['" + name + "'] is not a string");
      const std::string file = shard.get<std::string>();
      if (file.find('/') != std::string::npos || file == "..")
        throw Error(index.string() + ": shard name '" + file + "' must be a file in the directory");
      if (!fs::exists(dir / file))
        throw Error(index.string() + ": shard " + file + " (of tensor '" + name + "') is missing");
      where_[name] = file;
    }
    return;
  }
  std::vector<std::string> candidates;
  if (fs::exists(dir / "model.safetensors")) {
    candidates.push_back("model.safetensors");
  } else {
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".safetensors") candidates.push_back(entry.path().filename());
  }
  if (candidates.empty())
    throw UsageError(dir.string() + ": no model.safetensors or model.safetensors.index.json "
                     "(only safetensors checkpoints are read)");
  if (candidates.size() > 1)
    throw UsageError(dir.string() + ": several .safetensors files but no model.safetensors.index.json");
  for (const auto& [name, info] : file(candidates[0]).tensors()) where_[name] = candidates[0];
}

Checkpoint::~Checkpoint() = default;

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, file] : where_) out.push_back(name);
  return out;
}

SafetensorsFile& Checkpoint::file(const std::string& shard) {
  auto it = files_.find(shard);
  if (it == files_.end())
    it = files_.emplace(shard, std::make_unique<SafetensorsFile>(dir_ / shard)).first;
  return *it->second;
}

fs::path Checkpoint::fileOf(const std::string& name) const {
  auto it = where_.find(name);
  return it == where_.end() ? fs::path() : dir_ / it->second;
}

const TensorInfo& Checkpoint::info(const std::string& name) {
  auto it = where_.find(name);
  if (it == where_.end()) throw Error(dir_.string() + ": checkpoint has no tensor '" + name + "'");
  const TensorInfo* info = file(it->second).find(name);
  if (!info)
    throw Error((dir_ / it->second).string() + ": tensor '" + name +
                "' is listed in the index but not in the shard");
  return *info;
}

std::string_view Checkpoint::bytes(const std::string& name) {
  info(name);
  return file(where_.at(name)).bytes(name);
}

}  // namespace kb::llm
