// Safetensors files and Hugging Face checkpoints, without torch.
//
// A .safetensors file is: 8 bytes (little-endian u64) N, then N bytes of JSON
// header, then the raw tensor bytes. The header maps each tensor name to
// {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]} (offsets are
// relative to the end of the header, row-major, little-endian), plus an
// optional "__metadata__" object of string -> string.
//
// A checkpoint directory holds either model.safetensors, or shards named by
// model.safetensors.index.json ({"weight_map": {tensor name: shard file}}).
// docs/policy-model.md describes both.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kb::llm {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };

std::string_view dtypeName(DType dtype);  // "F32", "BF16", ... as in the header
DType parseDType(std::string_view name);  // throws kb::Error for unknown names
size_t dtypeSize(DType dtype);

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
  int64_t numel() const;
};

std::string shapeString(const std::vector<int64_t>& shape);  // "[64, 128]"

// One file, memory-mapped read-only. The header is validated on open: sizes
// within the file, byte counts equal to numel * dtype size, no overlaps.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const TensorInfo* find(const std::string& name) const;
  // The raw bytes of one tensor (throws kb::Error naming file and tensor).
  std::string_view bytes(const std::string& name) const;

 private:
  std::filesystem::path path_;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
  const char* data_ = nullptr;  // start of the data section
  void* map_ = nullptr;
  size_t map_size_ = 0;
};

// Raw bytes of a tensor to write.
struct TensorBytes {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // numel * dtypeSize(dtype) bytes, row-major
};

// Writes one .safetensors file (tensors in the order given, header padded
// with spaces to a multiple of 8 bytes, as the reference writer does).
void writeSafetensors(const std::filesystem::path& path, const std::vector<TensorBytes>& tensors,
                      const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// All tensors of a checkpoint directory: model.safetensors or the shards of
// model.safetensors.index.json (a single other *.safetensors file is accepted
// too). Files are opened on first use.
class Checkpoint {
 public:
  explicit Checkpoint(const std::filesystem::path& dir);
  ~Checkpoint();

  const std::filesystem::path& dir() const { return dir_; }
  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  // Info and bytes of one tensor; throws kb::Error if absent.
  const TensorInfo& info(const std::string& name);
  std::string_view bytes(const std::string& name);
  std::filesystem::path fileOf(const std::string& name) const;

 private:
  SafetensorsFile& file(const std::string& shard);
  std::filesystem::path dir_;
  std::map<std::string, std::string> where_;  // tensor -> shard file name
  std::map<std::string, std::unique_ptr<SafetensorsFile>> files_;
};

}  // namespace kb::llm
