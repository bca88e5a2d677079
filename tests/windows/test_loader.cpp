// A stand-in vulkan-1.dll for the Windows tests: Wine's own vulkan-1.dll loads no Windows
// layers and Debian has no Windows build of the Khronos loader, so this one puts the
// layer's DLL between an application and Wine's Vulkan driver (winevulkan.dll, which
// offers the loader-ICD interface), doing the part of a loader's work that the layer
// relies on:
//  - the layer named by the manifest in COOPMAT_TEST_LOADER_LAYER (its JSON file, whose
//    library_path is resolved beside it), listed by vkEnumerateInstanceLayerProperties
//    and always in the chain, negotiated at interface version 2;
//  - the layer's link structures in vkCreateInstance and vkCreateDevice, with the
//    loader-data callback, and taken out again before the driver sees the create info;
//  - the first pointer-sized word of every dispatchable object the driver makes (the
//    ICD interface reserves it for the loader) pointing at this loader's table for its
//    instance or device, as a loader's dispatch table would: the layer finds its state
//    by that word, and the exported commands find what to call through it.
// The exported commands are the ones vulkan-1.def lists (coopmat-selftest's); most are
// generated (scripts/gen_loader_exports.py). Tests only: one layer, one driver, no
// physical-device groups, no allocation callbacks of its own.
#define VK_NO_PROTOTYPES
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>
#include <windows.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>

namespace {

// What an instance's or a device's dispatchable objects point at: how to find the layer's
// version of a command for them.
struct Table {
  void* handle = nullptr;  // the VkInstance or VkDevice
  bool device = false;     // which of the two
  PFN_vkGetDeviceProcAddr driverGetDeviceProcAddr = nullptr;  // a device's: the driver's device commands
  std::mutex mutex;
  std::unordered_map<std::string, PFN_vkVoidFunction> commands;  // the layer's, by name
};

struct Layer {
  std::string name, description;
  uint32_t specVersion = 0, implementationVersion = 0;
  PFN_vkGetInstanceProcAddr getInstanceProcAddr = nullptr;
  PFN_vkGetDeviceProcAddr getDeviceProcAddr = nullptr;
  std::string problem;  // why it could not be loaded
};

struct Driver {
  PFN_vkGetInstanceProcAddr getInstanceProcAddr = nullptr;  // winevulkan's vk_icdGetInstanceProcAddr
  std::string problem;
};

void Complain(const std::string& text) { std::fprintf(stderr, "test vulkan-1.dll: %s\n", text.c_str()); }

// The string value of "key" in a manifest (the first one: the layer's own keys come first).
std::string JsonString(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\"");
  if (at == std::string::npos) return "";
  const size_t open = json.find('"', json.find(':', at) + 1);
  std::string out;
  for (size_t i = open + 1; i < json.size() && json[i] != '"'; ++i) {
    if (json[i] == '\\' && i + 1 < json.size()) ++i;  // "\\" in library_path
    out += json[i];
  }
  return out;
}

uint32_t VersionOf(const std::string& text) {
  unsigned major = 0, minor = 0, patch = 0;
  std::sscanf(text.c_str(), "%u.%u.%u", &major, &minor, &patch);
  return VK_MAKE_API_VERSION(0, major, minor, patch);
}

const Layer& TheLayer() {
  static const Layer layer = [] {
    Layer l;
    const char* manifest = std::getenv("COOPMAT_TEST_LOADER_LAYER");
    if (!manifest) {
      l.problem = "COOPMAT_TEST_LOADER_LAYER names no layer manifest";
      return l;
    }
    std::ifstream file(manifest);
    std::stringstream text;
    text << file.rdbuf();
    const std::string json = text.str();
    l.name = JsonString(json, "name");
    l.description = JsonString(json, "description");
    l.specVersion = VersionOf(JsonString(json, "api_version"));
    l.implementationVersion = static_cast<uint32_t>(std::atoi(JsonString(json, "implementation_version").c_str()));
    std::string library = JsonString(json, "library_path");
    if (l.name.empty() || library.empty()) {
      l.problem = std::string("no layer name or library_path in ") + manifest;
      return l;
    }
    // A library_path with a backslash is relative to the manifest's folder, as the Windows loader reads it.
    if (library.find('\\') != std::string::npos && library.find(':') == std::string::npos) {
      const std::string folder(manifest, std::strrchr(manifest, '\\') ? std::strrchr(manifest, '\\') + 1 : manifest);
      library = folder + library;
    }
    HMODULE module = LoadLibraryA(library.c_str());
    auto negotiate = module ? reinterpret_cast<PFN_vkNegotiateLoaderLayerInterfaceVersion>(
                                  reinterpret_cast<void*>(GetProcAddress(module, "vkNegotiateLoaderLayerInterfaceVersion")))
                            : nullptr;
    VkNegotiateLayerInterface request{};
    request.sType = LAYER_NEGOTIATE_INTERFACE_STRUCT;
    request.loaderLayerInterfaceVersion = 2;
    if (!negotiate || negotiate(&request) != VK_SUCCESS || !request.pfnGetInstanceProcAddr || !request.pfnGetDeviceProcAddr) {
      l.problem = "cannot load or negotiate with " + library;
      return l;
    }
    l.getInstanceProcAddr = request.pfnGetInstanceProcAddr;
    l.getDeviceProcAddr = request.pfnGetDeviceProcAddr;
    return l;
  }();
  return layer;
}

const Driver& TheDriver() {
  static const Driver driver = [] {
    Driver d;
    HMODULE module = LoadLibraryA("winevulkan.dll");
    auto negotiate = module ? reinterpret_cast<VkResult(VKAPI_PTR*)(uint32_t*)>(
                                  reinterpret_cast<void*>(GetProcAddress(module, "vk_icdNegotiateLoaderICDInterfaceVersion")))
                            : nullptr;
    uint32_t version = 5;
    if (!negotiate || negotiate(&version) != VK_SUCCESS) {
      d.problem = "winevulkan.dll offers no ICD interface";
      return d;
    }
    d.getInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
        reinterpret_cast<void*>(GetProcAddress(module, "vk_icdGetInstanceProcAddr")));
    if (!d.getInstanceProcAddr) d.problem = "winevulkan.dll has no vk_icdGetInstanceProcAddr";
    return d;
  }();
  return driver;
}

Table* TableOf(const void* object) { return *static_cast<Table* const*>(object); }
void SetTable(void* object, Table* table) { *static_cast<Table**>(object) = table; }

// The layer's version of `name` for the object's instance or device, or none (an
// extension's command the chain does not have: what vkGet*ProcAddr answer then).
PFN_vkVoidFunction LayerCommand(const void* object, const char* name) {
  Table* table = TableOf(object);
  std::lock_guard lock(table->mutex);
  PFN_vkVoidFunction& command = table->commands[name];
  if (!command)
    command = table->device ? TheLayer().getDeviceProcAddr(static_cast<VkDevice>(table->handle), name)
                            : TheLayer().getInstanceProcAddr(static_cast<VkInstance>(table->handle), name);
  return command;
}

// The same for a command this loader exports, which the chain must have.
PFN_vkVoidFunction Dispatch(const void* object, const char* name) {
  PFN_vkVoidFunction command = LayerCommand(object, name);
  if (!command) Complain(std::string("the layer returns no ") + name);
  return command;
}

// The driver's command, for the instance (or none: a global command).
template <typename F>
F DriverCommand(VkInstance instance, const char* name) {
  return reinterpret_cast<F>(TheDriver().getInstanceProcAddr(instance, name));
}

// A create info without the structures only the loader and layers read. They sit at the
// front of the chain (vkCreateInstance and vkCreateDevice below put them there, and a layer
// copying the chain keeps its order), so the driver gets the chain from the first other one.
template <typename Info>
Info WithoutLoaderStructures(const Info* info, VkStructureType loaderType) {
  Info copy = *info;
  while (copy.pNext && static_cast<const VkBaseInStructure*>(copy.pNext)->sType == loaderType)
    copy.pNext = static_cast<const VkBaseInStructure*>(copy.pNext)->pNext;
  copy.enabledLayerCount = 0;
  copy.ppEnabledLayerNames = nullptr;
  return copy;
}

Table* NewTable(void* handle, bool device) {
  auto* table = new Table;
  table->handle = handle;
  table->device = device;
  return table;
}

// The bottom of the layer's chain: the driver, with the dispatch word set on what it makes.
VKAPI_ATTR VkResult VKAPI_CALL DriverCreateInstance(const VkInstanceCreateInfo* info, const VkAllocationCallbacks* alloc,
                                                    VkInstance* instance) {
  const VkInstanceCreateInfo down = WithoutLoaderStructures(info, VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO);
  const VkResult result = DriverCommand<PFN_vkCreateInstance>(VK_NULL_HANDLE, "vkCreateInstance")(&down, alloc, instance);
  if (result == VK_SUCCESS) SetTable(*instance, NewTable(*instance, false));
  return result;
}

VKAPI_ATTR void VKAPI_CALL DriverDestroyInstance(VkInstance instance, const VkAllocationCallbacks* alloc) {
  if (!instance) return;
  Table* table = TableOf(instance);
  DriverCommand<PFN_vkDestroyInstance>(instance, "vkDestroyInstance")(instance, alloc);
  delete table;
}

VKAPI_ATTR VkResult VKAPI_CALL DriverEnumeratePhysicalDevices(VkInstance instance, uint32_t* count, VkPhysicalDevice* devices) {
  const VkResult result =
      DriverCommand<PFN_vkEnumeratePhysicalDevices>(instance, "vkEnumeratePhysicalDevices")(instance, count, devices);
  if (devices && result >= VK_SUCCESS)
    for (uint32_t i = 0; i < *count; ++i) SetTable(devices[i], TableOf(instance));
  return result;
}

VKAPI_ATTR VkResult VKAPI_CALL DriverCreateDevice(VkPhysicalDevice physicalDevice, const VkDeviceCreateInfo* info,
                                                  const VkAllocationCallbacks* alloc, VkDevice* device) {
  auto* instance = static_cast<VkInstance>(TableOf(physicalDevice)->handle);
  const VkDeviceCreateInfo down = WithoutLoaderStructures(info, VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO);
  const VkResult result = DriverCommand<PFN_vkCreateDevice>(instance, "vkCreateDevice")(physicalDevice, &down, alloc, device);
  if (result == VK_SUCCESS) {
    Table* table = NewTable(*device, true);
    table->driverGetDeviceProcAddr = DriverCommand<PFN_vkGetDeviceProcAddr>(instance, "vkGetDeviceProcAddr");
    SetTable(*device, table);
  }
  return result;
}

// The driver's device command.
template <typename F>
F DriverDeviceCommand(VkDevice device, const char* name) {
  return reinterpret_cast<F>(TableOf(device)->driverGetDeviceProcAddr(device, name));
}

VKAPI_ATTR void VKAPI_CALL DriverDestroyDevice(VkDevice device, const VkAllocationCallbacks* alloc) {
  if (!device) return;
  Table* table = TableOf(device);
  DriverDeviceCommand<PFN_vkDestroyDevice>(device, "vkDestroyDevice")(device, alloc);
  delete table;
}

VKAPI_ATTR void VKAPI_CALL DriverGetDeviceQueue(VkDevice device, uint32_t family, uint32_t index, VkQueue* queue) {
  DriverDeviceCommand<PFN_vkGetDeviceQueue>(device, "vkGetDeviceQueue")(device, family, index, queue);
  if (*queue) SetTable(*queue, TableOf(device));
}

VKAPI_ATTR void VKAPI_CALL DriverGetDeviceQueue2(VkDevice device, const VkDeviceQueueInfo2* info, VkQueue* queue) {
  DriverDeviceCommand<PFN_vkGetDeviceQueue2>(device, "vkGetDeviceQueue2")(device, info, queue);
  if (*queue) SetTable(*queue, TableOf(device));
}

VKAPI_ATTR VkResult VKAPI_CALL DriverAllocateCommandBuffers(VkDevice device, const VkCommandBufferAllocateInfo* info,
                                                            VkCommandBuffer* buffers) {
  const VkResult result =
      DriverDeviceCommand<PFN_vkAllocateCommandBuffers>(device, "vkAllocateCommandBuffers")(device, info, buffers);
  if (result == VK_SUCCESS)
    for (uint32_t i = 0; i < info->commandBufferCount; ++i) SetTable(buffers[i], TableOf(device));
  return result;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL DriverGetDeviceProcAddr(VkDevice device, const char* name);

// The device commands the bottom of the chain answers itself (they make or end dispatchable
// objects), or none.
PFN_vkVoidFunction DeviceCommandOfTheLoader(const std::string& n) {
  if (n == "vkGetDeviceProcAddr") return reinterpret_cast<PFN_vkVoidFunction>(&DriverGetDeviceProcAddr);
  if (n == "vkDestroyDevice") return reinterpret_cast<PFN_vkVoidFunction>(&DriverDestroyDevice);
  if (n == "vkGetDeviceQueue") return reinterpret_cast<PFN_vkVoidFunction>(&DriverGetDeviceQueue);
  if (n == "vkGetDeviceQueue2") return reinterpret_cast<PFN_vkVoidFunction>(&DriverGetDeviceQueue2);
  if (n == "vkAllocateCommandBuffers") return reinterpret_cast<PFN_vkVoidFunction>(&DriverAllocateCommandBuffers);
  return nullptr;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL DriverGetDeviceProcAddr(VkDevice device, const char* name) {
  if (PFN_vkVoidFunction own = DeviceCommandOfTheLoader(name)) return own;
  return DriverDeviceCommand<PFN_vkVoidFunction>(device, name);
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL DriverGetInstanceProcAddr(VkInstance instance, const char* name) {
  const std::string n = name;
  if (n == "vkGetInstanceProcAddr") return reinterpret_cast<PFN_vkVoidFunction>(&DriverGetInstanceProcAddr);
  if (n == "vkCreateInstance") return reinterpret_cast<PFN_vkVoidFunction>(&DriverCreateInstance);
  if (n == "vkDestroyInstance") return reinterpret_cast<PFN_vkVoidFunction>(&DriverDestroyInstance);
  if (n == "vkEnumeratePhysicalDevices") return reinterpret_cast<PFN_vkVoidFunction>(&DriverEnumeratePhysicalDevices);
  if (n == "vkCreateDevice") return reinterpret_cast<PFN_vkVoidFunction>(&DriverCreateDevice);
  if (PFN_vkVoidFunction own = DeviceCommandOfTheLoader(n)) return own;  // asked for through the instance
  return TheDriver().getInstanceProcAddr(instance, name);
}

VKAPI_ATTR VkResult VKAPI_CALL SetDeviceLoaderData(VkDevice device, void* object) {
  SetTable(object, TableOf(device));
  return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL SetInstanceLoaderData(VkInstance instance, void* object) {
  SetTable(object, TableOf(instance));
  return VK_SUCCESS;
}

bool Ready() {
  if (!TheLayer().problem.empty()) Complain(TheLayer().problem);
  if (!TheDriver().problem.empty()) Complain(TheDriver().problem);
  return TheLayer().problem.empty() && TheDriver().problem.empty();
}

}  // namespace

extern "C" {

__declspec(dllexport) VkResult VKAPI_CALL vkCreateInstance(const VkInstanceCreateInfo* info, const VkAllocationCallbacks* alloc,
                                                           VkInstance* instance) {
  if (!Ready()) return VK_ERROR_INITIALIZATION_FAILED;
  VkLayerInstanceLink link{nullptr, &DriverGetInstanceProcAddr, nullptr};
  VkLayerInstanceCreateInfo linkInfo{VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO, info->pNext, VK_LAYER_LINK_INFO, {}};
  linkInfo.u.pLayerInfo = &link;
  VkLayerInstanceCreateInfo dataInfo{VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO, &linkInfo, VK_LOADER_DATA_CALLBACK, {}};
  dataInfo.u.pfnSetInstanceLoaderData = &SetInstanceLoaderData;
  VkInstanceCreateInfo up = *info;
  up.pNext = &dataInfo;
  auto create = reinterpret_cast<PFN_vkCreateInstance>(TheLayer().getInstanceProcAddr(VK_NULL_HANDLE, "vkCreateInstance"));
  return create(&up, alloc, instance);
}

__declspec(dllexport) VkResult VKAPI_CALL vkCreateDevice(VkPhysicalDevice physicalDevice, const VkDeviceCreateInfo* info,
                                                         const VkAllocationCallbacks* alloc, VkDevice* device) {
  VkLayerDeviceLink link{nullptr, &DriverGetInstanceProcAddr, &DriverGetDeviceProcAddr};
  VkLayerDeviceCreateInfo linkInfo{VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO, info->pNext, VK_LAYER_LINK_INFO, {}};
  linkInfo.u.pLayerInfo = &link;
  VkLayerDeviceCreateInfo dataInfo{VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO, &linkInfo, VK_LOADER_DATA_CALLBACK, {}};
  dataInfo.u.pfnSetDeviceLoaderData = &SetDeviceLoaderData;
  VkDeviceCreateInfo up = *info;
  up.pNext = &dataInfo;
  return reinterpret_cast<PFN_vkCreateDevice>(Dispatch(physicalDevice, "vkCreateDevice"))(physicalDevice, &up, alloc, device);
}

__declspec(dllexport) PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice device, const char* name);

__declspec(dllexport) PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance instance, const char* name) {
  const std::string n = name;
  if (n == "vkGetInstanceProcAddr") return reinterpret_cast<PFN_vkVoidFunction>(&vkGetInstanceProcAddr);
  if (n == "vkGetDeviceProcAddr") return reinterpret_cast<PFN_vkVoidFunction>(&vkGetDeviceProcAddr);
  if (n == "vkCreateInstance") return reinterpret_cast<PFN_vkVoidFunction>(&vkCreateInstance);
  if (n == "vkCreateDevice") return reinterpret_cast<PFN_vkVoidFunction>(&vkCreateDevice);
  if (!instance) return Ready() ? TheDriver().getInstanceProcAddr(VK_NULL_HANDLE, name) : nullptr;
  return LayerCommand(instance, name);
}

__declspec(dllexport) PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice device, const char* name) {
  if (std::strcmp(name, "vkGetDeviceProcAddr") == 0) return reinterpret_cast<PFN_vkVoidFunction>(&vkGetDeviceProcAddr);
  return LayerCommand(device, name);
}

__declspec(dllexport) VkResult VKAPI_CALL vkEnumerateInstanceLayerProperties(uint32_t* count, VkLayerProperties* properties) {
  if (!Ready()) {
    *count = 0;
    return VK_SUCCESS;
  }
  if (!properties) {
    *count = 1;
    return VK_SUCCESS;
  }
  if (*count < 1) return VK_INCOMPLETE;
  *count = 1;
  VkLayerProperties& p = properties[0];
  p = {};
  std::snprintf(p.layerName, sizeof p.layerName, "%s", TheLayer().name.c_str());
  std::snprintf(p.description, sizeof p.description, "%s", TheLayer().description.c_str());
  p.specVersion = TheLayer().specVersion;
  p.implementationVersion = TheLayer().implementationVersion;
  return VK_SUCCESS;
}

#include "test_loader_exports.inc"

}  // extern "C"
