// A compute pipeline layout of N storage buffers at bindings 0..N-1 (and its set
// layout), destroyed with it: what the layer tests' pipelines of spec_tiles.comp and
// smaller modules are made with.
#pragma once

#include <cstdint>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "vk_context.h"

namespace layertest {

class StorageBufferLayout {
 public:
  StorageBufferLayout(const cmtest::Device& device, uint32_t buffers) : device_(device) {
    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (uint32_t i = 0; i < buffers; ++i)
      bindings.push_back({i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
    VkDescriptorSetLayoutCreateInfo setInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    setInfo.bindingCount = static_cast<uint32_t>(bindings.size());
    setInfo.pBindings = bindings.data();
    REQUIRE(vkCreateDescriptorSetLayout(device.handle(), &setInfo, nullptr, &setLayout_) == VK_SUCCESS);
    VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layoutInfo.setLayoutCount = 1;
    layoutInfo.pSetLayouts = &setLayout_;
    REQUIRE(vkCreatePipelineLayout(device.handle(), &layoutInfo, nullptr, &layout_) == VK_SUCCESS);
  }
  ~StorageBufferLayout() {
    vkDestroyPipelineLayout(device_.handle(), layout_, nullptr);
    vkDestroyDescriptorSetLayout(device_.handle(), setLayout_, nullptr);
  }
  StorageBufferLayout(const StorageBufferLayout&) = delete;
  StorageBufferLayout& operator=(const StorageBufferLayout&) = delete;

  const VkDescriptorSetLayout* setLayout() const { return &setLayout_; }
  VkPipelineLayout pipelineLayout() const { return layout_; }

 private:
  const cmtest::Device& device_;
  VkDescriptorSetLayout setLayout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
};

}  // namespace layertest
