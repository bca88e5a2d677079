// Kernels of the real class (shaders/kernel_*.comp), each against a CPU reference of what
// it computes: subgroups of one workgroup in different roles, loops whose trip counts differ
// between subgroups with shuffles and matrix operations inside, per-element functions with
// side effects on shared memory and buffers, bfloat16 (or f16) hi/lo splits through the
// relaxed Acc <-> A/B conversions and transposes, and tens of KB of the kernel's own
// shared memory. They are written for 16x16x16 tiles: lavapipe runs them as its flexible
// 16x16 (NV cooperative matrix 2), a virtual device with 16x16x16 configurations natively;
// elsewhere they do not run (counted, exec_util.h).
#include "cases.h"
#include "cases_inl.h"

#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstring>
#include <sstream>

using namespace exec;

namespace {

constexpr uint32_t kTile = 16, kChunk = 16, kSubgroups = 4;
// Lavapipe compiles a pipeline at its first dispatch, inside the fence wait: a kernel's
// emulated 32-lane code took up to 30 s on two loaded cores.
constexpr uint64_t kKernelTimeoutNs = 300'000'000'000ull;

// "" when |got - want| <= tolerance * (1 + |want|) everywhere; else the count and the first few.
std::string Near(const std::string& what, const std::vector<float>& got, const std::vector<double>& want, double tolerance) {
  std::ostringstream s;
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double error = std::fabs(double(got[i]) - want[i]);
    if (!(error <= tolerance * (1 + std::fabs(want[i])))) {
      if (bad++ < 3) s << " " << what << "[" << i << "] got " << got[i] << " want " << want[i] << ";";
    }
  }
  if (!bad) return "";
  return " " + std::to_string(bad) + " of " + std::to_string(want.size()) + " " + what + " values wrong:" + s.str();
}

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Whether the device runs 16x16x16 MulAdds of `a` into f32, with 16x16 f32 accumulators:
// natively on the virtual device, as flexible dimensions on lavapipe.
std::optional<std::string> Without16x16(const Env& env, T a) {
  if (!env.onVirtualDevice()) {
    if (EncodedFormat(a)) return std::string("lavapipe has no ") + Name(a) + " matrices";
    return std::nullopt;  // flexible 16x16 (EnvOptions::flex)
  }
  const auto mnk = env.MulAddShape(a, T::F32);
  if (!mnk) return std::string("the device lists no MulAdd of ") + Name(a) + " into f32";
  if ((*mnk)[0] != kTile || (*mnk)[1] != kTile || (*mnk)[2] != kTile)
    return "the kernels are written for 16x16x16 tiles, the device's " + std::string(Name(a)) + " MulAdd is " +
           std::to_string((*mnk)[0]) + "x" + std::to_string((*mnk)[1]) + "x" + std::to_string((*mnk)[2]);
  return std::nullopt;
}

// ---- Gated linear attention, one chunk (kernel_gla.comp) ----------------------------

struct Gla {
  T type;
  uint32_t dim;
  uint32_t heads;
};

std::string RunGla(const Env& env, const Gla& k, const std::string& targetEnv) {
  const uint32_t C = kChunk, D = k.dim, H = k.heads, DT = D / kTile;
  // Exact in f16 and bfloat16: multiples of 1/16 in [-0.5, 0.5] (V in [-1, 1]); the state
  // is not, so its hi/lo split matters.
  const Matrix q = RandomMatrix(k.type, H * C, D, 11, -0.5, 0.5, 1.0 / 16);
  const Matrix kk = RandomMatrix(k.type, H * C, D, 13, -0.5, 0.5, 1.0 / 16);
  const Matrix v = RandomMatrix(k.type, H * C, D, 17, -1, 1, 1.0 / 16);
  const Matrix g = RandomMatrix(T::F32, H, C, 19, -0.25, 0, 1.0 / 64);
  Matrix s(T::F32, H * D, D);
  {
    const Matrix coarse = RandomMatrix(T::F32, H * D, D, 23, -1, 1, 1.0 / 1024);
    for (size_t i = 0; i < s.v.size(); ++i) s.v[i] = Wrap(T::F32, coarse.v[i] * (1 + 1.0 / 3000));  // not bf16-exact
  }
  std::vector<Bytes> buffers = {Pack({q}), Pack({kk}), Pack({v}), Pack({g}), Pack({s}), Bytes(size_t(H) * C * D * 4),
                                Bytes(size_t(H) * D * D * 4), Bytes(size_t(H) * 3 * C * 4)};
  cmtest::ComputeJob job;
  job.spirv = LoadShader(std::string("kernel_gla_") + Name(k.type) + "_d" + std::to_string(D), targetEnv);
  job.timeoutNs = kKernelTimeoutNs;
  const Grid grid{kSubgroups, H};
  if (std::string e = Dispatch(env, job, grid, buffers); !e.empty()) return e;
  const std::vector<float> o = cmtest::FromBytes<float>(buffers[5]), sNew = cmtest::FromBytes<float>(buffers[6]);
  const std::vector<uint32_t> stats = cmtest::FromBytes<uint32_t>(buffers[7]);
  const uint32_t replicas = env.Replicas(Use::Acc, T::F32, kTile, kTile);

  std::vector<double> wantO(size_t(H) * C * D), wantS(size_t(H) * D * D), wantMax(size_t(H) * C), wantSum(size_t(H) * C);
  std::vector<float> gotMax(size_t(H) * C), gotSum(size_t(H) * C);
  std::ostringstream s_;
  for (uint32_t h = 0; h < H; ++h) {
    std::vector<double> G(C);
    for (uint32_t i = 0; i < C; ++i) G[i] = (i ? G[i - 1] : 0) + g.at(h, i);
    auto Q = [&](uint32_t i, uint32_t d) { return q.at(h * C + i, d); };
    auto K = [&](uint32_t i, uint32_t d) { return kk.at(h * C + i, d); };
    auto V = [&](uint32_t i, uint32_t d) { return v.at(h * C + i, d); };
    auto S = [&](uint32_t a, uint32_t b) { return s.at(h * D + a, b); };
    std::vector<double> A(size_t(C) * C, 0.0);
    for (uint32_t r = 0; r < C; ++r) {
      double rowMax = 0, rowSum = 0;
      for (uint32_t c = 0; c <= r; ++c) {
        double raw = 0;
        for (uint32_t d = 0; d < D; ++d) raw += Q(r, d) * K(c, d);
        A[r * C + c] = raw * std::exp(G[r] - G[c]);
        rowMax = std::max(rowMax, std::fabs(A[r * C + c]));
        rowSum += A[r * C + c];
      }
      wantMax[h * C + r] = rowMax;
      wantSum[h * C + r] = rowSum;
      gotMax[h * C + r] = FromBits(stats[h * 3 * C + r]);
      gotSum[h * C + r] = FromBits(stats[h * 3 * C + 2 * C + r]);
      const uint32_t masked = stats[h * 3 * C + C + r], wantMasked = DT * replicas * (C - 1 - r);
      if (masked != wantMasked)
        s_ << " head " << h << " row " << r << ": the mask function counted " << masked << " masked elements, want "
           << wantMasked << " (" << DT << " O tiles x " << replicas << " replicas x " << C - 1 - r << ");";
      for (uint32_t d = 0; d < D; ++d) {
        double qs = 0, av = 0;
        for (uint32_t e = 0; e < D; ++e) qs += Q(r, e) * S(e, d);
        for (uint32_t c = 0; c <= r; ++c) av += A[r * C + c] * V(c, d);
        wantO[(size_t(h) * C + r) * D + d] = av + std::exp(G[r]) * qs;
      }
    }
    for (uint32_t a = 0; a < D; ++a)
      for (uint32_t b = 0; b < D; ++b) {
        double update = 0;
        for (uint32_t j = 0; j < C; ++j) update += std::exp(G[C - 1] - G[j]) * K(j, a) * V(j, b);
        wantS[(size_t(h) * D + a) * D + b] = std::exp(G[C - 1]) * S(a, b) + update;
      }
  }
  // The hi/lo splits keep about 16 significant bits (bfloat16) or 22 (f16).
  const double tolerance = 2e-3;
  return s_.str() + Near("O", o, wantO, tolerance) + Near("S'", sNew, wantS, tolerance) +
         Near("row max |A|", gotMax, wantMax, tolerance) + Near("row sum A", gotSum, wantSum, tolerance);
}

// ---- Forward substitution per subgroup (kernel_trsv.comp) ---------------------------

std::string RunTrsv(const Env& env, const Grid& grid, const std::string& targetEnv) {
  const uint32_t N = kTile, systems = grid.matrices(), S = env.subgroupSize();
  Matrix l = RandomMatrix(T::F32, systems * N, N, 29, -0.25, 0.25, 1.0 / 64);
  for (uint32_t sys = 0; sys < systems; ++sys)
    for (uint32_t r = 0; r < N; ++r)
      for (uint32_t c = 0; c < N; ++c) {
        double& x = l.at(sys * N + r, c);
        if (c > r) x = 99;  // never read: above the diagonal
        if (c == r) x = 1 + std::fabs(x) * 4;
      }
  const Matrix b = RandomMatrix(T::F32, systems, N, 31, -1, 1, 1.0 / 32);
  std::vector<Bytes> buffers = {Pack({l}), Pack({b}), Bytes(size_t(systems) * N * 4), Bytes(size_t(systems) * N * N * 4),
                                Bytes(size_t(systems) * N * 4), Bytes(4)};
  cmtest::ComputeJob job;
  job.spirv = LoadShader("kernel_trsv", targetEnv);
  job.timeoutNs = kKernelTimeoutNs;
  if (std::string e = Dispatch(env, job, grid, buffers); !e.empty()) return e;
  const std::vector<float> x = cmtest::FromBytes<float>(buffers[2]), sums = cmtest::FromBytes<float>(buffers[3]),
                           diag = cmtest::FromBytes<float>(buffers[4]);
  std::vector<double> wantX(size_t(systems) * N, 0.0), wantSums(size_t(systems) * N * N), wantDiag(size_t(systems) * N);
  for (uint32_t sys = 0; sys < systems; ++sys) {
    const uint32_t sg = sys % grid.subgroupsPerGroup, n = std::min({4 * (sg + 1), S, N});
    double total = 0;
    for (uint32_t i = 0; i < n; ++i) {
      double acc = b.at(sys, i);
      for (uint32_t j = 0; j < i; ++j) acc -= l.at(sys * N + i, j) * wantX[sys * N + j];
      wantX[sys * N + i] = acc / l.at(sys * N + i, i);
      total += wantX[sys * N + i];
    }
    for (uint32_t r = 0; r < N; ++r) {
      wantDiag[sys * N + r] = wantX[sys * N + r] * (r + 1);
      for (uint32_t c = 0; c < N; ++c) wantSums[(size_t(sys) * N + r) * N + c] = total * (c + 1);
    }
  }
  std::ostringstream s;
  const uint32_t counted = cmtest::FromBytes<uint32_t>(buffers[5])[0];
  if (counted != systems) s << " " << counted << " subgroups elected one invocation to count, want " << systems << ";";
  return s.str() + Near("x", x, wantX, 1e-5) + Near("column sums", sums, wantSums, 1e-5) + Near("diagonal", diag, wantDiag, 1e-5);
}

}  // namespace

TEST_CASE("kernel: gated linear attention chunk, subgroups in roles, hi/lo splits", "[exec][kernel]") {
  EXEC_ENV(env, .flex = !TheVirtualDevice().on);
  std::vector<NamedRun> runs;
  // Each head dimension in one target environment, alternating (lavapipe compiles a D=64
  // chunk for up to a minute; both environments run every other case).
  const std::vector<std::string>& envs = TargetEnvs();
  size_t next = 0;
  for (T type : {T::F16, T::BF16})
    for (uint32_t dim : {32u, 64u}) {
      const std::string name = std::string("kernel_gla_") + Name(type) + "_d" + std::to_string(dim);
      const std::string& targetEnv = envs[next++ % envs.size()];
      if (auto why = Without16x16(env, type)) {
        WarnNotRun(name, *why);
        continue;
      }
      runs.push_back({name + "." + targetEnv, [&env, type, dim, &targetEnv] { return RunGla(env, Gla{type, dim, 3}, targetEnv); }});
    }
  CheckSampled(runs);  // all of them, but in a virtual lane's sample
}

TEST_CASE("kernel: forward substitution per subgroup, shuffles in loops of subgroup-dependent trip count", "[exec][kernel]") {
  EXEC_ENV(env, .flex = !TheVirtualDevice().on);
  if (auto why = Without16x16(env, T::F16)) {
    WarnNotRun("kernel_trsv", *why);
    return;
  }
  std::vector<NamedRun> runs;
  for (const std::string& targetEnv : TargetEnvs())
    for (const Grid& grid : {Grid{kSubgroups, 2}, Grid{2, 3}})
      runs.push_back({"kernel_trsv." + targetEnv + " " + std::to_string(grid.subgroupsPerGroup) + " subgroups x " +
                          std::to_string(grid.groups),
                      [&env, grid, &targetEnv] { return RunTrsv(env, grid, targetEnv); }});
  CheckSampled(runs);
}
