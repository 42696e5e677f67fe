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
#include <string>
#include <vector>

#include "core/json.h"

namespace kb {

// A tensor as it crossed the wire: contiguous bytes plus shape and dtype.
struct WireTensor {
  int32_t dtype = 0;             // kb_dtype
  std::vector<int64_t> sizes;
  std::string bytes;             // numel * element size bytes
  uint64_t data_ptr = 0;         // where it lived in the worker
  uint64_t storage_bytes = 0;    // the extent of its storage there
};

struct WireRecord {
  Json header;
  std::string payload;
};

// Element size of a kb_dtype; 0 for an unknown one.
std::size_t dtypeSize(int32_t dtype);
// "float32", ... ; "dtype#N" for an unknown one.
std::string dtypeName(int32_t dtype);

// Writes one record to `fd`; false on a write error.
bool writeRecord(int fd, const Json& header, const std::string& payload);

// Parses the records in `path`. Stops at the first malformed one and says so
// in `*problem` (records before it are returned). `headers_only` skips the
// payloads (left empty): the parent, which never looks at tensors, does not
// read the gigabytes a large task's outputs and inputs take.
std::vector<WireRecord> readRecords(const std::filesystem::path& path, std::string* problem,
                                    bool headers_only = false);

// The header entry describing a tensor whose bytes follow in the payload.
Json tensorHeader(const WireTensor& t);
// Takes the tensors the header `list` describes out of `payload`, starting
// at `*offset`; throws kb::Error if a description is malformed or the
// payload is short.
std::vector<WireTensor> takeTensors(const Json& list, const std::string& payload,
                                    std::size_t* offset);

}  // namespace kb
