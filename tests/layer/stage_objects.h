// Compute pipelines and shader objects made directly (no dispatch), with the
// application's VkAllocationCallbacks where a test passes them, on each creation path
// the layer intercepts: a module (lowered when created, or per pipeline when its
// shapes are specialization constants), SPIR-V chained into the stage
// (VK_KHR_maintenance5) and vkCreateShadersEXT. For spec_tiles.comp (7 storage
// buffers; any module with fewer bindings fits the same layout).
#pragma once

#include <cstdint>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "storage_buffer_layout.h"
#include "vk_context.h"

namespace layertest {

// spec_tiles.comp's specialization: two subgroups of 8, 8x8x8 tiles (lavapipe's shape).
struct SpecTilesSpecialization {
  uint32_t values[5] = {16, 8, 8, 8, 8};
  VkSpecializationMapEntry entries[5] = {{0, 0, 4}, {3, 4, 4}, {4, 8, 4}, {5, 12, 4}, {6, 16, 4}};
  VkSpecializationInfo info{5, entries, sizeof(values), values};
};

class StageObjects {
 public:
  explicit StageObjects(const cmtest::Device& device) : device_(device), layout_(device, 7) {}
  StageObjects(const StageObjects&) = delete;
  StageObjects& operator=(const StageObjects&) = delete;
  const cmtest::Device& device() const { return device_; }

  VkShaderModule CreateModule(const std::vector<uint32_t>& words, const VkAllocationCallbacks* allocator) const {
    const VkShaderModuleCreateInfo info = ModuleInfo(words);
    VkShaderModule module = VK_NULL_HANDLE;
    REQUIRE(vkCreateShaderModule(device_.handle(), &info, allocator, &module) == VK_SUCCESS);
    return module;
  }

  // One pipeline from `module`, or (module null) from `words` chained into the stage.
  // The handle is set to a non-null value first, so a failure must write null.
  VkResult CreatePipeline(VkShaderModule module, const std::vector<uint32_t>& words, const VkSpecializationInfo* spec,
                          const VkAllocationCallbacks* allocator, VkPipeline* pipeline) const {
    const VkShaderModuleCreateInfo moduleInfo = ModuleInfo(words);
    const VkComputePipelineCreateInfo info = PipelineInfo(module, module ? nullptr : &moduleInfo, spec);
    *pipeline = reinterpret_cast<VkPipeline>(uintptr_t{0xdead});
    return vkCreateComputePipelines(device_.handle(), VK_NULL_HANDLE, 1, &info, allocator, pipeline);
  }

  // The create info CreatePipeline uses: `module`, or the code `moduleInfo` chains into the stage.
  VkComputePipelineCreateInfo PipelineInfo(VkShaderModule module, const VkShaderModuleCreateInfo* moduleInfo,
                                           const VkSpecializationInfo* spec) const {
    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    info.stage.pNext = moduleInfo;
    info.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = spec;
    info.layout = layout_.pipelineLayout();
    info.basePipelineIndex = -1;
    return info;
  }

  // One compute shader object from `words` (VK_EXT_shader_object); the handle as above.
  VkResult CreateShader(const std::vector<uint32_t>& words, const VkSpecializationInfo* spec,
                        const VkAllocationCallbacks* allocator, VkShaderEXT* shader) const {
    auto create = reinterpret_cast<PFN_vkCreateShadersEXT>(vkGetDeviceProcAddr(device_.handle(), "vkCreateShadersEXT"));
    REQUIRE(create);
    VkShaderCreateInfoEXT info{VK_STRUCTURE_TYPE_SHADER_CREATE_INFO_EXT};
    info.flags = VK_SHADER_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
    info.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.codeType = VK_SHADER_CODE_TYPE_SPIRV_EXT;
    info.codeSize = words.size() * 4;
    info.pCode = words.data();
    info.pName = "main";
    info.setLayoutCount = 1;
    info.pSetLayouts = layout_.setLayout();
    info.pSpecializationInfo = spec;
    *shader = reinterpret_cast<VkShaderEXT>(uintptr_t{0xdead});
    return create(device_.handle(), 1, &info, allocator, shader);
  }

  void DestroyShader(VkShaderEXT shader, const VkAllocationCallbacks* allocator) const {
    auto destroy = reinterpret_cast<PFN_vkDestroyShaderEXT>(vkGetDeviceProcAddr(device_.handle(), "vkDestroyShaderEXT"));
    REQUIRE(destroy);
    destroy(device_.handle(), shader, allocator);
  }

  static VkShaderModuleCreateInfo ModuleInfo(const std::vector<uint32_t>& words) {
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = words.size() * 4;
    info.pCode = words.data();
    return info;
  }

 private:
  const cmtest::Device& device_;
  StorageBufferLayout layout_;
};

}  // namespace layertest
