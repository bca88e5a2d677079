// A virtual device profile: what the test layer VK_LAYER_COOPMAT_TEST_virtual_device
// makes lavapipe report and how it lays cooperative matrices out. One text file per
// target (tests/virtual/profiles), read by ParseProfile. Plain data, no Vulkan calls.
//
// Format: one setting per line, '#' comments, blank lines skipped:
//   name radv-gfx11-wave32           a short name for messages and logs
//   vendor_id 0x1002                 VkPhysicalDeviceProperties identity
//   device_id 0x744c
//   device_name AMD Radeon RX 7900 XTX (RADV NAVI31)   (rest of the line)
//   device_type discrete             discrete, integrated, virtual, cpu, other
//   driver_id 3                      VkDriverId
//   driver_name radv                 (rest of the line)
//   driver_info Mesa 26.1.6          (rest of the line)
//   driver_version 26.1.6            Mesa's VK_MAKE_VERSION encoding, or a number
//   subgroup_sizes 32 64             the sizes a pipeline may require (powers of two)
//   default_subgroup_size 64         the size a pipeline without a required size runs
//   shared_memory 65536              maxComputeSharedMemorySize
//   matrix 16 16 16 f16 f16 f32 f32 [saturating]   M N K A B C Result (KHR property)
//   flexible_max_dimension 64        optional: VK_NV_cooperative_matrix2's flexible
//                                    dimensions, each matrix line's M, N, K its
//                                    granularity, sides up to this; a flexible shape is
//                                    laid out as tiles of its configuration's layout
//                                    (element_layout.h), 48 = three 16-tiles included
//   layout type=f32 use=Acc ...      layout lines (element_layout.h), read by the
//                                    virtual device's own code
#pragma once

#include <cstdint>
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "element_layout.h"

namespace coopmat::virt {

struct MatrixConfig {
  uint32_t m = 0, n = 0, k = 0;
  uint32_t aType = 0, bType = 0, cType = 0, resultType = 0;  // VkComponentTypeKHR
  bool saturating = false;
};

struct Profile {
  std::string name;
  uint32_t vendorId = 0;
  uint32_t deviceId = 0;
  std::string deviceName;
  uint32_t deviceType = 2;  // VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
  uint32_t driverId = 0;
  std::string driverName;
  std::string driverInfo;
  uint32_t driverVersion = 0;
  std::vector<uint32_t> subgroupSizes;  // ascending
  uint32_t defaultSubgroupSize = 0;
  uint32_t sharedMemoryBytes = 0;
  uint32_t flexibleMaxDimension = 0;  // 0: no NV flexible dimensions
  std::vector<MatrixConfig> matrices;
  std::vector<ElementLayout> layouts;

  // The layout of one matrix type at one subgroup size: its line, or a flexible shape's
  // tiles of the line of the configuration it is a multiple of; nullopt when the profile
  // has none.
  std::optional<ElementLayout> FindLayout(const LayoutKey& key) const;
  // Whether a matrix configuration has a matrix of this shape in this use (the tile of its flexible shapes).
  bool IsConfigurationShape(const LayoutKey& key) const;
  bool RunsSubgroupSize(uint32_t size) const;
  // The subgroup size lavapipe runs under this profile (LP_NATIVE_VECTOR_WIDTH = 32 x it):
  // the largest of the profile's, up to 16. Lavapipe executes at most 16 invocations in
  // step (Mesa's LP_MAX_VECTOR_WIDTH, 512 bits): at 1024 and 2048 bits it reports 32 and
  // 64 lanes but runs its subgroups 16 at a time (docs/design.md, "Virtual device").
  uint32_t LavapipeSubgroupSize() const { return std::min<uint32_t>(subgroupSizes.back(), chunkLanes); }
  static constexpr uint32_t kLavapipeMostLanes = 16;
  // The most lanes lavapipe runs in step here: 16, or 8 (COOPMAT_VIRTUAL_CHUNK_LANES=8), so
  // that 16- and 32-lane subgroups are chunks too and a write read by another lane of the
  // subgroup without a barrier between them is seen stale wherever the reader's chunk
  // runs first (docs/design.md, "What it still cannot catch").
  uint32_t chunkLanes = kLavapipeMostLanes;
  // The order the chunks of a virtual subgroup run in between two meetings. Lavapipe's
  // scheduler alone always takes one (the last to arrive, then the others in index order),
  // so a missing barrier shows only for the readers it puts first; shuffled, every chunk
  // yields a drawn number of extra times after each meeting, so every order comes up from
  // workgroup to workgroup (COOPMAT_VIRTUAL_CHUNK_ORDER=fixed pins lavapipe's own).
  enum class ChunkOrder { kShuffled, kFixed };
  ChunkOrder chunkOrder = ChunkOrder::kShuffled;
  // Whether a matrix configuration has this VkComponentTypeKHR as A, B, C or Result.
  bool ListsComponentType(uint32_t type) const;
};

struct ProfileResult {
  bool ok = false;
  Profile profile;
  std::string error;  // "line N: ..." when !ok
};
// Checks what the virtual device relies on: every setting present once, sizes
// powers of two that include the default, every layout valid (ElementLayout::Parse) and
// at one of the sizes, and every matrix configuration's A, B, C and Result types
// laid out at every size.
ProfileResult ParseProfile(std::string_view text);
ProfileResult ReadProfileFile(const std::string& path);
// The profile the virtual device runs: the file COOPMAT_VIRTUAL_PROFILE names, with
// COOPMAT_VIRTUAL_DEFAULT_SUBGROUP_SIZE (one of its sizes), when set, as the size of
// pipelines that require none (a lane of a two-size profile runs the other size's code so),
// COOPMAT_VIRTUAL_CHUNK_LANES (8 or 16) as Profile::chunkLanes and COOPMAT_VIRTUAL_CHUNK_ORDER
// (shuffled or fixed) as Profile::chunkOrder.
ProfileResult ReadConfiguredProfile();
// "shuffled" or "fixed", as COOPMAT_VIRTUAL_CHUNK_ORDER spells it.
const char* ChunkOrderName(Profile::ChunkOrder order);

}  // namespace coopmat::virt
