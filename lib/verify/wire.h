// What the worker sends back to the harness over its result channel (fd 3),
// torch-free on both ends: a sequence of records, each a JSON header and a
// binary payload.
//
//   record  := "KBW1" u32:header_len header(JSON) u64:payload_len payload
//
// Record types (header "type"): "hello" (start-up done, confinement
// applied), "init" (the init hook's outcome), "seed" (one forward: its
// outputs and its inputs after the call, whose bytes are the payload, in
// the order the header lists them), "done". docs/kbcheck-build-verify.md
// lists every field. The parent reads the channel only after the worker
// has ended, from a file bounded in size, and trusts nothing in it: every
// length is checked against what remains and against the limits.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"

namespace kb::verify {

// A tensor as it crossed the wire: contiguous bytes plus shape and dtype.
// The bytes are a view: of the sender's host copy, or of the record's
// payload on the reading side (valid while that record lives).
struct WireTensor {
  int32_t dtype = 0;             // kb_dtype
  std::vector<int64_t> sizes;
  std::string_view bytes;        // numel * element size bytes
  uint64_t data_ptr = 0;         // where it lived in the worker
  uint64_t storage_bytes = 0;    // the extent of its storage there
};

struct WireRecord {
  Json header;
  std::string_view payload;             // into the mapped file (empty with headers_only)
  std::shared_ptr<const void> mapping;  // keeps `payload` readable
};

// Element size of a kb_dtype; 0 for an unknown one.
std::size_t dtypeSize(int32_t dtype);
// "float32", ... ; "dtype#N" for an unknown one.
std::string dtypeName(int32_t dtype);

// Writes one record to `fd`, its payload the concatenation of `parts`
// (written with writev, no copy); false on a write error. With `written`
// (the bytes already on this channel, advanced here) the header is padded
// with spaces so that the payload starts on a 64-byte boundary of the
// channel: the reader then uses the tensors' bytes where they lie.
bool writeRecord(int fd, const Json& header, const std::vector<std::string_view>& parts,
                 uint64_t* written = nullptr);
inline bool writeRecord(int fd, const Json& header, std::string_view payload) {
  return writeRecord(fd, header, std::vector<std::string_view>{payload});
}
// writeRecord with a payload made while it is written (a device tensor
// copied through a small host buffer): `next` gives the payload's bytes in
// order, piece by piece, `payload_bytes` in all; false on a write error or
// when `next` gives an empty piece or more than the total.
bool writeRecordStreamed(int fd, const Json& header, uint64_t payload_bytes,
                         const std::function<std::string_view()>& next, uint64_t* written = nullptr);

// Parses the records in `path`, mapped read-only (payloads are views of the
// mapping, not copies). Stops at the first malformed one and says so in
// `*problem` (records before it are returned). `headers_only` leaves the
// payloads empty: the parent, which never looks at tensors, touches none of
// the gigabytes a large task's outputs and inputs take.
// Why `header` is not one the harness writes ("" when it is one): a type
// the harness never writes, or a field of the wrong kind (checked by the
// field's name: seed and candidate unsigned integers, call and index
// integers, ok a boolean, message/kind/status strings, seconds and *_seconds,
// *_ms, *_us, *_gbps numbers, activities CUPTI activity arrays). readRecords
// and ChannelTail stop at such a record: what the parent reads afterwards
// never throws on a field's kind (a forged record is hack_detected, never an
// infra_error that would drop the candidate's -1 or its neighbours' reward).
std::string recordProblem(const Json& header);

std::vector<WireRecord> readRecords(const std::filesystem::path& path, std::string* problem,
                                    bool headers_only = false);

// Reads the headers of a channel file while its writer is still appending
// (kbprof's parent, between a worker's questions): each poll() takes the
// records that have arrived whole since the last one. Headers only; the
// payloads are skipped by their lengths.
class ChannelTail {
 public:
  explicit ChannelTail(std::filesystem::path path) : path_(std::move(path)) {}
  // The new whole records' headers; false when the channel is malformed
  // (`*problem` says where).
  bool poll(std::vector<Json>& headers, std::string* problem);

 private:
  std::filesystem::path path_;
  uint64_t offset_ = 0;
};

// The header entry describing a tensor whose bytes follow in the payload.
Json tensorHeader(const WireTensor& t);
// Takes the tensors the header `list` describes out of `payload`, starting
// at `*offset`; throws kb::Error if a description is malformed or the
// payload is short.
std::vector<WireTensor> takeTensors(const Json& list, std::string_view payload,
                                    std::size_t* offset);

}  // namespace kb::verify
