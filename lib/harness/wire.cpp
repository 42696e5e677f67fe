#include "harness/wire.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "kb/solution.h"

namespace kb {
namespace {

constexpr char kMagic[4] = {'K', 'B', 'W', '1'};
constexpr uint32_t kMaxHeader = 16u << 20;

bool writeAll(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

std::size_t dtypeSize(int32_t dtype) {
  switch (dtype) {
    case KB_FLOAT32: return 4;
    case KB_FLOAT16: return 2;
    case KB_BFLOAT16: return 2;
    case KB_FLOAT64: return 8;
    case KB_INT8: return 1;
    case KB_UINT8: return 1;
    case KB_INT16: return 2;
    case KB_INT32: return 4;
    case KB_INT64: return 8;
    case KB_BOOL: return 1;
    default: return 0;
  }
}

std::string dtypeName(int32_t dtype) {
  switch (dtype) {
    case KB_FLOAT32: return "float32";
    case KB_FLOAT16: return "float16";
    case KB_BFLOAT16: return "bfloat16";
    case KB_FLOAT64: return "float64";
    case KB_INT8: return "int8";
    case KB_UINT8: return "uint8";
    case KB_INT16: return "int16";
    case KB_INT32: return "int32";
    case KB_INT64: return "int64";
    case KB_BOOL: return "bool";
    default: return "dtype#" + std::to_string(dtype);
  }
}

bool writeRecord(int fd, const Json& header, const std::string& payload) {
  std::string h = header.dump();
  uint32_t hl = static_cast<uint32_t>(h.size());
  uint64_t pl = payload.size();
  return writeAll(fd, kMagic, 4) && writeAll(fd, &hl, 4) && writeAll(fd, h.data(), h.size()) &&
         writeAll(fd, &pl, 8) && writeAll(fd, payload.data(), payload.size());
}

std::vector<WireRecord> readRecords(const std::filesystem::path& path, std::string* problem, bool headers_only) {
  std::vector<WireRecord> out;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *problem = "no result channel file " + path.string();
    return out;
  }
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  uint64_t pos = 0;
  while (pos < size) {
    char magic[4];
    uint32_t hl = 0;
    if (size - pos < 8 || !in.read(magic, 4) || std::memcmp(magic, kMagic, 4) != 0 ||
        !in.read(reinterpret_cast<char*>(&hl), 4)) {
      *problem = "malformed record at byte " + std::to_string(pos);
      return out;
    }
    pos += 8;
    if (hl > kMaxHeader || hl > size - pos) {
      *problem = "record header of " + std::to_string(hl) + " bytes at byte " + std::to_string(pos);
      return out;
    }
    std::string h(hl, '\0');
    in.read(h.data(), hl);
    pos += hl;
    uint64_t pl = 0;
    if (size - pos < 8 || !in.read(reinterpret_cast<char*>(&pl), 8)) {
      *problem = "truncated record at byte " + std::to_string(pos);
      return out;
    }
    pos += 8;
    if (pl > size - pos) {
      *problem = "record payload of " + std::to_string(pl) + " bytes, " +
                 std::to_string(size - pos) + " left";
      return out;
    }
    WireRecord r;
    if (headers_only) {
      in.seekg(static_cast<std::streamoff>(pl), std::ios::cur);
    } else {
      r.payload.resize(pl);
      in.read(r.payload.data(), static_cast<std::streamsize>(pl));
    }
    pos += pl;
    try {
      r.header = Json::parse(h);
    } catch (const std::exception& e) {
      *problem = std::string("record header is not JSON: ") + e.what();
      return out;
    }
    if (!r.header.is_object() || !r.header.contains("type") || !r.header["type"].is_string()) {
      *problem = "record header without a type";
      return out;
    }
    out.push_back(std::move(r));
  }
  return out;
}

Json tensorHeader(const WireTensor& t) {
  Json j;
  j["dtype"] = t.dtype;
  j["sizes"] = t.sizes;
  j["nbytes"] = t.bytes.size();
  j["data_ptr"] = t.data_ptr;
  j["storage_bytes"] = t.storage_bytes;
  return j;
}

std::vector<WireTensor> takeTensors(const Json& list, const std::string& payload,
                                    std::size_t* offset) {
  std::vector<WireTensor> out;
  if (!list.is_array()) throw Error("tensor list is not an array");
  for (const auto& d : list) {
    WireTensor t;
    t.dtype = d.at("dtype").get<int32_t>();
    t.sizes = d.at("sizes").get<std::vector<int64_t>>();
    t.data_ptr = d.value("data_ptr", uint64_t{0});
    t.storage_bytes = d.value("storage_bytes", uint64_t{0});
    uint64_t nbytes = d.at("nbytes").get<uint64_t>();
    std::size_t esize = dtypeSize(t.dtype);
    if (esize == 0) throw Error("unknown dtype " + std::to_string(t.dtype));
    if (t.sizes.size() > KB_MAX_DIMS) throw Error("too many dimensions");
    uint64_t total = esize;
    for (int64_t s : t.sizes) {
      if (s < 0) throw Error("negative size");
      if (__builtin_mul_overflow(total, static_cast<uint64_t>(s), &total))
        throw Error("shape overflows");
    }
    if (total != nbytes) throw Error("byte count does not match shape and dtype");
    if (nbytes > payload.size() - *offset) throw Error("payload too short");
    t.bytes = payload.substr(*offset, nbytes);
    *offset += nbytes;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace kb
