// The features the layer needs on the app's device: the layout probe's (it runs
// on the app's VkDevice, and a module needing a feature the device was created
// without is invalid usage) and the lowering's 16-bit shuffles. The layer turns on
// in its own copy of the create info those the device supports and the app left
// off, so the probe runs whatever the app enabled; AllowedProbe then says what
// the device that went down has.
#pragma once

#include <vulkan/vulkan.h>

#include <string>
#include <vector>

#include "pnext_chain.h"

namespace coopmat::layer {

// What the physical device supports (vkGetPhysicalDeviceFeatures2), by core version.
struct SupportedFeatures {
  VkPhysicalDeviceVulkan11Features vulkan11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features vulkan12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features vulkan13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR cooperativeMatrix{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
};

struct LayerFeatureRequest {
  uint32_t apiVersion = 0;            // the device's effective version: core structs only from 1.2 and 1.3
  bool forProbe = false;              // the probe will run: its features too
  bool cooperativeMatrixExtension = false;  // the app enabled VK_KHR_cooperative_matrix
};

struct LayerFeatures {
  bool subgroupExtendedTypes = false;  // on in the chain that goes down
  std::vector<std::string> added;      // what the layer turned on, for the log
};

// Edits *chain, every node of which `storage` owns (ChainCopy::CopyEvery; null:
// the app's chain, only read): each
// wanted feature the device supports is switched on in the core VkPhysicalDeviceVulkan1xFeatures
// struct or the promoted struct the app chained, or in a promoted struct the layer
// prepends (never beside a core struct of the same version, as valid usage requires).
LayerFeatures EnableLayerFeatures(ChainCopy* storage, const void** chain, const SupportedFeatures& supported,
                                  const LayerFeatureRequest& request);

struct ProbeAllowance {
  bool any = false;       // the common needs: cooperativeMatrix, vulkanMemoryModel, and a way to
                          // require full subgroups (the flag, or a SPIR-V 1.6 module)
  bool float16 = false;   // shaderFloat16 + storageBuffer16BitAccess
  bool int8 = false;      // shaderInt8 + storageBuffer8BitAccess (+ VK_KHR_8bit_storage before 1.2)
  // The app's own VK_KHR_shader_bfloat16 / VK_EXT_shader_float8 with the type and
  // cooperative-matrix features (the layer adds no extension: an app that did not
  // enable one has no module with such matrices), and 16-bit storage / 8-bit
  // storage and shaderInt8 (the fp8 probe reads its bit patterns as integers).
  bool bfloat16 = false;
  bool float8 = false;
  bool fullSubgroupsFlag = false;  // computeFullSubgroups enabled: the 1.3 module with the flag
  const char* missing = nullptr;   // why not `any`, for the log
};

// apiVersion: the device's effective version (min of instance and device).
ProbeAllowance AllowedProbe(const VkDeviceCreateInfo& info, uint32_t apiVersion);

}  // namespace coopmat::layer
