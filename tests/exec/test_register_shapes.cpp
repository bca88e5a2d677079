// Shapes the register path treats specially. On lavapipe the layer passes the
// built-in flexible-shape layouts, so these run in registers by default (and
// through the scratch in the "portable:" copy of the suite): the largest unrolled
// matrices (32x32, 128 elements per invocation), 16-bit values crossing lanes,
// 32x32 transposes (a gather whose destination index depends on the lane), and
// 24x16, a flexible shape that is not a power of two, has no linear layout and
// must keep the portable path even when the layer passes layouts.
#include "cases_inl.h"

#include <catch2/catch_test_macros.hpp>

#include "coopmat/layout.h"
#include "coopmat/lower.h"

using namespace exec;

TEST_CASE("register_reduce_32x32", "[exec][reduce][flex][register]") {
  EXEC_ENV(env, .flex = true);
  CheckAll(env, std::vector<ReduceCase>{{kRow, Combine::Sum, T::F32, 32, 32, 32, 32},
                                        {kColumn, Combine::Sum, T::F32, 32, 32, 32, 32},
                                        {kRowColumn, Combine::Sum, T::F32, 32, 32, 32, 32},
                                        {kColumn, Combine::Max, T::S32, 32, 32, 32, 32}},
           {Grid{2, 2}});
}

TEST_CASE("register_reduce_f16_16x32", "[exec][reduce][flex][register]") {
  EXEC_ENV(env, .flex = true);
  CheckAll(env, std::vector<ReduceCase>{{kRow, Combine::Sum, T::F16, 16, 32, 16, 32},
                                        {kColumn, Combine::Max, T::F16, 16, 32, 16, 32}},
           {Grid{2, 2}});
}

TEST_CASE("register_reduce_24x16_portable", "[exec][reduce][flex][register]") {
  EXEC_ENV(env, .flex = true);
  CheckAll(env, std::vector<ReduceCase>{{kRow, Combine::Sum, T::F32, 24, 16, 24, 16},
                                        {kColumn, Combine::Sum, T::F32, 24, 16, 24, 16}},
           {Grid{2, 2}});
}

TEST_CASE("register_transpose_32x32", "[exec][convert][flex][register]") {
  EXEC_ENV(env, .flex = true);
  CheckAll(env, std::vector<ConvertCase>{{Use::Acc, T::F32, 32, 32, Use::B, T::F16, true},
                                         {Use::Acc, T::F32, 32, 32, Use::A, T::F16, true}},
           {Grid{2, 2}});
}

// Register code for several subgroup sizes in one module (what the layer emits on
// RADV, wave32 and wave64): lowered offline for sizes 8 and 16 (the 16-lane layouts
// are lavapipe's with a replica lane bit, a valid but different map), then run on the
// bare driver, which must take the 8-lane version through the SubgroupSize switch.
// A wrong choice moves elements to the wrong lanes, which the references catch.
TEST_CASE("register_code_for_two_subgroup_sizes_runs_at_the_drivers_size", "[exec][register][subgroup-size]") {
  std::vector<coopmat::LinearLayout> layouts = coopmat::BuiltinLayouts(coopmat::DriverFamily::Lavapipe, 8);
  const size_t eightLane = layouts.size();
  for (size_t i = 0; i < eightLane; ++i) {
    coopmat::LinearLayout wide = layouts[i];
    wide.key.subgroupSize = 16;
    wide.laneBits.push_back({});
    layouts.push_back(wide);
  }
  size_t lowered = 0, inRegisters = 0;
  ShaderTransform transform([&](const std::vector<uint32_t>& words) {
    coopmat::LowerOptions options;
    options.layouts = layouts;
    options.AddMatrixProperties(8, 8, 8, coopmat::kTypeF16, coopmat::kTypeF16, coopmat::kTypeF32, coopmat::kTypeF32);
    coopmat::LowerResult result = coopmat::LowerModule(words, options);
    lowered += result.stats.OpsLowered();
    inRegisters += result.stats.registerPath;
    return result.words;
  });
  EXEC_ENV(env, .layer = false);
  CheckAll(env, std::vector<GetCoordCase>{{Use::Acc, T::F32, 8, 8}, {Use::B, T::F16, 8, 8}}, {Grid{2, 2}});
  CheckAll(env, std::vector<ReduceCase>{{kRow, Combine::Sum, T::F32, 8, 8, 8, 8}, {kColumn, Combine::Max, T::S32, 8, 8, 8, 8}},
           {Grid{2, 2}});
  CheckAll(env, std::vector<ConvertCase>{{Use::Acc, T::F32, 8, 8, Use::B, T::F16, true},
                                         {Use::Acc, T::F16, 8, 8, Use::A, T::F16, false}},
           {Grid{2, 2}});
  CheckAll(env, std::vector<PerElemCase>{{ElemOp::RowCol, Use::Acc, T::F32, 8, 8}}, {Grid{2, 2}});
  CHECK(lowered > 0);
  CHECK(inRegisters == lowered);  // every operation took the two-size register path
}
