// Conversions between IEEE 754 binary floating-point formats given as bits, exact
// to the rounding mode, for folding OpFConvert and OpQuantizeToF16 at pipeline
// time. The result says what happened (rounded, overflowed, below the normal
// range) so that the caller folds only where the driver's answer is fixed.
#pragma once

#include <cstdint>
#include <optional>

namespace coopmat {

struct IeeeFormat {
  uint32_t exponentBits = 0;
  uint32_t mantissaBits = 0;  // stored fraction bits, without the implicit one
  // OCP E4M3 ("FN"): no infinities; the all-ones exponent holds normal values and
  // only the all-ones pattern (either sign) is NaN.
  bool finiteOnly = false;
  uint32_t Width() const { return 1 + exponentBits + mantissaBits; }
};

inline constexpr IeeeFormat kBinary16{5, 10};
inline constexpr IeeeFormat kBinary32{8, 23};
inline constexpr IeeeFormat kBinary64{11, 52};
inline constexpr IeeeFormat kBfloat16{8, 7};             // SPV_KHR_bfloat16
inline constexpr IeeeFormat kFloat8E4M3{4, 3, true};     // SPV_EXT_float8
inline constexpr IeeeFormat kFloat8E5M2{5, 2};           // SPV_EXT_float8

// binary16, binary32 or binary64 by width; nullopt for any other width.
std::optional<IeeeFormat> IeeeBinary(uint32_t width);

enum class FloatRounding { NearestEven, TowardZero };

struct ConvertedFloat {
  uint64_t bits = 0;
  bool inexact = false;        // rounding changed the value (overflow included)
  bool overflow = false;       // the rounded magnitude is above the largest finite value
  bool subnormalIn = false;    // the input is subnormal
  bool belowNormalOut = false;  // a nonzero value below the target's smallest normal magnitude (before rounding)
};

// `bits` of format `from` as format `to`. An infinity stays that infinity, a zero
// keeps its sign, a NaN becomes a quiet NaN with the sign and the payload's top
// bits. Subnormals are kept and produced (no flushing); overflow gives an infinity
// when rounding to nearest and the largest finite value when rounding toward zero.
// A finite-only target (E4M3) takes NaN where others take an infinity (SPV_EXT_float8).
// `saturate` (SPV_EXT_float8's SaturatedToLargestFloat8NormalConversionEXT): overflow
// and infinities give the largest finite value with the sign.
ConvertedFloat ConvertFloat(uint64_t bits, IeeeFormat from, IeeeFormat to, FloatRounding rounding, bool saturate = false);

}  // namespace coopmat
