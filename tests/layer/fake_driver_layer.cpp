// A test-only layer that sits below VK_LAYER_coopmat_maintenance1 and plays the
// driver in ways lavapipe cannot: a driver that implements the extension natively,
// a driver whose KHR properties query fails, and a driver that records the SPIR-V it
// receives. Each behaviour is switched on per call by an environment variable:
//   FAKE_DRIVER_NATIVE_EXT=1   list VK_EXT_cooperative_matrix_maintenance1, fill its
//                              features (conversions deliberately FALSE), answer
//                              Properties2 with one 16x16x16 f16 entry
//   FAKE_DRIVER_KHR_FAILS=1    vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR fails
//   FAKE_DRIVER_RECORD=<file>  append (pCode address, word count, words) per module
//   FAKE_DRIVER_KHR_BF16=1     the KHR list has one more entry, a bf16 A/B one (a type
//                              whose probe needs VK_KHR_shader_bfloat16, as RADV GFX12 lists)
//   FAKE_DRIVER_KHR_ABSURD=1   the KHR list is one 65536x65536x65536 f32 entry (a buggy
//                              driver's shape, for the probe's size checks)
//   FAKE_DRIVER_BINARIES=1     list and emulate VK_KHR_pipeline_binary and
//                              VK_EXT_shader_module_identifier (lavapipe has neither):
//                              identifiers and pipeline keys hash the SPIR-V the fake
//                              receives (which FAKE_DRIVER_RECORD records too), and
//                              vkCreatePipelineBinariesKHR says VK_PIPELINE_BINARY_MISSING_KHR
//   FAKE_DRIVER_STAGES=1       list VK_NV_ray_tracing, VK_NV_device_generated_commands,
//                              VK_AMDX_shader_enqueue and VK_ARM_data_graph;
//                              vkCreateGraphicsPipelines, vkCreateRayTracingPipelines
//                              KHR/NV, vkCreateExecutionGraphPipelinesAMDX and
//                              vkCreateDataGraphPipelinesARM record the SPIR-V chained into
//                              every stage (and every NV shader group's stage), log the
//                              modules they name (FAKE_DRIVER_LOG) and create nothing
//                              (VK_ERROR_FEATURE_NOT_PRESENT)
//   FAKE_DRIVER_NO_PROPERTIES2=1  vkGetPhysicalDeviceProperties2(KHR) are not offered,
//                              as on a 1.0 instance without the KHR extension
//   FAKE_DRIVER_SUBGROUP_SIZES=8,16  report this subgroup size range with
//                              requiredSubgroupSizeStages including compute (a device
//                              whose pipelines run at several sizes, as RADV's wave32/64);
//                              a compute pipeline that requires a size other than the
//                              first (or a third value: the size lavapipe runs, 0 for
//                              none) cannot run on lavapipe and fails to compile
//                              (VK_ERROR_OUT_OF_DEVICE_MEMORY)
//   FAKE_DRIVER_VERSION=<n>    report this driverVersion (Mesa's VK_MAKE_VERSION encoding)
//   FAKE_DRIVER_SHARED_MODULES=1  one handle for modules of identical code while one
//                              lives (counted; Vulkan allows non-unique handles)
//   FAKE_DRIVER_LOG=<file>     append a line per vkCreateDevice with the subgroup and
//                              small-type features its create info enables, and per
//                              compute pipeline with its required subgroup size, whether
//                              it is a derivative (flags or flags2) and its base index
// and the faults and object accounting of fake_driver_faults.h.
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <unordered_map>
#include <vector>

#include "fake_driver_faults.h"

namespace {

bool Env(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "1") == 0;
}

// The device extensions this fake implements itself (and hides from lavapipe).
std::vector<const char*> FakeExtensions() {
  std::vector<const char*> names;
  if (Env("FAKE_DRIVER_NATIVE_EXT")) names.push_back(VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME);
  if (Env("FAKE_DRIVER_BINARIES")) {
    names.push_back(VK_KHR_PIPELINE_BINARY_EXTENSION_NAME);
    names.push_back(VK_EXT_SHADER_MODULE_IDENTIFIER_EXTENSION_NAME);
  }
  if (Env("FAKE_DRIVER_STAGES")) {
    names.push_back(VK_NV_RAY_TRACING_EXTENSION_NAME);
    names.push_back(VK_NV_DEVICE_GENERATED_COMMANDS_EXTENSION_NAME);
    names.push_back(VK_AMDX_SHADER_ENQUEUE_EXTENSION_NAME);
    names.push_back(VK_ARM_DATA_GRAPH_EXTENSION_NAME);
  }
  return names;
}

bool IsFakeExtension(const char* name) {
  for (const char* fake : {VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME, VK_KHR_PIPELINE_BINARY_EXTENSION_NAME,
                           VK_EXT_SHADER_MODULE_IDENTIFIER_EXTENSION_NAME, VK_NV_RAY_TRACING_EXTENSION_NAME,
                           VK_NV_DEVICE_GENERATED_COMMANDS_EXTENSION_NAME, VK_AMDX_SHADER_ENQUEUE_EXTENSION_NAME,
                           VK_ARM_DATA_GRAPH_EXTENSION_NAME})
    if (std::strcmp(name, fake) == 0) return true;
  return false;
}

struct Next {
  PFN_vkGetInstanceProcAddr gipa = nullptr;
  PFN_vkGetDeviceProcAddr gdpa = nullptr;
  VkInstance instance = VK_NULL_HANDLE;
};

std::mutex gMutex;
std::unordered_map<void*, Next> gInstances;  // by dispatch key
std::unordered_map<void*, Next> gDevices;

void* Key(void* handle) { return *static_cast<void**>(handle); }

Next InstanceNext(void* handle) {
  std::lock_guard lock(gMutex);
  return gInstances[Key(handle)];
}

template <typename Fn> Fn InstanceFn(void* handle, const char* name) {
  Next n = InstanceNext(handle);
  return reinterpret_cast<Fn>(n.gipa(n.instance, name));
}

VKAPI_ATTR VkResult VKAPI_CALL CreateInstance(const VkInstanceCreateInfo* info, const VkAllocationCallbacks* alloc,
                                              VkInstance* out) {
  auto* link = static_cast<VkLayerInstanceCreateInfo*>(const_cast<void*>(info->pNext));
  while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO && link->function == VK_LAYER_LINK_INFO))
    link = static_cast<VkLayerInstanceCreateInfo*>(const_cast<void*>(link->pNext));
  if (!link) return VK_ERROR_INITIALIZATION_FAILED;
  PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;
  auto create = reinterpret_cast<PFN_vkCreateInstance>(gipa(VK_NULL_HANDLE, "vkCreateInstance"));
  VkResult r = create(info, alloc, out);
  if (r == VK_SUCCESS) {
    std::lock_guard lock(gMutex);
    gInstances[Key(*out)] = {gipa, nullptr, *out};
  }
  return r;
}

VKAPI_ATTR VkResult VKAPI_CALL EnumerateDeviceExtensionProperties(VkPhysicalDevice pd, const char* layer,
                                                                  uint32_t* count, VkExtensionProperties* props) {
  auto next = InstanceFn<PFN_vkEnumerateDeviceExtensionProperties>(pd, "vkEnumerateDeviceExtensionProperties");
  if (!layer)
    if (const VkResult fault = FakeFault("EnumerateDeviceExtensionProperties"); fault != VK_SUCCESS) return fault;
  if (layer || FakeExtensions().empty()) return next(pd, layer, count, props);
  uint32_t n = 0;
  next(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> list(n);
  next(pd, nullptr, &n, list.data());
  list.resize(n);
  for (const char* name : FakeExtensions()) {
    VkExtensionProperties added{};
    std::strncpy(added.extensionName, name, VK_MAX_EXTENSION_NAME_SIZE - 1);
    added.specVersion = 1;
    list.push_back(added);
  }
  if (!props) {
    *count = static_cast<uint32_t>(list.size());
    return VK_SUCCESS;
  }
  const uint32_t copied = std::min<uint32_t>(*count, static_cast<uint32_t>(list.size()));
  std::memcpy(props, list.data(), copied * sizeof(VkExtensionProperties));
  *count = copied;
  return copied < list.size() ? VK_INCOMPLETE : VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceFeatures2(VkPhysicalDevice pd, VkPhysicalDeviceFeatures2* features) {
  InstanceFn<PFN_vkGetPhysicalDeviceFeatures2>(pd, "vkGetPhysicalDeviceFeatures2")(pd, features);
  if (!Env("FAKE_DRIVER_NATIVE_EXT")) return;
  for (auto* s = static_cast<VkBaseOutStructure*>(features->pNext); s; s = s->pNext) {
    if (s->sType != VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT) continue;
    auto* m1 = reinterpret_cast<VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT*>(s);
    m1->cooperativeMatrixProperties2 = VK_TRUE;
    m1->cooperativeMatrixReductions = VK_TRUE;
    m1->cooperativeMatrixConversions = VK_FALSE;  // the fingerprint of this fake
    m1->cooperativeMatrixPerElementOperations = VK_TRUE;
    m1->cooperativeMatrixGetCoordinate = VK_TRUE;
  }
}

struct SubgroupSizes {
  uint32_t first = 0, last = 0, runnable = 0;
};
// FAKE_DRIVER_SUBGROUP_SIZES as first,last[,runnable]: the size lavapipe runs is
// `first` unless a third value says otherwise (0: none). All 0 when unset.
SubgroupSizes FakeSubgroupSizes() {
  const char* v = std::getenv("FAKE_DRIVER_SUBGROUP_SIZES");
  unsigned first = 0, last = 0, runnable = 0;
  const int n = v ? std::sscanf(v, "%u,%u,%u", &first, &last, &runnable) : 0;
  if (n < 2) return {};
  return {first, last, n == 3 ? runnable : first};
}

void Log(const std::string& line) {
  if (const char* path = std::getenv("FAKE_DRIVER_LOG")) {
    std::lock_guard lock(gMutex);
    if (FILE* f = std::fopen(path, "a")) {
      std::fprintf(f, "%s\n", line.c_str());
      std::fclose(f);
    }
  }
}

bool PatchesProperties() { return FakeSubgroupSizes().first || std::getenv("FAKE_DRIVER_VERSION"); }

void PatchProperties(VkPhysicalDeviceProperties2* properties) {
  if (const char* version = std::getenv("FAKE_DRIVER_VERSION"))
    properties->properties.driverVersion = static_cast<uint32_t>(std::strtoul(version, nullptr, 0));
  const auto [first, last, runnable] = FakeSubgroupSizes();
  if (!first) return;
  for (auto* s = static_cast<VkBaseOutStructure*>(properties->pNext); s; s = s->pNext) {
    if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES) {
      auto* p = reinterpret_cast<VkPhysicalDeviceSubgroupSizeControlProperties*>(s);
      p->minSubgroupSize = first;
      p->maxSubgroupSize = last;
      p->requiredSubgroupSizeStages |= VK_SHADER_STAGE_COMPUTE_BIT;
    } else if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES) {
      auto* p = reinterpret_cast<VkPhysicalDeviceVulkan13Properties*>(s);
      p->minSubgroupSize = first;
      p->maxSubgroupSize = last;
      p->requiredSubgroupSizeStages |= VK_SHADER_STAGE_COMPUTE_BIT;
    }
  }
}

VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceProperties2(VkPhysicalDevice pd, VkPhysicalDeviceProperties2* properties) {
  InstanceFn<PFN_vkGetPhysicalDeviceProperties2>(pd, "vkGetPhysicalDeviceProperties2")(pd, properties);
  PatchProperties(properties);
}

// What a create info enables of the features the layer's probe needs.
std::string EnabledFeatureLine(const VkDeviceCreateInfo* info) {
  bool sizeControl = false, fullSubgroups = false, float16 = false, int8 = false, storage8 = false, storage16 = false;
  for (auto* s = static_cast<const VkBaseInStructure*>(info->pNext); s; s = s->pNext) {
    switch (s->sType) {
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES:
        storage16 |= reinterpret_cast<const VkPhysicalDeviceVulkan11Features*>(s)->storageBuffer16BitAccess;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
        auto* v = reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(s);
        float16 |= v->shaderFloat16;
        int8 |= v->shaderInt8;
        storage8 |= v->storageBuffer8BitAccess;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES: {
        auto* v = reinterpret_cast<const VkPhysicalDeviceVulkan13Features*>(s);
        sizeControl |= v->subgroupSizeControl;
        fullSubgroups |= v->computeFullSubgroups;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES: {
        auto* v = reinterpret_cast<const VkPhysicalDeviceSubgroupSizeControlFeatures*>(s);
        sizeControl |= v->subgroupSizeControl;
        fullSubgroups |= v->computeFullSubgroups;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES: {
        auto* v = reinterpret_cast<const VkPhysicalDeviceShaderFloat16Int8Features*>(s);
        float16 |= v->shaderFloat16;
        int8 |= v->shaderInt8;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES:
        storage8 |= reinterpret_cast<const VkPhysicalDevice8BitStorageFeatures*>(s)->storageBuffer8BitAccess;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES:
        storage16 |= reinterpret_cast<const VkPhysicalDevice16BitStorageFeatures*>(s)->storageBuffer16BitAccess;
        break;
      default: break;
    }
  }
  return "device subgroupSizeControl=" + std::to_string(sizeControl) + " computeFullSubgroups=" + std::to_string(fullSubgroups) +
         " shaderFloat16=" + std::to_string(float16) + " storageBuffer16BitAccess=" + std::to_string(storage16) +
         " shaderInt8=" + std::to_string(int8) + " storageBuffer8BitAccess=" + std::to_string(storage8);
}

VKAPI_ATTR VkResult VKAPI_CALL GetCoopmatPropertiesKHR(VkPhysicalDevice pd, uint32_t* count,
                                                       VkCooperativeMatrixPropertiesKHR* props) {
  if (Env("FAKE_DRIVER_KHR_FAILS")) return VK_ERROR_OUT_OF_HOST_MEMORY;
  if (Env("FAKE_DRIVER_KHR_HUGE") && !props) {
    *count = 0x7fffffff;
    return VK_SUCCESS;
  }
  if (Env("FAKE_DRIVER_KHR_ABSURD")) {
    if (!props) {
      *count = 1;
      return VK_SUCCESS;
    }
    if (*count < 1) return VK_INCOMPLETE;
    *count = 1;
    props[0].MSize = props[0].NSize = props[0].KSize = 65536;
    props[0].AType = props[0].BType = props[0].CType = props[0].ResultType = VK_COMPONENT_TYPE_FLOAT32_KHR;
    props[0].saturatingAccumulation = VK_FALSE;
    props[0].scope = VK_SCOPE_SUBGROUP_KHR;
    return VK_SUCCESS;
  }
  auto down = InstanceFn<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(pd, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
  if (Env("FAKE_DRIVER_KHR_BF16")) {  // the driver's list and one bf16 A/B entry (shaped as its first)
    uint32_t real = 0;
    if (const VkResult r = down(pd, &real, nullptr); r != VK_SUCCESS || real == 0) return r;
    std::vector<VkCooperativeMatrixPropertiesKHR> list(real, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
    if (const VkResult r = down(pd, &real, list.data()); r != VK_SUCCESS) return r;
    VkCooperativeMatrixPropertiesKHR bf16 = list[0];
    bf16.AType = bf16.BType = VK_COMPONENT_TYPE_BFLOAT16_KHR;
    bf16.CType = bf16.ResultType = VK_COMPONENT_TYPE_FLOAT32_KHR;
    list.push_back(bf16);
    if (!props) {
      *count = static_cast<uint32_t>(list.size());
      return VK_SUCCESS;
    }
    const uint32_t n = std::min(*count, static_cast<uint32_t>(list.size()));
    for (uint32_t i = 0; i < n; ++i) {
      void* next = props[i].pNext;
      props[i] = list[i];
      props[i].pNext = next;
    }
    *count = n;
    return n < list.size() ? VK_INCOMPLETE : VK_SUCCESS;
  }
  return down(pd, count, props);
}

VKAPI_ATTR VkResult VKAPI_CALL GetCoopmatProperties2EXT(VkPhysicalDevice, const VkPhysicalDeviceCooperativeMatrixInfo2EXT*,
                                                        uint32_t* count, VkCooperativeMatrixProperties2EXT* props) {
  if (!props) {
    *count = 1;
    return VK_SUCCESS;
  }
  if (*count < 1) return VK_INCOMPLETE;
  *count = 1;
  props[0].MGranularity = props[0].NGranularity = props[0].KGranularity = 16;
  props[0].AType = props[0].BType = props[0].CType = props[0].ResultType = VK_COMPONENT_TYPE_FLOAT16_KHR;
  return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL CreateDevice(VkPhysicalDevice pd, const VkDeviceCreateInfo* info,
                                            const VkAllocationCallbacks* alloc, VkDevice* out) {
  auto* link = static_cast<VkLayerDeviceCreateInfo*>(const_cast<void*>(info->pNext));
  while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO && link->function == VK_LAYER_LINK_INFO))
    link = static_cast<VkLayerDeviceCreateInfo*>(const_cast<void*>(link->pNext));
  if (!link) return VK_ERROR_INITIALIZATION_FAILED;
  PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  PFN_vkGetDeviceProcAddr gdpa = link->u.pLayerInfo->pfnNextGetDeviceProcAddr;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;
  // The extensions this fake implements are its to consume: lavapipe would refuse them.
  std::vector<const char*> names;
  for (uint32_t i = 0; i < info->enabledExtensionCount; ++i) {
    if (!IsFakeExtension(info->ppEnabledExtensionNames[i])) names.push_back(info->ppEnabledExtensionNames[i]);
  }
  Log(EnabledFeatureLine(info));
  VkDeviceCreateInfo copy = *info;
  copy.enabledExtensionCount = static_cast<uint32_t>(names.size());
  copy.ppEnabledExtensionNames = names.data();
  if (VkResult fault = FakeFault("CreateDevice"); fault != VK_SUCCESS) return fault;
  auto create = reinterpret_cast<PFN_vkCreateDevice>(gipa(InstanceNext(pd).instance, "vkCreateDevice"));
  VkResult r = create(pd, &copy, alloc, out);
  if (r == VK_SUCCESS) {
    std::lock_guard lock(gMutex);
    gDevices[Key(*out)] = {gipa, gdpa, VK_NULL_HANDLE};
  }
  if (r == VK_SUCCESS) FakeDeviceCreated(*out, gdpa);
  return r;
}

void Record(const uint32_t* code, size_t codeSize) {
  if (const char* path = std::getenv("FAKE_DRIVER_RECORD")) {
    std::lock_guard lock(gMutex);
    if (FILE* f = std::fopen(path, "ab")) {
      const uint64_t address = reinterpret_cast<uintptr_t>(code);
      const uint64_t words = codeSize / 4;
      std::fwrite(&address, sizeof(address), 1, f);
      std::fwrite(&words, sizeof(words), 1, f);
      std::fwrite(code, 4, words, f);
      std::fclose(f);
    }
  }
}

// The fake's identifier of SPIR-V: two FNV-1a hashes of the bytes.
std::vector<uint8_t> Identify(const uint32_t* code, size_t codeSize) {
  std::vector<uint8_t> id(16);
  for (int half = 0; half < 2; ++half) {
    uint64_t h = half ? 0x84222325cbf29ce4ull : 0xcbf29ce484222325ull;
    for (size_t i = 0; i < codeSize; ++i) h = (h ^ reinterpret_cast<const uint8_t*>(code)[i]) * 0x100000001b3ull;
    std::memcpy(id.data() + 8 * half, &h, 8);
  }
  return id;
}

std::unordered_map<uint64_t, std::vector<uint8_t>> gModuleIds;  // module handle -> identifier of its code

struct SharedModule {
  std::vector<uint8_t> code;  // its identifier
  uint32_t references = 0;
};
std::unordered_map<uint64_t, SharedModule> gSharedModules;  // FAKE_DRIVER_SHARED_MODULES

// The driver's module goes when the last of its creations is destroyed.
VKAPI_ATTR void VKAPI_CALL DestroySharedModule(VkDevice device, VkShaderModule module, const VkAllocationCallbacks* alloc) {
  {
    std::lock_guard lock(gMutex);
    auto it = gSharedModules.find(reinterpret_cast<uint64_t>(module));
    if (it != gSharedModules.end() && --it->second.references > 0) return;
    if (it != gSharedModules.end()) gSharedModules.erase(it);
  }
  reinterpret_cast<PFN_vkDestroyShaderModule>(FakeDeviceFunction("vkDestroyShaderModule"))(device, module, alloc);
}

VKAPI_ATTR VkResult VKAPI_CALL CreateShaderModule(VkDevice device, const VkShaderModuleCreateInfo* info,
                                                  const VkAllocationCallbacks* alloc, VkShaderModule* out) {
  Next n;
  {
    std::lock_guard lock(gMutex);
    n = gDevices[Key(device)];
  }
  Record(info->pCode, info->codeSize);
  if (VkResult fault = FakeFault("CreateShaderModule"); fault != VK_SUCCESS) return fault;
  const std::vector<uint8_t> code = Identify(info->pCode, info->codeSize);
  if (Env("FAKE_DRIVER_SHARED_MODULES")) {
    std::lock_guard lock(gMutex);
    for (auto& [handle, shared] : gSharedModules) {
      if (shared.code == code) {
        ++shared.references;
        *out = reinterpret_cast<VkShaderModule>(handle);
        return VK_SUCCESS;
      }
    }
  }
  auto next = reinterpret_cast<PFN_vkCreateShaderModule>(n.gdpa(device, "vkCreateShaderModule"));
  const VkResult r = next(device, info, alloc, out);
  if (r == VK_SUCCESS && Env("FAKE_DRIVER_SHARED_MODULES")) {
    std::lock_guard lock(gMutex);
    gSharedModules[reinterpret_cast<uint64_t>(*out)] = {code, 1};
  }
  if (r == VK_SUCCESS) {
    FakeCountObject(1);
    std::lock_guard lock(gMutex);
    gModuleIds[reinterpret_cast<uint64_t>(*out)] = code;
  }
  return r;
}

void WriteIdentifier(const std::vector<uint8_t>& id, VkShaderModuleIdentifierEXT* out) {
  out->identifierSize = static_cast<uint32_t>(id.size());
  std::memcpy(out->identifier, id.data(), id.size());
}

VKAPI_ATTR void VKAPI_CALL GetShaderModuleIdentifierEXT(VkDevice, VkShaderModule module, VkShaderModuleIdentifierEXT* out) {
  std::lock_guard lock(gMutex);
  WriteIdentifier(gModuleIds[reinterpret_cast<uint64_t>(module)], out);
}

VKAPI_ATTR void VKAPI_CALL GetShaderModuleCreateInfoIdentifierEXT(VkDevice, const VkShaderModuleCreateInfo* info,
                                                                  VkShaderModuleIdentifierEXT* out) {
  WriteIdentifier(Identify(info->pCode, info->codeSize), out);
}

// The identifier of a compute pipeline's stage code (a module, or SPIR-V chained into
// the stage), recorded as if the fake compiled it; empty when there is none.
std::vector<uint8_t> StageIdentifier(const VkPipelineCreateInfoKHR* info) {
  const auto* compute = static_cast<const VkComputePipelineCreateInfo*>(info ? info->pNext : nullptr);
  if (!compute || compute->sType != VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO) return {};
  if (compute->stage.module != VK_NULL_HANDLE) {
    std::lock_guard lock(gMutex);
    return gModuleIds[reinterpret_cast<uint64_t>(compute->stage.module)];
  }
  for (auto* s = static_cast<const VkBaseInStructure*>(compute->stage.pNext); s; s = s->pNext)
    if (s->sType == VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO) {
      const auto* code = reinterpret_cast<const VkShaderModuleCreateInfo*>(s);
      Record(code->pCode, code->codeSize);
      return Identify(code->pCode, code->codeSize);
    }
  return {};
}

VKAPI_ATTR VkResult VKAPI_CALL GetPipelineKeyKHR(VkDevice, const VkPipelineCreateInfoKHR* info, VkPipelineBinaryKeyKHR* key) {
  const std::vector<uint8_t> id = info ? StageIdentifier(info) : std::vector<uint8_t>(16, 0x5a);  // null: the global key
  if (id.empty()) return VK_ERROR_INITIALIZATION_FAILED;
  key->keySize = static_cast<uint32_t>(id.size());
  std::memcpy(key->key, id.data(), id.size());
  return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL CreatePipelineBinariesKHR(VkDevice, const VkPipelineBinaryCreateInfoKHR* info,
                                                         const VkAllocationCallbacks*, VkPipelineBinaryHandlesInfoKHR* out) {
  if (!info->pPipelineCreateInfo || StageIdentifier(info->pPipelineCreateInfo).empty()) return VK_ERROR_INITIALIZATION_FAILED;
  out->pipelineBinaryCount = 0;  // this fake has no compiler: nothing in its cache
  return VK_PIPELINE_BINARY_MISSING_KHR;
}

PFN_vkVoidFunction GetDeviceProcAddr(VkDevice device, const char* name);

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetInstanceProcAddr(VkInstance instance, const char* name) {
  struct { const char* name; PFN_vkVoidFunction fn; } table[] = {
      {"vkGetInstanceProcAddr", reinterpret_cast<PFN_vkVoidFunction>(&GetInstanceProcAddr)},
      {"vkCreateInstance", reinterpret_cast<PFN_vkVoidFunction>(&CreateInstance)},
      {"vkEnumerateDeviceExtensionProperties", reinterpret_cast<PFN_vkVoidFunction>(&EnumerateDeviceExtensionProperties)},
      {"vkGetPhysicalDeviceFeatures2", reinterpret_cast<PFN_vkVoidFunction>(&GetPhysicalDeviceFeatures2)},
      {"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR", reinterpret_cast<PFN_vkVoidFunction>(&GetCoopmatPropertiesKHR)},
      {"vkCreateDevice", reinterpret_cast<PFN_vkVoidFunction>(&CreateDevice)},
      {"vkCreateShaderModule", reinterpret_cast<PFN_vkVoidFunction>(&CreateShaderModule)},
  };
  for (auto& e : table) {
    if (std::strcmp(e.name, name) == 0) return e.fn;
  }
  if (Env("FAKE_DRIVER_NO_PROPERTIES2") && (std::strcmp(name, "vkGetPhysicalDeviceProperties2") == 0 ||
                                            std::strcmp(name, "vkGetPhysicalDeviceProperties2KHR") == 0))
    return nullptr;
  if (PatchesProperties()) {
    if (std::strcmp(name, "vkGetPhysicalDeviceProperties2") == 0)
      return reinterpret_cast<PFN_vkVoidFunction>(&GetPhysicalDeviceProperties2);
    if (std::strcmp(name, "vkGetPhysicalDeviceProperties2KHR") == 0)
      return reinterpret_cast<PFN_vkVoidFunction>(&GetPhysicalDeviceProperties2);  // 1.1 core: the same
  }
  if (std::strcmp(name, "vkGetDeviceProcAddr") == 0) return reinterpret_cast<PFN_vkVoidFunction>(&GetDeviceProcAddr);
  if (std::strcmp(name, "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT") == 0 && Env("FAKE_DRIVER_NATIVE_EXT"))
    return reinterpret_cast<PFN_vkVoidFunction>(&GetCoopmatProperties2EXT);
  if (!instance) return nullptr;
  Next n = InstanceNext(instance);
  return n.gipa(instance, name);
}

// FAKE_DRIVER_STAGES: what a pipeline's stages would hand a compiler.
void RecordStages(const VkPipelineShaderStageCreateInfo* stages, uint32_t count) {
  for (uint32_t i = 0; stages && i < count; ++i)
    for (auto* s = static_cast<const VkBaseInStructure*>(stages[i].pNext); s; s = s->pNext)
      if (s->sType == VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO) {
        const auto* code = reinterpret_cast<const VkShaderModuleCreateInfo*>(s);
        Record(code->pCode, code->codeSize);
      }
}

VkResult NoPipelines(uint32_t count, VkPipeline* pipelines) {
  for (uint32_t i = 0; i < count; ++i) pipelines[i] = VK_NULL_HANDLE;
  return VK_ERROR_FEATURE_NOT_PRESENT;
}

VKAPI_ATTR VkResult VKAPI_CALL RecordGraphicsPipelines(VkDevice, VkPipelineCache, uint32_t count,
                                                       const VkGraphicsPipelineCreateInfo* infos,
                                                       const VkAllocationCallbacks*, VkPipeline* pipelines) {
  for (uint32_t i = 0; i < count; ++i) {
    RecordStages(infos[i].pStages, infos[i].stageCount);
    for (auto* s = static_cast<const VkBaseInStructure*>(infos[i].pNext); s; s = s->pNext)
      if (s->sType == VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_SHADER_GROUPS_CREATE_INFO_NV) {
        const auto* groups = reinterpret_cast<const VkGraphicsPipelineShaderGroupsCreateInfoNV*>(s);
        for (uint32_t g = 0; g < groups->groupCount; ++g)
          RecordStages(groups->pGroups[g].pStages, groups->pGroups[g].stageCount);
      }
  }
  return NoPipelines(count, pipelines);
}

// FAKE_DRIVER_LOG: where the create infos of a deferred creation are, which a driver
// may read until the operation completes (so they must be the app's).
void LogDeferred(const char* kind, VkDeferredOperationKHR deferred, const void* infos) {
  if (deferred == VK_NULL_HANDLE) return;
  char line[96];
  std::snprintf(line, sizeof(line), "%s deferred infos=0x%llx", kind,
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(infos)));
  Log(line);
}

VKAPI_ATTR VkResult VKAPI_CALL RecordRayTracingPipelinesKHR(VkDevice, VkDeferredOperationKHR deferred, VkPipelineCache,
                                                            uint32_t count, const VkRayTracingPipelineCreateInfoKHR* infos,
                                                            const VkAllocationCallbacks*, VkPipeline* pipelines) {
  LogDeferred("ray tracing", deferred, infos);
  for (uint32_t i = 0; i < count; ++i) RecordStages(infos[i].pStages, infos[i].stageCount);
  return NoPipelines(count, pipelines);
}

VKAPI_ATTR VkResult VKAPI_CALL RecordRayTracingPipelinesNV(VkDevice, VkPipelineCache, uint32_t count,
                                                           const VkRayTracingPipelineCreateInfoNV* infos,
                                                           const VkAllocationCallbacks*, VkPipeline* pipelines) {
  for (uint32_t i = 0; i < count; ++i) RecordStages(infos[i].pStages, infos[i].stageCount);
  return NoPipelines(count, pipelines);
}

// FAKE_DRIVER_LOG: which module a pipeline kind that names modules was given.
void LogModule(const char* kind, VkShaderModule module) {
  char line[96];
  std::snprintf(line, sizeof(line), "%s module=0x%llx", kind,
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(module)));
  Log(line);
}

VKAPI_ATTR VkResult VKAPI_CALL RecordExecutionGraphPipelinesAMDX(VkDevice, VkPipelineCache, uint32_t count,
                                                                 const VkExecutionGraphPipelineCreateInfoAMDX* infos,
                                                                 const VkAllocationCallbacks*, VkPipeline* pipelines) {
  for (uint32_t i = 0; i < count; ++i) {
    RecordStages(infos[i].pStages, infos[i].stageCount);
    for (uint32_t k = 0; k < infos[i].stageCount; ++k) LogModule("execution graph", infos[i].pStages[k].module);
  }
  return NoPipelines(count, pipelines);
}

VKAPI_ATTR VkResult VKAPI_CALL RecordDataGraphPipelinesARM(VkDevice, VkDeferredOperationKHR deferred, VkPipelineCache,
                                                           uint32_t count, const VkDataGraphPipelineCreateInfoARM* infos,
                                                           const VkAllocationCallbacks*, VkPipeline* pipelines) {
  LogDeferred("data graph", deferred, infos);
  for (uint32_t i = 0; i < count; ++i)
    for (auto* s = static_cast<const VkBaseInStructure*>(infos[i].pNext); s; s = s->pNext)
      if (s->sType == VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SHADER_MODULE_CREATE_INFO_ARM)
        LogModule("data graph", reinterpret_cast<const VkDataGraphPipelineShaderModuleCreateInfoARM*>(s)->module);
  return NoPipelines(count, pipelines);
}

// FAKE_DRIVER_SUBGROUP_SIZES / FAKE_DRIVER_LOG: the required size of every compute
// pipeline; sizes lavapipe cannot run are refused.
VKAPI_ATTR VkResult VKAPI_CALL CreateComputePipelinesSized(VkDevice device, VkPipelineCache cache, uint32_t count,
                                                           const VkComputePipelineCreateInfo* infos,
                                                           const VkAllocationCallbacks* alloc, VkPipeline* pipelines) {
  const SubgroupSizes sizes = FakeSubgroupSizes();
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t required = 0;
    for (auto* s = static_cast<const VkBaseInStructure*>(infos[i].stage.pNext); s; s = s->pNext)
      if (s->sType == VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO)
        required = reinterpret_cast<const VkPipelineShaderStageRequiredSubgroupSizeCreateInfo*>(s)->requiredSubgroupSize;
    const bool full = (infos[i].stage.flags & VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT) != 0;
    VkPipelineCreateFlags2KHR flags = infos[i].flags;  // a chained VkPipelineCreateFlags2CreateInfoKHR replaces them
    for (auto* s = static_cast<const VkBaseInStructure*>(infos[i].pNext); s; s = s->pNext)
      if (s->sType == VK_STRUCTURE_TYPE_PIPELINE_CREATE_FLAGS_2_CREATE_INFO_KHR)
        flags = reinterpret_cast<const VkPipelineCreateFlags2CreateInfoKHR*>(s)->flags;
    const bool derivative = (flags & VK_PIPELINE_CREATE_2_DERIVATIVE_BIT_KHR) != 0;
    Log("pipeline requiredSubgroupSize=" + std::to_string(required) + " fullSubgroups=" + std::to_string(full) +
        " derivative=" + std::to_string(derivative) + " basePipelineIndex=" + std::to_string(infos[i].basePipelineIndex));
    if (sizes.first && required && required != sizes.runnable) {
      for (uint32_t k = 0; k < count; ++k) pipelines[k] = VK_NULL_HANDLE;
      return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    }
  }
  auto next = reinterpret_cast<PFN_vkCreateComputePipelines>(FakeDeviceFunction("vkCreateComputePipelines"));
  return next(device, cache, count, infos, alloc, pipelines);
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetDeviceProcAddr(VkDevice device, const char* name) {
  if ((FakeSubgroupSizes().first || std::getenv("FAKE_DRIVER_LOG")) && std::strcmp(name, "vkCreateComputePipelines") == 0)
    return reinterpret_cast<PFN_vkVoidFunction>(&CreateComputePipelinesSized);
  if (Env("FAKE_DRIVER_STAGES")) {
    struct { const char* name; PFN_vkVoidFunction fn; } recorded[] = {
        {"vkCreateGraphicsPipelines", reinterpret_cast<PFN_vkVoidFunction>(&RecordGraphicsPipelines)},
        {"vkCreateRayTracingPipelinesKHR", reinterpret_cast<PFN_vkVoidFunction>(&RecordRayTracingPipelinesKHR)},
        {"vkCreateRayTracingPipelinesNV", reinterpret_cast<PFN_vkVoidFunction>(&RecordRayTracingPipelinesNV)},
        {"vkCreateExecutionGraphPipelinesAMDX", reinterpret_cast<PFN_vkVoidFunction>(&RecordExecutionGraphPipelinesAMDX)},
        {"vkCreateDataGraphPipelinesARM", reinterpret_cast<PFN_vkVoidFunction>(&RecordDataGraphPipelinesARM)},
    };
    for (auto& e : recorded)
      if (std::strcmp(e.name, name) == 0) return e.fn;
  }
  if (std::strcmp(name, "vkGetDeviceProcAddr") == 0) return reinterpret_cast<PFN_vkVoidFunction>(&GetDeviceProcAddr);
  if (std::strcmp(name, "vkCreateShaderModule") == 0) return reinterpret_cast<PFN_vkVoidFunction>(&CreateShaderModule);
  if (Env("FAKE_DRIVER_SHARED_MODULES") && std::strcmp(name, "vkDestroyShaderModule") == 0)
    return reinterpret_cast<PFN_vkVoidFunction>(&DestroySharedModule);
  if (Env("FAKE_DRIVER_BINARIES")) {
    struct { const char* name; PFN_vkVoidFunction fn; } emulated[] = {
        {"vkGetShaderModuleIdentifierEXT", reinterpret_cast<PFN_vkVoidFunction>(&GetShaderModuleIdentifierEXT)},
        {"vkGetShaderModuleCreateInfoIdentifierEXT", reinterpret_cast<PFN_vkVoidFunction>(&GetShaderModuleCreateInfoIdentifierEXT)},
        {"vkGetPipelineKeyKHR", reinterpret_cast<PFN_vkVoidFunction>(&GetPipelineKeyKHR)},
        {"vkCreatePipelineBinariesKHR", reinterpret_cast<PFN_vkVoidFunction>(&CreatePipelineBinariesKHR)},
    };
    for (auto& e : emulated)
      if (std::strcmp(e.name, name) == 0) return e.fn;
  }
  if (PFN_vkVoidFunction wrapped = FakeDeviceFunction(name)) return wrapped;
  Next n;
  {
    std::lock_guard lock(gMutex);
    n = gDevices[Key(device)];
  }
  return n.gdpa(device, name);
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetPhysicalDeviceProcAddr(VkInstance, const char* name) {
  if (std::strcmp(name, "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT") == 0 && Env("FAKE_DRIVER_NATIVE_EXT"))
    return reinterpret_cast<PFN_vkVoidFunction>(&GetCoopmatProperties2EXT);
  return nullptr;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface* v) {
  v->loaderLayerInterfaceVersion = 2;
  v->pfnGetInstanceProcAddr = &GetInstanceProcAddr;
  v->pfnGetDeviceProcAddr = &GetDeviceProcAddr;
  v->pfnGetPhysicalDeviceProcAddr = &GetPhysicalDeviceProcAddr;
  return VK_SUCCESS;
}
