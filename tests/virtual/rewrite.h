// The virtual device's SPIR-V rewrite: a compute module written for a profile's
// device (cooperative matrices, subgroups of the profile's size) becomes plain
// SPIR-V that lavapipe runs with the same results. No Vulkan calls.
//
//  * The specialization is frozen by SPIRV-Tools (not the product's freezer).
//  * Each cooperative matrix type becomes an array of its elements per invocation,
//    element e of invocation L holding the (row, col) the profile's layout gives
//    (element_layout.h, the virtual device's own reading of it).
//  * Load/Store address every element by that layout; MulAdd gathers A and B in its
//    subgroup's region of Workgroup memory and computes each result element in the
//    Result type.
//  * A virtual subgroup is one of lavapipe's own (lavapipe runs at 32 x the largest
//    size of the profile: LP_NATIVE_VECTOR_WIDTH), so divergent and partial subgroups,
//    elect and inactive lanes behave as lavapipe's do; a smaller size of the profile
//    runs as aligned segments of lavapipe's subgroups (rewrite_subgroup.cpp).
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
  uint32_t lavapipeSubgroupSize = 0;             // lavapipe's own: subgroupSize or a multiple of it
  std::optional<Specialization> specialization;  // the pipeline's (frozen into the module)
  uint32_t sharedMemoryLimit = 0;                // the real device's; 0: not checked
  bool validate = true;                          // spirv-val what it receives and the result
};

struct RewriteResult {
  bool ok = false;
  std::string error;  // what the virtual device cannot emulate, naming the instruction
  std::vector<uint32_t> words;
  uint32_t matrixOps = 0;          // Load, Store, MulAdd, Length and element-wise operations rewritten
  uint32_t subgroupOps = 0;        // group operations and built-in reads rewritten (guarded or segmented)
  uint32_t lavapipeSubgroupOps = 0;  // group operations and built-ins lavapipe runs as they are
  // Element accesses with a constant index past the matrix's length at this subgroup
  // size: code for another size of a two-size profile, which a driver compiling for
  // this one never runs. An extract gives all bits set (a NaN), an insert changes
  // nothing, so a run that reached one shows in the outputs. Refused on a profile of
  // one size, where no other size's code can exist.
  uint32_t pastLengthAccesses = 0;
  uint32_t scratchBytes = 0; // Workgroup memory added (all virtual subgroups)
};

RewriteResult RewriteForProfile(std::span<const uint32_t> words, const Profile& profile, const RewriteRequest& request);

}  // namespace coopmat::virt
