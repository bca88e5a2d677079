// Kernels of the real class (shaders/kernel_*.comp), each against a CPU reference of what
// it computes: subgroups of one workgroup in different roles, loops whose trip counts differ
// between subgroups with shuffles and matrix operations inside, per-element functions with
// side effects on shared memory and buffers, bfloat16 (or f16) hi/lo splits through the
// relaxed Acc <-> A/B conversions and transposes, and tens of KB of the kernel's own shared
// memory; and the GLA chunk once more with bfloat16 accumulators (GFX12's). They are written
// for 16x16x16 tiles: lavapipe runs them as its flexible 16x16 (NV cooperative matrix 2), a
// device with 16x16x16 configurations natively. The suite (test_kernels.cpp) and the self-test
// (selftest/) run them.
#pragma once

#include "cases.h"

#include <optional>
#include <string>

namespace exec {

inline constexpr uint32_t kKernelTile = 16;

// Why env's device cannot run the kernels with A/B of `a` into accumulators of `acc` (no
// 16x16x16 MulAdd of them); nothing where it can (lavapipe: as flexible dimensions).
std::optional<std::string> Without16x16(const Env& env, T a, T acc = T::F32);

// Gated linear attention, one chunk (kernel_gla.comp): kernel_gla_<type>_d<dim>.
struct GlaCase {
  T type;  // f16 or bf16
  uint32_t dim;
  uint32_t heads = 3;
  std::string Name() const;
};
// Lines that measure the run (errors against the references) go to `log`; a line beginning
// kKernelNote says the run passed on a weaker reference the driver's known behaviour allows.
inline constexpr const char* kKernelNote = "note: ";
std::string Run(const Env& env, const GlaCase& c, const std::string& targetEnv, std::string& log);
// The GLA chunk with bfloat16 accumulators (kernel_gla_bf16acc_d<dim>).
std::string RunGlaBf16Acc(const Env& env, uint32_t dim, const std::string& targetEnv, std::string& log);
// Forward substitution per subgroup (kernel_trsv).
std::string RunTrsv(const Env& env, const Grid& grid, const std::string& targetEnv);

}  // namespace exec
