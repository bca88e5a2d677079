// VK_LAYER_COOPMAT_TEST_virtual_device: a test-only layer that sits between the
// product layer and lavapipe and makes lavapipe look and compute like a target
// chosen by a profile file (profile.h), so that code written for 32- or 64-lane
// subgroups and another driver's matrix layouts runs on the CPU.
//   COOPMAT_VIRTUAL_PROFILE=<file>  the profile (required: without a readable one
//                                   vkCreateInstance fails, so no test passes unemulated)
//   COOPMAT_VIRTUAL_DEFAULT_SUBGROUP_SIZE=<n>  the size pipelines without a required one
//                                   run (one of the profile's; default: its default)
//   COOPMAT_VIRTUAL_LOG=<file>      append one line per compute pipeline rewritten or refused,
//                                   and a `fault` line per fault found while work ran
//                                   (read after the app's waits: fault_buffer.h)
//   COOPMAT_VIRTUAL_DUMP=<folder>   write each module it gives lavapipe there (<n>.spv, in order)
// It reports the profile's identity, subgroup sizes, KHR cooperative matrix
// configurations and shared-memory limit; hides extensions it does not emulate; and
// rewrites every compute pipeline's SPIR-V (rewrite.h) for the pipeline's subgroup
// size: its required size, else the default.
//
// Lavapipe's subgroups are the virtual ones: its subgroup size follows
// LP_NATIVE_VECTOR_WIDTH (256/512/1024/2048 bits give 8/16/32/64 lanes), which this
// layer sets to 32 x the profile's largest size at vkCreateInstance unless the
// environment already has it; vkCreateDevice fails, saying so, when lavapipe runs
// another size (it was loaded before, or the variable says otherwise).
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "fault_buffer.h"
#include "rewrite.h"

namespace {

using coopmat::virt::MatrixConfig;
using coopmat::virt::Profile;

struct Loaded {
  bool ok = false;
  Profile profile;
  std::string error;
};

const Loaded& TheProfile() {
  static const Loaded loaded = [] {
    Loaded l;
    coopmat::virt::ProfileResult r = coopmat::virt::ReadConfiguredProfile();
    l.ok = r.ok;
    l.profile = std::move(r.profile);
    l.error = r.error;
    return l;
  }();
  return loaded;
}

std::mutex gMutex;

void Log(const std::string& line) {
  std::fprintf(stderr, "virtual device: %s\n", line.c_str());
  if (const char* path = std::getenv("COOPMAT_VIRTUAL_LOG")) {
    std::lock_guard lock(gMutex);
    if (FILE* f = std::fopen(path, "a")) {
      std::fprintf(f, "%s\n", line.c_str());
      std::fclose(f);
    }
  }
}

struct InstanceData {
  PFN_vkGetInstanceProcAddr gipa = nullptr;
  VkInstance instance = VK_NULL_HANDLE;
};
struct DeviceData {
  PFN_vkGetDeviceProcAddr gdpa = nullptr;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t realSharedMemory = 0;  // lavapipe's own maxComputeSharedMemorySize
  uint32_t lavapipeSubgroupSize = 0;
  std::unordered_map<uint64_t, std::vector<uint32_t>> modules;  // handle -> the app's SPIR-V
  std::unique_ptr<coopmat::virt::FaultBuffer> faults;
};

std::unordered_map<void*, InstanceData> gInstances;  // by dispatch key
std::unordered_map<void*, DeviceData> gDevices;

void* Key(const void* handle) { return *static_cast<void* const*>(handle); }

InstanceData InstanceOf(const void* handle) {
  std::lock_guard lock(gMutex);
  return gInstances[Key(handle)];
}
template <typename Fn> Fn Next(const void* handle, const char* name) {
  InstanceData d = InstanceOf(handle);
  return reinterpret_cast<Fn>(d.gipa(d.instance, name));
}
DeviceData& DeviceOf(VkDevice device) {
  std::lock_guard lock(gMutex);
  return gDevices[Key(device)];
}
template <typename Fn> Fn NextDevice(VkDevice device, const char* name) {
  return reinterpret_cast<Fn>(DeviceOf(device).gdpa(device, name));
}

// Extensions the virtual device does not emulate: an app must not find them.
bool IsHidden(const char* name) {
  for (const char* hidden : {VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME,
                             VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME, VK_EXT_SHADER_OBJECT_EXTENSION_NAME,
                             VK_EXT_SHADER_MODULE_IDENTIFIER_EXTENSION_NAME, VK_KHR_PIPELINE_BINARY_EXTENSION_NAME,
                             VK_KHR_SHADER_SUBGROUP_ROTATE_EXTENSION_NAME, VK_KHR_SHADER_QUAD_CONTROL_EXTENSION_NAME})
    if (std::strcmp(name, hidden) == 0) return true;
  return false;
}

void CopyName(char* out, size_t size, const std::string& text) {
  std::memset(out, 0, size);
  std::memcpy(out, text.data(), std::min(size - 1, text.size()));
}

// The component types the rewrite emulates (rewrite_encoded.cpp) where the profile lists
// them: lavapipe has neither extension, so both are reported and kept from it.
bool ListsBfloat16() { return TheProfile().profile.ListsComponentType(VK_COMPONENT_TYPE_BFLOAT16_KHR); }
bool ListsFloat8() {
  const Profile& p = TheProfile().profile;
  return p.ListsComponentType(VK_COMPONENT_TYPE_FLOAT8_E4M3_EXT) || p.ListsComponentType(VK_COMPONENT_TYPE_FLOAT8_E5M2_EXT);
}
bool Flexible() { return TheProfile().profile.flexibleMaxDimension > 0; }
std::vector<VkExtensionProperties> EmulatedExtensions() {
  std::vector<VkExtensionProperties> list;
  auto add = [&](const char* name, uint32_t version) {
    VkExtensionProperties e{};
    CopyName(e.extensionName, sizeof(e.extensionName), name);
    e.specVersion = version;
    list.push_back(e);
  };
  if (ListsBfloat16()) add(VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME, VK_KHR_SHADER_BFLOAT16_SPEC_VERSION);
  if (ListsFloat8()) add(VK_EXT_SHADER_FLOAT8_EXTENSION_NAME, VK_EXT_SHADER_FLOAT8_SPEC_VERSION);
  if (Flexible()) add(VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME, VK_NV_COOPERATIVE_MATRIX_2_SPEC_VERSION);
  return list;
}
// VK_KHR_cooperative_matrix itself where the driver below has none (Debian 13's Mesa 25.0
// lavapipe: the Debian 13 package stage, tests/package): every matrix operation is
// rewritten away anyway, so the driver never needs it. A driver that has it keeps it.
bool ListsKhrCooperativeMatrix(const std::vector<VkExtensionProperties>& list) {
  return std::any_of(list.begin(), list.end(), [](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0;
  });
}
// The driver's own device extensions (empty when it fails to list them).
std::vector<VkExtensionProperties> DriverExtensions(VkPhysicalDevice pd) {
  auto next = Next<PFN_vkEnumerateDeviceExtensionProperties>(pd, "vkEnumerateDeviceExtensionProperties");
  uint32_t n = 0;
  if (next(pd, nullptr, &n, nullptr) != VK_SUCCESS) return {};
  std::vector<VkExtensionProperties> list(n);
  if (next(pd, nullptr, &n, list.data()) != VK_SUCCESS) return {};
  list.resize(n);
  return list;
}
bool DriverHasKhrCooperativeMatrix(VkPhysicalDevice pd) { return ListsKhrCooperativeMatrix(DriverExtensions(pd)); }

// VK_NV_cooperative_matrix2 only as its flexible dimensions (profile.h): shapes are
// layouts of the profile, which the rewrite lays out like any other; none of the
// extension's operations. Lavapipe's own is never used.
bool IsEmulated(const char* name) {
  return std::strcmp(name, VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME) == 0 || std::strcmp(name, VK_EXT_SHADER_FLOAT8_EXTENSION_NAME) == 0 ||
         std::strcmp(name, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME) == 0;
}

// The subgroup operations the virtual device models (lavapipe's own, confined to a
// segment at a smaller size of a two-size profile: rewrite_subgroup.cpp).
constexpr VkSubgroupFeatureFlags kEmulatedOperations = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_VOTE_BIT |
                                                       VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_BALLOT_BIT |
                                                       VK_SUBGROUP_FEATURE_SHUFFLE_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT |
                                                       VK_SUBGROUP_FEATURE_CLUSTERED_BIT | VK_SUBGROUP_FEATURE_QUAD_BIT;

void PatchCore(VkPhysicalDeviceProperties& p) {
  const Profile& profile = TheProfile().profile;
  p.vendorID = profile.vendorId;
  p.deviceID = profile.deviceId;
  p.deviceType = static_cast<VkPhysicalDeviceType>(profile.deviceType);
  p.driverVersion = profile.driverVersion;
  CopyName(p.deviceName, sizeof(p.deviceName), profile.deviceName);
  p.limits.maxComputeSharedMemorySize = profile.sharedMemoryBytes;
}

void PatchChain(void* chain, uint32_t maxInvocations) {
  const Profile& profile = TheProfile().profile;
  const uint32_t smallest = profile.subgroupSizes.front(), largest = profile.subgroupSizes.back();
  for (auto* s = static_cast<VkBaseOutStructure*>(chain); s; s = s->pNext) {
    switch (s->sType) {
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES: {
        auto* p = reinterpret_cast<VkPhysicalDeviceSubgroupProperties*>(s);
        p->subgroupSize = profile.defaultSubgroupSize;
        p->supportedOperations &= kEmulatedOperations;
        p->quadOperationsInAllStages = VK_FALSE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES: {
        auto* p = reinterpret_cast<VkPhysicalDeviceVulkan11Properties*>(s);
        p->subgroupSize = profile.defaultSubgroupSize;
        p->subgroupSupportedOperations &= kEmulatedOperations;
        p->subgroupQuadOperationsInAllStages = VK_FALSE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES: {
        auto* p = reinterpret_cast<VkPhysicalDeviceVulkan12Properties*>(s);
        p->driverID = static_cast<VkDriverId>(profile.driverId);
        CopyName(p->driverName, sizeof(p->driverName), profile.driverName);
        CopyName(p->driverInfo, sizeof(p->driverInfo), profile.driverInfo);
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES: {
        auto* p = reinterpret_cast<VkPhysicalDeviceDriverProperties*>(s);
        p->driverID = static_cast<VkDriverId>(profile.driverId);
        CopyName(p->driverName, sizeof(p->driverName), profile.driverName);
        CopyName(p->driverInfo, sizeof(p->driverInfo), profile.driverInfo);
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES: {
        auto* p = reinterpret_cast<VkPhysicalDeviceVulkan13Properties*>(s);
        p->minSubgroupSize = smallest;
        p->maxSubgroupSize = largest;
        p->maxComputeWorkgroupSubgroups = maxInvocations / smallest;
        p->requiredSubgroupSizeStages = VK_SHADER_STAGE_COMPUTE_BIT;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES: {
        auto* p = reinterpret_cast<VkPhysicalDeviceSubgroupSizeControlProperties*>(s);
        p->minSubgroupSize = smallest;
        p->maxSubgroupSize = largest;
        p->maxComputeWorkgroupSubgroups = maxInvocations / smallest;
        p->requiredSubgroupSizeStages = VK_SHADER_STAGE_COMPUTE_BIT;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV: {
        auto* p = reinterpret_cast<VkPhysicalDeviceCooperativeMatrix2PropertiesNV*>(s);
        p->cooperativeMatrixWorkgroupScopeMaxWorkgroupSize = 0;
        p->cooperativeMatrixFlexibleDimensionsMaxDimension = profile.flexibleMaxDimension;
        p->cooperativeMatrixWorkgroupScopeReservedSharedMemory = 0;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR:
        reinterpret_cast<VkPhysicalDeviceCooperativeMatrixPropertiesKHR*>(s)->cooperativeMatrixSupportedStages =
            VK_SHADER_STAGE_COMPUTE_BIT;
        break;
      default: break;
    }
  }
}

VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceProperties(VkPhysicalDevice pd, VkPhysicalDeviceProperties* p) {
  Next<PFN_vkGetPhysicalDeviceProperties>(pd, "vkGetPhysicalDeviceProperties")(pd, p);
  PatchCore(*p);
}

VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceProperties2(VkPhysicalDevice pd, VkPhysicalDeviceProperties2* p) {
  auto next = Next<PFN_vkGetPhysicalDeviceProperties2>(pd, "vkGetPhysicalDeviceProperties2");
  if (!next) next = Next<PFN_vkGetPhysicalDeviceProperties2>(pd, "vkGetPhysicalDeviceProperties2KHR");
  next(pd, p);
  const uint32_t maxInvocations = p->properties.limits.maxComputeWorkGroupInvocations;
  PatchCore(p->properties);
  PatchChain(p->pNext, maxInvocations);
}

// The emulated types' features, where the profile lists them (lavapipe leaves them false).
VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceFeatures2(VkPhysicalDevice pd, VkPhysicalDeviceFeatures2* f) {
  auto next = Next<PFN_vkGetPhysicalDeviceFeatures2>(pd, "vkGetPhysicalDeviceFeatures2");
  if (!next) next = Next<PFN_vkGetPhysicalDeviceFeatures2>(pd, "vkGetPhysicalDeviceFeatures2KHR");
  next(pd, f);
  const bool khrEmulated = !DriverHasKhrCooperativeMatrix(pd);
  for (auto* s = static_cast<VkBaseOutStructure*>(f->pNext); s; s = s->pNext) {
    if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR && khrEmulated) {
      auto* khr = reinterpret_cast<VkPhysicalDeviceCooperativeMatrixFeaturesKHR*>(s);
      khr->cooperativeMatrix = VK_TRUE;
      khr->cooperativeMatrixRobustBufferAccess = VK_FALSE;
    }
    if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR) {
      auto* bf16 = reinterpret_cast<VkPhysicalDeviceShaderBfloat16FeaturesKHR*>(s);
      bf16->shaderBFloat16Type = bf16->shaderBFloat16CooperativeMatrix = ListsBfloat16() ? VK_TRUE : VK_FALSE;
      bf16->shaderBFloat16DotProduct = VK_FALSE;  // OpDot on bfloat16 is not emulated
    }
    if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV) {
      auto* nv = reinterpret_cast<VkPhysicalDeviceCooperativeMatrix2FeaturesNV*>(s);
      VkBaseOutStructure* keep = s->pNext;
      *nv = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
      nv->pNext = keep;
      nv->cooperativeMatrixFlexibleDimensions = Flexible() ? VK_TRUE : VK_FALSE;
    }
    if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT8_FEATURES_EXT) {
      auto* fp8 = reinterpret_cast<VkPhysicalDeviceShaderFloat8FeaturesEXT*>(s);
      fp8->shaderFloat8 = fp8->shaderFloat8CooperativeMatrix = ListsFloat8() ? VK_TRUE : VK_FALSE;
    }
  }
}

// The two-call enumeration of the profile's matrix configurations as KHR properties
// or NV flexible ones (empty unless `listed`); `sizes` fills the struct's own fields.
template <typename Props>
VkResult ListMatrices(bool listed, uint32_t* count, Props* props, VkStructureType type, void (*sizes)(Props&, const MatrixConfig&)) {
  const auto& matrices = TheProfile().profile.matrices;
  const size_t total = listed ? matrices.size() : 0;
  if (!props) {
    *count = static_cast<uint32_t>(total);
    return VK_SUCCESS;
  }
  const uint32_t n = std::min<uint32_t>(*count, static_cast<uint32_t>(total));
  for (uint32_t i = 0; i < n; ++i) {
    const MatrixConfig& m = matrices[i];
    Props& p = props[i];
    void* keep = p.pNext;
    p = {};
    p.sType = type;
    p.pNext = keep;
    sizes(p, m);
    p.AType = static_cast<VkComponentTypeKHR>(m.aType);
    p.BType = static_cast<VkComponentTypeKHR>(m.bType);
    p.CType = static_cast<VkComponentTypeKHR>(m.cType);
    p.ResultType = static_cast<VkComponentTypeKHR>(m.resultType);
    p.saturatingAccumulation = m.saturating;
    p.scope = VK_SCOPE_SUBGROUP_KHR;
  }
  *count = n;
  return n < total ? VK_INCOMPLETE : VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL GetCooperativeMatrixProperties(VkPhysicalDevice, uint32_t* count,
                                                              VkCooperativeMatrixPropertiesKHR* props) {
  return ListMatrices<VkCooperativeMatrixPropertiesKHR>(
      true, count, props, VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR,
      [](VkCooperativeMatrixPropertiesKHR& p, const MatrixConfig& m) {
        p.MSize = m.m;
        p.NSize = m.n;
        p.KSize = m.k;
      });
}

// One flexible configuration per listed one, its M, N, K the granularity (profile.h).
VKAPI_ATTR VkResult VKAPI_CALL GetFlexibleDimensionsProperties(VkPhysicalDevice, uint32_t* count,
                                                               VkCooperativeMatrixFlexibleDimensionsPropertiesNV* props) {
  return ListMatrices<VkCooperativeMatrixFlexibleDimensionsPropertiesNV>(
      Flexible(), count, props, VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV,
      [](VkCooperativeMatrixFlexibleDimensionsPropertiesNV& p, const MatrixConfig& m) {
        p.MGranularity = m.m;
        p.NGranularity = m.n;
        p.KGranularity = m.k;
      });
}

VKAPI_ATTR VkResult VKAPI_CALL EnumerateDeviceExtensionProperties(VkPhysicalDevice pd, const char* layer, uint32_t* count,
                                                                  VkExtensionProperties* props) {
  auto next = Next<PFN_vkEnumerateDeviceExtensionProperties>(pd, "vkEnumerateDeviceExtensionProperties");
  if (layer) return next(pd, layer, count, props);
  uint32_t n = 0;
  if (VkResult r = next(pd, nullptr, &n, nullptr); r != VK_SUCCESS) return r;
  std::vector<VkExtensionProperties> list(n);
  next(pd, nullptr, &n, list.data());
  list.resize(n);
  const bool khrEmulated = !ListsKhrCooperativeMatrix(list);
  std::erase_if(list, [](const VkExtensionProperties& e) { return IsHidden(e.extensionName) || IsEmulated(e.extensionName); });
  for (const VkExtensionProperties& e : EmulatedExtensions()) list.push_back(e);
  if (khrEmulated) list.push_back({VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME, VK_KHR_COOPERATIVE_MATRIX_SPEC_VERSION});
  if (!props) {
    *count = static_cast<uint32_t>(list.size());
    return VK_SUCCESS;
  }
  const uint32_t copied = std::min<uint32_t>(*count, static_cast<uint32_t>(list.size()));
  std::copy_n(list.begin(), copied, props);
  *count = copied;
  return copied < list.size() ? VK_INCOMPLETE : VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL CreateInstance(const VkInstanceCreateInfo* info, const VkAllocationCallbacks* alloc, VkInstance* out) {
  if (!TheProfile().ok) {
    Log("no profile: " + TheProfile().error);
    return VK_ERROR_INITIALIZATION_FAILED;
  }
  // Before lavapipe is loaded (or, loaded already, checked at vkCreateDevice).
  setenv("LP_NATIVE_VECTOR_WIDTH", std::to_string(32 * TheProfile().profile.LavapipeSubgroupSize()).c_str(), 0);
  auto* link = static_cast<VkLayerInstanceCreateInfo*>(const_cast<void*>(info->pNext));
  while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO && link->function == VK_LAYER_LINK_INFO))
    link = static_cast<VkLayerInstanceCreateInfo*>(const_cast<void*>(link->pNext));
  if (!link) return VK_ERROR_INITIALIZATION_FAILED;
  PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;
  auto create = reinterpret_cast<PFN_vkCreateInstance>(gipa(VK_NULL_HANDLE, "vkCreateInstance"));
  const VkResult r = create(info, alloc, out);
  if (r == VK_SUCCESS) {
    std::lock_guard lock(gMutex);
    gInstances[Key(*out)] = {gipa, *out};
  }
  return r;
}

// Unlinks the nodes of `types` from a chain for one call and puts them back after.
class ChainFilter {
 public:
  ChainFilter(const void** head, std::initializer_list<VkStructureType> types) {
    auto** link = reinterpret_cast<VkBaseInStructure**>(const_cast<void**>(head));
    while (*link) {
      VkBaseInStructure* node = *link;
      if (std::find(types.begin(), types.end(), node->sType) != types.end()) {
        removed_.push_back({link, node});
        *link = const_cast<VkBaseInStructure*>(node->pNext);
      } else {
        link = const_cast<VkBaseInStructure**>(&node->pNext);
      }
    }
  }
  ~ChainFilter() {
    for (auto it = removed_.rbegin(); it != removed_.rend(); ++it) *it->first = it->second;
  }
  ChainFilter(const ChainFilter&) = delete;
  ChainFilter& operator=(const ChainFilter&) = delete;

 private:
  std::vector<std::pair<VkBaseInStructure**, VkBaseInStructure*>> removed_;
};

// The driver's vkDestroyDevice, for a device this layer created but refuses.
PFN_vkDestroyDevice NextDeviceOf(VkDevice device, PFN_vkGetDeviceProcAddr gdpa) {
  return reinterpret_cast<PFN_vkDestroyDevice>(gdpa(device, "vkDestroyDevice"));
}

VKAPI_ATTR VkResult VKAPI_CALL CreateDevice(VkPhysicalDevice pd, const VkDeviceCreateInfo* info, const VkAllocationCallbacks* alloc,
                                            VkDevice* out) {
  auto* link = static_cast<VkLayerDeviceCreateInfo*>(const_cast<void*>(info->pNext));
  while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO && link->function == VK_LAYER_LINK_INFO))
    link = static_cast<VkLayerDeviceCreateInfo*>(const_cast<void*>(link->pNext));
  if (!link) return VK_ERROR_INITIALIZATION_FAILED;
  PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  PFN_vkGetDeviceProcAddr gdpa = link->u.pLayerInfo->pfnNextGetDeviceProcAddr;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;
  auto create = reinterpret_cast<PFN_vkCreateDevice>(gipa(InstanceOf(pd).instance, "vkCreateDevice"));
  // Lavapipe gets none of the emulated extensions: their names and feature structs stay here.
  VkDeviceCreateInfo forLavapipe = *info;
  std::vector<const char*> extensions;
  const bool khrEmulated = !DriverHasKhrCooperativeMatrix(pd);
  for (uint32_t i = 0; i < info->enabledExtensionCount; ++i) {
    const char* name = info->ppEnabledExtensionNames[i];
    if (IsEmulated(name) || (khrEmulated && std::strcmp(name, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0)) continue;
    extensions.push_back(name);
  }
  forLavapipe.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  forLavapipe.ppEnabledExtensionNames = extensions.data();
  ChainFilter filter(&forLavapipe.pNext, {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR,
                                          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT8_FEATURES_EXT,
                                          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV,
                                          khrEmulated ? VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR
                                                      : VK_STRUCTURE_TYPE_MAX_ENUM /* no struct */});
  VkResult r;
  {
    coopmat::virt::BufferDeviceAddressEnabled addresses(forLavapipe);  // for the fault buffer
    r = create(pd, &forLavapipe, alloc, out);
  }
  if (r != VK_SUCCESS) return r;
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 real{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &subgroup};
  Next<PFN_vkGetPhysicalDeviceProperties2>(pd, "vkGetPhysicalDeviceProperties2")(pd, &real);
  const uint32_t wanted = TheProfile().profile.LavapipeSubgroupSize();
  if (subgroup.subgroupSize != wanted) {
    Log("lavapipe runs subgroups of " + std::to_string(subgroup.subgroupSize) + ", profile " + TheProfile().profile.name +
        " needs " + std::to_string(wanted) + ": set LP_NATIVE_VECTOR_WIDTH=" + std::to_string(32 * wanted) +
        " before the process loads lavapipe");
    NextDeviceOf(*out, gdpa)(*out, alloc);
    *out = VK_NULL_HANDLE;
    return VK_ERROR_INITIALIZATION_FAILED;
  }
  VkPhysicalDeviceMemoryProperties memory{};
  Next<PFN_vkGetPhysicalDeviceMemoryProperties>(pd, "vkGetPhysicalDeviceMemoryProperties")(pd, &memory);
  auto faults = std::make_unique<coopmat::virt::FaultBuffer>(*out, gdpa, memory);
  // Without it a fault would only poison results: the lanes fail on this line.
  if (!faults->Ok()) Log("fault: no fault buffer (" + faults->Error() + "): faults are not reported");
  std::lock_guard lock(gMutex);
  DeviceData& d = gDevices[Key(*out)];
  d.gdpa = gdpa;
  d.device = *out;
  d.realSharedMemory = real.properties.limits.maxComputeSharedMemorySize;
  d.lavapipeSubgroupSize = subgroup.subgroupSize;
  d.faults = std::move(faults);
  return r;
}

// Logs the faults the device's work recorded since the last look (after the app's waits:
// what they waited for has written its records).
void ReportFaults(const void* deviceOrQueue) {
  std::vector<std::string> lines;
  {
    std::lock_guard lock(gMutex);
    auto it = gDevices.find(Key(deviceOrQueue));
    if (it == gDevices.end() || !it->second.faults) return;
    lines = it->second.faults->TakeNewFaults();
  }
  for (const std::string& line : lines) Log(line);
}

VKAPI_ATTR void VKAPI_CALL DestroyDevice(VkDevice device, const VkAllocationCallbacks* alloc) {
  auto destroy = NextDevice<PFN_vkDestroyDevice>(device, "vkDestroyDevice");
  ReportFaults(device);
  std::unique_ptr<coopmat::virt::FaultBuffer> faults;  // destroyed before the device
  {
    std::lock_guard lock(gMutex);
    faults = std::move(gDevices[Key(device)].faults);
    gDevices.erase(Key(device));
  }
  faults.reset();
  destroy(device, alloc);
}

VKAPI_ATTR VkResult VKAPI_CALL WaitForFences(VkDevice device, uint32_t count, const VkFence* fences, VkBool32 all, uint64_t timeout) {
  const VkResult r = NextDevice<PFN_vkWaitForFences>(device, "vkWaitForFences")(device, count, fences, all, timeout);
  if (r == VK_SUCCESS) ReportFaults(device);
  return r;
}

VKAPI_ATTR VkResult VKAPI_CALL GetFenceStatus(VkDevice device, VkFence fence) {
  const VkResult r = NextDevice<PFN_vkGetFenceStatus>(device, "vkGetFenceStatus")(device, fence);
  if (r == VK_SUCCESS) ReportFaults(device);
  return r;
}

VKAPI_ATTR VkResult VKAPI_CALL QueueWaitIdle(VkQueue queue) {
  // A queue has its device's dispatch key.
  const VkDevice device = DeviceOf(reinterpret_cast<VkDevice>(queue)).device;
  const VkResult r = NextDevice<PFN_vkQueueWaitIdle>(device, "vkQueueWaitIdle")(queue);
  if (r == VK_SUCCESS) ReportFaults(queue);
  return r;
}

VKAPI_ATTR VkResult VKAPI_CALL DeviceWaitIdle(VkDevice device) {
  const VkResult r = NextDevice<PFN_vkDeviceWaitIdle>(device, "vkDeviceWaitIdle")(device);
  if (r == VK_SUCCESS) ReportFaults(device);
  return r;
}

VKAPI_ATTR VkResult VKAPI_CALL CreateShaderModule(VkDevice device, const VkShaderModuleCreateInfo* info,
                                                  const VkAllocationCallbacks* alloc, VkShaderModule* out) {
  const VkResult r = NextDevice<PFN_vkCreateShaderModule>(device, "vkCreateShaderModule")(device, info, alloc, out);
  if (r == VK_SUCCESS) {
    std::vector<uint32_t> words(info->pCode, info->pCode + info->codeSize / 4);
    std::lock_guard lock(gMutex);
    gDevices[Key(device)].modules[reinterpret_cast<uint64_t>(*out)] = std::move(words);
  }
  return r;
}

VKAPI_ATTR void VKAPI_CALL DestroyShaderModule(VkDevice device, VkShaderModule module, const VkAllocationCallbacks* alloc) {
  {
    std::lock_guard lock(gMutex);
    gDevices[Key(device)].modules.erase(reinterpret_cast<uint64_t>(module));
  }
  NextDevice<PFN_vkDestroyShaderModule>(device, "vkDestroyShaderModule")(device, module, alloc);
}

template <typename T> const T* Find(const void* chain, VkStructureType type) {
  for (auto* s = static_cast<const VkBaseInStructure*>(chain); s; s = s->pNext)
    if (s->sType == type) return reinterpret_cast<const T*>(s);
  return nullptr;
}


// COOPMAT_VIRTUAL_DUMP: the rewritten modules, numbered in the order they were made.
void Dump(const std::vector<uint32_t>& words) {
  const char* folder = std::getenv("COOPMAT_VIRTUAL_DUMP");
  if (!folder || !*folder) return;
  static std::atomic<uint32_t> next{0};
  const std::string path = std::string(folder) + "/" + std::to_string(next++) + ".spv";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(words.data(), 4, words.size(), f);
    std::fclose(f);
  }
}

VkResult CreateOne(VkDevice device, VkPipelineCache cache, const VkComputePipelineCreateInfo& original,
                   const VkAllocationCallbacks* alloc, VkPipeline* out) {
  *out = VK_NULL_HANDLE;
  const Profile& profile = TheProfile().profile;
  VkComputePipelineCreateInfo info = original;
  std::vector<uint32_t> words;
  uint32_t sharedLimit = 0, lavapipeSize = 0, number = 0;
  uint64_t faultAddress = 0;
  {
    std::lock_guard lock(gMutex);
    DeviceData& d = gDevices[Key(device)];
    sharedLimit = d.realSharedMemory;
    lavapipeSize = d.lavapipeSubgroupSize;
    if (d.faults && d.faults->Ok()) {
      faultAddress = d.faults->Address();
      number = d.faults->NewPipeline();
    }
    if (info.stage.module != VK_NULL_HANDLE) {
      auto it = d.modules.find(reinterpret_cast<uint64_t>(info.stage.module));
      if (it != d.modules.end()) words = it->second;
    }
  }
  if (words.empty())
    if (const auto* inline_ = Find<VkShaderModuleCreateInfo>(info.stage.pNext, VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO))
      words.assign(inline_->pCode, inline_->pCode + inline_->codeSize / 4);
  if (words.empty()) {
    Log("refused: the compute stage has no SPIR-V this layer saw");
    return VK_ERROR_UNKNOWN;
  }
  coopmat::virt::RewriteRequest request;
  request.subgroupSize = profile.defaultSubgroupSize;
  if (const auto* required = Find<VkPipelineShaderStageRequiredSubgroupSizeCreateInfo>(
          info.stage.pNext, VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO))
    request.subgroupSize = required->requiredSubgroupSize;
  if (const VkSpecializationInfo* s = info.stage.pSpecializationInfo) {
    coopmat::Specialization specialization;
    for (uint32_t i = 0; i < s->mapEntryCount; ++i) {
      const VkSpecializationMapEntry& e = s->pMapEntries[i];
      const auto* bytes = static_cast<const uint8_t*>(s->pData) + e.offset;
      specialization.values[e.constantID].assign(bytes, bytes + e.size);
    }
    request.specialization = std::move(specialization);
  }
  request.sharedMemoryLimit = sharedLimit;
  request.lavapipeSubgroupSize = lavapipeSize;
  request.faultAddress = faultAddress;
  request.pipeline = number;
  coopmat::virt::RewriteResult rewritten = coopmat::virt::RewriteForProfile(words, profile, request);
  const std::string where = "profile=" + profile.name + " subgroup=" + std::to_string(request.subgroupSize);
  if (faultAddress) {
    std::lock_guard lock(gMutex);
    gDevices[Key(device)].faults->Describe(number, where, std::move(rewritten.sites));
  }
  if (!rewritten.ok) {
    Log("refused " + where + ": " + rewritten.error);
    return VK_ERROR_UNKNOWN;
  }
  Dump(rewritten.words);
  VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  moduleInfo.codeSize = rewritten.words.size() * 4;
  moduleInfo.pCode = rewritten.words.data();
  VkShaderModule module = VK_NULL_HANDLE;
  if (VkResult r = NextDevice<PFN_vkCreateShaderModule>(device, "vkCreateShaderModule")(device, &moduleInfo, nullptr, &module);
      r != VK_SUCCESS)
    return r;
  info.stage.module = module;
  // Lavapipe runs its one size (the virtual one, or subgroups holding segments of it): no
  // size to require; full subgroups stay asked for where the virtual subgroups are lavapipe's.
  info.stage.flags &= ~VK_PIPELINE_SHADER_STAGE_CREATE_ALLOW_VARYING_SUBGROUP_SIZE_BIT;
  if (request.subgroupSize != lavapipeSize) info.stage.flags &= ~VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
  VkResult r;
  {
    ChainFilter filter(&info.stage.pNext, {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
                                           VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO});
    r = NextDevice<PFN_vkCreateComputePipelines>(device, "vkCreateComputePipelines")(device, cache, 1, &info, alloc, out);
  }
  NextDevice<PFN_vkDestroyShaderModule>(device, "vkDestroyShaderModule")(device, module, nullptr);
  Log((r == VK_SUCCESS ? "pipeline " : "lavapipe failed (" + std::to_string(r) + ") ") + where + " number=#" + std::to_string(number) +
      " matrix_ops=" + std::to_string(rewritten.matrixOps) + " subgroup_ops=" + std::to_string(rewritten.subgroupOps) +
      " lavapipe_subgroup_ops=" + std::to_string(rewritten.lavapipeSubgroupOps) +
      " scratch_bytes=" + std::to_string(rewritten.scratchBytes) +
      " past_length_accesses=" + std::to_string(rewritten.pastLengthAccesses) + " chunk_order=" + rewritten.chunkOrder);
  return r;
}

VKAPI_ATTR VkResult VKAPI_CALL CreateComputePipelines(VkDevice device, VkPipelineCache cache, uint32_t count,
                                                      const VkComputePipelineCreateInfo* infos, const VkAllocationCallbacks* alloc,
                                                      VkPipeline* pipelines) {
  VkResult result = VK_SUCCESS;
  for (uint32_t i = 0; i < count; ++i) {
    const VkResult r = CreateOne(device, cache, infos[i], alloc, &pipelines[i]);
    if (r != VK_SUCCESS && result == VK_SUCCESS) result = r;
  }
  return result;
}

PFN_vkVoidFunction DeviceFunction(const char* name) {
  struct { const char* name; PFN_vkVoidFunction fn; } table[] = {
      {"vkDestroyDevice", reinterpret_cast<PFN_vkVoidFunction>(&DestroyDevice)},
      {"vkCreateShaderModule", reinterpret_cast<PFN_vkVoidFunction>(&CreateShaderModule)},
      {"vkDestroyShaderModule", reinterpret_cast<PFN_vkVoidFunction>(&DestroyShaderModule)},
      {"vkCreateComputePipelines", reinterpret_cast<PFN_vkVoidFunction>(&CreateComputePipelines)},
      {"vkWaitForFences", reinterpret_cast<PFN_vkVoidFunction>(&WaitForFences)},
      {"vkGetFenceStatus", reinterpret_cast<PFN_vkVoidFunction>(&GetFenceStatus)},
      {"vkQueueWaitIdle", reinterpret_cast<PFN_vkVoidFunction>(&QueueWaitIdle)},
      {"vkDeviceWaitIdle", reinterpret_cast<PFN_vkVoidFunction>(&DeviceWaitIdle)},
  };
  for (auto& e : table)
    if (std::strcmp(e.name, name) == 0) return e.fn;
  return nullptr;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetDeviceProcAddr(VkDevice device, const char* name);

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetInstanceProcAddr(VkInstance instance, const char* name) {
  struct { const char* name; PFN_vkVoidFunction fn; } table[] = {
      {"vkGetInstanceProcAddr", reinterpret_cast<PFN_vkVoidFunction>(&GetInstanceProcAddr)},
      {"vkGetDeviceProcAddr", reinterpret_cast<PFN_vkVoidFunction>(&GetDeviceProcAddr)},
      {"vkCreateInstance", reinterpret_cast<PFN_vkVoidFunction>(&CreateInstance)},
      {"vkCreateDevice", reinterpret_cast<PFN_vkVoidFunction>(&CreateDevice)},
      {"vkEnumerateDeviceExtensionProperties", reinterpret_cast<PFN_vkVoidFunction>(&EnumerateDeviceExtensionProperties)},
      {"vkGetPhysicalDeviceProperties", reinterpret_cast<PFN_vkVoidFunction>(&GetPhysicalDeviceProperties)},
      {"vkGetPhysicalDeviceProperties2", reinterpret_cast<PFN_vkVoidFunction>(&GetPhysicalDeviceProperties2)},
      {"vkGetPhysicalDeviceProperties2KHR", reinterpret_cast<PFN_vkVoidFunction>(&GetPhysicalDeviceProperties2)},
      {"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR", reinterpret_cast<PFN_vkVoidFunction>(&GetCooperativeMatrixProperties)},
      {"vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV",
       reinterpret_cast<PFN_vkVoidFunction>(&GetFlexibleDimensionsProperties)},
      {"vkGetPhysicalDeviceFeatures2", reinterpret_cast<PFN_vkVoidFunction>(&GetPhysicalDeviceFeatures2)},
      {"vkGetPhysicalDeviceFeatures2KHR", reinterpret_cast<PFN_vkVoidFunction>(&GetPhysicalDeviceFeatures2)},
  };
  for (auto& e : table)
    if (std::strcmp(e.name, name) == 0) return e.fn;
  if (PFN_vkVoidFunction fn = DeviceFunction(name)) return fn;
  if (!instance) return nullptr;
  InstanceData d = InstanceOf(instance);
  return d.gipa(instance, name);
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetDeviceProcAddr(VkDevice device, const char* name) {
  if (std::strcmp(name, "vkGetDeviceProcAddr") == 0) return reinterpret_cast<PFN_vkVoidFunction>(&GetDeviceProcAddr);
  if (PFN_vkVoidFunction fn = DeviceFunction(name)) return fn;
  if (std::strcmp(name, "vkCreateShadersEXT") == 0) return nullptr;  // VK_EXT_shader_object is hidden
  return DeviceOf(device).gdpa(device, name);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface* v) {
  v->loaderLayerInterfaceVersion = 2;
  v->pfnGetInstanceProcAddr = &GetInstanceProcAddr;
  v->pfnGetDeviceProcAddr = &GetDeviceProcAddr;
  v->pfnGetPhysicalDeviceProcAddr = nullptr;
  return VK_SUCCESS;
}
