// CheckAll, in a header because it uses Catch2 macros.
#pragma once

#include <catch2/catch_test_macros.hpp>

namespace exec {

template <typename Case>
void CheckAll(const Env& env, const std::vector<Case>& cases, const std::vector<Grid>& grids,
              const std::vector<std::string>& targetEnvs) {
  for (const Case& c : cases) {
    for (const std::string& targetEnv : targetEnvs) {
      for (const Grid& grid : grids) {
        const std::string result = Run(env, c, targetEnv, grid);
        INFO(c.Name() << "." << targetEnv << " (" << grid.subgroupsPerGroup << " subgroups x " << grid.groups
                      << " workgroups" << (grid.requiredSubgroupSize ? ", required subgroup size" : "")
                      << "): " << result);
        CHECK(result.empty());
      }
    }
  }
}

}  // namespace exec
