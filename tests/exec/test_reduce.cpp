// OpCooperativeMatrixReduceEXT, named after the VK-GL-CTS cooperative_matrix
// reduce_* cases, plus max. lavapipe's native NV row/column reduce is wrong above
// one 8x8 tile, so only the CPU reference is the oracle here.
#include "cases_inl.h"

#include <catch2/catch_test_macros.hpp>

using namespace exec;

namespace {

struct Shape {
  uint32_t r, c;
};

// The same-shape cases of one mask (2x2: half the shape) for one combine op:
// every accumulator type at the device's shape (8x8 on lavapipe) and 16x16 (2x2 needs 16x16: an 8x8 source would
// give an illegal 4x4 result), and f32 at 16x32 and 32x16.
void RunSameShape(int mask, Combine op) {
  auto result = [mask](Shape s) { return mask == k2x2 ? Shape{s.r / 2, s.c / 2} : s; };
  if (mask != k2x2) {
    EXEC_ENV(env);
    std::vector<ReduceCase> cases;
    for (T t : {T::F32, T::F16, T::U32, T::S32})
      if (const auto s = ShapeOrWarn(env, Use::Acc, t)) cases.push_back({mask, op, t, s->rows, s->cols, s->rows, s->cols});
    CheckAll(env, cases, {Grid{2, 2}});
  }
  EXEC_ENV(env, .flex = true);
  std::vector<ReduceCase> cases;
  for (T t : {T::F32, T::F16, T::U32, T::S32}) {
    const Shape res = result({16, 16});
    cases.push_back({mask, op, t, 16, 16, res.r, res.c});
  }
  for (Shape s : {Shape{16, 32}, Shape{32, 16}}) {
    const Shape res = result(s);
    cases.push_back({mask, op, T::F32, s.r, s.c, res.r, res.c});
  }
  CheckAll(env, cases, {Grid{2, 2}});
}

}  // namespace

TEST_CASE("reduce_sum_row", "[exec][reduce]") { RunSameShape(kRow, Combine::Sum); }
TEST_CASE("reduce_sum_col", "[exec][reduce]") { RunSameShape(kColumn, Combine::Sum); }
TEST_CASE("reduce_sum_rowcol", "[exec][reduce]") { RunSameShape(kRowColumn, Combine::Sum); }
TEST_CASE("reduce_sum_2x2", "[exec][reduce]") { RunSameShape(k2x2, Combine::Sum); }
TEST_CASE("reduce_min_row", "[exec][reduce]") { RunSameShape(kRow, Combine::Min); }
TEST_CASE("reduce_min_col", "[exec][reduce]") { RunSameShape(kColumn, Combine::Min); }
TEST_CASE("reduce_min_rowcol", "[exec][reduce]") { RunSameShape(kRowColumn, Combine::Min); }
TEST_CASE("reduce_min_2x2", "[exec][reduce]") { RunSameShape(k2x2, Combine::Min); }
TEST_CASE("reduce_max_row", "[exec][reduce]") { RunSameShape(kRow, Combine::Max); }
TEST_CASE("reduce_max_col", "[exec][reduce]") { RunSameShape(kColumn, Combine::Max); }
TEST_CASE("reduce_max_rowcol", "[exec][reduce]") { RunSameShape(kRowColumn, Combine::Max); }
TEST_CASE("reduce_max_2x2", "[exec][reduce]") { RunSameShape(k2x2, Combine::Max); }

// Result dimensions that differ from the source. CTS scales by 3 (8x8 -> 8x24 for
// row, 24x8 for column, 24x24 for row+column); also smaller results.
TEST_CASE("reduce_sum_row_changedim", "[exec][reduce][flex]") {
  EXEC_ENV(env, .flex = true);
  CheckAll(env, std::vector<ReduceCase>{{kRow, Combine::Sum, T::F32, 8, 8, 8, 24},
                                        {kRow, Combine::Sum, T::F32, 16, 16, 16, 8},
                                        {kRow, Combine::Sum, T::S32, 16, 32, 16, 8},
                                        {kRow, Combine::Max, T::S32, 16, 32, 16, 8}},
           {Grid{2, 2}});
}
TEST_CASE("reduce_sum_col_changedim", "[exec][reduce][flex]") {
  EXEC_ENV(env, .flex = true);
  CheckAll(env, std::vector<ReduceCase>{{kColumn, Combine::Sum, T::F32, 8, 8, 24, 8},
                                        {kColumn, Combine::Sum, T::F32, 16, 16, 8, 16},
                                        {kColumn, Combine::Min, T::F32, 16, 16, 8, 16}},
           {Grid{2, 2}});
}
TEST_CASE("reduce_sum_rowcol_changedim", "[exec][reduce][flex]") {
  EXEC_ENV(env, .flex = true);
  CheckAll(env, std::vector<ReduceCase>{{kRowColumn, Combine::Sum, T::F32, 8, 8, 24, 24},
                                        {kRowColumn, Combine::Sum, T::F32, 16, 16, 8, 32},
                                        {kRowColumn, Combine::Max, T::F32, 16, 16, 8, 32}},
           {Grid{2, 2}});
}
TEST_CASE("reduce_sum_2x2_32x32", "[exec][reduce][flex]") {
  EXEC_ENV(env, .flex = true);
  CheckAll(env, std::vector<ReduceCase>{{k2x2, Combine::Sum, T::F32, 32, 32, 16, 16},
                                        {k2x2, Combine::Min, T::F32, 32, 32, 16, 16},
                                        {k2x2, Combine::Sum, T::F16, 32, 32, 16, 16},
                                        {k2x2, Combine::Max, T::F16, 32, 32, 16, 16}},
           {Grid{2, 2}});
}

// The largest flexible shapes the RADV profiles take (sides to 64 in 16-tiles): 48 is
// three tiles, which no power-of-two layout covers, 64 four. f32: exact sums (reduce's
// inputs are multiples of 0.5 up to 64, so a 64x64 sum stays below 2^19).
TEST_CASE("reduce_flexible_48_and_64", "[exec][reduce][flex]") {
  EXEC_ENV(env, .flex = true);
  std::vector<ReduceCase> cases;
  for (Shape s : {Shape{48, 16}, Shape{16, 48}, Shape{48, 48}, Shape{64, 64}})
    for (int mask : {kRow, kColumn, kRowColumn}) cases.push_back({mask, Combine::Sum, T::F32, s.r, s.c, s.r, s.c});
  cases.push_back({kRow, Combine::Max, T::F32, 48, 16, 48, 16});
  cases.push_back({kColumn, Combine::Min, T::F32, 16, 48, 16, 48});
  cases.push_back({kRowColumn, Combine::Max, T::F32, 64, 64, 64, 64});
  cases.push_back({k2x2, Combine::Sum, T::F32, 64, 64, 32, 32});
  CheckAll(env, WithinElementBudget(env, cases), {Grid{2, 2}});
}

TEST_CASE("reduce_workgroup_sizes", "[exec][reduce][workgroup]") {
  EXEC_ENV(env, .flex = true);
  const std::vector<Grid> grids = {Grid{1, 1}, Grid{1, 3}, Grid{2, 2}, Grid{4, 2}, Grid{4, 1, false, true}};
  CheckAll(env, std::vector<ReduceCase>{{kRow, Combine::Sum, T::F32, 8, 8, 8, 8},
                                        {kColumn, Combine::Max, T::S32, 16, 16, 16, 16},
                                        {k2x2, Combine::Sum, T::F32, 16, 32, 8, 16}},
           grids);
  CheckAll(env, std::vector<ReduceCase>{{kRowColumn, Combine::Sum, T::F32, 8, 8, 8, 8, "lit32"}},
           {Grid{4, 2, true}});
}

TEST_CASE("reduce_app_shared_memory", "[exec][reduce][shared]") {
  EXEC_ENV(env, .flex = true);
  CheckAll(env, std::vector<ReduceCase>{{kRow, Combine::Sum, T::F32, 16, 16, 16, 16, "shared"},
                                        {k2x2, Combine::Max, T::S32, 16, 16, 8, 8, "shared"},
                                        {kColumn, Combine::Min, T::F16, 8, 8, 8, 8, "shared"}},
           {Grid{1, 2}, Grid{4, 2}});
}

TEST_CASE("reduce_spec_constant_dims", "[exec][reduce][spec]") {
  EXEC_ENV(env, .flex = true);
  std::vector<ReduceCase> cases;
  for (auto [r, c] : std::vector<std::pair<uint32_t, uint32_t>>{{8, 8}, {16, 32}, {32, 16}}) {
    cases.push_back({kRow, Combine::Sum, T::F32, r, c, r, c, "", true});
    cases.push_back({kColumn, Combine::Max, T::S32, r, c, r, c, "", true});
    if (r > 8 && c > 8) cases.push_back({k2x2, Combine::Sum, T::F32, r, c, r / 2, c / 2, "", true});
  }
  CheckAll(env, cases, {Grid{2, 2}});
}
