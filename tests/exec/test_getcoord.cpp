// OpCooperativeMatrixGetCoordinateEXT: every invocation scatters each element it
// holds, m[i], to out[coopMatGetCoordinateEXT(m, i)]. The output must reproduce
// the loaded matrix exactly, every element written exactly once.
#include "cases_inl.h"

#include <catch2/catch_test_macros.hpp>

using namespace exec;

namespace {
// Every (use, type) lavapipe offers: A/B f16, u8, s8; accumulators f16, f32, u32, s32.
const std::vector<std::pair<Use, T>> kAllUseTypes = {
    {Use::A, T::F16},   {Use::A, T::U8},    {Use::A, T::S8},    {Use::B, T::F16},   {Use::B, T::U8},
    {Use::B, T::S8},    {Use::Acc, T::F16}, {Use::Acc, T::F32}, {Use::Acc, T::U32}, {Use::Acc, T::S32},
};
}  // namespace

TEST_CASE("get_coordinate", "[exec][getcoord]") {
  EXEC_ENV(env);
  std::vector<GetCoordCase> cases;
  for (auto [use, t] : kAllUseTypes)
    if (const auto s = ShapeOrWarn(env, use, t)) {
      cases.push_back({use, t, s->rows, s->cols});
      cases.push_back({use, t, s->rows, s->cols, "", false, /*columnMajor=*/true});
    }
  CheckAll(env, cases, {Grid{2, 2}});
}

TEST_CASE("get_coordinate_flexible_dimensions", "[exec][getcoord][flex]") {
  EXEC_ENV(env, .flex = true);
  std::vector<GetCoordCase> cases;
  for (auto [use, t] : std::vector<std::pair<Use, T>>{{Use::A, T::F16}, {Use::B, T::S8}, {Use::Acc, T::F32},
                                                       {Use::Acc, T::U32}})
    for (auto [r, c] : std::vector<std::pair<uint32_t, uint32_t>>{{16, 16}, {16, 32}, {32, 16}}) {
      cases.push_back({use, t, r, c});
    }
  // Column-major loads at non-square shapes (the matrix is then the buffer's transpose).
  cases.push_back({Use::Acc, T::F32, 16, 32, "", false, true});
  cases.push_back({Use::B, T::S8, 32, 16, "", false, true});
  CheckAll(env, cases, {Grid{2, 2}});
}

// The largest flexible shapes the RADV profiles take (sides to 64 in 16-tiles): 48 is
// three tiles, which no power-of-two layout covers, 64 four. On lavapipe (granularity 8)
// the same shapes are 6 and 8 tiles a side.
TEST_CASE("get_coordinate_flexible_48_and_64", "[exec][getcoord][flex]") {
  EXEC_ENV(env, .flex = true);
  std::vector<GetCoordCase> cases;
  for (auto [use, t] : std::vector<std::pair<Use, T>>{{Use::A, T::F16}, {Use::B, T::S8}, {Use::Acc, T::F32}})
    for (auto [r, c] : std::vector<std::pair<uint32_t, uint32_t>>{{48, 16}, {16, 48}, {64, 64}})
      cases.push_back({use, t, r, c});
  cases.push_back({Use::Acc, T::F32, 48, 48});
  cases.push_back({Use::Acc, T::F32, 48, 16, "", false, /*columnMajor=*/true});
  CheckAll(env, WithinElementBudget(env, cases), {Grid{2, 2}});
}

// Coordinates above 127, beyond what an s8 element holds. (Mesa rejects
// cooperative-matrix dimensions of 256 and more, so 248 is the largest.)
TEST_CASE("get_coordinate_large_coordinates", "[exec][getcoord][flex]") {
  EXEC_ENV(env, .flex = true);
  // One target environment each: these pipelines take seconds to compile on lavapipe.
  CheckAll(env, std::vector<GetCoordCase>{{Use::A, T::S8, 8, 248}}, {Grid{1, 2}}, {"spirv1.3"});
  CheckAll(env, std::vector<GetCoordCase>{{Use::B, T::S8, 248, 8}}, {Grid{1, 2}}, {"spirv1.6"});
}

TEST_CASE("get_coordinate_workgroup_sizes", "[exec][getcoord][workgroup]") {
  EXEC_ENV(env, .flex = true);
  // local_size_x from spec constant 0 (LocalSizeId in SPIR-V 1.6): 1, 2, 4 subgroups.
  CheckAll(env, std::vector<GetCoordCase>{{Use::Acc, T::F32, 8, 8}},
           {Grid{1, 1}, Grid{1, 3}, Grid{2, 2}, Grid{4, 2}, Grid{4, 1, false, true}});
  CheckAll(env, std::vector<GetCoordCase>{{Use::B, T::S8, 16, 32}}, {Grid{1, 3}, Grid{4, 1, false, true}});
  // Literal local_size_x 16 and 32.
  CheckAll(env, std::vector<GetCoordCase>{{Use::Acc, T::F32, 8, 8, "lit16"}}, {Grid{2, 3, true}});
  CheckAll(env, std::vector<GetCoordCase>{{Use::A, T::F16, 16, 32, "lit32"}}, {Grid{4, 2, true}});
}

TEST_CASE("get_coordinate_app_shared_memory", "[exec][getcoord][shared]") {
  EXEC_ENV(env, .flex = true);
  CheckAll(env, std::vector<GetCoordCase>{{Use::A, T::F16, 8, 8, "shared"}, {Use::Acc, T::F32, 16, 16, "shared"}},
           {Grid{1, 2}, Grid{4, 2}});
}

TEST_CASE("get_coordinate_spec_constant_dims", "[exec][getcoord][spec]") {
  EXEC_ENV(env, .flex = true);
  std::vector<GetCoordCase> cases;
  for (auto [r, c] : std::vector<std::pair<uint32_t, uint32_t>>{{8, 8}, {16, 32}, {32, 16}}) {
    cases.push_back({Use::Acc, T::F32, r, c, "", true});
    cases.push_back({Use::B, T::S8, r, c, "shared", true});
  }
  CheckAll(env, cases, {Grid{2, 2}});
}
