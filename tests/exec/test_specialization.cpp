// spec_tiles.comp: a flash-attention-shaped kernel whose tile sizes are
// specialization constants, run at several specializations of the one module and
// compared with a CPU reference; a specialization whose sizes do not match is
// refused at pipeline creation with a message, never run.
#include "cases_inl.h"

#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <sstream>

using namespace exec;

namespace {

struct Tiles {
  uint32_t tm, tn, tk;
};

constexpr float kScale = 0.5f;
constexpr uint32_t kCausalOffset = 1;
constexpr float kSentinel = -12345.0f;

// What the kernel computes for one subgroup's Q, K, V (see spec_tiles.comp), in
// double precision with P rounded to f16 where the kernel converts it.
struct Expected {
  Matrix out;                 // TM x TN
  std::vector<double> rowSum;  // TM
  Matrix absV;                 // |V| column sums bound the f16 rounding of P
};

Expected Reference(const Tiles& t, const Matrix& q, const Matrix& k, const Matrix& v) {
  Matrix s(T::F32, t.tm, t.tn);
  for (uint32_t r = 0; r < t.tm; ++r)
    for (uint32_t c = 0; c < t.tn; ++c) {
      double dot = 0;
      for (uint32_t i = 0; i < t.tk; ++i) dot += q.at(r, i) * k.at(i, c);
      s.at(r, c) = c > r + kCausalOffset ? -64.0 : dot * kScale;
    }
  Expected e{Matrix(T::F32, t.tm, t.tn), std::vector<double>(t.tm, 0.0), Matrix(T::F32, 1, t.tn)};
  Matrix p16(T::F16, t.tm, t.tn);
  for (uint32_t r = 0; r < t.tm; ++r) {
    double rowMax = s.at(r, 0);
    for (uint32_t c = 1; c < t.tn; ++c) rowMax = std::max(rowMax, s.at(r, c));
    for (uint32_t c = 0; c < t.tn; ++c) {
      const double p = std::exp2(s.at(r, c) - rowMax);
      e.rowSum[r] += p;
      p16.at(r, c) = Wrap(T::F16, p);
    }
  }
  // O = f16(P) V: P is TM x TN, used as TM x TK (the kernel's sizes make TN == TK).
  for (uint32_t r = 0; r < t.tm; ++r)
    for (uint32_t c = 0; c < t.tn; ++c) {
      double dot = 0;
      for (uint32_t i = 0; i < t.tk; ++i) dot += p16.at(r, i) * v.at(i, c);
      e.out.at(r, c) = dot;
    }
  for (uint32_t c = 0; c < t.tn; ++c)
    for (uint32_t i = 0; i < t.tk; ++i) e.absV.at(0, c) += std::fabs(v.at(i, c));
  return e;
}

std::string TilesName(const Tiles& t) {
  return std::to_string(t.tm) + "x" + std::to_string(t.tn) + "x" + std::to_string(t.tk);
}

// Runs the kernel at `tiles`; "" when every output matches the reference.
std::string RunSpecTiles(const Env& env, const Tiles& t, const Grid& grid, const std::string& targetEnv,
                         cmtest::ShaderPath path = cmtest::ShaderPath::Module) {
  const size_t n = grid.matrices();
  std::vector<Matrix> qs, ks, vs;
  for (size_t g = 0; g < n; ++g) {
    qs.push_back(RandomMatrix(T::F16, t.tm, t.tk, 11 + uint32_t(g), -2, 2, 0.125));
    ks.push_back(RandomMatrix(T::F16, t.tk, t.tn, 23 + uint32_t(g), -2, 2, 0.125));
    vs.push_back(RandomMatrix(T::F16, t.tk, t.tn, 37 + uint32_t(g), -2, 2, 0.125));
  }
  cmtest::Bytes params(8);
  std::memcpy(params.data(), &kScale, 4);
  std::memcpy(params.data() + 4, &kCausalOffset, 4);
  std::vector<Bytes> buffers = {Pack(qs),
                                Pack(ks),
                                Pack(vs),
                                cmtest::ToBytes(std::vector<float>(n * t.tm * t.tn, kSentinel)),
                                cmtest::ToBytes(std::vector<float>(n * t.tm, kSentinel)),
                                params,
                                cmtest::ToBytes(std::vector<uint32_t>{0, 0})};
  cmtest::ComputeJob job;
  job.path = path;
  job.spirv = LoadShader("spec_tiles", targetEnv);
  job.specialization = {{3, t.tm}, {4, t.tn}, {5, t.tk}, {6, env.subgroupSize()}};
  if (std::string e = Dispatch(env, job, grid, buffers); !e.empty()) return e;

  const std::vector<float> out = cmtest::FromBytes<float>(buffers[3]);
  const std::vector<float> sums = cmtest::FromBytes<float>(buffers[4]);
  const std::vector<uint32_t> errors = cmtest::FromBytes<uint32_t>(buffers[6]);
  std::ostringstream s;
  if (errors[0]) s << " " << errors[0] << " subgroups ran at a size other than WARP;";
  for (size_t g = 0; g < n; ++g) {
    const Expected e = Reference(t, qs[g], ks[g], vs[g]);
    size_t bad = 0;
    for (uint32_t r = 0; r < t.tm; ++r) {
      for (uint32_t c = 0; c < t.tn; ++c) {
        const double got = out[(g * t.tm + r) * t.tn + c], want = e.out.at(r, c);
        // P may be rounded to f16 a half-ulp either way (or kept wider: lavapipe's conversion).
        if (!(std::fabs(got - want) <= 1e-3 * (1 + e.absV.at(0, c))) && bad++ < 3)
          s << " [subgroup " << g << " O(" << r << "," << c << ")] got " << got << " want " << want << ";";
      }
      const double got = sums[g * t.tm + r], want = e.rowSum[r];
      if (!(std::fabs(got - want) <= 1e-4 * (1 + want)) && bad++ < 3)
        s << " [subgroup " << g << " L(" << r << ")] got " << got << " want " << want << ";";
    }
    if (bad) s << " subgroup " << g << ": " << bad << " values wrong;";
  }
  return s.str();
}

}  // namespace

TEST_CASE("specialization-constant tiles run at every specialization of one module", "[exec][specialization]") {
  {
    EXEC_ENV(env);
    // The device's first f16 x f16 + f32 configuration (8x8x8 on lavapipe); P (TM x TN)
    // becomes an A of TM x TK, so TN must equal TK.
    const auto mnk = env.MulAddShape(T::F16, T::F32);
    REQUIRE(mnk);
    const Tiles tiles{(*mnk)[0], (*mnk)[1], (*mnk)[2]};
    if (tiles.tn != tiles.tk) {
      WarnNotRun("spec_tiles", "the device's f16 MulAdd has N != K, so P (M x N) cannot become an A (M x K)");
    } else {
      std::vector<NamedRun> runs;
      for (const std::string& targetEnv : TargetEnvs())
        for (const Grid& grid : {Grid{1, 2}, Grid{2, 2}})
          runs.push_back({"spec_tiles." + targetEnv + " " + TilesName(tiles) + ", " + std::to_string(grid.subgroupsPerGroup) +
                              " subgroups/group",
                          [&env, &tiles, grid, &targetEnv] { return RunSpecTiles(env, tiles, grid, targetEnv); }});
      CheckSampled(runs);
    }
  }
  EXEC_ENV(env, .flex = true);
  std::vector<NamedRun> runs;
  for (const std::string& targetEnv : TargetEnvs())
    for (const Tiles& t : {Tiles{16, 16, 16}, Tiles{8, 16, 16}, Tiles{16, 8, 8}, Tiles{32, 16, 16}})
      runs.push_back({"spec_tiles." + targetEnv + " " + TilesName(t), [&env, t, &targetEnv] { return RunSpecTiles(env, t, Grid{2, 1}, targetEnv); }});
  CheckSampled(runs);
}

namespace {
// The spec-tiles kernel at 8x8x8 and 16x16x16 (flexible on lavapipe; a device's
// granularity may rule one out: not run), made through `path`.
void SpecTilesThrough(const Env& env, cmtest::ShaderPath path) {
  for (const std::string& targetEnv : TargetEnvs())
    for (const Tiles& t : {Tiles{8, 8, 8}, Tiles{16, 16, 16}}) {
      const std::string result = RunSpecTiles(env, t, Grid{2, 1}, targetEnv, path);
      std::ostringstream name;
      name << "spec_tiles." << targetEnv << " path " << int(path) << " " << t.tm << "x" << t.tn << "x" << t.tk;
      if (WarnedNotRun(name.str(), result)) continue;
      INFO(name.str() << ": " << result);
      CHECK(result.empty());
    }
}
}  // namespace

TEST_CASE("specialization-constant tiles through inline stage code", "[exec][specialization]") {
  EXEC_ENV(env, .flex = true, .inlineStage = true);
  SpecTilesThrough(env, cmtest::ShaderPath::InlineStage);
}

TEST_CASE("specialization-constant tiles through shader objects", "[exec][specialization]") {
  EXEC_ENV(env, .flex = true, .shaderObject = true);
  SpecTilesThrough(env, cmtest::ShaderPath::ShaderObject);
}

TEST_CASE("a specialization whose tile sizes do not match is refused at pipeline creation", "[exec][specialization][layer-only][no-dispatch]") {
  EXEC_ENV(env, .flex = true);
  // The device's tile t (8 on lavapipe): TN = t, TK = 2t, so P (TM x TN) cannot
  // become an A matrix of TM x TK.
  const auto mnk = env.MulAddShape(T::F16, T::F32);
  REQUIRE(mnk);
  const uint32_t t = (*mnk)[0];
  for (const std::string& targetEnv : TargetEnvs()) {
    const std::string result = RunSpecTiles(env, {t, t, 2 * t}, Grid{1, 1}, targetEnv);
    INFO(targetEnv << ": " << result);
    CHECK(result.find("vkCreateComputePipelines") != std::string::npos);
    CHECK(result.find("do not match") != std::string::npos);
    CHECK(result.find(std::to_string(t) + "x" + std::to_string(2 * t)) != std::string::npos);
  }
}
