#include "probe_features.h"

#include <cstring>

namespace coopmat::layer {
namespace {

struct Enabled {
  bool cooperativeMatrix = false, vulkanMemoryModel = false, shaderFloat16 = false, storage16 = false,
       shaderInt8 = false, storage8 = false, computeFullSubgroups = false;
};

// Every place a feature can be enabled: the core Vulkan 1.x structs and the
// extension structs they absorbed.
Enabled EnabledFeatures(const VkDeviceCreateInfo& info) {
  Enabled e;
  for (auto* s = static_cast<const VkBaseInStructure*>(info.pNext); s; s = s->pNext) {
    switch (s->sType) {
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES:
        e.storage16 |= reinterpret_cast<const VkPhysicalDeviceVulkan11Features*>(s)->storageBuffer16BitAccess;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
        auto* v = reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(s);
        e.vulkanMemoryModel |= v->vulkanMemoryModel;
        e.shaderFloat16 |= v->shaderFloat16;
        e.shaderInt8 |= v->shaderInt8;
        e.storage8 |= v->storageBuffer8BitAccess;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES:
        e.computeFullSubgroups |= reinterpret_cast<const VkPhysicalDeviceVulkan13Features*>(s)->computeFullSubgroups;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES:
        e.storage16 |= reinterpret_cast<const VkPhysicalDevice16BitStorageFeatures*>(s)->storageBuffer16BitAccess;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES:
        e.storage8 |= reinterpret_cast<const VkPhysicalDevice8BitStorageFeatures*>(s)->storageBuffer8BitAccess;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES: {
        auto* v = reinterpret_cast<const VkPhysicalDeviceShaderFloat16Int8Features*>(s);
        e.shaderFloat16 |= v->shaderFloat16;
        e.shaderInt8 |= v->shaderInt8;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES:
        e.vulkanMemoryModel |= reinterpret_cast<const VkPhysicalDeviceVulkanMemoryModelFeatures*>(s)->vulkanMemoryModel;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES:
        e.computeFullSubgroups |=
            reinterpret_cast<const VkPhysicalDeviceSubgroupSizeControlFeatures*>(s)->computeFullSubgroups;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR:
        e.cooperativeMatrix |= reinterpret_cast<const VkPhysicalDeviceCooperativeMatrixFeaturesKHR*>(s)->cooperativeMatrix;
        break;
      default: break;
    }
  }
  return e;
}

bool Enables(const VkDeviceCreateInfo& info, const char* name) {
  for (uint32_t i = 0; i < info.enabledExtensionCount; ++i)
    if (std::strcmp(info.ppEnabledExtensionNames[i], name) == 0) return true;
  return false;
}

}  // namespace

ProbeAllowance AllowedProbe(const VkDeviceCreateInfo& info, uint32_t apiVersion) {
  const Enabled e = EnabledFeatures(info);
  const bool v12 = apiVersion >= VK_API_VERSION_1_2;
  const bool v13 = apiVersion >= VK_API_VERSION_1_3;
  ProbeAllowance allowed;
  allowed.fullSubgroupsFlag = e.computeFullSubgroups;
  if (!Enables(info, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) || !e.cooperativeMatrix)
    allowed.missing = "the cooperativeMatrix feature";
  else if (!e.vulkanMemoryModel || !(v12 || Enables(info, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME)))
    allowed.missing = "the vulkanMemoryModel feature";
  else if (!e.computeFullSubgroups && !v13)
    allowed.missing = "computeFullSubgroups (or Vulkan 1.3 for a SPIR-V 1.6 probe)";
  if (allowed.missing) return allowed;
  allowed.any = true;
  allowed.float16 = e.shaderFloat16 && e.storage16 && (v12 || Enables(info, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME));
  allowed.int8 = e.shaderInt8 && e.storage8 &&
                 (v12 || (Enables(info, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME) && Enables(info, VK_KHR_8BIT_STORAGE_EXTENSION_NAME)));
  return allowed;
}

}  // namespace coopmat::layer
