// Layout discovery: runs a tiny compute dispatch per cooperative-matrix type the
// driver lists, reads back which (row, col) every invocation holds at every
// index, and fits a GF(2)-linear layout (coopmat/layout.h). Results are cached on
// disk per device, driver and layer version, so a machine probes once.
#pragma once

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include <optional>
#include <string>
#include <vector>

#include "coopmat/layout.h"

namespace coopmat::layer {

struct DeviceData;

struct ProbeContext {
  VkDevice device = VK_NULL_HANDLE;
  VkPhysicalDevice physicalDevice = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;  // idle: probing runs before vkCreateDevice returns
  uint32_t queueFamily = 0;
  PFN_vkGetDeviceProcAddr getDeviceProcAddr = nullptr;
  PFN_vkSetDeviceLoaderData setDeviceLoaderData = nullptr;  // dispatchable objects the layer makes
  // What the app enabled (probe_features.h): the types whose probe modules the
  // device accepts, and how full subgroups are required.
  bool float16Allowed = false;
  bool int8Allowed = false;
  bool bfloat16Allowed = false;
  bool float8Allowed = false;
  bool fullSubgroupsFlag = false;  // REQUIRE_FULL_SUBGROUPS on the 1.3 module; else the 1.6 module
  bool TypeAllowed(uint32_t componentType) const {
    if (componentType == VK_COMPONENT_TYPE_FLOAT16_KHR) return float16Allowed;
    if (componentType == VK_COMPONENT_TYPE_UINT8_KHR || componentType == VK_COMPONENT_TYPE_SINT8_KHR) return int8Allowed;
    if (componentType == VK_COMPONENT_TYPE_BFLOAT16_KHR) return bfloat16Allowed;
    if (componentType == VK_COMPONENT_TYPE_FLOAT8_E4M3_EXT || componentType == VK_COMPONENT_TYPE_FLOAT8_E5M2_EXT)
      return float8Allowed;
    return true;
  }
  // The app enabled subgroupSizeControl and computeFullSubgroups: the probe may
  // require each subgroup size (needed where pipelines run at several).
  bool requireSubgroupSize = false;
};

// Discovers (or loads from the cache) the layouts of every KHR-listed type at every
// subgroup size a pipeline may run at. Logs what it finds, compares with the
// built-in table of a known driver, and returns only layouts that fitted; where the
// probe fits nothing (it cannot run, or reads nothing), the built-in table of a
// recognised family. Only a probe where every key fitted is cached.
// Sets *deviceLost when the device was lost while probing (vkCreateDevice then fails).
std::vector<LinearLayout> DiscoverLayouts(DeviceData& device, const ProbeContext& context, bool* deviceLost);

// layout_probe=false: the layouts_file setting's layouts, else the builtin_layouts setting's
// table for every type and subgroup size the driver lists, unprobed and uncached (how a
// table or a file is checked against a device: coopmat-selftest --builtin-layouts and
// --layouts); nothing without either setting.
std::vector<LinearLayout> UnprobedLayouts(const DeviceData& device, VkPhysicalDevice physicalDevice);

// The layouts the register path may rely on: the probed ones and, when the app
// enabled NV flexible dimensions on a known driver whose probed layouts all agree
// with its built-in table, the table's other shapes; for every subgroup size a
// pipeline may run at (the lowering chooses per size). Empty when compute shaders
// lack subgroup shuffles.
// The driver family whose published layouts (and measured costs) apply, if known.
std::optional<DriverFamily> RecognizedFamily(const DeviceData& device);

std::vector<LinearLayout> LayoutsForLowering(const DeviceData& device, const std::vector<LinearLayout>& probed);

}  // namespace coopmat::layer
