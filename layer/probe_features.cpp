#include "probe_features.h"

#include <cstddef>
#include <cstring>

namespace coopmat::layer {
namespace {

struct Enabled {
  bool cooperativeMatrix = false, vulkanMemoryModel = false, shaderFloat16 = false, storage16 = false,
       shaderInt8 = false, storage8 = false, computeFullSubgroups = false, bfloat16 = false, float8 = false;
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
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR: {
        auto* v = reinterpret_cast<const VkPhysicalDeviceShaderBfloat16FeaturesKHR*>(s);
        e.bfloat16 |= v->shaderBFloat16Type && v->shaderBFloat16CooperativeMatrix;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT8_FEATURES_EXT: {
        auto* v = reinterpret_cast<const VkPhysicalDeviceShaderFloat8FeaturesEXT*>(s);
        e.float8 |= v->shaderFloat8 && v->shaderFloat8CooperativeMatrix;
        break;
      }
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

// One feature bit: where it lives in the core struct of its version and in the
// struct that was promoted into it.
struct FeatureBit {
  const char* name;
  uint32_t version;  // VK_API_VERSION_1_x whose core struct has it; 0: extension struct only
  VkStructureType core;
  size_t coreOffset;
  VkStructureType promoted;
  size_t promotedOffset;
  bool probe;  // needed by the probe (else by the lowering)
};

#define COOPMAT_CORE(version, minor, member) version, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_##minor##_FEATURES, \
    offsetof(VkPhysicalDeviceVulkan1##minor##Features, member)
const FeatureBit kFeatureBits[] = {
    {"shaderSubgroupExtendedTypes", COOPMAT_CORE(VK_API_VERSION_1_2, 2, shaderSubgroupExtendedTypes),
     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_EXTENDED_TYPES_FEATURES,
     offsetof(VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures, shaderSubgroupExtendedTypes), false},
    {"vulkanMemoryModel", COOPMAT_CORE(VK_API_VERSION_1_2, 2, vulkanMemoryModel),
     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
     offsetof(VkPhysicalDeviceVulkanMemoryModelFeatures, vulkanMemoryModel), true},
    {"shaderFloat16", COOPMAT_CORE(VK_API_VERSION_1_2, 2, shaderFloat16), VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
     offsetof(VkPhysicalDeviceShaderFloat16Int8Features, shaderFloat16), true},
    {"shaderInt8", COOPMAT_CORE(VK_API_VERSION_1_2, 2, shaderInt8), VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
     offsetof(VkPhysicalDeviceShaderFloat16Int8Features, shaderInt8), true},
    {"storageBuffer8BitAccess", COOPMAT_CORE(VK_API_VERSION_1_2, 2, storageBuffer8BitAccess),
     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES, offsetof(VkPhysicalDevice8BitStorageFeatures, storageBuffer8BitAccess), true},
    {"storageBuffer16BitAccess", COOPMAT_CORE(VK_API_VERSION_1_2, 1, storageBuffer16BitAccess),
     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, offsetof(VkPhysicalDevice16BitStorageFeatures, storageBuffer16BitAccess), true},
    {"subgroupSizeControl", COOPMAT_CORE(VK_API_VERSION_1_3, 3, subgroupSizeControl),
     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES,
     offsetof(VkPhysicalDeviceSubgroupSizeControlFeatures, subgroupSizeControl), true},
    {"computeFullSubgroups", COOPMAT_CORE(VK_API_VERSION_1_3, 3, computeFullSubgroups),
     VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES,
     offsetof(VkPhysicalDeviceSubgroupSizeControlFeatures, computeFullSubgroups), true},
    {"cooperativeMatrix", 0, VK_STRUCTURE_TYPE_MAX_ENUM, 0, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
     offsetof(VkPhysicalDeviceCooperativeMatrixFeaturesKHR, cooperativeMatrix), true},
};
#undef COOPMAT_CORE

VkBool32& Bit(void* structure, size_t offset) { return *reinterpret_cast<VkBool32*>(static_cast<std::byte*>(structure) + offset); }

bool Supported(const SupportedFeatures& supported, const FeatureBit& bit) {
  const void* core = bit.core == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES   ? static_cast<const void*>(&supported.vulkan11)
                     : bit.core == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES ? static_cast<const void*>(&supported.vulkan12)
                     : bit.core == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES ? static_cast<const void*>(&supported.vulkan13)
                                                                                          : nullptr;
  if (!core) return supported.cooperativeMatrix.cooperativeMatrix;
  return Bit(const_cast<void*>(core), bit.coreOffset);
}

VkBaseOutStructure* FindOwned(const void* chain, VkStructureType type) {
  return reinterpret_cast<VkBaseOutStructure*>(const_cast<VkBaseInStructure*>(FindInChain(chain, type)));
}

}  // namespace

LayerFeatures EnableLayerFeatures(ChainCopy* storage, const void** chain, const SupportedFeatures& supported,
                                  const LayerFeatureRequest& request) {
  LayerFeatures out;
  for (const FeatureBit& bit : kFeatureBits) {
    const bool extendedTypes = std::strcmp(bit.name, "shaderSubgroupExtendedTypes") == 0;
    VkBaseOutStructure* holder = bit.version ? FindOwned(*chain, bit.core) : nullptr;
    size_t offset = bit.coreOffset;
    if (!holder) {
      holder = FindOwned(*chain, bit.promoted);
      offset = bit.promotedOffset;
    }
    if (holder && Bit(holder, offset)) {
      out.subgroupExtendedTypes |= extendedTypes;
      continue;  // the app's own
    }
    if (!storage || (bit.probe && !request.forProbe) || !Supported(supported, bit)) continue;
    if (bit.version ? request.apiVersion < bit.version : !request.cooperativeMatrixExtension) continue;
    if (!holder) {
      // No struct of this version in the chain: the promoted one, at the front.
      holder = storage->New(bit.promoted);
      if (!holder) continue;
      holder->pNext = static_cast<VkBaseOutStructure*>(const_cast<void*>(*chain));
      *chain = holder;
    }
    Bit(holder, offset) = VK_TRUE;
    out.added.push_back(bit.name);
    out.subgroupExtendedTypes |= extendedTypes;
  }
  return out;
}

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
  allowed.bfloat16 = e.bfloat16 && e.storage16 && Enables(info, VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
  allowed.float8 = e.float8 && allowed.int8 && Enables(info, VK_EXT_SHADER_FLOAT8_EXTENSION_NAME);
  return allowed;
}

}  // namespace coopmat::layer
