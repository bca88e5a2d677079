// Device creation: strip the emulated extension and its feature struct from a copy
// of the create info, check the requested features, remember what was enabled.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <string>
#include <vector>

#include "cache_files.h"
#include "entry_points.h"
#include "layout_probe.h"
#include "layer_names.h"
#include "messages.h"
#include "pnext_chain.h"
#include "probe_features.h"
#include "state.h"

namespace coopmat::layer {

namespace {

VkLayerDeviceCreateInfo* FindLinkInfo(const VkDeviceCreateInfo* info) {
  for (auto* s = static_cast<const VkBaseInStructure*>(info->pNext); s; s = s->pNext) {
    if (s->sType != VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO) continue;
    auto* link = reinterpret_cast<VkLayerDeviceCreateInfo*>(const_cast<VkBaseInStructure*>(s));
    if (link->function == VK_LAYER_LINK_INFO) return link;
  }
  return nullptr;
}

// Name of the first requested feature the layer reported unsupported, or null.
const char* UnsupportedFeature(const Settings& settings,
                               const VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT& requested) {
  VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT supported{};
  SupportedMaintenance1Features(settings, supported);
  if (requested.cooperativeMatrixProperties2 && !supported.cooperativeMatrixProperties2) return "cooperativeMatrixProperties2";
  if (requested.cooperativeMatrixReductions && !supported.cooperativeMatrixReductions) return "cooperativeMatrixReductions";
  if (requested.cooperativeMatrixConversions && !supported.cooperativeMatrixConversions) return "cooperativeMatrixConversions";
  if (requested.cooperativeMatrixPerElementOperations && !supported.cooperativeMatrixPerElementOperations)
    return "cooperativeMatrixPerElementOperations";
  if (requested.cooperativeMatrixGetCoordinate && !supported.cooperativeMatrixGetCoordinate) return "cooperativeMatrixGetCoordinate";
  return nullptr;
}

PFN_vkSetDeviceLoaderData FindLoaderDataCallback(const VkDeviceCreateInfo* info) {
  for (auto* s = static_cast<const VkBaseInStructure*>(info->pNext); s; s = s->pNext) {
    if (s->sType != VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO) continue;
    auto* link = reinterpret_cast<const VkLayerDeviceCreateInfo*>(s);
    if (link->function == VK_LOADER_DATA_CALLBACK) return link->u.pfnSetDeviceLoaderData;
  }
  return nullptr;
}

// The first queue family the app asked for that can run compute, if any.
std::optional<uint32_t> ComputeQueueFamily(const InstanceData& instance, VkPhysicalDevice physicalDevice,
                                           const VkDeviceCreateInfo* info) {
  auto getFamilies = reinterpret_cast<PFN_vkGetPhysicalDeviceQueueFamilyProperties>(
      instance.dispatch.GetInstanceProcAddr(instance.instance, "vkGetPhysicalDeviceQueueFamilyProperties"));
  uint32_t count = 0;
  getFamilies(physicalDevice, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  getFamilies(physicalDevice, &count, families.data());
  for (uint32_t i = 0; i < info->queueCreateInfoCount; ++i) {
    const VkDeviceQueueCreateInfo& q = info->pQueueCreateInfos[i];
    if (q.flags == 0 && q.queueCount > 0 && q.queueFamilyIndex < count &&
        (families[q.queueFamilyIndex].queueFlags & VK_QUEUE_COMPUTE_BIT))
      return q.queueFamilyIndex;
  }
  return std::nullopt;
}

bool EnablesExtension(const VkDeviceCreateInfo* info, const char* name) {
  for (uint32_t i = 0; i < info->enabledExtensionCount; ++i) {
    if (std::strcmp(info->ppEnabledExtensionNames[i], name) == 0) return true;
  }
  return false;
}

// The options every module on this device is lowered with: the device's limits and
// the matrix types the driver accepts (a lowering may only declare those).
LowerOptions LowerOptionsFor(const InstanceData& instance, VkPhysicalDevice physicalDevice,
                             const PhysicalDeviceInfo& info, const VkDeviceCreateInfo* createInfo) {
  LowerOptions options;
  options.minSubgroupSize = info.minSubgroupSize;
  options.maxSharedMemoryBytes = info.maxComputeSharedMemorySize;
  options.maxTaskSharedMemoryBytes = info.maxTaskSharedMemorySize;
  options.maxMeshSharedMemoryBytes = info.maxMeshSharedMemorySize;
  options.maxTaskPayloadAndSharedMemoryBytes = info.maxTaskPayloadAndSharedMemorySize;
  options.maxMeshPayloadAndSharedMemoryBytes = info.maxMeshPayloadAndSharedMemorySize;
  auto addFrom = [&](const char* command, auto structType, auto entry) {
    using Entry = decltype(entry);
    using Query = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, Entry*);
    auto query = reinterpret_cast<Query>(instance.dispatch.GetInstanceProcAddr(instance.instance, command));
    uint32_t count = 0;
    if (!query || query(physicalDevice, &count, nullptr) != VK_SUCCESS) return;
    std::vector<Entry> list(count, Entry{structType});
    if (query(physicalDevice, &count, list.data()) < VK_SUCCESS) return;
    list.resize(count);
    for (const Entry& p : list) {
      if (p.scope != VK_SCOPE_SUBGROUP_KHR) continue;
      if constexpr (std::is_same_v<Entry, VkCooperativeMatrixPropertiesKHR>)
        options.AddMatrixProperties(p.MSize, p.NSize, p.KSize, p.AType, p.BType, p.CType, p.ResultType);
      else
        options.AddMatrixProperties(p.MGranularity, p.NGranularity, p.KGranularity, p.AType, p.BType, p.CType,
                                    p.ResultType);
    }
  };
  addFrom("vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR", VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR,
          VkCooperativeMatrixPropertiesKHR{});
  // With NV flexible dimensions enabled, the NV granularities describe every size.
  const auto* nv = reinterpret_cast<const VkPhysicalDeviceCooperativeMatrix2FeaturesNV*>(
      FindInChain(createInfo->pNext, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV));
  if (nv && nv->cooperativeMatrixFlexibleDimensions &&
      EnablesExtension(createInfo, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME)) {
    options.supportedMatrixTypes.clear();
    options.flexibleDimensions = true;
    addFrom("vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV",
            VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV,
            VkCooperativeMatrixFlexibleDimensionsPropertiesNV{});
    VkPhysicalDeviceCooperativeMatrix2PropertiesNV nvProperties{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &nvProperties};
    if (instance.dispatch.GetPhysicalDeviceProperties2)  // absent on a 1.0 instance without the KHR (review 27)
      instance.dispatch.GetPhysicalDeviceProperties2(physicalDevice, &properties);
    options.flexibleMaxDimension = nvProperties.cooperativeMatrixFlexibleDimensionsMaxDimension;
  }
  return options;
}

// What else a pipeline-time lowering depends on: the device and driver build (a
// disk entry must not reach another GPU or driver), the layer's build and options.
uint64_t OptionsFingerprint(const PhysicalDeviceInfo& device, const LowerOptions& options) {
  Hasher h;
  h.Add(std::string(BuildId()));  // the layer's and the lowering's sources: a rebuilt layer misses
  h.Add(std::span(device.deviceUUID)).Add(std::span(device.driverUUID)).Add(device.driverVersion);
  h.Add(device.vendorID).Add(device.deviceID).Add(device.deviceName);  // GPUs whose UUIDs are not filled in
  h.Add(options.minSubgroupSize).Add(options.maxSharedMemoryBytes).Add(options.maxTaskSharedMemoryBytes);
  h.Add(options.maxMeshSharedMemoryBytes).Add(options.maxTaskPayloadAndSharedMemoryBytes);
  h.Add(options.maxMeshPayloadAndSharedMemoryBytes).Add(options.flexibleDimensions).Add(options.flexibleMaxDimension);
  h.Add(options.registerMovesWithShuffles).Add(options.foldedShuffleLaneBits).Add(options.subgroupExtendedTypes);
  h.Add(options.sharedMemoryPool).Add(options.sharedMemoryGranule);
  h.Add(options.subgroupExecutionBarriers);
  for (const auto& [size, cost] : options.roundTripCost) h.Add(size).Add(cost);
  for (const SupportedMatrixType& t : options.supportedMatrixTypes) h.Add(t.componentType).Add(t.use).Add(t.rows).Add(t.cols);
  for (const LinearLayout& layout : options.layouts) h.Add(FormatLayout(layout));
  return h.Finish().low;
}

// What the device supports of the features EnableLayerFeatures may turn on.
SupportedFeatures QuerySupportedFeatures(const InstanceData& instance, VkPhysicalDevice physicalDevice,
                                         const PhysicalDeviceInfo& info, uint32_t apiVersion) {
  SupportedFeatures supported;
  if (apiVersion < VK_API_VERSION_1_2 || !instance.dispatch.GetPhysicalDeviceFeatures2) return supported;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &supported.vulkan11};
  supported.vulkan11.pNext = &supported.vulkan12;
  void** tail = &supported.vulkan12.pNext;
  if (apiVersion >= VK_API_VERSION_1_3) {
    *tail = &supported.vulkan13;
    tail = &supported.vulkan13.pNext;
  }
  if (info.hasKhrCoopmat) *tail = &supported.cooperativeMatrix;
  instance.dispatch.GetPhysicalDeviceFeatures2(physicalDevice, &features);
  return supported;
}

template <typename Fn> void Load(DeviceData& data, Fn& slot, const char* name) {
  slot = reinterpret_cast<Fn>(data.dispatch.GetDeviceProcAddr(data.device, name));
}

// The app enabled subgroupSizeControl and computeFullSubgroups (Vulkan 1.3 or
// VK_EXT_subgroup_size_control): what a required subgroup size in the probe needs.
bool SubgroupSizeControlEnabled(const VkDeviceCreateInfo* info) {
  if (auto* v13 = reinterpret_cast<const VkPhysicalDeviceVulkan13Features*>(
          FindInChain(info->pNext, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES)))
    return v13->subgroupSizeControl && v13->computeFullSubgroups;
  if (auto* control = reinterpret_cast<const VkPhysicalDeviceSubgroupSizeControlFeatures*>(
          FindInChain(info->pNext, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES)))
    return control->subgroupSizeControl && control->computeFullSubgroups;
  return false;
}

// Layouts for the register path: from the cache or the probe. Best effort: anything
// but a lost device falls back to the portable path.
VkResult DiscoverDeviceLayouts(DeviceData& data, VkPhysicalDevice physicalDevice, const VkDeviceCreateInfo* createInfo,
                               PFN_vkGetDeviceProcAddr nextGetDeviceProcAddr) {
  const InstanceData& instance = *data.instance;
  // The probe uses the app's queue before vkCreateDevice returns: nobody else can be
  // using it yet, and it is idle again when the app first sees it.
  const std::optional<uint32_t> family = ComputeQueueFamily(instance, physicalDevice, createInfo);
  // No probe whose result would be discarded (lowering=portable).
  if (instance.settings.portableOnly) return VK_SUCCESS;
  if (!instance.settings.layoutProbe) {
    data.layouts = UnprobedLayouts(data, physicalDevice);
    return VK_SUCCESS;
  }
  if (!family) return VK_SUCCESS;
  const ProbeAllowance allowed = AllowedProbe(*createInfo, VK_MAKE_API_VERSION(0, 1, data.vulkanMinor, 0));
  if (!allowed.any) {
    Log(&instance, LogLevel::Info, std::string("layout probe skipped: the app did not enable ") + allowed.missing);
    return VK_SUCCESS;
  }
  ProbeContext probe;
  probe.device = data.device;
  probe.physicalDevice = physicalDevice;
  probe.queueFamily = *family;
  probe.getDeviceProcAddr = nextGetDeviceProcAddr;
  probe.setDeviceLoaderData = FindLoaderDataCallback(createInfo);
  probe.float16Allowed = allowed.float16;
  probe.int8Allowed = allowed.int8;
  probe.bfloat16Allowed = allowed.bfloat16;
  probe.float8Allowed = allowed.float8;
  probe.fullSubgroupsFlag = allowed.fullSubgroupsFlag;
  probe.requireSubgroupSize = SubgroupSizeControlEnabled(createInfo);
  auto getQueue = reinterpret_cast<PFN_vkGetDeviceQueue>(nextGetDeviceProcAddr(data.device, "vkGetDeviceQueue"));
  if (!getQueue) return VK_SUCCESS;
  getQueue(data.device, *family, 0, &probe.queue);
  if (!probe.queue || (probe.setDeviceLoaderData && probe.setDeviceLoaderData(data.device, probe.queue) != VK_SUCCESS))
    return VK_SUCCESS;
  bool deviceLost = false;
  try {
    data.layouts = DiscoverLayouts(data, probe, &deviceLost);
  } catch (const std::exception& error) {
    Log(&instance, LogLevel::Warning, std::string("layout probe: ") + error.what() + "; using the portable path");
    data.layouts.clear();
  }
  return deviceLost ? VK_ERROR_DEVICE_LOST : VK_SUCCESS;
}

// The layouts the lowering got beyond the probed ones (NV flexible dimensions' shapes, from a
// recognised family's table), in the probe's "layout:" form: what coopmat-info and the
// self-test read, so that every layout the register path relies on is said.
void ReportFlexibleShapes(const DeviceData& data) {
  const std::optional<DriverFamily> family = RecognizedFamily(data);
  for (const LinearLayout& layout : data.lowerOptions.layouts)
    if (std::find(data.layouts.begin(), data.layouts.end(), layout) == data.layouts.end())
      Log(data.instance, LogLevel::Info,
          "layout: " + FormatLayout(layout) + "  # built-in " + (family ? ToString(*family) : "") +
              " table, a shape of NV flexible dimensions");
}

// Everything after the driver created the device: dispatch, options, layouts,
// registration. Throws only what CreateDevice turns into a destroyed device.
VkResult FinishDevice(InstanceData& instance, VkPhysicalDevice physicalDevice, const VkDeviceCreateInfo* pCreateInfo,
                      PFN_vkGetDeviceProcAddr nextGetDeviceProcAddr, VkDevice device, std::unique_ptr<DeviceData> data) {
  data->device = device;
  data->dispatch.GetDeviceProcAddr = nextGetDeviceProcAddr;
  DeviceDispatch& d = data->dispatch;
  Load(*data, d.DestroyDevice, "vkDestroyDevice");
  Load(*data, d.CreateShaderModule, "vkCreateShaderModule");
  Load(*data, d.CreateComputePipelines, "vkCreateComputePipelines");
  Load(*data, d.CreateGraphicsPipelines, "vkCreateGraphicsPipelines");
  Load(*data, d.CreateShadersEXT, "vkCreateShadersEXT");
  Load(*data, d.DestroyShaderModule, "vkDestroyShaderModule");
  Load(*data, d.CreateRayTracingPipelinesKHR, "vkCreateRayTracingPipelinesKHR");
  Load(*data, d.CreateRayTracingPipelinesNV, "vkCreateRayTracingPipelinesNV");
  Load(*data, d.CreateExecutionGraphPipelinesAMDX, "vkCreateExecutionGraphPipelinesAMDX");
  Load(*data, d.CreateDataGraphPipelinesARM, "vkCreateDataGraphPipelinesARM");
  Load(*data, d.CreatePipelineBinariesKHR, "vkCreatePipelineBinariesKHR");
  Load(*data, d.GetPipelineKeyKHR, "vkGetPipelineKeyKHR");
  Load(*data, d.GetShaderModuleCreateInfoIdentifierEXT, "vkGetShaderModuleCreateInfoIdentifierEXT");
  const uint32_t apiVersion = std::min(instance.apiVersion, data->physicalDevice.apiVersion);
  data->vulkanMinor = VK_API_VERSION_MINOR(apiVersion);
  if (data->emulating) {
    Log(&instance, LogLevel::Info, "emulating VK_EXT_cooperative_matrix_maintenance1 on this device");
    data->lowerOptions = LowerOptionsFor(instance, physicalDevice, data->physicalDevice, pCreateInfo);
    data->lowerOptions.subgroupExtendedTypes = data->subgroupExtendedTypes;
    if (VkResult r = DiscoverDeviceLayouts(*data, physicalDevice, pCreateInfo, nextGetDeviceProcAddr); r != VK_SUCCESS)
      return r;
    if (!instance.settings.portableOnly) {
      data->lowerOptions.layouts = LayoutsForLowering(*data, data->layouts);
      ReportFlexibleShapes(*data);
    }
    data->lowerOptions.withoutLayoutsBecause =
        instance.settings.portableOnly  ? "the layer's lowering=portable setting"
        : !data->layouts.empty()         ? "compute shaders on this device have no subgroup shuffles"
        : !instance.settings.layoutProbe ? "the layer's layout_probe=false setting"
                                         : "no register layouts on this device (the layout probe's messages say why)";
    data->lowerOptions.subgroupSizes = data->physicalDevice.PipelineSubgroupSizes();
    // Lavapipe makes a Subgroup-scope execution barrier a workgroup one (LowerOptions).
    data->lowerOptions.subgroupExecutionBarriers = data->physicalDevice.driverId != VK_DRIVER_ID_MESA_LLVMPIPE;
    if (const std::optional<DriverFamily> family = RecognizedFamily(*data))
      ApplyMeasuredCosts(*family, data->lowerOptions);
    if (instance.settings.registerMoves) {  // lowering=registers: the measured costs' choice overruled
      data->lowerOptions.registerMovesWithShuffles = true;
      data->lowerOptions.roundTripCost.clear();
    }
    data->optionsFingerprint = OptionsFingerprint(data->physicalDevice, data->lowerOptions);
    const InstanceData* owner = &instance;
    data->loweringCache = std::make_unique<LoweringCache>(
        instance.settings.shaderCache ? OpenCacheDirectory().Sub("lowered") : platform::TrustedFolder(),
        CacheLimits{.diskBytes = instance.settings.shaderCacheMaxSize},
        [owner](const std::string& message) { Log(owner, LogLevel::Warning, message); });
  }
  Devices().Insert(KeyOf(device), std::move(data));
  return VK_SUCCESS;
}

}  // namespace

VKAPI_ATTR VkResult VKAPI_CALL CreateDevice(VkPhysicalDevice physicalDevice, const VkDeviceCreateInfo* pCreateInfo,
                                            const VkAllocationCallbacks* pAllocator, VkDevice* pDevice) {
  InstanceData* instance = GetInstanceData(physicalDevice);
  VkLayerDeviceCreateInfo* link = FindLinkInfo(pCreateInfo);
  if (!instance || !link || !link->u.pLayerInfo) return VK_ERROR_INITIALIZATION_FAILED;
  PFN_vkGetInstanceProcAddr nextGetInstanceProcAddr = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  PFN_vkGetDeviceProcAddr nextGetDeviceProcAddr = link->u.pLayerInfo->pfnNextGetDeviceProcAddr;
  auto nextCreateDevice =
      reinterpret_cast<PFN_vkCreateDevice>(nextGetInstanceProcAddr(instance->instance, "vkCreateDevice"));
  if (!nextCreateDevice) return VK_ERROR_INITIALIZATION_FAILED;

  // Advance the loader's link first: a copied chain must carry the advanced link.
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;

  auto data = std::make_unique<DeviceData>();
  data->instance = instance;
  data->physicalDevice = GetPhysicalDeviceInfo(*instance, physicalDevice);
  data->emulating = data->physicalDevice.serve && EnablesExtension(pCreateInfo, VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME);
  // Whose implementation the app gets, said where it is not the layer's plain case: what
  // coopmat-selftest reads to run its cases natively too.
  if (data->physicalDevice.nativeExt)
    Log(instance, LogLevel::Info,
        data->emulating ? "the driver implements VK_EXT_cooperative_matrix_maintenance1 itself; force_enable: the layer "
                          "emulates it anyway"
                        : "the driver implements VK_EXT_cooperative_matrix_maintenance1 itself: the layer steps aside");

  // What goes down: the app's create info, or a copy without our name and struct,
  // with the features the layer needs turned on.
  VkDeviceCreateInfo downInfo = *pCreateInfo;
  std::vector<const char*> downExtensions;
  ChainCopy chainCopy;  // referenced by the chain until the driver has the device
  if (data->emulating) {
    if (const auto* requested = reinterpret_cast<const VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT*>(
            FindInChain(pCreateInfo->pNext, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT))) {
      if (const char* feature = UnsupportedFeature(instance->settings, *requested)) {
        Log(instance, LogLevel::Error, std::string("vkCreateDevice: feature ") + feature + " is not supported by the layer on this device");
        return VK_ERROR_FEATURE_NOT_PRESENT;
      }
      data->enabledFeatures = *requested;
      data->enabledFeatures.pNext = nullptr;
    }
    for (uint32_t i = 0; i < pCreateInfo->enabledExtensionCount; ++i) {
      if (std::strcmp(pCreateInfo->ppEnabledExtensionNames[i], VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME) != 0)
        downExtensions.push_back(pCreateInfo->ppEnabledExtensionNames[i]);
    }
    downInfo.enabledExtensionCount = static_cast<uint32_t>(downExtensions.size());
    downInfo.ppEnabledExtensionNames = downExtensions.data();
    VkStructureType unknown = VK_STRUCTURE_TYPE_MAX_ENUM;
    const bool copied = chainCopy.Copy(pCreateInfo->pNext,
                                       VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT,
                                       &downInfo.pNext, nullptr, &unknown);
    if (!copied) {
      // A struct from newer headers sits before ours: it cannot be copied (its size
      // is unknown) and the app's chain is never written, so the feature struct stays
      // in the chain. The driver does not support the extension, and the Vulkan spec
      // ("Valid Usage for Structure Pointer Chains") has every component skip
      // extending structures of extensions it does not support.
      downInfo.pNext = pCreateInfo->pNext;
      Log(instance, LogLevel::Info,
          "vkCreateDevice: structure sType " + std::to_string(static_cast<int64_t>(unknown)) +
              " is unknown to the layer and chained before the maintenance1 feature struct, which therefore stays "
              "in the chain the driver gets (drivers skip structures of extensions they do not support)");
    }
    // The features the probe and the lowering need, where the device has them: in a
    // copy of every node (the app's chain is never written), or none when a node is unknown.
    const void* editable = nullptr;
    const bool editing = copied && chainCopy.CopyEvery(downInfo.pNext, &editable, &unknown);
    if (editing) downInfo.pNext = editable;
    const uint32_t apiVersion = std::min(instance->apiVersion, data->physicalDevice.apiVersion);
    LayerFeatureRequest request;
    request.apiVersion = apiVersion;
    request.forProbe = instance->settings.layoutProbe && !instance->settings.portableOnly;
    request.cooperativeMatrixExtension = EnablesExtension(pCreateInfo, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    const LayerFeatures features =
        EnableLayerFeatures(editing ? &chainCopy : nullptr, &downInfo.pNext,
                            QuerySupportedFeatures(*instance, physicalDevice, data->physicalDevice, apiVersion), request);
    data->subgroupExtendedTypes = features.subgroupExtendedTypes;
    if (!features.added.empty()) {
      std::string names;
      for (const std::string& name : features.added) names += (names.empty() ? "" : ", ") + name;
      Log(instance, LogLevel::Info, "vkCreateDevice: the layer enabled " + names + " (supported, off in the app's create info)");
    } else if (copied && !editing) {
      Log(instance, LogLevel::Info,
          "vkCreateDevice: structure sType " + std::to_string(static_cast<int64_t>(unknown)) +
              " is unknown to the layer: it enables no feature of its own, and the layout probe uses the app's");
    }
    // The register path's subgroup shuffles are properties, checked in LayoutsForLowering.
  }

  const VkResult result = nextCreateDevice(physicalDevice, &downInfo, pAllocator, pDevice);
  if (result != VK_SUCCESS) return result;

  // From here on the driver's device exists: whatever fails or throws must destroy it.
  const VkDevice device = *pDevice;
  auto destroy = reinterpret_cast<PFN_vkDestroyDevice>(nextGetDeviceProcAddr(device, "vkDestroyDevice"));
  VkResult finished = VK_ERROR_INITIALIZATION_FAILED;
  try {
    // The create info that went down: what the device really has enabled.
    finished = FinishDevice(*instance, physicalDevice, &downInfo, nextGetDeviceProcAddr, device, std::move(data));
  } catch (const std::bad_alloc&) {
    finished = VK_ERROR_OUT_OF_HOST_MEMORY;
  } catch (...) {
    finished = VK_ERROR_INITIALIZATION_FAILED;
  }
  if (finished != VK_SUCCESS) {
    Log(instance, LogLevel::Error, std::string("vkCreateDevice: the layer could not set up the device (") +
                                       ResultName(finished) + "); destroying it");
    if (destroy) destroy(device, pAllocator);
    *pDevice = VK_NULL_HANDLE;
  }
  return finished;
}

VKAPI_ATTR void VKAPI_CALL DestroyDevice(VkDevice device, const VkAllocationCallbacks* pAllocator) {
  if (device == VK_NULL_HANDLE) return;
  DeviceData* data = GetDeviceData(device);
  if (!data) return;
  PFN_vkDestroyDevice destroy = data->dispatch.DestroyDevice;
  const uint64_t lowered = data->stageLowerings[static_cast<int>(CacheSource::Lowered)];
  const uint64_t fromMemory = data->stageLowerings[static_cast<int>(CacheSource::Memory)];
  const uint64_t fromDisk = data->stageLowerings[static_cast<int>(CacheSource::Disk)];
  if (lowered + fromMemory + fromDisk)
    Log(data->instance, LogLevel::Info,
        "pipeline-time lowering on this device: " + std::to_string(lowered + fromMemory + fromDisk) + " stages, " +
            std::to_string(lowered) + " lowered (" + std::to_string(data->stageLoweringMicroseconds.load()) + " us), " +
            std::to_string(fromMemory) + " from the memory cache, " + std::to_string(fromDisk) + " from the disk cache");
  Devices().Erase(KeyOf(device));
  destroy(device, pAllocator);
}

}  // namespace coopmat::layer
