// What the harness writes into memory a solution must overwrite (fresh
// outputs, scratch), and how the reference worker tells an element the
// solution never wrote. Header-only, ATen; shared by the two workers.
//
// Floating outputs are filled, each fill drawing afresh, either with a NaN
// whose payload is neither 0 nor all ones, or with a huge finite value of
// random bits (|x| > 1e29 in float32, > 1e4 in float16). Arithmetic on a GPU
// or a CPU makes only canonical NaNs (payload 0, or all ones on NVIDIA GPUs),
// so an element holding a NaN of another payload was never written by the
// solution, whatever the reference holds there; an element still holding
// the finite fill is off the reference by far more than any tolerance. A
// candidate that skips the stores where the reference is NaN (hoping NaN
// matches NaN), or that treats NaN as "empty" because fresh outputs used to
// hold NaN, is therefore wrong; and as the fill differs from fill to fill,
// nothing can be learnt from one run for the next.
// Integer and bool outputs get a pattern (a skipped store there is judged by
// the values, as every integer value is a legitimate output).
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace kb::verify {

// The payload field of a NaN of `t`'s floating type: (mask, integer type of
// the same width); mask 0 for other types.
inline std::pair<int64_t, at::ScalarType> nanPayloadField(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return {0x3FFFFF, at::kInt};
    case at::kDouble: return {int64_t{0x7FFFFFFFFFFFF}, at::kLong};
    case at::kHalf: return {0x1FF, at::kShort};
    case at::kBFloat16: return {0x3F, at::kShort};
    default: return {0, at::kByte};
  }
}

// The bits of a quiet NaN of type `t` with payload `payload` (1 <= payload < mask).
inline int64_t poisonBits(at::ScalarType t, uint64_t salt) {
  auto [mask, itype] = nanPayloadField(t);
  (void)itype;
  const uint64_t span = static_cast<uint64_t>(mask) - 1;  // payloads 1 .. mask-1
  const int64_t payload = 1 + static_cast<int64_t>(salt % span);
  switch (t) {
    case at::kFloat: return static_cast<int32_t>(0x7FC00000u | static_cast<uint32_t>(payload));
    case at::kDouble: return static_cast<int64_t>(0x7FF8000000000000ull | static_cast<uint64_t>(payload));
    case at::kHalf: return static_cast<int16_t>(0x7E00 | payload);
    case at::kBFloat16: return static_cast<int16_t>(0x7FC0 | payload);
    default: return 0;
  }
}

// The bits of a huge finite value of type `t` (random sign and mantissa,
// one of the two largest exponent ranges below infinity's).
inline int64_t hugeBits(at::ScalarType t, uint64_t salt) {
  const uint64_t sign = salt & 1, top = (salt >> 1) & 1, mant = salt >> 2;
  switch (t) {
    case at::kFloat: return static_cast<int32_t>((sign << 31) | ((0xFDu + top) << 23) | (mant & 0x7FFFFF));
    case at::kDouble:
      return static_cast<int64_t>((sign << 63) | ((0x7FDull + top) << 52) | (mant & 0xFFFFFFFFFFFFFull));
    case at::kHalf: return static_cast<int16_t>((sign << 15) | ((0x1Cu + top) << 10) | (mant & 0x3FF));
    case at::kBFloat16: return static_cast<int16_t>((sign << 15) | ((0xFDu + top) << 7) | (mant & 0x7F));
    default: return 0;
  }
}

// Fills `t` with this fill's poison; `salt` is drawn afresh for each fill
// (its top bit picks the NaN or the huge finite value).
inline void poisonFill(at::Tensor& t, uint64_t salt) {
  auto [mask, itype] = nanPayloadField(t.scalar_type());
  const bool finite = (salt >> 63) != 0;
  if (mask != 0 && t.is_contiguous()) {
    t.view(itype).fill_(finite ? hugeBits(t.scalar_type(), salt) : poisonBits(t.scalar_type(), salt));
  } else if (at::isFloatingType(t.scalar_type())) {
    t.fill_(std::numeric_limits<double>::quiet_NaN());
  } else if (t.scalar_type() == at::kBool) {
    t.fill_(true);
  } else {
    t.fill_(0x5A);
  }
}

// Elements of `t` (a floating tensor, contiguous) that hold a harness-made
// NaN: a NaN whose payload is neither 0 nor all ones. All false for other
// types.
inline at::Tensor unwrittenMask(const at::Tensor& t) {
  auto [mask, itype] = nanPayloadField(t.scalar_type());
  if (mask == 0) return at::zeros(t.sizes(), t.options().dtype(at::kBool));
  at::Tensor bits = t.contiguous().view(itype);
  at::Tensor payload = bits.bitwise_and(mask);
  return at::isnan(t).logical_and(payload.ne(0)).logical_and(payload.ne(mask));
}

}  // namespace kb::verify
