// OpCooperativeMatrixPerElementOpEXT, named after the VK-GL-CTS cooperative_matrix
// cases (khr_a / khr_b / khr_r: A, B and accumulator matrices).
#include "cases_inl.h"

#include <catch2/catch_test_macros.hpp>

#include <tuple>

using namespace exec;

namespace {
void RunOp(ElemOp op) {
  {
    EXEC_ENV(env);
    std::vector<PerElemCase> cases;
    for (auto [use, t] : std::vector<std::pair<Use, T>>{{Use::A, T::F16},
                                                         {Use::B, T::F16},
                                                         {Use::Acc, T::F16},
                                                         {Use::Acc, T::F32},
                                                         {Use::A, T::U8},
                                                         {Use::B, T::S8},
                                                         {Use::Acc, T::U32},
                                                         {Use::Acc, T::S32}})
      if (const auto s = ShapeOrWarn(env, use, t)) cases.push_back({op, use, t, s->rows, s->cols});
    CheckAll(env, cases, {Grid{2, 2}});
  }
  {
    EXEC_ENV(env, .flex = true);
    std::vector<PerElemCase> cases;
    for (auto [use, t] : std::vector<std::pair<Use, T>>{{Use::A, T::F16}, {Use::B, T::S8}, {Use::Acc, T::F32}})
      for (auto [r, c] : std::vector<std::pair<uint32_t, uint32_t>>{{16, 32}, {32, 16}})
        cases.push_back({op, use, t, r, c});
    CheckAll(env, cases, {Grid{2, 2}});
  }
}
}  // namespace

TEST_CASE("per_element_op", "[exec][perelem]") { RunOp(ElemOp::Scalar); }
TEST_CASE("per_element_op_mat", "[exec][perelem]") { RunOp(ElemOp::Mat); }
TEST_CASE("per_element_op_row_col", "[exec][perelem]") { RunOp(ElemOp::RowCol); }
// lavapipe's own NV per-element op crashes on a struct operand; through the
// layer the operation is lowered and never reaches the driver as such.
TEST_CASE("per_element_op_struct", "[exec][perelem]") { RunOp(ElemOp::Struct); }
TEST_CASE("per_element_op_two_operands", "[exec][perelem]") { RunOp(ElemOp::Multi); }
// The element function reads a storage buffer at an offset held in a Private variable.
TEST_CASE("per_element_op_globals", "[exec][perelem]") { RunOp(ElemOp::Globals); }

TEST_CASE("per_element_op_workgroup_sizes", "[exec][perelem][workgroup]") {
  EXEC_ENV(env);
  std::vector<PerElemCase> cases;
  for (auto [op, use, t] : {std::tuple{ElemOp::RowCol, Use::B, T::F16}, std::tuple{ElemOp::Mat, Use::Acc, T::S32}})
    if (const auto s = ShapeOrWarn(env, use, t)) cases.push_back({op, use, t, s->rows, s->cols});
  CheckAll(env, cases, {Grid{1, 1}, Grid{1, 3}, Grid{4, 2}, Grid{4, 1, false, true}});
}

// An element function with side effects, as kernels that scatter from it do: it stores
// to the workgroup's shared memory and to a storage buffer at its element's coordinates
// and counts its calls atomically. Checked: the result, every stored word, and one call
// per element (none of which depends on the order of the calls).
TEST_CASE("per_element_op_side_effects", "[exec][perelem]") {
  {
    EXEC_ENV(env);
    std::vector<PerElemCase> cases;
    for (auto [use, t] : std::vector<std::pair<Use, T>>{
             {Use::A, T::F16}, {Use::B, T::S8}, {Use::A, T::U8}, {Use::Acc, T::F32}, {Use::Acc, T::U32}})
      if (const auto s = ShapeOrWarn(env, use, t)) cases.push_back({ElemOp::SideEffects, use, t, s->rows, s->cols});
    CheckAll(env, cases, {Grid{2, 2}, Grid{4, 1}});
  }
  EXEC_ENV(env, .flex = true);
  CheckAll(env, std::vector<PerElemCase>{{ElemOp::SideEffects, Use::Acc, T::F32, 16, 32}}, {Grid{2, 2}});
}
