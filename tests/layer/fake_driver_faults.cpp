#include "fake_driver_faults.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace {

std::mutex gFaultMutex;
std::string gSpec;                         // the FAKE_DRIVER_FAIL value the counts belong to
std::map<std::string, long> gCalls;
FakeDriverStatsData gStats{};
bool gInFlight = false;
struct NextDevice {
  VkDevice device = VK_NULL_HANDLE;  // queues and command buffers look functions up through their device
  PFN_vkGetDeviceProcAddr gdpa = nullptr;
};
std::unordered_map<void*, NextDevice> gNext;  // by dispatch key

void* Key(void* handle) { return *static_cast<void**>(handle); }

template <typename Fn> Fn Next(void* dispatchable, const char* name) {
  NextDevice next;
  {
    std::lock_guard lock(gFaultMutex);
    next = gNext[Key(dispatchable)];
  }
  return reinterpret_cast<Fn>(next.gdpa(next.device, name));
}

void Count(long delta) {
  std::lock_guard lock(gFaultMutex);
  gStats.liveObjects += delta;
  if (delta < 0 && gInFlight) ++gStats.destroyedInFlight;
}

// Creates: fault check, call down, count on success.
#define FAKE_CREATE(Name, Params, Args, DeviceArg)                            \
  VKAPI_ATTR VkResult VKAPI_CALL Name Params {                                \
    if (VkResult fault = FakeFault(#Name); fault != VK_SUCCESS) return fault; \
    VkResult r = Next<PFN_vk##Name>(DeviceArg, "vk" #Name) Args;              \
    if (r == VK_SUCCESS) Count(1);                                            \
    return r;                                                                 \
  }
#define FAKE_DESTROY(Name, Type)                                                               \
  VKAPI_ATTR void VKAPI_CALL Name(VkDevice d, Type object, const VkAllocationCallbacks* a) { \
    if (object) Count(-1);                                                                     \
    Next<PFN_vk##Name>(d, "vk" #Name)(d, object, a);                                          \
  }
#define FAKE_CALL(Name, Params, Args, DeviceArg)                              \
  VKAPI_ATTR VkResult VKAPI_CALL Name Params {                                \
    if (VkResult fault = FakeFault(#Name); fault != VK_SUCCESS) return fault; \
    return Next<PFN_vk##Name>(DeviceArg, "vk" #Name) Args;                    \
  }

using A = const VkAllocationCallbacks*;
FAKE_CREATE(CreateBuffer, (VkDevice d, const VkBufferCreateInfo* i, A a, VkBuffer* o), (d, i, a, o), d)
FAKE_DESTROY(DestroyBuffer, VkBuffer)
FAKE_CREATE(AllocateMemory, (VkDevice d, const VkMemoryAllocateInfo* i, A a, VkDeviceMemory* o), (d, i, a, o), d)
FAKE_DESTROY(FreeMemory, VkDeviceMemory)
FAKE_CALL(MapMemory, (VkDevice d, VkDeviceMemory m, VkDeviceSize o, VkDeviceSize s, VkMemoryMapFlags f, void** p),
          (d, m, o, s, f, p), d)
FAKE_CALL(BindBufferMemory, (VkDevice d, VkBuffer b, VkDeviceMemory m, VkDeviceSize o), (d, b, m, o), d)
FAKE_DESTROY(DestroyShaderModule, VkShaderModule)
FAKE_CREATE(CreateDescriptorSetLayout, (VkDevice d, const VkDescriptorSetLayoutCreateInfo* i, A a, VkDescriptorSetLayout* o),
            (d, i, a, o), d)
FAKE_DESTROY(DestroyDescriptorSetLayout, VkDescriptorSetLayout)
FAKE_CREATE(CreatePipelineLayout, (VkDevice d, const VkPipelineLayoutCreateInfo* i, A a, VkPipelineLayout* o), (d, i, a, o), d)
FAKE_DESTROY(DestroyPipelineLayout, VkPipelineLayout)
FAKE_DESTROY(DestroyPipeline, VkPipeline)
FAKE_CREATE(CreateDescriptorPool, (VkDevice d, const VkDescriptorPoolCreateInfo* i, A a, VkDescriptorPool* o), (d, i, a, o), d)
FAKE_DESTROY(DestroyDescriptorPool, VkDescriptorPool)
FAKE_CALL(AllocateDescriptorSets, (VkDevice d, const VkDescriptorSetAllocateInfo* i, VkDescriptorSet* o), (d, i, o), d)
FAKE_CREATE(CreateCommandPool, (VkDevice d, const VkCommandPoolCreateInfo* i, A a, VkCommandPool* o), (d, i, a, o), d)
FAKE_DESTROY(DestroyCommandPool, VkCommandPool)
FAKE_CALL(AllocateCommandBuffers, (VkDevice d, const VkCommandBufferAllocateInfo* i, VkCommandBuffer* o), (d, i, o), d)
FAKE_CALL(BeginCommandBuffer, (VkCommandBuffer c, const VkCommandBufferBeginInfo* i), (c, i), c)
FAKE_CALL(EndCommandBuffer, (VkCommandBuffer c), (c), c)
FAKE_CREATE(CreateFence, (VkDevice d, const VkFenceCreateInfo* i, A a, VkFence* o), (d, i, a, o), d)
FAKE_DESTROY(DestroyFence, VkFence)

// Set by a test (FakeDriverAfterPartialFault): runs once a ":last" fault has created
// the other objects, on the calling thread, before the result goes back up.
void (*gAfterPartialFault)() = nullptr;

// A ":last" fault: the driver's objects but the last are kept; the last is destroyed
// and the fault returned.
template <typename Handle, typename Destroy>
VkResult FailLast(VkResult result, VkResult fault, uint32_t n, Handle* o, const Destroy& destroy) {
  if (result != VK_SUCCESS || n == 0) return result;
  destroy(o[n - 1]);
  o[n - 1] = VK_NULL_HANDLE;
  return fault;
}

VKAPI_ATTR VkResult VKAPI_CALL CreateComputePipelines(VkDevice d, VkPipelineCache c, uint32_t n,
                                                      const VkComputePipelineCreateInfo* i, A a, VkPipeline* o) {
  const VkResult fault = FakeFault("CreateComputePipelines");
  if (fault != VK_SUCCESS && !FakeFaultOnLastOnly()) {
    for (uint32_t k = 0; k < n; ++k) o[k] = VK_NULL_HANDLE;
    return fault;
  }
  VkResult r = Next<PFN_vkCreateComputePipelines>(d, "vkCreateComputePipelines")(d, c, n, i, a, o);
  if (fault != VK_SUCCESS)
    r = FailLast(r, fault, n, o, [&](VkPipeline p) { Next<PFN_vkDestroyPipeline>(d, "vkDestroyPipeline")(d, p, a); });
  for (uint32_t k = 0; k < n; ++k)
    if (o[k]) Count(1);
  if (fault != VK_SUCCESS && gAfterPartialFault) gAfterPartialFault();
  return r;
}

// Shader objects, for faults at the layer's shader-object path (the fault leaves every
// handle null, as the driver's own failure must).
VKAPI_ATTR VkResult VKAPI_CALL CreateShadersEXT(VkDevice d, uint32_t n, const VkShaderCreateInfoEXT* i, A a,
                                                VkShaderEXT* o) {
  const VkResult fault = FakeFault("CreateShadersEXT");
  if (fault != VK_SUCCESS && !FakeFaultOnLastOnly()) {
    for (uint32_t k = 0; k < n; ++k) o[k] = VK_NULL_HANDLE;
    return fault;
  }
  VkResult r = Next<PFN_vkCreateShadersEXT>(d, "vkCreateShadersEXT")(d, n, i, a, o);
  if (fault != VK_SUCCESS)
    r = FailLast(r, fault, n, o, [&](VkShaderEXT s) { Next<PFN_vkDestroyShaderEXT>(d, "vkDestroyShaderEXT")(d, s, a); });
  for (uint32_t k = 0; k < n; ++k)
    if (o[k]) Count(1);
  return r;
}
FAKE_DESTROY(DestroyShaderEXT, VkShaderEXT)

VKAPI_ATTR VkResult VKAPI_CALL QueueSubmit(VkQueue q, uint32_t n, const VkSubmitInfo* s, VkFence f) {
  if (VkResult fault = FakeFault("QueueSubmit"); fault != VK_SUCCESS) return fault;
  VkResult r = Next<PFN_vkQueueSubmit>(q, "vkQueueSubmit")(q, n, s, f);
  if (r == VK_SUCCESS) {
    std::lock_guard lock(gFaultMutex);
    gInFlight = true;
  }
  return r;
}

VKAPI_ATTR VkResult VKAPI_CALL WaitForFences(VkDevice d, uint32_t n, const VkFence* f, VkBool32 all, uint64_t timeout) {
  VkResult r = Next<PFN_vkWaitForFences>(d, "vkWaitForFences")(d, n, f, all, timeout);
  const VkResult fault = FakeFault("WaitForFences");
  if (fault == VK_ERROR_DEVICE_LOST) {  // a lost device runs nothing any more
    std::lock_guard lock(gFaultMutex);
    gInFlight = false;
  }
  if (fault != VK_SUCCESS) return fault;  // a timeout: the work stays "in flight" as far as the caller knows
  if (r == VK_SUCCESS) {
    std::lock_guard lock(gFaultMutex);
    gInFlight = false;
  }
  return r;
}

VKAPI_ATTR VkResult VKAPI_CALL QueueWaitIdle(VkQueue q) {
  if (VkResult fault = FakeFault("QueueWaitIdle"); fault != VK_SUCCESS) return fault;
  VkResult r = Next<PFN_vkQueueWaitIdle>(q, "vkQueueWaitIdle")(q);
  if (r == VK_SUCCESS) {
    std::lock_guard lock(gFaultMutex);
    gInFlight = false;
  }
  return r;
}

VKAPI_ATTR VkResult VKAPI_CALL DeviceWaitIdle(VkDevice d) {
  VkResult r = Next<PFN_vkDeviceWaitIdle>(d, "vkDeviceWaitIdle")(d);
  if (r == VK_SUCCESS) {
    std::lock_guard lock(gFaultMutex);
    gInFlight = false;
  }
  return r;
}

VKAPI_ATTR void VKAPI_CALL DestroyDevice(VkDevice d, A a) {
  if (!d) return;
  auto destroy = Next<PFN_vkDestroyDevice>(d, "vkDestroyDevice");
  {
    std::lock_guard lock(gFaultMutex);
    --gStats.liveDevices;
    if (gInFlight) ++gStats.destroyedInFlight;
    gInFlight = false;
  }
  destroy(d, a);
}

}  // namespace

VkResult FakeFault(const char* name) {
  const char* spec = std::getenv("FAKE_DRIVER_FAIL");
  std::lock_guard lock(gFaultMutex);
  if (!spec || !*spec) {
    gSpec.clear();
    return VK_SUCCESS;
  }
  if (gSpec != spec) {
    gSpec = spec;
    gCalls.clear();
  }
  const long call = ++gCalls[name];
  // <Name>:<n>:<result>
  const std::string s = spec;
  const size_t first = s.find(':'), second = s.find(':', first + 1);
  if (first == std::string::npos || second == std::string::npos || s.substr(0, first) != name) return VK_SUCCESS;
  if (std::atol(s.c_str() + first + 1) != call) return VK_SUCCESS;
  ++gStats.faultsInjected;
  return static_cast<VkResult>(std::atoi(s.c_str() + second + 1));
}

bool FakeFaultOnLastOnly() {
  const char* spec = std::getenv("FAKE_DRIVER_FAIL");
  const std::string_view s = spec ? spec : "";
  return s.ends_with(":last");
}

void FakeCountObject(long delta) { Count(delta); }

void FakeDeviceCreated(VkDevice device, PFN_vkGetDeviceProcAddr next) {
  std::lock_guard lock(gFaultMutex);
  gNext[Key(device)] = {device, next};
  ++gStats.liveDevices;
}

PFN_vkVoidFunction FakeDeviceFunction(const char* name) {
#define FAKE_ENTRY(Name) {"vk" #Name, reinterpret_cast<PFN_vkVoidFunction>(&Name)},
  static const struct {
    const char* name;
    PFN_vkVoidFunction fn;
  } kTable[] = {FAKE_ENTRY(CreateBuffer) FAKE_ENTRY(DestroyBuffer) FAKE_ENTRY(AllocateMemory) FAKE_ENTRY(FreeMemory)
                FAKE_ENTRY(MapMemory) FAKE_ENTRY(BindBufferMemory) FAKE_ENTRY(DestroyShaderModule)
                FAKE_ENTRY(CreateDescriptorSetLayout) FAKE_ENTRY(DestroyDescriptorSetLayout) FAKE_ENTRY(CreatePipelineLayout)
                FAKE_ENTRY(DestroyPipelineLayout) FAKE_ENTRY(DestroyPipeline) FAKE_ENTRY(CreateDescriptorPool)
                FAKE_ENTRY(DestroyDescriptorPool) FAKE_ENTRY(AllocateDescriptorSets) FAKE_ENTRY(CreateCommandPool)
                FAKE_ENTRY(DestroyCommandPool) FAKE_ENTRY(AllocateCommandBuffers) FAKE_ENTRY(BeginCommandBuffer)
                FAKE_ENTRY(EndCommandBuffer) FAKE_ENTRY(CreateFence) FAKE_ENTRY(DestroyFence)
                FAKE_ENTRY(CreateComputePipelines) FAKE_ENTRY(CreateShadersEXT) FAKE_ENTRY(DestroyShaderEXT) FAKE_ENTRY(QueueSubmit) FAKE_ENTRY(WaitForFences)
                FAKE_ENTRY(QueueWaitIdle) FAKE_ENTRY(DeviceWaitIdle) FAKE_ENTRY(DestroyDevice)};
#undef FAKE_ENTRY
  for (const auto& e : kTable)
    if (std::strcmp(e.name, name) == 0) return e.fn;
  return nullptr;
}

extern "C" __attribute__((visibility("default"))) const FakeDriverStatsData* FakeDriverStats() { return &gStats; }

extern "C" __attribute__((visibility("default"))) void FakeDriverAfterPartialFault(void (*hook)()) { gAfterPartialFault = hook; }
