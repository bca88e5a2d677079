// The virtual device's SPIR-V rewrite: a compute module written for a profile's
// device (cooperative matrices, subgroups of the profile's size) becomes plain
// SPIR-V that lavapipe runs with the same results. No Vulkan calls.
//
//  * Each cooperative matrix type becomes an array of its elements per invocation,
//    element e of invocation L holding the (row, col) the profile's layout gives.
//  * Load/Store address every element by that layout; MulAdd gathers A and B in
//    Workgroup memory and computes each result element in the Result type.
//  * A virtual subgroup is S consecutive invocations of LocalInvocationIndex; its
//    built-ins are computed, and its operations exchange values through Workgroup
//    memory between workgroup barriers.
// rewrite_internal.h names the parts: rewrite.cpp (the walk and what both share),
// rewrite_matrix.cpp and rewrite_subgroup.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coopmat/lower.h"
#include "profile.h"

namespace coopmat::virt {

struct RewriteRequest {
  uint32_t subgroupSize = 0;                     // the virtual subgroup size the pipeline runs
  std::optional<Specialization> specialization;  // the pipeline's (frozen into the module)
  uint32_t sharedMemoryLimit = 0;                // the real device's; 0: not checked
  bool validate = true;                          // spirv-val the result
};

struct RewriteResult {
  bool ok = false;
  std::string error;  // what the virtual device cannot emulate, naming the instruction
  std::vector<uint32_t> words;
  uint32_t matrixOps = 0;    // Load, Store, MulAdd, Length and element-wise operations rewritten
  uint32_t subgroupOps = 0;  // group operations and built-in reads emulated
  // Element accesses with a constant index past the matrix's length at this subgroup
  // size: code for another size, which a driver compiling for this one never runs
  // (an extract gives undef, an insert changes nothing; if it did run, the wrong
  // value shows in the output the tests compare).
  uint32_t pastLengthAccesses = 0;
  uint32_t scratchBytes = 0; // Workgroup memory added (all virtual subgroups)
};

RewriteResult RewriteForProfile(std::span<const uint32_t> words, const Profile& profile, const RewriteRequest& request);

}  // namespace coopmat::virt
