// Fault injection and object accounting for the fake driver layer.
//   FAKE_DRIVER_FAIL=<Name>:<n>:<VkResult>   the n-th call (1-based, counted from when the
//       variable last changed) of vk<Name> returns the result without calling down.
//       WaitForFences:<n>:2 (VK_TIMEOUT) returns the timeout after the real wait, and
//       the submitted work then counts as in flight until QueueWaitIdle/DeviceWaitIdle.
//   FAKE_DRIVER_FAIL=CreateComputePipelines:<n>:<VkResult>:last (or CreateShadersEXT)
//       the call goes down and only its last object fails (destroyed, VK_NULL_HANDLE):
//       a driver that created the others, as Vulkan allows for a batch. A hook a test
//       sets (FakeDriverAfterPartialFault, found with dlsym) runs then, before the
//       result goes back to the layer.
//   FAKE_DRIVER_KHR_HUGE=1  the KHR properties query reports 2^31-1 entries.
// Every create/allocate that succeeded and every destroy/free is counted per device;
// destroying an object while submitted work is in flight is counted as a violation.
// Tests read the counts through FakeDriverStats() (dlopen RTLD_NOLOAD + dlsym).
#pragma once

#include <vulkan/vulkan.h>

struct FakeDriverStatsData {
  long liveObjects;        // buffers, memory, modules, layouts, pipelines, shader objects, pools, fences, ...
  long liveDevices;
  long destroyedInFlight;  // objects destroyed or freed while work was in flight
  long faultsInjected;
};

// Returns the device-level wrapper for name, or null when the fake does not wrap it.
PFN_vkVoidFunction FakeDeviceFunction(const char* name);
// The fault for name, if FAKE_DRIVER_FAIL selects this call; VK_SUCCESS otherwise.
VkResult FakeFault(const char* name);
// Whether the armed fault is of the ":last" kind (only the last object of the call fails).
bool FakeFaultOnLastOnly();
void FakeCountObject(long delta);
void FakeDeviceCreated(VkDevice device, PFN_vkGetDeviceProcAddr next);
