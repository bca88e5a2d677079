// The CPU reference checked against hand-computed values, so that the
// execution tests compare the GPU with something known to be right.
#include "exec_util.h"
#include "reference.h"

#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstring>

using namespace exec;

namespace {
Matrix Make(T t, uint32_t rows, uint32_t cols, std::vector<double> v) {
  Matrix m(t, rows, cols);
  m.v = std::move(v);
  return m;
}
}  // namespace

TEST_CASE("reference: element conversions wrap and round like SPIR-V", "[exec][reference][cpu]") {
  CHECK(Wrap(T::U8, 300) == 44);               // OpUConvert truncates
  CHECK(Wrap(T::S8, -200) == 56);              // OpSConvert truncates
  CHECK(Wrap(T::S8, 4294967295.0) == -1);      // u32 0xffffffff -> s8
  CHECK(Wrap(T::U32, -3) == 4294967293.0);     // s8 -3 -> u32 sign-extends
  CHECK(Wrap(T::S32, 2.75) == 2);              // OpConvertFToS rounds toward zero
  CHECK(Wrap(T::S32, -2.75) == -2);
  CHECK(Wrap(T::U8, 255.5) == 255);
  CHECK(Wrap(T::F16, 2049) == 2048);           // f16 has 11 significant bits, ties to even
  CHECK(Wrap(T::F16, 0.1) != 0.1);
  CHECK(Wrap(T::F32, 0.5) == 0.5);
  CHECK(Bits(T::F16, 1.0) == 0x3c00u);
  CHECK(Bits(T::F16, -2.0) == 0xc000u);
  CHECK(Bits(T::F32, 1.0) == 0x3f800000u);
  CHECK(Bits(T::S8, -1) == 0xffffffffu);
  CHECK(Bits(T::U8, 200) == 200u);
  CHECK(Bits(T::S32, -2) == 0xfffffffeu);
}

TEST_CASE("reference: pack and unpack round trip", "[exec][reference][cpu]") {
  const Matrix m = Make(T::S8, 2, 3, {1, -2, 3, -4, 5, -128});
  const Bytes rowMajor = Pack({m});
  REQUIRE(rowMajor.size() == 6);
  CHECK(static_cast<int8_t>(rowMajor[1]) == -2);
  CHECK(static_cast<int8_t>(rowMajor[3]) == -4);
  const Bytes colMajor = Pack({m}, true);
  CHECK(static_cast<int8_t>(colMajor[1]) == -4);  // (1,0)
  CHECK(static_cast<int8_t>(colMajor[2]) == -2);  // (0,1)
  CHECK(Compare(Unpack(rowMajor, T::S8, 2, 3, 1).at(0), m).empty());
  CHECK_FALSE(Compare(Unpack(colMajor, T::S8, 2, 3, 1).at(0), m).empty());
}

TEST_CASE("reference: reduce", "[exec][reference][cpu]") {
  // 4 x 4:
  //  1  2  3  4
  //  5  6  7  8
  //  9 10 11 12
  // 13 14 15 16
  Matrix m(T::F32, 4, 4);
  for (uint32_t i = 0; i < 16; ++i) m.v[i] = i + 1;
  const Matrix row = Reduce(m, kRow, Combine::Sum, 4, 4);
  CHECK(row.at(0, 0) == 10);
  CHECK(row.at(0, 3) == 10);
  CHECK(row.at(3, 1) == 58);
  const Matrix rowWide = Reduce(m, kRow, Combine::Sum, 4, 12);  // changed column count
  CHECK(rowWide.at(2, 11) == 42);
  const Matrix col = Reduce(m, kColumn, Combine::Sum, 4, 4);
  CHECK(col.at(0, 0) == 28);
  CHECK(col.at(3, 0) == 28);
  CHECK(col.at(2, 3) == 40);
  const Matrix colTall = Reduce(m, kColumn, Combine::Max, 12, 4);  // changed row count
  CHECK(colTall.at(11, 1) == 14);
  const Matrix all = Reduce(m, kRowColumn, Combine::Sum, 2, 6);
  CHECK(all.at(1, 5) == 136);
  const Matrix quad = Reduce(m, k2x2, Combine::Sum, 2, 2);
  CHECK(quad.at(0, 0) == 1 + 2 + 5 + 6);
  CHECK(quad.at(0, 1) == 3 + 4 + 7 + 8);
  CHECK(quad.at(1, 0) == 9 + 10 + 13 + 14);
  CHECK(quad.at(1, 1) == 11 + 12 + 15 + 16);
  CHECK(Reduce(m, k2x2, Combine::Min, 2, 2).at(1, 1) == 11);
  CHECK(Reduce(m, kRow, Combine::Min, 4, 4).at(2, 0) == 9);
  CHECK(Reduce(m, kColumn, Combine::Max, 4, 4).at(0, 2) == 15);
  // Unsigned sums wrap.
  const Matrix u = Make(T::U32, 1, 2, {4294967295.0, 2});
  CHECK(Reduce(u, kRow, Combine::Sum, 1, 2).at(0, 0) == 1);
}

TEST_CASE("reference: per-element, convert, transpose, muladd", "[exec][reference][cpu]") {
  const Matrix m = Make(T::U8, 2, 2, {250, 1, 2, 3});
  const Matrix p = PerElement(m, [](uint32_t r, uint32_t c, double x) { return x + r * 3 + c; });
  CHECK(p.at(0, 0) == 250);
  CHECK(p.at(0, 1) == 2);
  CHECK(p.at(1, 0) == 5);
  CHECK(p.at(1, 1) == 7);
  CHECK(PerElement(m, [](uint32_t, uint32_t, double x) { return x + 10; }).at(0, 0) == 4);  // wraps

  const Matrix a = Make(T::S32, 2, 3, {1, -200, 3, 4, 5, 300});
  const Matrix t = Convert(a, T::S8, true);
  REQUIRE(t.rows == 3);
  REQUIRE(t.cols == 2);
  CHECK(t.at(0, 1) == 4);
  CHECK(t.at(1, 0) == 56);
  CHECK(t.at(2, 1) == 44);
  CHECK(Convert(a, T::U8, false).at(0, 1) == 56);

  const Matrix A = Make(T::F16, 2, 2, {1, 2, 3, 4});
  const Matrix B = Make(T::F16, 2, 2, {5, 6, 7, 8});
  const Matrix C = Make(T::F32, 2, 2, {1, 0, 0, -1});
  const Matrix D = MulAdd(A, B, C);
  CHECK(D.at(0, 0) == 20);
  CHECK(D.at(0, 1) == 22);
  CHECK(D.at(1, 0) == 43);
  CHECK(D.at(1, 1) == 49);
}

TEST_CASE("reference: compare reports mismatches", "[exec][reference][cpu]") {
  const Matrix a = Make(T::F32, 1, 2, {1, 2});
  Matrix b = a;
  CHECK(Compare(a, b).empty());
  b.at(0, 1) = 3;
  CHECK(Compare(b, a).find("(0,1) got 3 want 2") != std::string::npos);
  CHECK_FALSE(Compare(Make(T::F32, 2, 1, {1, 2}), a).empty());
}

// The CPU reference's bfloat16 and fp8 values against their published encodings (OCP 8-bit
// floating point specification 1.0 for E4M3 and E5M2; bfloat16 as binary32's high half,
// rounded to nearest even): a table written from the formats' definitions, not from
// passes/ieee_float, which the reference and the virtual device's self-checks both use.
TEST_CASE("reference: bfloat16 and fp8 encodings are the published ones", "[exec][reference][cpu]") {
  struct Case {
    T type;
    double value;
    uint32_t bits;          // Bits(type, value): round to nearest even, overflow as the format says
    uint32_t saturatedBits;  // the same under SaturatedToLargestFloat8NormalConversionEXT (fp8 only)
  };
  auto f32 = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return static_cast<double>(f);
  };
  const Case cases[] = {
      {T::E4M3, 448.0, 0x7E, 0x7E},             // the largest finite E4M3: S.1111.110
      {T::E4M3, -448.0, 0xFE, 0xFE},
      {T::E4M3, 1.0, 0x38, 0x38},               // exponent bias 7
      {T::E4M3, 0.015625, 0x08, 0x08},          // 2^-6, the smallest normal
      {T::E4M3, 0.001953125, 0x01, 0x01},       // 2^-9, the smallest subnormal
      {T::E4M3, 1.0625, 0x38, 0x38},            // halfway between 1 and 1.125: to the even mantissa
      {T::E4M3, 1.1875, 0x3A, 0x3A},            // halfway between 1.125 and 1.25: to 1.25
      {T::E4M3, 500.0, 0x7F, 0x7E},             // overflow: NaN (E4M3 has no infinity), or 448
      {T::E5M2, 57344.0, 0x7B, 0x7B},           // the largest finite E5M2
      {T::E5M2, 1.0, 0x3C, 0x3C},               // exponent bias 15
      {T::E5M2, 0.00006103515625, 0x04, 0x04},  // 2^-14, the smallest normal
      {T::E5M2, 0.0000152587890625, 0x01, 0x01},  // 2^-16, the smallest subnormal
      {T::E5M2, 1.125, 0x3C, 0x3C},             // halfway between 1 and 1.25: to the even mantissa
      {T::E5M2, 70000.0, 0x7C, 0x7B},           // overflow: infinity, or 57344
      {T::E5M2, -70000.0, 0xFC, 0xFB},
      {T::BF16, 1.0, 0x3F80, 0x3F80},
      {T::BF16, f32(0x3F808000), 0x3F80, 0x3F80},  // a tie: to the even 0x3F80
      {T::BF16, f32(0x3F818000), 0x3F82, 0x3F82},  // a tie: to the even 0x3F82
      {T::BF16, f32(0x3F808001), 0x3F81, 0x3F81},  // just above the tie
      {T::BF16, f32(0x7F7F0000), 0x7F7F, 0x7F7F},  // the largest finite bfloat16
      {T::BF16, f32(0x7F7FFFFF), 0x7F80, 0x7F80},  // rounds up past it: infinity (bfloat16 does not saturate)
  };
  for (const Case& c : cases) {
    INFO(Name(c.type) << " " << c.value);
    CHECK(Bits(c.type, c.value) == c.bits);
    if (c.type != T::BF16) CHECK(Bits(c.type, WrapSaturated(c.type, c.value)) == c.saturatedBits);
  }
  // Decoding: every finite code above back to its value.
  std::byte raw[2] = {};
  raw[0] = std::byte{0x7E};
  CHECK(Load(T::E4M3, raw) == 448.0);
  raw[0] = std::byte{0x01};
  CHECK(Load(T::E4M3, raw) == 0.001953125);
  raw[0] = std::byte{0x7B};
  CHECK(Load(T::E5M2, raw) == 57344.0);
  raw[0] = std::byte{0x7C};
  CHECK(std::isinf(Load(T::E5M2, raw)));
  raw[0] = std::byte{0x7F};
  CHECK(std::isnan(Load(T::E4M3, raw)));
}
