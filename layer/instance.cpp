// Instance-level plumbing: instance creation, the extension list, the feature
// struct, and the physical-device facts the rest of the layer relies on.
#include <algorithm>
#include <cstring>
#include <vector>

#include "entry_points.h"
#include "layer_names.h"
#include "messages.h"
#include "state.h"

namespace coopmat::layer {

namespace {

VkLayerInstanceCreateInfo* FindLinkInfo(const VkInstanceCreateInfo* info) {
  auto* s = static_cast<const VkBaseInStructure*>(info->pNext);
  for (; s; s = s->pNext) {
    if (s->sType != VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO) continue;
    auto* link = reinterpret_cast<VkLayerInstanceCreateInfo*>(const_cast<VkBaseInStructure*>(s));
    if (link->function == VK_LAYER_LINK_INFO) return link;
  }
  return nullptr;
}

template <typename Fn> void Load(InstanceData& data, Fn& slot, const char* name) {
  slot = reinterpret_cast<Fn>(data.dispatch.GetInstanceProcAddr(data.instance, name));
}

// The driver's extensions; a driver error empties the list and lands in *error.
std::vector<VkExtensionProperties> DriverExtensions(InstanceData& instance, VkPhysicalDevice physicalDevice,
                                                    VkResult* error = nullptr) {
  std::vector<VkExtensionProperties> list;
  for (int attempt = 0; attempt < 4; ++attempt) {  // the list may grow between the two calls
    uint32_t count = 0;
    if (VkResult r = instance.dispatch.EnumerateDeviceExtensionProperties(physicalDevice, nullptr, &count, nullptr);
        r != VK_SUCCESS) {
      if (error) *error = r;
      return {};
    }
    list.resize(count);
    const VkResult result =
        instance.dispatch.EnumerateDeviceExtensionProperties(physicalDevice, nullptr, &count, list.data());
    list.resize(count);
    if (result == VK_SUCCESS) return list;
    if (result != VK_INCOMPLETE) {
      if (error) *error = result;
      return {};
    }
  }
  return list;
}

bool Contains(const std::vector<VkExtensionProperties>& list, const char* name) {
  return std::any_of(list.begin(), list.end(),
                     [name](const VkExtensionProperties& p) { return std::strcmp(p.extensionName, name) == 0; });
}

// Removes `target` from a pNext chain for the duration of a call down, then restores it,
// so the driver (and validation below us) never sees a struct it did not advertise.
class ScopedUnlink {
 public:
  ScopedUnlink(void* head, VkStructureType type) {
    auto* prev = static_cast<VkBaseOutStructure*>(head);
    for (auto* s = prev->pNext; s; prev = s, s = s->pNext) {
      if (s->sType == type) {
        prev_ = prev;
        target_ = s;
        prev->pNext = s->pNext;
        return;
      }
    }
  }
  ~ScopedUnlink() {
    if (prev_) prev_->pNext = target_;
  }
  VkBaseOutStructure* target() const { return target_; }

 private:
  VkBaseOutStructure* prev_ = nullptr;
  VkBaseOutStructure* target_ = nullptr;
};

// Whether what lists VK_EXT_cooperative_matrix_maintenance1 below the layer implements it:
// the loader adds an implicit layer's manifest extensions to the driver's list (so this
// layer's own would read as the driver's), but only an implementation fills the extension's
// features. Its members start at a value no implementation writes (a VkBool32 is 0 or 1).
// Where the app's version and extensions allow no features query, the list decides.
bool ImplementedBelow(const InstanceData& instance, VkPhysicalDevice physicalDevice) {
  const PFN_vkGetPhysicalDeviceFeatures2 query = instance.dispatch.LayerFeatures2;
  if (!query) return true;
  constexpr VkBool32 kUntouched = 0x7ea7u;
  VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT};
  features.cooperativeMatrixProperties2 = features.cooperativeMatrixReductions = features.cooperativeMatrixConversions =
      features.cooperativeMatrixPerElementOperations = features.cooperativeMatrixGetCoordinate = kUntouched;
  VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &features};
  query(physicalDevice, &features2);
  return features.cooperativeMatrixProperties2 != kUntouched || features.cooperativeMatrixReductions != kUntouched ||
         features.cooperativeMatrixConversions != kUntouched || features.cooperativeMatrixPerElementOperations != kUntouched ||
         features.cooperativeMatrixGetCoordinate != kUntouched;
}

}  // namespace

PhysicalDeviceInfo GetPhysicalDeviceInfo(InstanceData& instance, VkPhysicalDevice physicalDevice) {
  {
    std::lock_guard lock(instance.physicalDevicesMutex);
    auto it = instance.physicalDevices.find(physicalDevice);
    if (it != instance.physicalDevices.end()) return it->second;
  }
  PhysicalDeviceInfo info;
  const std::vector<VkExtensionProperties> extensions = DriverExtensions(instance, physicalDevice);
  info.hasKhrCoopmat = Contains(extensions, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  info.nativeExt = Contains(extensions, VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME) &&
                   ImplementedBelow(instance, physicalDevice);
  info.serve = info.hasKhrCoopmat && (!info.nativeExt || instance.settings.forceEnable);

  VkPhysicalDeviceProperties properties{};
  instance.dispatch.GetPhysicalDeviceProperties(physicalDevice, &properties);
  info.apiVersion = properties.apiVersion;
  info.vendorID = properties.vendorID;
  info.deviceID = properties.deviceID;
  info.driverVersion = properties.driverVersion;
  info.deviceName = properties.deviceName;
  info.maxComputeSharedMemorySize = properties.limits.maxComputeSharedMemorySize;
  info.subgroupSize = 1;
  // Structures of the app's effective version, or of extensions the device has
  // (review 2 finding 18; review of 2026-12-07: a 1.0 app's validation blamed it for the
  // layer's 1.1 query).
  const uint32_t effectiveVersion = std::min(instance.apiVersion, properties.apiVersion);
  const bool v11 = effectiveVersion >= VK_API_VERSION_1_1;
  if (instance.dispatch.GetPhysicalDeviceProperties2) {
    VkPhysicalDeviceProperties2 properties2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    auto chain = [&](auto& structure) {
      structure.pNext = properties2.pNext;
      properties2.pNext = &structure;
    };
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    if (v11) {  // core 1.1 only (ID's instance extensions are not looked for)
      chain(subgroup);
      chain(id);
    }
    VkPhysicalDeviceSubgroupSizeControlProperties sizeControl{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    info.subgroupSizeControl = v11 && (effectiveVersion >= VK_API_VERSION_1_3 ||
                                       Contains(extensions, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME));
    if (info.subgroupSizeControl) chain(sizeControl);
    VkPhysicalDeviceMeshShaderPropertiesEXT mesh{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MESH_SHADER_PROPERTIES_EXT};
    if (Contains(extensions, VK_EXT_MESH_SHADER_EXTENSION_NAME)) chain(mesh);
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    if (effectiveVersion >= VK_API_VERSION_1_2 || Contains(extensions, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME)) chain(driver);
    instance.dispatch.GetPhysicalDeviceProperties2(physicalDevice, &properties2);
    info.hasIdentity = v11;
    info.driverVersion = properties2.properties.driverVersion;  // what a layer below may patch, as the app sees it
    info.driverId = driver.driverID;
    std::copy(std::begin(id.deviceUUID), std::end(id.deviceUUID), info.deviceUUID.begin());
    std::copy(std::begin(id.driverUUID), std::end(id.driverUUID), info.driverUUID.begin());
    info.maxTaskSharedMemorySize = mesh.maxTaskSharedMemorySize;
    info.maxMeshSharedMemorySize = mesh.maxMeshSharedMemorySize;
    info.maxTaskPayloadAndSharedMemorySize = mesh.maxTaskPayloadAndSharedMemorySize;
    info.maxMeshPayloadAndSharedMemorySize = mesh.maxMeshPayloadAndSharedMemorySize;
    info.subgroupSize = std::max(1u, subgroup.subgroupSize);
    info.subgroupOperations = subgroup.supportedOperations;
    info.subgroupStages = subgroup.supportedStages;
    if (info.subgroupSizeControl && sizeControl.minSubgroupSize != 0) {
      info.minSubgroupSize = sizeControl.minSubgroupSize;
      info.maxSubgroupSize = sizeControl.maxSubgroupSize;
    }
  }
  if (info.minSubgroupSize == 0) info.minSubgroupSize = info.maxSubgroupSize = info.subgroupSize;

  std::lock_guard lock(instance.physicalDevicesMutex);
  return instance.physicalDevices.emplace(physicalDevice, info).first->second;
}

namespace {

// The layer's state for an instance the driver created, stored under its dispatch key.
void FinishInstance(const VkInstanceCreateInfo* pCreateInfo, PFN_vkGetInstanceProcAddr nextGetInstanceProcAddr,
                    PFN_GetPhysicalDeviceProcAddr nextGetPhysicalDeviceProcAddr, VkInstance instance) {
  auto data = std::make_unique<InstanceData>();
  data->instance = instance;
  data->dispatch.GetInstanceProcAddr = nextGetInstanceProcAddr;
  data->dispatch.GetPhysicalDeviceProcAddr = nextGetPhysicalDeviceProcAddr;
  if (pCreateInfo->pApplicationInfo && pCreateInfo->pApplicationInfo->apiVersion)
    data->apiVersion = pCreateInfo->pApplicationInfo->apiVersion;
  bool properties2Extension = false;
  for (uint32_t i = 0; i < pCreateInfo->enabledExtensionCount; ++i) {
    const char* name = pCreateInfo->ppEnabledExtensionNames[i];
    if (std::strcmp(name, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) == 0) data->debugUtilsEnabled = true;
    if (std::strcmp(name, VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME) == 0) properties2Extension = true;
  }
  InstanceDispatch& d = data->dispatch;
  Load(*data, d.DestroyInstance, "vkDestroyInstance");
  Load(*data, d.EnumerateDeviceExtensionProperties, "vkEnumerateDeviceExtensionProperties");
  Load(*data, d.GetPhysicalDeviceProperties, "vkGetPhysicalDeviceProperties");
  // The loader resolves the core name on any instance; a 1.0 app may not call it.
  Load(*data, d.GetPhysicalDeviceFeatures2, "vkGetPhysicalDeviceFeatures2");
  Load(*data, d.GetPhysicalDeviceFeatures2KHR, "vkGetPhysicalDeviceFeatures2KHR");
  if (data->apiVersion >= VK_API_VERSION_1_1) {
    Load(*data, d.GetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2");
    d.LayerFeatures2 = d.GetPhysicalDeviceFeatures2;
  } else if (properties2Extension) {
    Load(*data, d.GetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2KHR");
    d.LayerFeatures2 = d.GetPhysicalDeviceFeatures2KHR;
  }
  Load(*data, d.GetPhysicalDeviceCooperativeMatrixPropertiesKHR, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
  Load(*data, d.CreateDebugUtilsMessengerEXT, "vkCreateDebugUtilsMessengerEXT");
  Load(*data, d.DestroyDebugUtilsMessengerEXT, "vkDestroyDebugUtilsMessengerEXT");
  data->messengers.CreatingInstance(pCreateInfo->pNext);
  if (nextGetPhysicalDeviceProcAddr) {
    // A driver that implements the EXT natively answers this; otherwise null.
    d.GetPhysicalDeviceCooperativeMatrixProperties2EXT = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixProperties2EXT>(
        nextGetPhysicalDeviceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT"));
  }

  SettingsResult settings = ReadSettings(pCreateInfo);
  data->settings = settings.settings;
  InstanceData* stored = Instances().Insert(KeyOf(instance), std::move(data));
  for (const std::string& warning : settings.warnings) Log(stored, LogLevel::Warning, warning);
  Log(stored, LogLevel::Info, "settings: " + Describe(stored->settings));
  stored->messengers.InstanceCreated();
}

}  // namespace

VKAPI_ATTR VkResult VKAPI_CALL CreateInstance(const VkInstanceCreateInfo* pCreateInfo,
                                              const VkAllocationCallbacks* pAllocator, VkInstance* pInstance) {
  VkLayerInstanceCreateInfo* link = FindLinkInfo(pCreateInfo);
  if (!link || !link->u.pLayerInfo) return VK_ERROR_INITIALIZATION_FAILED;
  PFN_vkGetInstanceProcAddr nextGetInstanceProcAddr = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  PFN_GetPhysicalDeviceProcAddr nextGetPhysicalDeviceProcAddr = link->u.pLayerInfo->pfnNextGetPhysicalDeviceProcAddr;
  auto nextCreateInstance =
      reinterpret_cast<PFN_vkCreateInstance>(nextGetInstanceProcAddr(VK_NULL_HANDLE, "vkCreateInstance"));
  if (!nextCreateInstance) return VK_ERROR_INITIALIZATION_FAILED;

  link->u.pLayerInfo = link->u.pLayerInfo->pNext;  // the next layer finds its own link
  const VkResult result = nextCreateInstance(pCreateInfo, pAllocator, pInstance);
  if (result != VK_SUCCESS) return result;

  // From here on the driver's instance exists: if the layer's setup throws, the app gets
  // an error and must not be left holding an instance nobody destroys (review dbb465e #7).
  auto destroy = reinterpret_cast<PFN_vkDestroyInstance>(nextGetInstanceProcAddr(*pInstance, "vkDestroyInstance"));
  try {
    FinishInstance(pCreateInfo, nextGetInstanceProcAddr, nextGetPhysicalDeviceProcAddr, *pInstance);
  } catch (...) {
    Instances().Erase(KeyOf(*pInstance));  // nothing when it was not stored yet
    if (destroy) destroy(*pInstance, pAllocator);
    *pInstance = VK_NULL_HANDLE;
    throw;  // the Guard's result: VK_ERROR_OUT_OF_HOST_MEMORY for bad_alloc
  }
  return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL DestroyInstance(VkInstance instance, const VkAllocationCallbacks* pAllocator) {
  if (instance == VK_NULL_HANDLE) return;
  InstanceData* data = GetInstanceData(instance);
  if (!data) return;
  PFN_vkDestroyInstance destroy = data->dispatch.DestroyInstance;
  Instances().Erase(KeyOf(instance));
  destroy(instance, pAllocator);
}

VKAPI_ATTR VkResult VKAPI_CALL EnumerateDeviceExtensionProperties(VkPhysicalDevice physicalDevice,
                                                                  const char* pLayerName, uint32_t* pPropertyCount,
                                                                  VkExtensionProperties* pProperties) {
  static const VkExtensionProperties kOwn = {VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME,
                                             VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_SPEC_VERSION};
  std::vector<VkExtensionProperties> list;
  if (pLayerName && std::strcmp(pLayerName, kLayerName) == 0) {
    list.push_back(kOwn);
  } else {
    InstanceData* instance = GetInstanceData(physicalDevice);
    if (!instance) return VK_ERROR_INITIALIZATION_FAILED;
    if (pLayerName)  // another layer's list: not ours to edit
      return instance->dispatch.EnumerateDeviceExtensionProperties(physicalDevice, pLayerName, pPropertyCount,
                                                                   pProperties);
    const PhysicalDeviceInfo info = GetPhysicalDeviceInfo(*instance, physicalDevice);
    if (!info.serve && info.nativeExt)  // nothing to add or take: the driver's answer as it is
      return instance->dispatch.EnumerateDeviceExtensionProperties(physicalDevice, nullptr, pPropertyCount,
                                                                   pProperties);
    VkResult driverError = VK_SUCCESS;
    list = DriverExtensions(*instance, physicalDevice, &driverError);
    if (driverError != VK_SUCCESS) return driverError;  // the driver's error, not a list with only ours (review 26)
    // The loader's copy of the manifest's entry where nothing below implements it: the
    // extension is this layer's to offer, where it serves, and nobody's elsewhere.
    if (!info.nativeExt)
      std::erase_if(list, [](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, kOwn.extensionName) == 0; });
    if (info.serve && !Contains(list, kOwn.extensionName)) list.push_back(kOwn);
  }
  if (!pProperties) {
    *pPropertyCount = static_cast<uint32_t>(list.size());
    return VK_SUCCESS;
  }
  const uint32_t copied = std::min<uint32_t>(*pPropertyCount, static_cast<uint32_t>(list.size()));
  std::copy_n(list.begin(), copied, pProperties);
  *pPropertyCount = copied;
  return copied < list.size() ? VK_INCOMPLETE : VK_SUCCESS;
}

namespace {


void GetFeatures2(PFN_vkGetPhysicalDeviceFeatures2 next, VkPhysicalDevice physicalDevice,
                  VkPhysicalDeviceFeatures2* pFeatures) {
  InstanceData* instance = GetInstanceData(physicalDevice);
  if (!instance || !next) return;
  if (!GetPhysicalDeviceInfo(*instance, physicalDevice).serve) {
    next(physicalDevice, pFeatures);
    return;
  }
  ScopedUnlink own(pFeatures, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT);
  next(physicalDevice, pFeatures);
  if (own.target())
    SupportedMaintenance1Features(
        instance->settings, *reinterpret_cast<VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT*>(own.target()));
}

}  // namespace

VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceFeatures2(VkPhysicalDevice physicalDevice,
                                                      VkPhysicalDeviceFeatures2* pFeatures) {
  InstanceData* instance = GetInstanceData(physicalDevice);
  if (instance) GetFeatures2(instance->dispatch.GetPhysicalDeviceFeatures2, physicalDevice, pFeatures);
}

VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceFeatures2KHR(VkPhysicalDevice physicalDevice,
                                                         VkPhysicalDeviceFeatures2* pFeatures) {
  InstanceData* instance = GetInstanceData(physicalDevice);
  if (!instance) return;
  auto next = instance->dispatch.GetPhysicalDeviceFeatures2KHR ? instance->dispatch.GetPhysicalDeviceFeatures2KHR
                                                               : instance->dispatch.GetPhysicalDeviceFeatures2;
  GetFeatures2(next, physicalDevice, pFeatures);
}

void SupportedMaintenance1Features(const Settings& settings,
                                   VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT& features) {
  // The portable lowering needs only what KHR cooperative matrices already need
  // (subgroup scope, Workgroup memory, SubgroupId), so every operation is supported
  // unless the user switched it off. Properties2 is mandatory with the extension.
  features.cooperativeMatrixProperties2 = VK_TRUE;
  features.cooperativeMatrixReductions = !settings.disableReductions;
  features.cooperativeMatrixConversions = !settings.disableConversions;
  features.cooperativeMatrixPerElementOperations = !settings.disablePerElementOperations;
  features.cooperativeMatrixGetCoordinate = !settings.disableGetCoordinate;
}

}  // namespace coopmat::layer
