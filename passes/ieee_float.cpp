// IEEE 754 binary format conversion on bits (see ieee_float.h). A finite value is
// taken apart as an integer significand times a power of two, the bits below the
// target's lowest kept bit (fixed at the smallest normal exponent, which makes
// subnormals) are dropped with the rounding mode, and the result is put together.
#include "ieee_float.h"

#include <algorithm>
#include <bit>

namespace coopmat {
namespace {

uint64_t Ones(uint32_t bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }
int64_t Bias(IeeeFormat f) { return (int64_t{1} << (f.exponentBits - 1)) - 1; }
int64_t LeadingBit(uint64_t v) { return 63 - std::countl_zero(v); }

// significand / 2^drop, rounded; `inexact` is set when nonzero bits were dropped.
// A negative drop shifts left (the caller keeps the result below 2^64).
uint64_t DropBits(uint64_t significand, int64_t drop, FloatRounding rounding, bool& inexact) {
  if (drop <= 0) return significand << -drop;
  if (drop >= 64) {  // everything dropped, and it is below half of the lowest kept bit (significands have < 64 bits)
    inexact = significand != 0;
    return 0;
  }
  uint64_t kept = significand >> drop;
  const uint64_t rest = significand & Ones(static_cast<uint32_t>(drop)), half = uint64_t{1} << (drop - 1);
  inexact = rest != 0;
  if (rounding == FloatRounding::NearestEven && (rest > half || (rest == half && (kept & 1)))) ++kept;
  return kept;
}

}  // namespace

std::optional<IeeeFormat> IeeeBinary(uint32_t width) {
  switch (width) {
    case 16: return kBinary16;
    case 32: return kBinary32;
    case 64: return kBinary64;
    default: return std::nullopt;
  }
}

ConvertedFloat ConvertFloat(uint64_t bits, IeeeFormat from, IeeeFormat to, FloatRounding rounding, bool saturate) {
  ConvertedFloat out;
  const uint64_t sign = uint64_t{bits >> (from.Width() - 1) & 1} << (to.Width() - 1);
  const uint64_t exponentField = bits >> from.mantissaBits & Ones(from.exponentBits);
  const uint64_t fraction = bits & Ones(from.mantissaBits);
  const uint64_t nanOnly = sign | Ones(to.exponentBits) << to.mantissaBits | Ones(to.mantissaBits);  // E4M3's NaN
  const uint64_t infinity = to.finiteOnly ? nanOnly : sign | Ones(to.exponentBits) << to.mantissaBits;
  const uint64_t largest = to.finiteOnly ? nanOnly - 1 : sign | (Ones(to.exponentBits) - 1) << to.mantissaBits | Ones(to.mantissaBits);
  if (exponentField == Ones(from.exponentBits) && (!from.finiteOnly || fraction == Ones(from.mantissaBits))) {
    if (!fraction) {
      out.bits = saturate ? largest : infinity;
      return out;
    }
    if (to.finiteOnly) {
      out.bits = nanOnly;
      return out;
    }
    const uint64_t payload = from.mantissaBits >= to.mantissaBits ? fraction >> (from.mantissaBits - to.mantissaBits)
                                                                  : fraction << (to.mantissaBits - from.mantissaBits);
    out.bits = infinity | payload | uint64_t{1} << (to.mantissaBits - 1);  // quiet
    return out;
  }
  if (!exponentField && !fraction) {
    out.bits = sign;
    return out;
  }
  // value = significand * 2^exponent, in [2^leading, 2^(leading + 1))
  out.subnormalIn = exponentField == 0;
  const uint64_t significand = out.subnormalIn ? fraction : fraction | uint64_t{1} << from.mantissaBits;
  const int64_t exponent = (out.subnormalIn ? 1 : static_cast<int64_t>(exponentField)) - Bias(from) - from.mantissaBits;
  const int64_t leading = LeadingBit(significand) + exponent;
  const int64_t minNormal = 1 - Bias(to);
  out.belowNormalOut = leading < minNormal;
  // The value of the target's lowest kept bit at this magnitude: kept * 2^quantum.
  const int64_t quantum = std::max(leading, minNormal) - to.mantissaBits;
  const uint64_t kept = DropBits(significand, quantum - exponent, rounding, out.inexact);
  if (!kept) {  // underflow to a zero
    out.bits = sign;
    return out;
  }
  const int64_t keptLeading = LeadingBit(kept) + quantum;  // rounding may carry into the next power of two
  // A finite-only format's top binade ends one step below its NaN pattern.
  const int64_t maxLeading = Bias(to) + (to.finiteOnly ? 1 : 0);
  if (keptLeading > maxLeading ||
      (to.finiteOnly && keptLeading == maxLeading && (kept & Ones(to.mantissaBits)) == Ones(to.mantissaBits))) {
    out.overflow = out.inexact = true;
    out.bits = rounding == FloatRounding::NearestEven && !saturate ? infinity : largest;
    return out;
  }
  if (keptLeading < minNormal) {  // subnormal: kept < 2^mantissaBits is the fraction
    out.bits = sign | kept;
    return out;
  }
  const uint64_t biased = static_cast<uint64_t>(keptLeading + Bias(to));
  const uint64_t keptFraction = kept >> (LeadingBit(kept) - to.mantissaBits) & Ones(to.mantissaBits);
  out.bits = sign | biased << to.mantissaBits | keptFraction;
  return out;
}

}  // namespace coopmat
