// spec_tiles.comp (tests/exec/shaders) as the layer tests use it: a module whose tile
// sizes are specialization constants, so the layer lowers it per pipeline, and the
// pipelines made from it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "storage_buffer_layout.h"
#include "vk_context.h"

namespace layertest {

using cmtest::Device;

inline std::vector<uint32_t> SpecTiles(const char* env) {
  std::vector<uint32_t> words = cmtest::ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/spec_tiles." + env + ".spv");
  REQUIRE(!words.empty());
  return words;
}

// A compute pipeline layout for spec_tiles.comp (7 storage buffers), and pipelines
// made from one module with a given specialization.
class SpecTilesPipelines {
 public:
  explicit SpecTilesPipelines(const Device& device) : device_(device), layout_(device, 7) {}

  // One vkCreateComputePipelines call with a pipeline per (TM, TN, TK, flags); returns
  // the result and which handles it created (then destroys them). inFlags2: the flags
  // go in a chained VkPipelineCreateFlags2CreateInfoKHR (info.flags then has every
  // bit of them clear, as the structure replaces it).
  std::pair<VkResult, std::vector<bool>> CreateBatch(VkShaderModule module,
                                                     const std::vector<std::array<uint32_t, 4>>& shapes,
                                                     bool inFlags2 = false, const std::vector<int32_t>& bases = {}) {
    std::vector<std::array<uint32_t, 5>> values;
    for (const auto& s : shapes) values.push_back({16, s[0], s[1], s[2], 8});
    const VkSpecializationMapEntry entries[] = {{0, 0, 4}, {3, 4, 4}, {4, 8, 4}, {5, 12, 4}, {6, 16, 4}};
    std::vector<VkSpecializationInfo> specs;
    for (const auto& v : values) specs.push_back({5, entries, sizeof(v), v.data()});
    std::vector<VkComputePipelineCreateInfo> infos(shapes.size(), {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO});
    std::vector<VkPipelineCreateFlags2CreateInfoKHR> flags2(shapes.size(), {VK_STRUCTURE_TYPE_PIPELINE_CREATE_FLAGS_2_CREATE_INFO_KHR});
    for (size_t i = 0; i < shapes.size(); ++i) {
      VkComputePipelineCreateInfo& info = infos[i];
      info.flags = inFlags2 ? 0 : shapes[i][3];
      flags2[i].flags = shapes[i][3];
      if (inFlags2) info.pNext = &flags2[i];
      info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
      info.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
      info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
      info.stage.module = module;
      info.stage.pName = "main";
      info.stage.pSpecializationInfo = &specs[i];
      info.layout = layout_.pipelineLayout();
      info.basePipelineIndex = i < bases.size() ? bases[i] : -1;
    }
    const auto unwritten = reinterpret_cast<VkPipeline>(uintptr_t{0xdead});
    std::vector<VkPipeline> pipelines(shapes.size(), unwritten);
    const VkResult result = vkCreateComputePipelines(device_.handle(), VK_NULL_HANDLE, static_cast<uint32_t>(infos.size()),
                                                     infos.data(), nullptr, pipelines.data());
    std::vector<bool> created;
    for (VkPipeline p : pipelines) {
      created.push_back(p != VK_NULL_HANDLE);  // an unwritten handle counts as created, and is not destroyed
      if (p != VK_NULL_HANDLE && p != unwritten) vkDestroyPipeline(device_.handle(), p, nullptr);
    }
    return {result, created};
  }

  // Creates (and destroys) a pipeline of `module` with TM, TN, TK; returns the result.
  // `unused`: the value of a SpecId (99) the module does not declare, as an engine's
  // shared VkSpecializationInfo carries.
  VkResult Create(VkShaderModule module, uint32_t tm, uint32_t tn, uint32_t tk, uint32_t requiredSubgroupSize = 0,
                  uint32_t unused = 0) {
    const uint32_t values[] = {16, tm, tn, tk, 8, unused};  // local size: two subgroups of 8
    const VkSpecializationMapEntry entries[] = {{0, 0, 4}, {3, 4, 4}, {4, 8, 4}, {5, 12, 4}, {6, 16, 4}, {99, 20, 4}};
    VkSpecializationInfo spec{6, entries, sizeof(values), values};
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo required{
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
    required.requiredSubgroupSize = requiredSubgroupSize;
    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    info.stage.pNext = requiredSubgroupSize ? &required : nullptr;
    info.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = &spec;
    info.layout = layout_.pipelineLayout();
    VkPipeline pipeline = VK_NULL_HANDLE;
    const VkResult result = vkCreateComputePipelines(device_.handle(), VK_NULL_HANDLE, 1, &info, nullptr, &pipeline);
    if (pipeline) vkDestroyPipeline(device_.handle(), pipeline, nullptr);
    return result;
  }

 private:
  const Device& device_;
  StorageBufferLayout layout_;
};

inline VkShaderModule CreateModule(const Device& device, const std::vector<uint32_t>& words) {
  VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  info.codeSize = words.size() * 4;
  info.pCode = words.data();
  VkShaderModule module = VK_NULL_HANDLE;
  REQUIRE(vkCreateShaderModule(device.handle(), &info, nullptr, &module) == VK_SUCCESS);
  return module;
}

}  // namespace layertest
