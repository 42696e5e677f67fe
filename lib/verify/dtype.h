// kb_dtype <-> torch's ScalarType, for the translation units that include
// torch (the worker and the reference comparison).
#pragma once

#include <cstdint>
#include <optional>

#include <c10/core/ScalarType.h>

#include "kb/solution.h"

namespace kb::verify {

// The kb_dtype of a torch dtype; -1 for one the interface does not carry.
inline int32_t kbDtypeOf(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: return KB_FLOAT32;
    case c10::kHalf: return KB_FLOAT16;
    case c10::kBFloat16: return KB_BFLOAT16;
    case c10::kDouble: return KB_FLOAT64;
    case c10::kChar: return KB_INT8;
    case c10::kByte: return KB_UINT8;
    case c10::kShort: return KB_INT16;
    case c10::kInt: return KB_INT32;
    case c10::kLong: return KB_INT64;
    case c10::kBool: return KB_BOOL;
    default: return -1;
  }
}

inline std::optional<c10::ScalarType> scalarTypeOf(int32_t d) {
  switch (d) {
    case KB_FLOAT32: return c10::kFloat;
    case KB_FLOAT16: return c10::kHalf;
    case KB_BFLOAT16: return c10::kBFloat16;
    case KB_FLOAT64: return c10::kDouble;
    case KB_INT8: return c10::kChar;
    case KB_UINT8: return c10::kByte;
    case KB_INT16: return c10::kShort;
    case KB_INT32: return c10::kInt;
    case KB_INT64: return c10::kLong;
    case KB_BOOL: return c10::kBool;
    default: return std::nullopt;
  }
}

}  // namespace kb::verify
