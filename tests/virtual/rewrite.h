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
  // Where the rewritten code records faults (faults::Record), a device address of
  // host-visible memory the layer reads after the work; 0: faults only poison results.
  uint64_t faultAddress = 0;
  uint32_t pipeline = 0;  // the number fault records carry for this pipeline
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
  // What each fault site of the rewritten code is (site s is sites[s - 1]): "OpFoo %12 (what)".
  std::vector<std::string> sites;
  // The order its chunks run in (ChunkOrderName), or "none" where the subgroups are not
  // chunks; "fixed" where shuffled was asked but no fault buffer gives the tickets.
  std::string chunkOrder = "none";
};

// Faults: what the emulation finds wrong while a dispatch runs, where a real device
// would compute something undefined that the emulation could otherwise pass. The
// rewritten code poisons the results concerned and appends a record to the fault
// buffer (RewriteRequest::faultAddress, uint words):
//   [0] records appended so far (past kRecords they all go to the last record's place)
//   [kTicketWord] tickets taken: each chunk of a shuffled order (Profile::chunkOrder) takes
//       one at entry, its seed, so that the order differs between dispatches and workgroups
//   [kHeaderWords + r * kRecordWords + i] record r: pipeline, kind, site, detail
namespace faults {
inline constexpr uint32_t kHeaderWords = 4, kRecordWords = 4, kRecords = 1024, kTicketWord = 1;
inline constexpr uint32_t kBufferWords = kHeaderWords + (kRecords + 1) * kRecordWords;
enum Kind : uint32_t {
  // The chunks of a virtual subgroup met at different operations (detail: another
  // chunk's site): SPIR-V's non-uniform operations act on the invocations active at
  // *that* instruction, so the exchange had no defined partner.
  kDifferentOperations = 1,
  // A chunk waited for the others in vain (detail 0): they never reached the meeting.
  kMeetingTimedOut = 2,
  // Copies of one matrix element held by several invocations disagree (detail: lane
  // << 16 | element index of a copy that differs from the one stored).
  kReplicasDisagree = 3,
};
// "chunks at different operations" and the like, for the log.
const char* KindName(uint32_t kind);
}  // namespace faults

RewriteResult RewriteForProfile(std::span<const uint32_t> words, const Profile& profile, const RewriteRequest& request);

}  // namespace coopmat::virt
