// combo.comp: reduce (in a helper function, under a uniform branch), transpose,
// per-element and GetCoordinate together in one module, inside a loop.
#include "cases_inl.h"

#include <catch2/catch_test_macros.hpp>

#include <sstream>

using namespace exec;

namespace {

std::string RunCombo(const Env& env, uint32_t rows, uint32_t cols, bool doReduce, const std::string& targetEnv,
                     const Grid& grid) {
  const size_t n = grid.matrices() * 2, elems = size_t(rows) * cols;
  std::vector<Matrix> in;
  for (size_t i = 0; i < n; ++i) in.push_back(RandomMatrix(T::F32, rows, cols, 53 + uint32_t(i), -64, 64, 0.5));
  const float sentinel = -12345.0f;
  std::vector<Bytes> buffers = {Pack(in), cmtest::ToBytes(std::vector<float>(n * elems, sentinel)),
                                Bytes(n * elems * 2), Bytes(n * elems * 4),
                                cmtest::ToBytes(std::vector<uint32_t>(n * elems, 0xdeadbeefu))};
  cmtest::ComputeJob job;
  job.spirv = LoadShader("combo_" + std::to_string(rows) + "x" + std::to_string(cols), targetEnv);
  job.pushConstants = cmtest::ToBytes(std::vector<uint32_t>{doReduce ? 1u : 0u});
  if (std::string e = Dispatch(env, job, grid, buffers); !e.empty()) return e;

  const std::vector<Matrix> reduced = Unpack(buffers[1], T::F32, rows, cols, n);
  const std::vector<Matrix> transposed = Unpack(buffers[2], T::F16, cols, rows, n);
  const std::vector<Matrix> perElem = Unpack(buffers[3], T::F32, rows, cols, n);
  const std::vector<uint32_t> coord = cmtest::FromBytes<uint32_t>(buffers[4]);
  std::ostringstream s;
  for (size_t m = 0; m < n; ++m) {
    Matrix untouched(T::F32, rows, cols);
    for (double& v : untouched.v) v = sentinel;
    const Matrix wantT = Convert(in[m], T::F16, true);
    const std::string r = Compare(reduced[m], doReduce ? Reduce(in[m], kRow, Combine::Sum, rows, cols) : untouched);
    const std::string t = Compare(transposed[m], wantT);
    const std::string p = Compare(perElem[m], PerElement(in[m], [](uint32_t r_, uint32_t c_, double x) {
                                    return x + r_ * 3.0 + c_;
                                  }));
    size_t badCoord = 0;
    for (uint32_t r_ = 0; r_ < cols; ++r_)
      for (uint32_t c_ = 0; c_ < rows; ++c_)
        if (coord[m * elems + r_ * rows + c_] != Bits(T::F16, wantT.at(r_, c_))) badCoord++;
    if (!r.empty()) s << " [matrix " << m << " reduce] " << r;
    if (!t.empty()) s << " [matrix " << m << " transpose] " << t;
    if (!p.empty()) s << " [matrix " << m << " per-element] " << p;
    if (badCoord) s << " [matrix " << m << " get-coordinate] " << badCoord << " elements wrong";
  }
  return s.str();
}

void Check(const Env& env, uint32_t rows, uint32_t cols) {
  // The reduce branch taken with one subgroup per workgroup, skipped with four.
  std::vector<NamedRun> runs;
  for (const std::string& targetEnv : TargetEnvs())
    for (auto [doReduce, grid] : {std::pair{true, Grid{1, 2}}, std::pair{false, Grid{4, 1}}})
      runs.push_back({"combo_" + std::to_string(rows) + "x" + std::to_string(cols) + "." + targetEnv + " reduce=" +
                          std::to_string(doReduce) + " subgroups/group=" + std::to_string(grid.subgroupsPerGroup),
                      [&env, rows, cols, doReduce, grid, &targetEnv] { return RunCombo(env, rows, cols, doReduce, targetEnv, grid); }});
  CheckSampled(runs);
}

}  // namespace

TEST_CASE("combined_ops_loop_branch_function", "[exec][combo]") {
  {
    EXEC_ENV(env);
    // An f32 accumulator of the device's shape, transposed into an f16 B.
    if (auto c = Conversion(env, Use::Acc, T::F32, Use::B, T::F16, true)) Check(env, c->rows, c->cols);
  }
  EXEC_ENV(env, .flex = true);
  Check(env, 16, 32);
}

// SPIR-V 1.6 modules may run without REQUIRE_FULL_SUBGROUPS (the local size is
// still a multiple of 8, so lavapipe's subgroups are full anyway).
TEST_CASE("spirv16_without_require_full_subgroups", "[exec][workgroup]") {
  EXEC_ENV(env, .flex = true);
  const std::vector<std::string> env16 = {"spirv1.6"};
  const std::vector<Grid> grids = {Grid{1, 2, false, false, false}, Grid{4, 1, false, false, false}};
  CheckAll(env, std::vector<GetCoordCase>{{Use::B, T::F16, 8, 8}}, grids, env16);
  CheckAll(env, std::vector<ReduceCase>{{kColumn, Combine::Sum, T::F32, 16, 16, 16, 16}}, grids, env16);
  CheckAll(env, std::vector<ConvertCase>{{Use::Acc, T::F16, 8, 8, Use::A, T::F16, true}}, grids, env16);
  CheckAll(env, std::vector<PerElemCase>{{ElemOp::RowCol, Use::A, T::F16, 16, 32}}, grids, env16);
}
