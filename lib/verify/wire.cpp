#include "verify/wire.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <set>

#include "core/error.h"
#include "kb/solution.h"

namespace kb::verify {
namespace {

constexpr char kMagic[4] = {'K', 'B', 'W', '1'};
constexpr uint32_t kMaxHeader = 16u << 20;

// An integer that is not negative, as parsed or as built.
bool isCount(const Json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0); }

bool endsWith(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A CUPTI activity as timing.cpp writes it (profile/provenance.h
// Activity::toJson): [kind, name, stream, start, end, bytes, owner, thread,
// external?, graph?], owner the only signed one.
std::string activityProblem(const Json& a) {
  if (!a.is_array() || a.size() < 8 || a.size() > 10) return "an activity that is not an array of 8 to 10 fields";
  if (!a[0].is_string() || !a[1].is_string()) return "an activity without a kind and a name";
  for (size_t i = 2; i < a.size(); ++i) {
    if (i == 6 ? !a[i].is_number_integer() : !isCount(a[i]))
      return "an activity's field " + std::to_string(i) + " is not an integer of its kind";
  }
  return "";
}

}  // namespace

// Every field the parent reads has one kind whatever the record (a name
// means one thing on this channel), so a header is checked by its fields'
// names; a record of a type the harness never writes is refused too.
std::string recordProblem(const Json& h) {
  if (!h.is_object() || !h.contains("type") || !h["type"].is_string()) return "record header without a type";
  static const std::set<std::string> kTypes = {"hello",   "init",   "seed",   "done",      "violation",
                                               "timing",  "commit", "activities", "baselines", "verdict"};
  const std::string& type = h["type"].get_ref<const std::string&>();
  if (!kTypes.count(type)) return "a record of type \"" + type.substr(0, 40) + "\", which the harness never writes";
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    std::string want;
    if (k == "seed" || k == "candidate") want = isCount(v) ? "" : "an unsigned integer";
    else if (k == "call" || k == "index") want = v.is_number_integer() ? "" : "an integer";
    else if (k == "ok") want = v.is_boolean() ? "" : "a boolean";
    else if (k == "message" || k == "kind" || k == "status") want = v.is_string() ? "" : "a string";
    else if (k == "seconds" || endsWith(k, "_seconds") || endsWith(k, "_ms") || endsWith(k, "_us") ||
             endsWith(k, "_gbps"))
      want = v.is_number() || v.is_null() ? "" : "a number";
    else if (k == "state_digests" || k == "parts" || k == "phases" || k == "startup_phases")
      want = v.is_object() ? "" : "an object";
    else if (k == "activities") {
      if (!v.is_array()) want = "an array";
      else
        for (const Json& a : v)
          if (std::string p = activityProblem(a); !p.empty()) return "a " + type + " record with " + p;
    }
    if (!want.empty()) return "a " + type + " record whose \"" + k + "\" is not " + want;
  }
  return "";
}

namespace {

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

namespace {

// The record's header and payload length (magic, header length, header,
// payload length); with `written`, the header is padded so that the payload
// starts on a 64-byte boundary of the channel.
std::string recordPrefix(const Json& header, uint64_t payload_bytes, const uint64_t* written) {
  std::string h = header.dump();
  if (written) {
    uint64_t start = *written + 4 + 4 + h.size() + 8;
    h.append(static_cast<std::size_t>((64 - start % 64) % 64), ' ');
  }
  const uint32_t hl = static_cast<uint32_t>(h.size());
  std::string prefix(kMagic, 4);
  prefix.append(reinterpret_cast<const char*>(&hl), 4);
  prefix += h;
  prefix.append(reinterpret_cast<const char*>(&payload_bytes), 8);
  return prefix;
}

// Writes every byte of `iov` (advanced in place); false on a write error.
bool writeAll(int fd, std::vector<struct iovec>& iov) {
  std::size_t first = 0;
  while (first < iov.size()) {
    int count = static_cast<int>(std::min<std::size_t>(iov.size() - first, IOV_MAX));
    ssize_t w = ::writev(fd, iov.data() + first, count);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    // Skip what was written, possibly part of one buffer.
    auto left = static_cast<std::size_t>(w);
    while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return true;
}

}  // namespace

bool writeRecord(int fd, const Json& header, const std::vector<std::string_view>& parts, uint64_t* written) {
  uint64_t pl = 0;
  for (const auto& part : parts) pl += part.size();
  std::string prefix = recordPrefix(header, pl, written);
  std::vector<struct iovec> iov;
  iov.push_back({prefix.data(), prefix.size()});
  for (const auto& part : parts)
    if (!part.empty()) iov.push_back({const_cast<char*>(part.data()), part.size()});
  if (!writeAll(fd, iov)) return false;
  if (written) *written += prefix.size() + pl;
  return true;
}

bool writeRecordStreamed(int fd, const Json& header, uint64_t payload_bytes,
                         const std::function<std::string_view()>& next, uint64_t* written) {
  std::string prefix = recordPrefix(header, payload_bytes, written);
  std::vector<struct iovec> iov{{prefix.data(), prefix.size()}};
  if (!writeAll(fd, iov)) return false;
  for (uint64_t sent = 0; sent < payload_bytes;) {
    std::string_view piece = next();
    if (piece.empty() || piece.size() > payload_bytes - sent) return false;
    iov = {{const_cast<char*>(piece.data()), piece.size()}};
    if (!writeAll(fd, iov)) return false;
    sent += piece.size();
  }
  if (written) *written += prefix.size() + payload_bytes;
  return true;
}

std::vector<WireRecord> readRecords(const std::filesystem::path& path, std::string* problem, bool headers_only) {
  std::vector<WireRecord> out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *problem = "no result channel file " + path.string();
    return out;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    *problem = "cannot stat " + path.string();
    return out;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return out;
  }
  // The reader of the tensors wants every page: fault them in at once.
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | (headers_only ? 0 : MAP_POPULATE), fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) {
    *problem = "cannot map " + path.string() + ": " + std::strerror(errno);
    return out;
  }
  std::shared_ptr<const void> mapping(base, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  const char* data = static_cast<const char*>(base);
  uint64_t pos = 0;
  while (pos < size) {
    uint32_t hl = 0;
    if (size - pos < 8 || std::memcmp(data + pos, kMagic, 4) != 0) {
      *problem = "malformed record at byte " + std::to_string(pos);
      return out;
    }
    std::memcpy(&hl, data + pos + 4, 4);
    pos += 8;
    if (hl > kMaxHeader || hl > size - pos) {
      *problem = "record header of " + std::to_string(hl) + " bytes at byte " + std::to_string(pos);
      return out;
    }
    std::string_view h(data + pos, hl);
    pos += hl;
    uint64_t pl = 0;
    if (size - pos < 8) {
      *problem = "truncated record at byte " + std::to_string(pos);
      return out;
    }
    std::memcpy(&pl, data + pos, 8);
    pos += 8;
    if (pl > size - pos) {
      *problem = "record payload of " + std::to_string(pl) + " bytes, " +
                 std::to_string(size - pos) + " left";
      return out;
    }
    WireRecord r;
    if (!headers_only) {
      r.payload = std::string_view(data + pos, pl);
      r.mapping = mapping;
    }
    pos += pl;
    try {
      r.header = Json::parse(h);
    } catch (const std::exception& e) {
      *problem = std::string("record header is not JSON: ") + e.what();
      return out;
    }
    if (std::string p = recordProblem(r.header); !p.empty()) {
      *problem = p;
      return out;
    }
    out.push_back(std::move(r));
  }
  return out;
}

bool ChannelTail::poll(std::vector<Json>& headers, std::string* problem) {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // not made yet: nothing has arrived
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return true;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  auto readAt = [&](void* buf, std::size_t n, uint64_t at) {
    std::size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd, static_cast<char*>(buf) + got, n - got, static_cast<off_t>(at + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      got += static_cast<std::size_t>(r);
    }
    return true;
  };
  bool ok = true;
  while (offset_ + 8 <= size) {
    char magic[4];
    uint32_t hl = 0;
    if (!readAt(magic, 4, offset_) || !readAt(&hl, 4, offset_ + 4) || std::memcmp(magic, kMagic, 4) != 0 ||
        hl > kMaxHeader) {
      *problem = "malformed record at byte " + std::to_string(offset_);
      ok = false;
      break;
    }
    if (offset_ + 8 + hl + 8 > size) break;  // not whole yet
    std::string h(hl, '\0');
    uint64_t pl = 0;
    if (!readAt(h.data(), hl, offset_ + 8) || !readAt(&pl, 8, offset_ + 8 + hl)) break;
    if (pl > size - (offset_ + 16 + hl)) break;  // the payload is still arriving
    Json header;
    try {
      header = Json::parse(h);
    } catch (const std::exception& e) {
      *problem = std::string("record header is not JSON: ") + e.what();
      ok = false;
      break;
    }
    if (std::string p = recordProblem(header); !p.empty()) {
      *problem = p;
      ok = false;
      break;
    }
    headers.push_back(std::move(header));
    offset_ += 16 + hl + pl;
  }
  ::close(fd);
  return ok;
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

std::vector<WireTensor> takeTensors(const Json& list, std::string_view payload,
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

}  // namespace kb::verify
