// The harness itself, without the layer: plain KHR shaders on the bare driver
// against the CPU reference, and the driver's own NV coopmat2 per-element and
// reduce operations at 8x8 (where lavapipe's are correct) as a cross-check of
// the reference. These pass or fail independently of the layer and the lowering.
#include "cases_inl.h"

#include <catch2/catch_test_macros.hpp>

using namespace exec;

TEST_CASE("harness: KHR load/muladd/store matches the CPU reference", "[exec][harness]") {
  EXEC_ENV(env, .flex = false, .layer = false);
  const std::vector<MulAddCase> cases = {
      {"khr", T::F16, T::F32, 8, 8, 8},
      {"khr", T::F16, T::F16, 8, 8, 8},
      {"khr", T::U8, T::U32, 8, 8, 8},
      {"khr", T::S8, T::S32, 8, 8, 8},
  };
  CheckAll(env, cases, {Grid{1, 1}, Grid{2, 3}, Grid{4, 2, false, true}});
}

TEST_CASE("harness: KHR muladd with flexible dimensions", "[exec][harness][flex]") {
  EXEC_ENV(env, .flex = true, .layer = false);
  CheckAll(env, std::vector<MulAddCase>{{"khr", T::F16, T::F32, 16, 16, 16}}, {Grid{2, 2}});
}

TEST_CASE("harness: failures are reported, not hidden", "[exec][harness][no-dispatch]") {
  EXEC_ENV(env, .flex = false, .layer = false);
  std::vector<Bytes> buffers;
  CHECK(Dispatch(env, cmtest::ComputeJob{}, Grid{}, buffers) == "shader missing or empty");
  CHECK(LoadShader("no_such_shader", "spirv1.3").empty());
  CHECK_FALSE(Run(env, MulAddCase{"khr", T::F16, T::F32, 8, 8, 9}, "spirv1.3", Grid{}).empty());
  // A module the driver rejects: a valid header followed by garbage.
  cmtest::ComputeJob bad;
  bad.spirv = {0x07230203u, 0x00010300u, 0u, 100u, 0u, 0xffffffffu, 0xffffffffu};
  CHECK_FALSE(cmtest::RunCompute(env.device(), bad, buffers));
}

TEST_CASE("harness: native NV per-element and reduce agree with the reference at 8x8", "[exec][harness][nv]") {
  // Only a sanity check of reference.cpp: lavapipe's own NV operations are right
  // for a single 8x8 tile (and wrong above it for row/column reductions).
  // The device enables only NV flexible dimensions; lavapipe does not check the
  // NV reduction/per-element feature bits at pipeline creation.
  EXEC_ENV(env, .flex = true, .layer = false);
  const std::vector<std::string> nv = {"spirv1.6"};
  std::vector<ReduceCase> reduces;
  for (int mask : {kRow, kColumn, kRowColumn})
    for (Combine op : {Combine::Sum, Combine::Min, Combine::Max})
      reduces.push_back({mask, op, T::F32, 8, 8, 8, 8, "nv"});
  CheckAll(env, reduces, {Grid{1, 2}}, nv);
  std::vector<PerElemCase> elems = {{ElemOp::RowCol, Use::Acc, T::F32, 8, 8, true},
                                    {ElemOp::Mat, Use::Acc, T::F32, 8, 8, true}};
  CheckAll(env, elems, {Grid{1, 2}}, nv);
}

// Hidden (run by hand: coopmat_exec_tests "[mutation]"): the reduce check run on
// lavapipe's own NV row reduction at 16x16, which is known to be wrong, must
// report a mismatch. Shows the comparison catches a wrong reduction.
TEST_CASE("harness: the reduce check catches lavapipe's native 16x16 row-reduce bug", "[.][exec][mutation]") {
  EXEC_ENV(env, .flex = true, .layer = false);
  const std::string result =
      Run(env, ReduceCase{kRow, Combine::Sum, T::F32, 16, 16, 16, 16, "nv"}, "spirv1.6", Grid{1, 1});
  INFO(result);
  CHECK(result.find("elements wrong") != std::string::npos);
}
