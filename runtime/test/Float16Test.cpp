//===- Float16Test.cpp - f16/bf16 <-> f32 conversions ---------------------===//

#include "Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace dtrain::rt;

namespace {

float f(uint32_t bits) { return bitsToFloat(bits); }
const float inf = std::numeric_limits<float>::infinity();

bool isF16NaN(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

TEST(F16, KnownPatternsToFloat) {
  EXPECT_EQ(f16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(f16ToF32(0xc000), -2.0f);
  EXPECT_EQ(f16ToF32(0x7bff), 65504.0f);
  EXPECT_EQ(f16ToF32(0x0001), std::ldexp(1.0f, -24));    // smallest subnormal
  EXPECT_EQ(f16ToF32(0x03ff), std::ldexp(1023.0f, -24)); // largest subnormal
  EXPECT_EQ(f16ToF32(0x0400), std::ldexp(1.0f, -14));    // smallest normal
  EXPECT_EQ(f16ToF32(0x3555), 0.333251953125f);
  EXPECT_EQ(floatBits(f16ToF32(0x0000)), 0x00000000u);
  EXPECT_EQ(floatBits(f16ToF32(0x8000)), 0x80000000u);
  EXPECT_EQ(f16ToF32(0x7c00), inf);
  EXPECT_EQ(f16ToF32(0xfc00), -inf);
  EXPECT_TRUE(std::isnan(f16ToF32(0x7e00)));
  EXPECT_TRUE(std::isnan(f16ToF32(0x7c01))); // signalling NaN stays NaN
  EXPECT_TRUE(std::signbit(f16ToF32(0xfe00)));
}

TEST(F16, KnownPatternsFromFloat) {
  EXPECT_EQ(f32ToF16(1.0f), 0x3c00);
  EXPECT_EQ(f32ToF16(-2.0f), 0xc000);
  EXPECT_EQ(f32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(f32ToF16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32ToF16(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(f32ToF16(0.0f), 0x0000);
  EXPECT_EQ(f32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(f32ToF16(inf), 0x7c00);
  EXPECT_EQ(f32ToF16(-inf), 0xfc00);
  EXPECT_EQ(f32ToF16(1e6f), 0x7c00); // overflow
  EXPECT_EQ(f32ToF16(-1e6f), 0xfc00);
  EXPECT_EQ(f32ToF16(1e-10f), 0x0000); // underflow
  EXPECT_EQ(f32ToF16(-1e-10f), 0x8000);
  EXPECT_EQ(f32ToF16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_TRUE(isF16NaN(f32ToF16(std::nanf(""))));
  EXPECT_EQ(f32ToF16(-std::nanf("")) & 0x8000, 0x8000);
  EXPECT_TRUE(isF16NaN(f32ToF16(f(0x7f800001)))); // payload only in low bits
  EXPECT_TRUE(isF16NaN(f32ToF16(f(0x7fc00000))));
}

TEST(F16, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(f32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 is halfway between 0x3c01 and 0x3c02: even is 0x3c02.
  EXPECT_EQ(f32ToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above a tie rounds up, just below rounds down.
  EXPECT_EQ(f32ToF16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)),
            0x3c01);
  EXPECT_EQ(f32ToF16(std::nextafter(1.0f + 3 * std::ldexp(1.0f, -11), 0.0f)),
            0x3c01);
  // 65520 is halfway between 65504 and 65536 (inf): ties to even -> inf.
  EXPECT_EQ(f32ToF16(65519.99f), 0x7bff);
  EXPECT_EQ(f32ToF16(65520.0f), 0x7c00);
  // Subnormal ties: 2^-25 -> 0 (even), 3*2^-25 -> 2*2^-24 (even).
  EXPECT_EQ(f32ToF16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(f32ToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32ToF16(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(f32ToF16(std::ldexp(5.0f, -25)), 0x0002);
  // Rounding up out of the subnormals gives the smallest normal.
  EXPECT_EQ(f32ToF16(std::ldexp(1023.5f, -24)), 0x0400);
  EXPECT_EQ(f32ToF16(std::ldexp(2047.5f, -24)), 0x0800);
}

TEST(F16, AllPatternsRoundTrip) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t h = uint16_t(bits);
    const uint16_t back = f32ToF16(f16ToF32(h));
    if (isF16NaN(h)) {
      ASSERT_TRUE(isF16NaN(back)) << std::hex << bits;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << std::hex << bits;
      ASSERT_EQ(back, h | 0x0200) << std::hex << bits; // quieted, payload kept
    } else {
      ASSERT_EQ(back, h) << std::hex << bits;
    }
  }
}

TEST(F16, MonotoneAndMidpointsRoundToEven) {
  // For each pair of adjacent positive finite f16 values, the float midpoint
  // rounds to the even one and the floats around it to the nearer one.
  for (uint16_t h = 0; h < 0x7bff; ++h) {
    const float lo = f16ToF32(h), hi = f16ToF32(uint16_t(h + 1));
    const float mid = lo + (hi - lo) / 2; // exact in f32
    const uint16_t even = (h & 1) ? uint16_t(h + 1) : h;
    ASSERT_EQ(f32ToF16(mid), even) << std::hex << h;
    ASSERT_EQ(f32ToF16(-mid), even | 0x8000) << std::hex << h;
    ASSERT_EQ(f32ToF16(std::nextafter(mid, 0.0f)), h) << std::hex << h;
    ASSERT_EQ(f32ToF16(std::nextafter(mid, inf)), h + 1) << std::hex << h;
  }
}

#ifdef __FLT16_MAX__
// The compiler's _Float16 conversion (round to nearest even) as a reference
// over a stride of all float bit patterns.
TEST(F16, MatchesCompilerFloat16) {
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 251) {
    const float x = f(uint32_t(bits));
    if (std::isnan(x))
      continue;
    const _Float16 ref = static_cast<_Float16>(x);
    uint16_t refBits;
    std::memcpy(&refBits, &ref, 2);
    ASSERT_EQ(f32ToF16(x), refBits) << std::hex << bits;
  }
}
#endif

TEST(BF16, KnownPatterns) {
  EXPECT_EQ(bf16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(bf16ToF32(0xc000), -2.0f);
  EXPECT_EQ(bf16ToF32(0x7f7f), f(0x7f7f0000)); // largest finite
  EXPECT_EQ(bf16ToF32(0x0001), f(0x00010000)); // smallest subnormal
  EXPECT_EQ(bf16ToF32(0x7f80), inf);
  EXPECT_EQ(bf16ToF32(0xff80), -inf);
  EXPECT_TRUE(std::isnan(bf16ToF32(0x7fc0)));

  EXPECT_EQ(f32ToBF16(1.0f), 0x3f80);
  EXPECT_EQ(f32ToBF16(-2.0f), 0xc000);
  EXPECT_EQ(f32ToBF16(65504.0f), 0x4780); // 65504 rounds to 65536
  EXPECT_EQ(f32ToBF16(f(0x00010000)), 0x0001);
  EXPECT_EQ(f32ToBF16(f(0x00008000)), 0x0000); // subnormal tie -> even
  EXPECT_EQ(f32ToBF16(f(0x00018000)), 0x0002); // subnormal tie -> even
  EXPECT_EQ(f32ToBF16(f(0x00008001)), 0x0001);
  EXPECT_EQ(f32ToBF16(-0.0f), 0x8000);
  EXPECT_EQ(f32ToBF16(inf), 0x7f80);
  EXPECT_EQ(f32ToBF16(-inf), 0xff80);
  EXPECT_EQ(f32ToBF16(std::numeric_limits<float>::max()), 0x7f80); // overflow
  EXPECT_EQ(f32ToBF16(f(0x7f7f7fff)), 0x7f7f);
  const uint16_t nan = f32ToBF16(f(0x7f800001)); // payload only in low bits
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x7f, 0);
  EXPECT_EQ(f32ToBF16(-std::nanf("")) & 0x8000, 0x8000);
}

TEST(BF16, RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even is 1.
  EXPECT_EQ(f32ToBF16(f(0x3f808000)), 0x3f80);
  EXPECT_EQ(f32ToBF16(f(0x3f818000)), 0x3f82);
  EXPECT_EQ(f32ToBF16(f(0x3f808001)), 0x3f81);
  EXPECT_EQ(f32ToBF16(f(0x3f817fff)), 0x3f81);
}

TEST(BF16, AllPatternsRoundTrip) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t b = uint16_t(bits);
    const uint16_t back = f32ToBF16(bf16ToF32(b));
    if ((b & 0x7f80) == 0x7f80 && (b & 0x7f))
      ASSERT_EQ(back, b | 0x0040) << std::hex << bits;
    else
      ASSERT_EQ(back, b) << std::hex << bits;
  }
}

// An independent reference: pick the nearer of the two bf16 values around x
// by comparing distances in double; ties go to the even pattern.
uint16_t referenceBF16(float x) {
  const uint32_t bits = floatBits(x);
  const uint16_t down = uint16_t(bits >> 16); // truncated toward zero
  const uint16_t up = uint16_t(down + 1);     // next away from zero (or inf)
  const double dx = std::fabs(double(x));
  const double dDown = dx - std::fabs(double(bf16ToF32(down)));
  // Rounding up from the largest finite value reaches 2^128 (inf).
  const double upMagnitude = (up & 0x7fff) == 0x7f80
                                 ? std::ldexp(1.0, 128)
                                 : std::fabs(double(bf16ToF32(up)));
  const double dUp = upMagnitude - dx;
  if (dDown != dUp)
    return dDown < dUp ? down : up;
  return (down & 1) ? up : down;
}

TEST(BF16, MatchesIndependentReference) {
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 251) {
    const float x = f(uint32_t(bits));
    if (std::isnan(x) || std::isinf(x))
      continue;
    ASSERT_EQ(f32ToBF16(x), referenceBF16(x)) << std::hex << bits;
  }
}

TEST(RoundingResidual, KeepsWhatRoundingDropped) {
  // 1 + 2^-10 in bf16 (8 bits of mantissa) is 1: 2^-10 stays behind.
  const float value = 1.0f + std::ldexp(1.0f, -10);
  const float sent = roundToValueType(value, DTRAIN_RT_BF16);
  EXPECT_EQ(sent, 1.0f);
  EXPECT_EQ(roundingResidual(value, sent), std::ldexp(1.0f, -10));
  // 1e6 saturates f16 at 65504: the rest stays behind.
  EXPECT_EQ(roundingResidual(1e6f, roundToValueType(1e6f, DTRAIN_RT_F16)),
            1e6f - 65504.0f);
  // An infinity sent whole leaves nothing (inf - inf would be NaN), in
  // every wire type.
  for (int32_t type : {DTRAIN_RT_F32, DTRAIN_RT_BF16, DTRAIN_RT_F16}) {
    EXPECT_EQ(floatBits(roundingResidual(inf, roundToValueType(inf, type))), 0u)
        << type;
    EXPECT_EQ(floatBits(roundingResidual(-inf, roundToValueType(-inf, type))),
              0u)
        << type;
  }
  // NaN leaves the one quiet NaN, whatever its sign and payload.
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xffffffffu})
    EXPECT_EQ(floatBits(roundingResidual(
                  f(nan), roundToValueType(f(nan), DTRAIN_RT_BF16))),
              0x7fc00000u)
        << std::hex << nan;
}

} // namespace
