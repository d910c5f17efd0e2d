//===- Float16.h - IEEE binary16 and bfloat16 conversions -------*- C++ -*-===//
//
// Conversions between float and the raw 16-bit patterns of IEEE binary16
// (f16) and bfloat16 (bf16). float -> 16-bit rounds to nearest, ties to even;
// subnormals, infinities and NaNs are handled (a NaN stays a NaN of the same
// sign, quieted, keeping the top bits of its payload). 16-bit -> float is
// exact.
//
// Header-only and free of MPI so the unit tests can use it directly; the
// functions are host and device functions when compiled by nvcc, so the
// CUDA kernels (cuda/Convert.cu) convert with the very same code.
//
//===----------------------------------------------------------------------===//

#ifndef DTRAIN_RUNTIME_FLOAT16_H
#define DTRAIN_RUNTIME_FLOAT16_H

// The C ABI keeps default visibility in the library, which is built with
// hidden visibility, whichever header includes it first.
#pragma GCC visibility push(default)
#include "dtrain_rt.h"
#pragma GCC visibility pop

#include "HostDevice.h"

#include <cstdint>
#include <cstring>

namespace dtrain::rt {

DTRAIN_RT_HOST_DEVICE inline uint32_t floatBits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

DTRAIN_RT_HOST_DEVICE inline float bitsToFloat(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// Rounds \p value >> \p shift to nearest, ties to even (1 <= shift <= 31).
DTRAIN_RT_HOST_DEVICE inline uint32_t shiftRightRoundEven(uint32_t value, unsigned shift) {
  uint32_t q = value >> shift;
  uint32_t rem = value & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  return q + (rem > half || (rem == half && (q & 1)));
}

DTRAIN_RT_HOST_DEVICE inline float f16ToF32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) // inf / NaN (payload kept)
    return bitsToFloat(sign | 0x7f800000u | (man << 13));
  if (exp != 0) // normal: rebias 15 -> 127
    return bitsToFloat(sign | ((exp + 112) << 23) | (man << 13));
  if (man == 0)
    return bitsToFloat(sign);
  // Subnormal: man * 2^-24; normalize so the leading one is bit 10.
  int e = -14;
  while (!(man & 0x400)) {
    man <<= 1;
    --e;
  }
  return bitsToFloat(sign | uint32_t(e + 127) << 23 | ((man & 0x3ff) << 13));
}

DTRAIN_RT_HOST_DEVICE inline uint16_t f32ToF16(float f) {
  uint32_t x = floatBits(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) // NaN: quiet it, keep the top payload bits
    return sign | 0x7e00 | uint16_t((abs >> 13) & 0x3ff);
  if (abs >= 0x477ff000u) // >= 65520 (incl. inf) rounds to inf
    return sign | 0x7c00;
  if (abs >= 0x38800000u) // >= 2^-14: normal f16; rebias 127 -> 15
    return sign | uint16_t(shiftRightRoundEven(abs - 0x38000000u, 13));
  if (abs <= 0x33000000u) // <= 2^-25 (half the smallest subnormal): +-0
    return sign;
  // Subnormal f16: value / 2^-24 rounded. value = m * 2^(e - 150) with the
  // implicit bit in m, so value / 2^-24 = m >> (126 - e), 14 <= shift <= 24.
  // A carry out of the mantissa correctly yields the smallest normal.
  uint32_t e = abs >> 23;
  uint32_t m = (abs & 0x7fffffu) | 0x800000u;
  return sign | uint16_t(shiftRightRoundEven(m, 126 - e));
}

DTRAIN_RT_HOST_DEVICE inline float bf16ToF32(uint16_t b) { return bitsToFloat(uint32_t(b) << 16); }

DTRAIN_RT_HOST_DEVICE inline uint16_t f32ToBF16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: quiet it, keep sign/payload top
    return uint16_t((x >> 16) | 0x0040);
  // Same exponent range as float, so subnormals and overflow to inf fall out
  // of plain round-to-nearest-even on the low 16 bits.
  return uint16_t(shiftRightRoundEven(x, 16));
}

/// F rounded to bf16 and back, saturated: a finite F that rounds to inf
/// gives the largest finite bf16 of its sign instead.
DTRAIN_RT_HOST_DEVICE inline float roundToBF16Saturated(float f) {
  const uint32_t q = floatBits(bf16ToF32(f32ToBF16(f)));
  if ((q & 0x7fffffffu) == 0x7f800000u &&
      (floatBits(f) & 0x7fffffffu) != 0x7f800000u)
    return bitsToFloat((q & 0x80000000u) | 0x7f7f0000u); // 0x1.fep127
  return bitsToFloat(q);
}

/// F rounded to f16 and back, saturated: a finite F that rounds to inf
/// gives +-65504 instead.
DTRAIN_RT_HOST_DEVICE inline float roundToF16Saturated(float f) {
  const uint32_t q = floatBits(f16ToF32(f32ToF16(f)));
  if ((q & 0x7fffffffu) == 0x7f800000u &&
      (floatBits(f) & 0x7fffffffu) != 0x7f800000u)
    return bitsToFloat((q & 0x80000000u) | 0x477fe000u); // 65504
  return bitsToFloat(q);
}

/// F as a sparse exchange sends it in VALUETYPE (DTRAIN_RT_BF16 or
/// DTRAIN_RT_F16: rounded and saturated; F itself otherwise).
DTRAIN_RT_HOST_DEVICE inline float roundToValueType(float f,
                                                    int32_t valueType) {
  switch (valueType) {
  case DTRAIN_RT_BF16:
    return roundToBF16Saturated(f);
  case DTRAIN_RT_F16:
    return roundToF16Saturated(f);
  }
  return f;
}

/// What sending VALUE as SENT (roundToValueType) leaves in the residual:
/// VALUE - SENT, but 0 where SENT is VALUE itself (an infinity too, whose
/// difference would be NaN), and for a NaN VALUE the quiet NaN 0x7fc00000,
/// whose bits do not depend on the processor (x86's NaN of a difference
/// is negative, CUDA's positive).
DTRAIN_RT_HOST_DEVICE inline float roundingResidual(float value, float sent) {
  if (value == sent)
    return 0.0f;
  const float dropped = value - sent;
  return dropped == dropped ? dropped : bitsToFloat(0x7fc00000u);
}

/// Element I of X, of float type TYPE (DTRAIN_RT_F32, _F16 or _BF16), as
/// a float (exact).
DTRAIN_RT_HOST_DEVICE inline float loadAsFloat(const void *x, int32_t type,
                                               int64_t i) {
  switch (type) {
  case DTRAIN_RT_F16:
    return f16ToF32(static_cast<const uint16_t *>(x)[i]);
  case DTRAIN_RT_BF16:
    return bf16ToF32(static_cast<const uint16_t *>(x)[i]);
  }
  return static_cast<const float *>(x)[i];
}

/// Stores V as element I of X, of float type TYPE, rounded to nearest even.
DTRAIN_RT_HOST_DEVICE inline void storeFromFloat(void *x, int32_t type,
                                                 int64_t i, float v) {
  switch (type) {
  case DTRAIN_RT_F16:
    static_cast<uint16_t *>(x)[i] = f32ToF16(v);
    return;
  case DTRAIN_RT_BF16:
    static_cast<uint16_t *>(x)[i] = f32ToBF16(v);
    return;
  }
  static_cast<float *>(x)[i] = v;
}

} // namespace dtrain::rt

#endif // DTRAIN_RUNTIME_FLOAT16_H
