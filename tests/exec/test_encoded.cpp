// bfloat16 and fp8 (E4M3, E5M2) matrices through the EXT operations: the conversions
// kernels use (llama.cpp's f32 accumulator -> bf16 A and back, A <-> B through an f32
// accumulator, transposes, fp8 with and without saturation), GetCoordinate and
// PerElementOp. Lavapipe has neither type, so they run on the virtual device's GFX12
// profiles (tests/virtual), which list them as A and B of 16x16x16 with f32
// accumulators; elsewhere each says "not run". Where the device lists the type in square
// configurations as RADV does, every case of it must run (Intel's 8x8x16 and 8x16x16 A,
// B and accumulators differ in shape, so conversions between them do not exist). Reduce
// is not here: it takes accumulators, which only Intel Xe2 lists in bfloat16.
#include "cases_inl.h"

#include <catch2/catch_test_macros.hpp>

#include <tuple>

using namespace exec;

namespace {
const T kEncoded[] = {T::BF16, T::E4M3, T::E5M2};

// Whether the device lists t as A and B of one square shape with an f32 accumulator of that
// shape too (RADV GFX12's 16x16x16), so that every case below has both sides.
bool Lists(const Env& env, T t) {
  const auto a = env.Shape(Use::A, t);
  return a && a == env.Shape(Use::B, t) && a == env.Shape(Use::Acc, T::F32);
}
}  // namespace

TEST_CASE("bfloat16 and fp8 conversions", "[exec][convert][encoded]") {
  EXEC_ENV(env);
  for (T t : kEncoded) {
    std::vector<ConvertCase> wanted;
    for (Use use : {Use::A, Use::B}) {
      // Rounding to nearest even, subnormals, fp8 overflow (E4M3 to NaN, E5M2 to infinity).
      wanted.push_back({Use::Acc, T::F32, 0, 0, use, t});
      wanted.push_back({Use::Acc, T::F32, 0, 0, use, t, /*transpose=*/true});
      wanted.push_back({use, t, 0, 0, Use::Acc, T::F32});  // exact, every bit pattern
    }
    // A <-> B: no one operation changes A into B; kernels go through an accumulator.
    for (auto [from, to, transpose] : {std::tuple{Use::A, Use::B, false}, std::tuple{Use::A, Use::B, true},
                                       std::tuple{Use::B, Use::A, true}}) {
      ConvertCase c{from, t, 0, 0, to, t, transpose};
      c.viaAcc = true;
      wanted.push_back(c);
    }
    if (t != T::BF16) {  // SaturatedToLargestFloat8NormalConversionEXT: overflow to the largest finite value
      ConvertCase c{Use::Acc, T::F32, 0, 0, Use::A, t};
      c.saturate = true;
      wanted.push_back(c);
    }
    const std::vector<ConvertCase> cases = Listed(env, wanted);
    if (Lists(env, t)) CHECK(cases.size() == wanted.size());
    CheckAll(env, cases, {Grid{2, 2}});
  }
}

TEST_CASE("bfloat16 and fp8 A converted from an accumulator feed MulAdd", "[exec][convert][muladd][encoded]") {
  EXEC_ENV(env);
  for (T t : kEncoded) {
    std::vector<MulAddCase> cases;
    for (const char* mode : {"fromacc", "transposed"})
      if (auto muladd = ListedMulAdd(env, mode, t, T::F32)) cases.push_back(*muladd);
    if (Lists(env, t)) CHECK(cases.size() == 2);
    CheckAll(env, cases, {Grid{2, 2}});
  }
}

TEST_CASE("bfloat16 and fp8 get_coordinate", "[exec][getcoord][encoded]") {
  EXEC_ENV(env);
  for (T t : kEncoded) {
    std::vector<GetCoordCase> cases;
    for (Use use : {Use::A, Use::B})
      if (const auto s = ShapeOrWarn(env, use, t)) {
        cases.push_back({use, t, s->rows, s->cols});
        cases.push_back({use, t, s->rows, s->cols, "", false, /*columnMajor=*/true});
      }
    if (Lists(env, t)) CHECK(cases.size() == 4);
    CheckAll(env, cases, {Grid{2, 2}});
  }
}

// The element functions compute in float and convert back (perelem.comp).
TEST_CASE("bfloat16 and fp8 per_element_op", "[exec][perelem][encoded]") {
  EXEC_ENV(env);
  for (T t : kEncoded) {
    std::vector<PerElemCase> cases;
    for (Use use : {Use::A, Use::B})
      if (const auto s = ShapeOrWarn(env, use, t))
        for (ElemOp op : {ElemOp::Scalar, ElemOp::Mat, ElemOp::RowCol, ElemOp::Struct, ElemOp::Multi, ElemOp::Globals})
          cases.push_back({op, use, t, s->rows, s->cols});
    if (Lists(env, t)) CHECK(cases.size() == 12);
    CheckAll(env, cases, {Grid{2, 2}});
  }
}
