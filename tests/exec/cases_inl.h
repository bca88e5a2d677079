// CheckAll, in a header because it uses Catch2 macros (the cases themselves, cases.h,
// do not: the self-test runs them too).
#pragma once

#include "cases.h"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace exec {

// The shape of a (use, t) matrix on env's device (Env::Shape); where the device lists
// none (a type the virtual device's profile lacks), a warning says what does not run.
// Warns that something does not run on this device, and counts why (CountNotRun).
inline void WarnNotRun(const std::string& what, const std::string& reason) {
  CountNotRun(reason);
  WARN(kNotRun << (what.empty() ? "" : what + ": ") << reason);
}

inline std::optional<Dims> ShapeOrWarn(const Env& env, Use use, T t) {
  const std::optional<Dims> shape = env.Shape(use, t);
  if (!shape) WarnNotRun("", std::string("the device lists no ") + Name(use) + " " + Name(t) + " matrix");
  return shape;
}

// The cases whose source matrix has at most 128 elements per invocation (32x32 at 8
// lanes, the largest the rest of the suite runs); each other one warns. At lavapipe's 8
// lanes a 64x64 matrix is 512 elements, and llvmpipe's optimized compile of such a
// pipeline (done at dispatch) outlasts the 30 s fence timeout (Mesa 26.1.6); 48x48 (288)
// is past the same line. The RADV profiles run both at 32 and 64 lanes.
template <typename Case>
std::vector<Case> WithinElementBudget(const Env& env, const std::vector<Case>& cases) {
  std::vector<Case> out;
  for (const Case& c : cases)
    if (c.rows * c.cols <= 128 * env.subgroupSize())
      out.push_back(c);
    else
      WarnNotRun(c.Name(), "more than 128 elements per invocation at " + std::to_string(env.subgroupSize()) +
                               " lanes (llvmpipe's optimized compile of it outlasts the fence timeout)");
  return out;
}

// A conversion of a (use, t) matrix of the device's shape into (use2, t2), when the
// device lists the result at the shape it gets (transposed: the other way round).
inline std::optional<ConvertCase> Conversion(const Env& env, Use use, T t, Use use2, T t2, bool transpose = false,
                                             bool appShared = false) {
  const std::optional<Dims> from = ShapeOrWarn(env, use, t);
  if (!from) return std::nullopt;
  const Dims result = transpose ? Dims{from->cols, from->rows} : *from;
  const std::optional<Dims> to = env.Shape(use2, t2);
  if (!to || (env.onVirtualDevice() && *to != result)) {
    std::ostringstream why;
    why << "the device lists no " << Name(use2) << " " << Name(t2) << " " << result.rows << "x" << result.cols
        << " matrix to convert " << Name(use) << " " << Name(t) << " into";
    WarnNotRun("", why.str());
    return std::nullopt;
  }
  return ConvertCase{use, t, from->rows, from->cols, use2, t2, transpose, appShared};
}

// The conversions among `list` the device lists both sides of, at its shapes (each
// case's flags kept).
inline std::vector<ConvertCase> Listed(const Env& env, const std::vector<ConvertCase>& list) {
  std::vector<ConvertCase> out;
  for (const ConvertCase& c : list)
    if (auto listed = Conversion(env, c.use, c.type, c.use2, c.type2, c.transpose, c.appShared)) {
      listed->viaAcc = c.viaAcc;
      listed->saturate = c.saturate;
      out.push_back(*listed);
    }
  return out;
}

// The device's first M x N x K for A/B of `a` and C of `c` (8x8x8 on lavapipe), when it
// also lists the accumulator that A converts from (M x K; transposed: K x M).
inline std::optional<MulAddCase> ListedMulAdd(const Env& env, const std::string& mode, T a, T c) {
  const auto mnk = env.MulAddShape(a, c);
  if (!mnk) {
    WarnNotRun("", std::string("the device lists no MulAdd of ") + Name(a) + " into " + Name(c));
    return std::nullopt;
  }
  const auto [m, n, k] = *mnk;
  const Dims source = mode == "transposed" ? Dims{k, m} : Dims{m, k};
  if (env.Shape(Use::Acc, c) != source) {
    std::ostringstream why;
    why << "muladd_" << mode << " needs a " << source.rows << "x" << source.cols << " " << Name(c)
        << " accumulator, which the device does not list";
    WarnNotRun("", why.str());
    return std::nullopt;
  }
  return MulAddCase{mode, a, c, m, n, k};
}

// Whether Dispatch's result says the device cannot run the job at all (kNotRun);
// then a warning names it.
inline bool WarnedNotRun(const std::string& what, const std::string& result) {
  if (result.rfind(kNotRun, 0) != 0) return false;
  WarnNotRun(what, result.substr(std::string(kNotRun).size()));
  return true;
}

// One named run: its result is "" when every output matched its reference. Its cell
// (Cell below) is what a stratified sample executes at least once; "" leaves the group one
// stratum, tallied under the name's part before its first '.'.
struct NamedRun {
  std::string name;
  std::function<std::string()> run;
  std::string cell = "";
};

// The runs Sample draws (all of them outside a sampled lane), each checked, and then the
// stand-ins of every stratum none of whose runs could be made yet: a run the device cannot
// make warns instead and does not count.
inline void CheckSampled(const std::vector<NamedRun>& runs) {
  std::vector<std::string> names, cells;
  for (const NamedRun& r : runs) {
    names.push_back(r.name);
    cells.push_back(r.cell);
  }
  std::vector<bool> executed(runs.size(), false);  // by stratum (at most one per run)
  for (const SampledRun& s : Sample(names, cells)) {
    if (!s.drawn && executed[s.stratum]) continue;
    const NamedRun& r = runs[s.index];
    const std::string result = r.run();
    const bool ran = !WarnedNotRun(r.name, result);
    CountCell(r.cell.empty() ? r.name.substr(0, r.name.find('.')) : r.cell, ran);
    if (!ran) continue;
    executed[s.stratum] = true;
    INFO(r.name << ": " << result);
    CHECK(result.empty());
  }
}

// What a run is drawn by: the case's shader name, and for a Reduce its combine op too (one
// shader runs sum, min and max), so that the three are drawn apart.
template <typename Case>
std::string RunName(const Case& c) {
  return c.Name();
}
inline std::string RunName(const ReduceCase& c) {
  const std::string name = c.Name(), stem = std::string("reduce_") + MaskName(c.mask) + "_";
  return stem + Name(c.combine) + "_" + name.substr(stem.size());
}

// Runs every case for every target environment and grid, and CHECKs each result
// with the case name in the failure message.
template <typename Case>
void CheckAll(const Env& env, const std::vector<Case>& cases, const std::vector<Grid>& grids,
              const std::vector<std::string>& targetEnvs = TargetEnvs()) {
  std::vector<NamedRun> runs;
  const std::vector<std::string>& allowed = TargetEnvs();  // COOPMAT_EXEC_TARGET_ENVS may leave some out
  for (const Case& c : cases)
    for (const std::string& targetEnv : targetEnvs) {
      if (std::find(allowed.begin(), allowed.end(), targetEnv) == allowed.end()) {
        for (size_t i = 0; i < grids.size(); ++i) CountNotRun("a run: its target environment is left out (COOPMAT_EXEC_TARGET_ENVS)");
        continue;
      }
      for (const Grid& grid : grids) {
        std::ostringstream name;
        name << RunName(c) << "." << targetEnv << " (" << grid.subgroupsPerGroup << " subgroups x " << grid.groups
             << " workgroups" << (grid.requireSubgroupSize ? ", required subgroup size" : "") << ")";
        runs.push_back({name.str(), [&env, &c, &targetEnv, &grid] { return Run(env, c, targetEnv, grid); }, Cell(env, c)});
      }
    }
  CheckSampled(runs);
}

}  // namespace exec
