// The kernels of the real class (kernels.h) as Catch2 cases: every head dimension and element
// type on the device (lavapipe as flexible 16x16, a virtual device with 16x16x16 natively).
#include "cases_inl.h"
#include "kernels.h"

#include <catch2/catch_test_macros.hpp>

#include <cstdio>

using namespace exec;

namespace {

constexpr uint32_t kSubgroups = 4;

// A kernel run's result, its measurements printed, a note (a weaker reference allowed) warned.
std::string Logged(const std::string& result, const std::string& log) {
  std::fputs(log.c_str(), stdout);
  for (size_t at = log.find(kKernelNote); at != std::string::npos; at = log.find(kKernelNote, at + 1))
    WARN(log.substr(at + std::string(kKernelNote).size(), log.find('\n', at) - at - std::string(kKernelNote).size()));
  return result;
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
      const std::string name = GlaCase{type, dim}.Name();
      const std::string& targetEnv = envs[next++ % envs.size()];
      if (auto why = Without16x16(env, type)) {
        WarnNotRun(name, *why);
        continue;
      }
      runs.push_back({name + "." + targetEnv, [&env, type, dim, &targetEnv] {
                        std::string log;
                        const std::string result = Run(env, GlaCase{type, dim}, targetEnv, log);
                        return Logged(result, log);
                      }});
    }
  CheckSampled(runs);  // all of them, but in a virtual lane's sample
}

TEST_CASE("kernel: gated linear attention chunk with bfloat16 accumulators", "[exec][kernel]") {
  EXEC_ENV(env, .flex = !TheVirtualDevice().on);
  std::vector<NamedRun> runs;
  const std::vector<std::string>& envs = TargetEnvs();
  size_t next = 0;
  for (uint32_t dim : {32u, 64u}) {
    const std::string name = "kernel_gla_bf16acc_d" + std::to_string(dim);
    const std::string& targetEnv = envs[next++ % envs.size()];
    if (auto why = Without16x16(env, T::BF16, T::BF16)) {
      WarnNotRun(name, *why);
      continue;
    }
    runs.push_back({name + "." + targetEnv, [&env, dim, &targetEnv] {
                      std::string log;
                      const std::string result = RunGlaBf16Acc(env, dim, targetEnv, log);
                      return Logged(result, log);
                    }});
  }
  CheckSampled(runs);
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
