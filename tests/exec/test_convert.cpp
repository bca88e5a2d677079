// Use-changing conversions (OpCooperativeMatrixConvertUseEXT and the relaxed
// Op*Convert rules) and coopMatTransposeEXT (CooperativeMatrixTransposeEXT),
// named after the VK-GL-CTS convert_* / transpose_* cases plus the EXT-only
// directions (A/B -> accumulator, transpose to A).
#include "cases.h"

#include <catch2/catch_test_macros.hpp>

using namespace exec;

namespace {
using TT = std::pair<T, T>;
// Accumulator -> A/B: same type (ConvertUse), float narrowing (FConvert),
// integer narrowing (U/SConvert), int -> float, float -> int, and a change of
// both width and signedness (UConvert + Bitcast in glslang's output).
const std::vector<TT> kFromAcc = {{T::F16, T::F16}, {T::F32, T::F16}, {T::U32, T::U8}, {T::S32, T::S8},
                                  {T::S32, T::F16}, {T::F32, T::S8},  {T::U32, T::S8}};
const std::vector<TT> kTransposed = {{T::F16, T::F16}, {T::F32, T::F16}, {T::S32, T::S8}, {T::U32, T::S8}};
// A/B -> accumulator (maintenance1 only).
const std::vector<TT> kToAcc = {{T::F16, T::F16}, {T::F16, T::F32}, {T::U8, T::U32}, {T::S8, T::S32},
                                {T::S8, T::F32},  {T::F16, T::S32}, {T::S8, T::U32}, {T::U8, T::S32}};

std::vector<ConvertCase> FromAcc(Use to, const std::vector<TT>& types, uint32_t r, uint32_t c, bool transpose) {
  std::vector<ConvertCase> out;
  for (auto [from, into] : types) out.push_back({Use::Acc, from, r, c, to, into, transpose});
  return out;
}
std::vector<ConvertCase> ToAcc(Use from, uint32_t r, uint32_t c) {
  std::vector<ConvertCase> out;
  for (auto [t, into] : kToAcc) out.push_back({from, t, r, c, Use::Acc, into});
  return out;
}
}  // namespace

TEST_CASE("convert_acc_to_a", "[exec][convert]") {
  EXEC_ENV(env);
  CheckAll(env, FromAcc(Use::A, kFromAcc, 8, 8, false), {Grid{2, 2}});
}

TEST_CASE("convert_acc_to_b", "[exec][convert]") {
  EXEC_ENV(env);
  CheckAll(env, FromAcc(Use::B, kFromAcc, 8, 8, false), {Grid{2, 2}});
}

TEST_CASE("transpose_acc_to_a", "[exec][convert][transpose]") {
  {
    EXEC_ENV(env);
    CheckAll(env, FromAcc(Use::A, kTransposed, 8, 8, true), {Grid{2, 2}});
  }
  EXEC_ENV(env, .flex = true);  // 16x32 accumulator -> 32x16 A
  CheckAll(env, FromAcc(Use::A, kTransposed, 16, 32, true), {Grid{2, 2}});
  CheckAll(env, std::vector<ConvertCase>{{Use::Acc, T::F32, 32, 16, Use::A, T::F16, true}}, {Grid{2, 2}});
}

TEST_CASE("transpose_acc_to_b", "[exec][convert][transpose]") {
  {
    EXEC_ENV(env);
    CheckAll(env, FromAcc(Use::B, kTransposed, 8, 8, true), {Grid{2, 2}});
  }
  EXEC_ENV(env, .flex = true);
  CheckAll(env, FromAcc(Use::B, kTransposed, 16, 32, true), {Grid{2, 2}});
}

TEST_CASE("convert_a_to_acc", "[exec][convert]") {
  EXEC_ENV(env);
  CheckAll(env, ToAcc(Use::A, 8, 8), {Grid{2, 2}});
}

TEST_CASE("convert_b_to_acc", "[exec][convert]") {
  EXEC_ENV(env);
  CheckAll(env, ToAcc(Use::B, 8, 8), {Grid{2, 2}});
}

TEST_CASE("convert_flexible_dimensions", "[exec][convert][flex]") {
  EXEC_ENV(env, .flex = true);
  CheckAll(env,
           std::vector<ConvertCase>{{Use::Acc, T::F32, 16, 32, Use::A, T::F16},
                                    {Use::Acc, T::S32, 16, 32, Use::B, T::S8},
                                    {Use::Acc, T::F16, 32, 16, Use::B, T::F16},
                                    {Use::A, T::F16, 16, 32, Use::Acc, T::F32},
                                    {Use::B, T::U8, 16, 32, Use::Acc, T::U32},
                                    {Use::A, T::S8, 32, 16, Use::Acc, T::S32}},
           {Grid{2, 2}});
}

TEST_CASE("convert_workgroup_sizes", "[exec][convert][workgroup]") {
  EXEC_ENV(env);
  CheckAll(env,
           std::vector<ConvertCase>{{Use::Acc, T::F32, 8, 8, Use::B, T::F16, true},
                                    {Use::A, T::S8, 8, 8, Use::Acc, T::S32}},
           {Grid{1, 1}, Grid{1, 3}, Grid{4, 2}, Grid{4, 1, false, 8}});
}

TEST_CASE("convert_app_shared_memory", "[exec][convert][shared]") {
  EXEC_ENV(env, .flex = true);
  CheckAll(env,
           std::vector<ConvertCase>{{Use::Acc, T::F32, 16, 32, Use::B, T::F16, true, true},
                                    {Use::Acc, T::S32, 8, 8, Use::A, T::S8, false, true},
                                    {Use::A, T::F16, 16, 16, Use::Acc, T::F32, false, true}},
           {Grid{1, 2}, Grid{4, 2}});
}

// Signedness-only Use changes (OpCooperativeMatrixConvertUseEXT, same width):
// the value is reinterpreted. One side is always a type lavapipe does not list
// (A/B 8-bit, accumulators 32-bit); lavapipe runs such types anyway, but the
// validation layer would report VUID-RuntimeSpirv-OpTypeCooperativeMatrixKHR-10163.
TEST_CASE("convert_signedness_only", "[exec][convert][unlisted-type]") {
  EXEC_ENV(env);
  CheckAll(env,
           std::vector<ConvertCase>{{Use::Acc, T::S32, 8, 8, Use::A, T::U32},
                                    {Use::A, T::U8, 8, 8, Use::Acc, T::S8},
                                    {Use::Acc, T::U32, 8, 8, Use::B, T::S32, true}},
           {Grid{2, 2}});
}

// End to end: a converted (or transposed) A feeds a KHR MulAdd.
TEST_CASE("muladd_converted_a", "[exec][convert][muladd]") {
  {
    EXEC_ENV(env);
    CheckAll(env,
             std::vector<MulAddCase>{{"fromacc", T::F16, T::F32, 8, 8, 8},
                                     {"fromacc", T::S8, T::S32, 8, 8, 8},
                                     {"transposed", T::F16, T::F32, 8, 8, 8}},
             {Grid{2, 2}});
  }
  EXEC_ENV(env, .flex = true);
  CheckAll(env,
           std::vector<MulAddCase>{{"fromacc", T::F16, T::F32, 16, 32, 16}, {"transposed", T::F16, T::F32, 16, 8, 32}},
           {Grid{2, 2}});
}
