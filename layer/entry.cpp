// The loader-facing surface: interface negotiation and the three ProcAddr hooks.
// Only these four symbols are exported (see exports.map).
#include <cstring>
#include <exception>
#include <new>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "entry_points.h"
#include "messages.h"
#include "platform.h"
#include "state.h"

namespace coopmat::layer {
namespace {

// A create call that failed by an exception still owes the app its output handles:
// every element NULL or valid (review 130c39d finding 10). The pipeline creates and
// vkCreateShadersEXT end in (uint32_t count, infos, allocator, Handle* out);
// vkCreateShaderModule writes one handle. (Where non-dispatchable handles are all
// uint64_t, on 32-bit builds, the count check below still holds for these calls.)
template <typename... Args> void NullOutputHandles(Args... args) {
  constexpr size_t n = sizeof...(Args);
  using Types = std::tuple<Args...>;
  using Last = std::tuple_element_t<n - 1, Types>;
  const auto values = std::forward_as_tuple(args...);
  if constexpr (std::is_same_v<Last, VkPipeline*> || std::is_same_v<Last, VkShaderEXT*>) {
    static_assert(n >= 4 && std::is_same_v<std::tuple_element_t<n - 4, Types>, uint32_t>, "count, infos, allocator, handles");
    Last handles = std::get<n - 1>(values);
    if (handles)
      for (uint32_t i = 0; i < std::get<n - 4>(values); ++i) handles[i] = VK_NULL_HANDLE;
  } else if constexpr (std::is_same_v<Last, VkShaderModule*>) {
    if (Last handle = std::get<n - 1>(values)) *handle = VK_NULL_HANDLE;
  }
}

// No C++ exception may cross the Vulkan ABI: every intercept runs inside this guard.
template <auto Fn> struct Guard;
template <typename R, typename... Args, R (*Fn)(Args...)> struct Guard<Fn> {
  static VKAPI_ATTR R VKAPI_CALL Call(Args... args) noexcept {
    try {
      return Fn(args...);
    } catch (const std::bad_alloc&) {
      if constexpr (std::is_same_v<R, VkResult>) return Failed(VK_ERROR_OUT_OF_HOST_MEMORY, args...);
    } catch (const std::exception& e) {
      Log(nullptr, LogLevel::Error, std::string("internal error: ") + e.what());
      if constexpr (std::is_same_v<R, VkResult>) return Failed(VK_ERROR_UNKNOWN, args...);
    } catch (...) {
      Log(nullptr, LogLevel::Error, "internal error");
      if constexpr (std::is_same_v<R, VkResult>) return Failed(VK_ERROR_UNKNOWN, args...);
    }
    if constexpr (!std::is_void_v<R>) return R{};
  }
  static VkResult Failed(VkResult result, Args... args) noexcept {
    if constexpr (sizeof...(Args) > 0) NullOutputHandles(args...);
    return result;
  }
};

template <auto Fn> PFN_vkVoidFunction Guarded() { return reinterpret_cast<PFN_vkVoidFunction>(&Guard<Fn>::Call); }

struct NamedFunction {
  std::string_view name;
  PFN_vkVoidFunction (*get)();
};

// Commands that only make sense with the layer's own state for the device.
const NamedFunction kDeviceFunctions[] = {
    {"vkDestroyDevice", &Guarded<&DestroyDevice>},
    {"vkCreateShaderModule", &Guarded<&CreateShaderModule>},
    {"vkCreateComputePipelines", &Guarded<&CreateComputePipelines>},
    {"vkCreateGraphicsPipelines", &Guarded<&CreateGraphicsPipelines>},
    {"vkCreateShadersEXT", &Guarded<&CreateShadersEXT>},
    {"vkDestroyShaderModule", &Guarded<&DestroyShaderModule>},
    {"vkCreateRayTracingPipelinesKHR", &Guarded<&CreateRayTracingPipelinesKHR>},
    {"vkCreateRayTracingPipelinesNV", &Guarded<&CreateRayTracingPipelinesNV>},
    {"vkCreateExecutionGraphPipelinesAMDX", &Guarded<&CreateExecutionGraphPipelinesAMDX>},
    {"vkCreateDataGraphPipelinesARM", &Guarded<&CreateDataGraphPipelinesARM>},
    {"vkCreatePipelineBinariesKHR", &Guarded<&CreatePipelineBinariesKHR>},
    {"vkGetPipelineKeyKHR", &Guarded<&GetPipelineKeyKHR>},
    {"vkGetShaderModuleCreateInfoIdentifierEXT", &Guarded<&GetShaderModuleCreateInfoIdentifierEXT>},
};

const NamedFunction kInstanceFunctions[] = {
    {"vkCreateInstance", &Guarded<&CreateInstance>},
    {"vkDestroyInstance", &Guarded<&DestroyInstance>},
    {"vkEnumerateDeviceExtensionProperties", &Guarded<&EnumerateDeviceExtensionProperties>},
    {"vkGetPhysicalDeviceFeatures2", &Guarded<&GetPhysicalDeviceFeatures2>},
    {"vkGetPhysicalDeviceFeatures2KHR", &Guarded<&GetPhysicalDeviceFeatures2KHR>},
    {"vkCreateDevice", &Guarded<&CreateDevice>},
    {"vkCreateDebugUtilsMessengerEXT", &Guarded<&CreateDebugUtilsMessengerEXT>},
    {"vkDestroyDebugUtilsMessengerEXT", &Guarded<&DestroyDebugUtilsMessengerEXT>},
};

const NamedFunction kPhysicalDeviceFunctions[] = {
    {"vkGetPhysicalDeviceCooperativeMatrixProperties2EXT", &Guarded<&GetPhysicalDeviceCooperativeMatrixProperties2EXT>},
};

template <size_t N> PFN_vkVoidFunction Lookup(const NamedFunction (&table)[N], const char* name) {
  for (const NamedFunction& f : table) {
    if (f.name == name) return f.get();
  }
  return nullptr;
}

bool IsGlobalCommand(const char* name) {
  for (const char* global : {"vkCreateInstance", "vkEnumerateInstanceExtensionProperties",
                             "vkEnumerateInstanceLayerProperties", "vkEnumerateInstanceVersion"})
    if (std::strcmp(name, global) == 0) return true;
  return false;
}

}  // namespace

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetDeviceProcAddr(VkDevice device, const char* pName);

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetInstanceProcAddr(VkInstance instance, const char* pName) {
  if (!pName) return nullptr;
  if (std::strcmp(pName, "vkGetInstanceProcAddr") == 0) return reinterpret_cast<PFN_vkVoidFunction>(&GetInstanceProcAddr);
  if (std::strcmp(pName, "vkGetDeviceProcAddr") == 0) return reinterpret_cast<PFN_vkVoidFunction>(&GetDeviceProcAddr);
  // Without an instance only the global commands (vkGetInstanceProcAddr spec text).
  if (instance == VK_NULL_HANDLE) return IsGlobalCommand(pName) ? Lookup(kInstanceFunctions, pName) : nullptr;
  if (auto f = Lookup(kInstanceFunctions, pName)) return f;
  if (auto f = Lookup(kPhysicalDeviceFunctions, pName)) return f;
  if (auto f = Lookup(kDeviceFunctions, pName)) return f;
  InstanceData* data = GetInstanceData(instance);
  return data ? data->dispatch.GetInstanceProcAddr(instance, pName) : nullptr;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetDeviceProcAddr(VkDevice device, const char* pName) {
  if (!pName || device == VK_NULL_HANDLE) return nullptr;
  if (std::strcmp(pName, "vkGetDeviceProcAddr") == 0) return reinterpret_cast<PFN_vkVoidFunction>(&GetDeviceProcAddr);
  DeviceData* data = GetDeviceData(device);
  if (!data) return nullptr;
  // A device the layer does not emulate on costs nothing: the next layer's functions,
  // except vkDestroyDevice, which frees the layer's record of the device.
  PFN_vkVoidFunction next = data->dispatch.GetDeviceProcAddr(device, pName);
  // Never offer a command the device below does not have (e.g. vkCreateShadersEXT
  // without VK_EXT_shader_object): the intercept would have nothing to call.
  if (next && (data->emulating || std::strcmp(pName, "vkDestroyDevice") == 0)) {
    if (auto f = Lookup(kDeviceFunctions, pName)) return f;
  }
  return next;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetPhysicalDeviceProcAddr(VkInstance instance, const char* pName) {
  if (!pName) return nullptr;
  if (auto f = Lookup(kPhysicalDeviceFunctions, pName)) return f;
  InstanceData* data = instance ? GetInstanceData(instance) : nullptr;
  if (!data || !data->dispatch.GetPhysicalDeviceProcAddr) return nullptr;
  return data->dispatch.GetPhysicalDeviceProcAddr(instance, pName);
}

}  // namespace coopmat::layer

extern "C" {

COOPMAT_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface* pVersionStruct) {
  if (!pVersionStruct || pVersionStruct->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT)
    return VK_ERROR_INITIALIZATION_FAILED;
  if (pVersionStruct->loaderLayerInterfaceVersion < 2) return VK_ERROR_INITIALIZATION_FAILED;
  pVersionStruct->loaderLayerInterfaceVersion = 2;
  pVersionStruct->pfnGetInstanceProcAddr = &coopmat::layer::GetInstanceProcAddr;
  pVersionStruct->pfnGetDeviceProcAddr = &coopmat::layer::GetDeviceProcAddr;
  pVersionStruct->pfnGetPhysicalDeviceProcAddr = &coopmat::layer::GetPhysicalDeviceProcAddr;
  return VK_SUCCESS;
}

COOPMAT_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vkGetInstanceProcAddr(VkInstance instance, const char* pName) {
  return coopmat::layer::GetInstanceProcAddr(instance, pName);
}

COOPMAT_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vkGetDeviceProcAddr(VkDevice device, const char* pName) {
  return coopmat::layer::GetDeviceProcAddr(device, pName);
}

COOPMAT_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vk_layerGetPhysicalDeviceProcAddr(VkInstance instance, const char* pName) {
  return coopmat::layer::GetPhysicalDeviceProcAddr(instance, pName);
}

}  // extern "C"
