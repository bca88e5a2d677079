// Shapes the register path treats specially. On lavapipe the layer passes the
// built-in flexible-shape layouts, so these run in registers by default (and
// through the scratch in the "portable:" copy of the suite): the largest unrolled
// matrices (32x32, 128 elements per invocation), 16-bit values crossing lanes,
// 32x32 transposes (a gather whose destination index depends on the lane), and
// 24x16, a flexible shape that is not a power of two, has no linear layout and
// must keep the portable path even when the layer passes layouts.
#include "cases.h"

#include <catch2/catch_test_macros.hpp>

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
