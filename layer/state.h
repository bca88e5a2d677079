// Per-instance and per-device state, found through dispatch-key maps: every
// dispatchable handle starts with the loader's dispatch table pointer, shared by
// an instance and its physical devices, and by a device and its queues.
#pragma once

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "coopmat/layout.h"
#include "coopmat/lower.h"
#include "lowering_cache.h"
#include "messengers.h"
#include "settings.h"

namespace coopmat::layer {

using DispatchKey = void*;
template <typename Handle> DispatchKey KeyOf(Handle handle) { return *reinterpret_cast<void**>(handle); }

struct InstanceDispatch {
  PFN_vkGetInstanceProcAddr GetInstanceProcAddr = nullptr;
  PFN_GetPhysicalDeviceProcAddr GetPhysicalDeviceProcAddr = nullptr;
  PFN_vkDestroyInstance DestroyInstance = nullptr;
  PFN_vkEnumerateDeviceExtensionProperties EnumerateDeviceExtensionProperties = nullptr;
  PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties = nullptr;
  // The core command where the instance is 1.1 or later, else the KHR alias where the app
  // enabled VK_KHR_get_physical_device_properties2, else null: the layer calls nothing the
  // app could not (review of 2026-12-07).
  PFN_vkGetPhysicalDeviceProperties2 GetPhysicalDeviceProperties2 = nullptr;
  // The same choice for the layer's own features queries.
  PFN_vkGetPhysicalDeviceFeatures2 LayerFeatures2 = nullptr;
  // The next layer's, for the app's calls.
  PFN_vkGetPhysicalDeviceFeatures2 GetPhysicalDeviceFeatures2 = nullptr;
  PFN_vkGetPhysicalDeviceFeatures2 GetPhysicalDeviceFeatures2KHR = nullptr;
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR GetPhysicalDeviceCooperativeMatrixPropertiesKHR = nullptr;
  PFN_vkGetPhysicalDeviceCooperativeMatrixProperties2EXT GetPhysicalDeviceCooperativeMatrixProperties2EXT = nullptr;
  PFN_vkCreateDebugUtilsMessengerEXT CreateDebugUtilsMessengerEXT = nullptr;
  PFN_vkDestroyDebugUtilsMessengerEXT DestroyDebugUtilsMessengerEXT = nullptr;
};

struct DeviceDispatch {
  PFN_vkGetDeviceProcAddr GetDeviceProcAddr = nullptr;
  PFN_vkDestroyDevice DestroyDevice = nullptr;
  PFN_vkCreateShaderModule CreateShaderModule = nullptr;
  PFN_vkCreateComputePipelines CreateComputePipelines = nullptr;
  PFN_vkCreateGraphicsPipelines CreateGraphicsPipelines = nullptr;
  PFN_vkCreateShadersEXT CreateShadersEXT = nullptr;
  PFN_vkDestroyShaderModule DestroyShaderModule = nullptr;
  PFN_vkCreateRayTracingPipelinesKHR CreateRayTracingPipelinesKHR = nullptr;
  PFN_vkCreateRayTracingPipelinesNV CreateRayTracingPipelinesNV = nullptr;
  PFN_vkCreateExecutionGraphPipelinesAMDX CreateExecutionGraphPipelinesAMDX = nullptr;
  PFN_vkCreateDataGraphPipelinesARM CreateDataGraphPipelinesARM = nullptr;
  PFN_vkGetShaderModuleCreateInfoIdentifierEXT GetShaderModuleCreateInfoIdentifierEXT = nullptr;
  PFN_vkCreatePipelineBinariesKHR CreatePipelineBinariesKHR = nullptr;
  PFN_vkGetPipelineKeyKHR GetPipelineKeyKHR = nullptr;
};

// A module whose lowering depends on the pipeline: the driver holds its module-time
// lowering (so identifiers and names work), and every pipeline stage that uses it is
// lowered again from the original with the stage's specialization.
struct PendingModule {
  std::vector<uint32_t> original;
  Hash128 hash;  // of original
};

// What the layer learned about one physical device, once.
struct PhysicalDeviceInfo {
  bool hasKhrCoopmat = false;      // driver lists VK_KHR_cooperative_matrix
  bool nativeExt = false;          // driver lists VK_EXT_cooperative_matrix_maintenance1 itself
  bool serve = false;              // the layer provides the extension on this device
  uint32_t apiVersion = 0;
  uint32_t subgroupSize = 0;
  uint32_t minSubgroupSize = 0;    // == subgroupSize without subgroupSizeControl
  uint32_t maxSubgroupSize = 0;
  bool subgroupSizeControl = false;
  uint32_t maxComputeSharedMemorySize = 0;
  uint32_t maxTaskSharedMemorySize = 0;  // VK_EXT_mesh_shader; 0 without it
  uint32_t maxMeshSharedMemorySize = 0;
  uint32_t maxTaskPayloadAndSharedMemorySize = 0;
  uint32_t maxMeshPayloadAndSharedMemorySize = 0;
  VkSubgroupFeatureFlags subgroupOperations = 0;  // in subgroupStages
  VkShaderStageFlags subgroupStages = 0;
  // Who it is: names the layout cache file, keys lowered entries, selects a built-in
  // table. The UUIDs need vkGetPhysicalDeviceProperties2 (hasIdentity), the driver id
  // Vulkan 1.2 or VK_KHR_driver_properties (else 0: no known family).
  bool hasIdentity = false;
  uint32_t vendorID = 0, deviceID = 0, driverVersion = 0;
  VkDriverId driverId = VkDriverId(0);
  std::string deviceName;
  std::array<uint8_t, VK_UUID_SIZE> deviceUUID{}, driverUUID{};

  // Every subgroup size a compute pipeline on the device may run with: the powers of
  // two in [min, max] with subgroup size control, else the one default size. The
  // probe, the layouts kept and the lowering all use this one list.
  std::vector<uint32_t> PipelineSubgroupSizes() const {
    if (!subgroupSizeControl || !minSubgroupSize || minSubgroupSize > maxSubgroupSize) return {subgroupSize};
    std::vector<uint32_t> sizes;
    for (uint32_t size = minSubgroupSize; size && size <= maxSubgroupSize; size *= 2) sizes.push_back(size);
    return sizes;
  }
};

struct InstanceData {
  VkInstance instance = VK_NULL_HANDLE;
  InstanceDispatch dispatch;
  Settings settings;
  uint32_t apiVersion = VK_API_VERSION_1_0;
  bool debugUtilsEnabled = false;
  Messengers messengers;  // the app's, which Log calls

  std::mutex physicalDevicesMutex;
  std::unordered_map<VkPhysicalDevice, PhysicalDeviceInfo> physicalDevices;
  std::unordered_set<VkPhysicalDevice> mandatoryMinimumReported;  // warned once per device
};

struct DeviceData {
  VkDevice device = VK_NULL_HANDLE;
  InstanceData* instance = nullptr;
  DeviceDispatch dispatch;
  PhysicalDeviceInfo physicalDevice;
  bool emulating = false;  // the app enabled the extension and the layer serves it
  bool subgroupExtendedTypes = false;  // shaderSubgroupExtendedTypes is on (the app's or the layer's doing)
  VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT enabledFeatures{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT};
  uint32_t vulkanMinor = 0;  // the environment rewritten modules are validated against
  std::vector<LinearLayout> layouts;  // discovered register layouts (empty: portable path only)
  LowerOptions lowerOptions;          // what every module on this device is lowered with
  // What the pipeline-time lowering's cache key holds besides the stage: the device,
  // driver and layer versions and lowerOptions.
  uint64_t optionsFingerprint = 0;
  std::unique_ptr<LoweringCache> loweringCache;
  // Pipeline-time lowerings by where their code came from, and the time spent lowering
  // (reported when the device is destroyed).
  std::atomic<uint64_t> stageLowerings[3] = {0, 0, 0};  // indexed by CacheSource
  std::atomic<uint64_t> stageLoweringMicroseconds{0};
  // The maintenance1 features a module used without the app enabling them, each
  // warned about once per device (bit per feature, shaders.cpp CheckEnabledFeatures).
  mutable std::atomic<uint32_t> warnedFeatures{0};

  // Counted: non-dispatchable handles need not be unique, so a driver may return one
  // handle for two identical modules, and destroying one must not forget the other
  // (review 2 finding 17; VVL counts them the same way).
  struct PendingHandle {
    std::shared_ptr<const PendingModule> module;
    uint32_t references = 0;
  };
  std::shared_mutex pendingModulesMutex;
  std::unordered_map<VkShaderModule, PendingHandle> pendingModules;
  std::shared_ptr<const PendingModule> FindPendingModule(VkShaderModule module) {
    std::shared_lock lock(pendingModulesMutex);
    auto it = pendingModules.find(module);
    return it == pendingModules.end() ? nullptr : it->second.module;
  }
};

// A thread-safe map from dispatch key to owned state.
template <typename Data> class StateMap {
 public:
  Data* Find(DispatchKey key) const {
    std::shared_lock lock(mutex_);
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : it->second.get();
  }
  Data* Insert(DispatchKey key, std::unique_ptr<Data> data) {
    std::unique_lock lock(mutex_);
    Data* raw = data.get();
    map_[key] = std::move(data);
    return raw;
  }
  void Erase(DispatchKey key) {
    std::unique_lock lock(mutex_);
    map_.erase(key);
    // An empty map gives its buckets back: the map itself is never destroyed
    // (Immortal), and the loader unloads the layer after the last instance.
    if (map_.empty()) decltype(map_)().swap(map_);
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<DispatchKey, std::unique_ptr<Data>> map_;
};

// State that is never destroyed. An app may destroy its devices and instances from
// its own static destructors, and those run after the destructors of statics the layer
// first touched later, inside vkCreateInstance (review of 2026-12-07: a global context
// object crashed the process at exit). In static storage, not on the heap, so that
// unloading the layer leaks nothing.
template <typename T> T& Immortal() {
  alignas(T) static unsigned char storage[sizeof(T)];
  static T* const object = new (storage) T();
  return *object;
}

inline StateMap<InstanceData>& Instances() { return Immortal<StateMap<InstanceData>>(); }
inline StateMap<DeviceData>& Devices() { return Immortal<StateMap<DeviceData>>(); }

inline InstanceData* GetInstanceData(VkInstance instance) { return Instances().Find(KeyOf(instance)); }
inline InstanceData* GetInstanceData(VkPhysicalDevice physicalDevice) { return Instances().Find(KeyOf(physicalDevice)); }
inline DeviceData* GetDeviceData(VkDevice device) { return Devices().Find(KeyOf(device)); }

// Queries (once) and returns what the layer needs to know about a physical device.
PhysicalDeviceInfo GetPhysicalDeviceInfo(InstanceData& instance, VkPhysicalDevice physicalDevice);

}  // namespace coopmat::layer
