// Compile-only measurement of a compute shader: the driver's own static statistics
// (VK_KHR_pipeline_executable_properties; on RADV, ACO's instruction count, latency
// and throughput model, LDS and register use) for a pipeline created at a required
// subgroup size or at the driver's pick. Nothing is dispatched, so this works on a
// driver whose submissions do nothing (Mesa's drm-shim).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "vulkan_app.h"

namespace sample {

struct StatsPipelineOptions {
  uint32_t requiredSubgroupSize = 0;  // 0: no required size (the driver picks)
  std::vector<std::pair<uint32_t, uint32_t>> specialization;  // (constant id, 32-bit value)
  uint32_t bindings = 2;              // storage buffers at set 0, bindings 0..bindings-1
  uint32_t pushConstantBytes = 0;
};

struct PipelineStats {
  VkResult module = VK_SUCCESS;    // vkCreateShaderModule (where the layer rewrites)
  VkResult pipeline = VK_SUCCESS;  // vkCreateComputePipelines
  uint32_t subgroupSize = 0;       // the executable's, as the driver reports it
  std::vector<std::pair<std::string, double>> values;  // statistic name -> value, the driver's order
  bool ok() const { return module == VK_SUCCESS && pipeline == VK_SUCCESS; }
  // The named statistic, or -1 when the driver has none by that name.
  double Get(const std::string& name) const;
};

// Creates the pipeline with VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR and reads
// the compute executable's statistics. Needs context.pipelineStatistics() for the
// figures; without it, only creation is checked. Never throws for a failed creation
// (that is a result); throws for a failed query.
PipelineStats CompileForStatistics(const Context& context, std::span<const uint32_t> spirv,
                                   const StatsPipelineOptions& options);

}  // namespace sample
