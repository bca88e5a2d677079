// CheckAll, in a header because it uses Catch2 macros.
#pragma once

#include <catch2/catch_test_macros.hpp>

#include <optional>
#include <sstream>

namespace exec {

// The shape of a (use, t) matrix on env's device (Env::Shape); where the device lists
// none (a type the virtual device's profile lacks), a warning says what does not run.
inline std::optional<Dims> ShapeOrWarn(const Env& env, Use use, T t) {
  const std::optional<Dims> shape = env.Shape(use, t);
  if (!shape) WARN("not run: the device lists no " << Name(use) << " " << Name(t) << " matrix");
  return shape;
}

// A conversion of a (use, t) matrix of the device's shape into (use2, t2), when the
// device lists the result at the shape it gets (transposed: the other way round).
inline std::optional<ConvertCase> Conversion(const Env& env, Use use, T t, Use use2, T t2, bool transpose = false,
                                             bool appShared = false) {
  const std::optional<Dims> from = ShapeOrWarn(env, use, t);
  if (!from) return std::nullopt;
  const Dims result = transpose ? Dims{from->cols, from->rows} : *from;
  if (env.onVirtualDevice() && env.Shape(use2, t2) != result) {
    WARN("not run: the device lists no " << Name(use2) << " " << Name(t2) << " " << result.rows << "x" << result.cols
                                         << " matrix to convert " << Name(use) << " " << Name(t) << " into");
    return std::nullopt;
  }
  return ConvertCase{use, t, from->rows, from->cols, use2, t2, transpose, appShared};
}

template <typename Case>
void CheckAll(const Env& env, const std::vector<Case>& cases, const std::vector<Grid>& grids,
              const std::vector<std::string>& targetEnvs) {
  struct One {
    const Case* c;
    const std::string* targetEnv;
    const Grid* grid;
    std::string name;
  };
  std::vector<One> runs;
  std::vector<std::string> names;
  for (const Case& c : cases)
    for (const std::string& targetEnv : targetEnvs)
      for (const Grid& grid : grids) {
        std::ostringstream name;
        name << c.Name() << "." << targetEnv << " (" << grid.subgroupsPerGroup << " subgroups x " << grid.groups
             << " workgroups" << (grid.requireSubgroupSize ? ", required subgroup size" : "") << ")";
        runs.push_back({&c, &targetEnv, &grid, name.str()});
        names.push_back(name.str());
      }
  for (size_t i : Sample(names)) {
    const One& run = runs[i];
    const std::string result = Run(env, *run.c, *run.targetEnv, *run.grid);
    INFO(run.name << ": " << result);
    CHECK(result.empty());
  }
}

}  // namespace exec
