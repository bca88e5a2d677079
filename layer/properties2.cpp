// vkGetPhysicalDeviceCooperativeMatrixProperties2EXT answered from the driver's
// KHR list (spec.md §5.3): filter by scope and saturating flag, granularity = the
// KHR sizes (the KHR types are exact sizes, so they are valid granularities); the
// same list at every valid subgroup size and at 0.
#include <algorithm>
#include <vector>

#include "entry_points.h"
#include "messages.h"
#include "state.h"

namespace coopmat::layer {
namespace {

bool IsPowerOfTwo(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Why an input cannot have any property (a valid-usage violation), or empty when fine.
std::string InvalidInput(const PhysicalDeviceInfo& device, const VkPhysicalDeviceCooperativeMatrixInfo2EXT& info) {
  if (info.scope != VK_SCOPE_SUBGROUP_KHR)
    return "scope must be VK_SCOPE_SUBGROUP_KHR: workgroup scope needs VK_NV_cooperative_matrix2, which the layer "
           "does not emulate (VUID-VkPhysicalDeviceCooperativeMatrixInfo2EXT-scope-13372)";
  if (info.invocations != 0)
    return "invocations must be 0 for subgroup scope (VUID-VkPhysicalDeviceCooperativeMatrixInfo2EXT-invocations-13381)";
  if (info.subgroupSize != 0) {
    if (!IsPowerOfTwo(info.subgroupSize))
      return "subgroupSize must be a power of two (VUID-VkPhysicalDeviceCooperativeMatrixInfo2EXT-subgroupSize-13374)";
    if (device.subgroupSizeControl &&
        (info.subgroupSize < device.minSubgroupSize || info.subgroupSize > device.maxSubgroupSize))
      return "subgroupSize is outside [minSubgroupSize, maxSubgroupSize] (VUID-13375/13376)";
    if (!device.subgroupSizeControl && info.subgroupSize != device.subgroupSize)
      return "subgroupSize must be the default subgroup size without subgroupSizeControl (VUID-13377)";
  }
  if (info.flags & ~VkCooperativeMatrixFlagsEXT(VK_COOPERATIVE_MATRIX_SATURATING_ACCUMULATION_BIT_EXT))
    return "flags has unknown bits";
  return {};
}

VkResult QueryKhr(const InstanceData& instance, VkPhysicalDevice physicalDevice,
                  std::vector<VkCooperativeMatrixPropertiesKHR>& out) {
  auto query = instance.dispatch.GetPhysicalDeviceCooperativeMatrixPropertiesKHR;
  if (!query) return VK_ERROR_UNKNOWN;
  for (int attempt = 0; attempt < 4; ++attempt) {
    uint32_t count = 0;
    VkResult result = query(physicalDevice, &count, nullptr);
    if (result != VK_SUCCESS) return result;
    out.assign(count, VkCooperativeMatrixPropertiesKHR{VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
    result = query(physicalDevice, &count, out.data());
    out.resize(std::min<size_t>(count, out.size()));
    if (result == VK_SUCCESS) return result;
    if (result != VK_INCOMPLETE) return result;
  }
  return VK_SUCCESS;
}

// Only results the command may return; anything else a broken driver says becomes VK_ERROR_UNKNOWN.
VkResult AllowedError(VkResult result) {
  switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return result;
    default:
      return VK_ERROR_UNKNOWN;
  }
}

// The EXT requires, for subgroup scope at subgroupSize 0 and the default size
// (spec.md §5.3, Vulkan-Docs' vkGetPhysicalDeviceCooperativeMatrixProperties2EXT),
// at least one property for each of three combinations: A = B = f16 with C = Result
// both f16 or both f32; A = B = u8 with C = Result both u32 or both s32; A = B = s8
// with C = Result = s32. The layer can only offer what the driver's KHR list has, so
// it says once per device which combinations have no property at all.
void ReportMandatoryMinimum(InstanceData& instance, VkPhysicalDevice physicalDevice,
                            const std::vector<VkCooperativeMatrixProperties2EXT>& list) {
  struct Combination {
    VkComponentTypeKHR ab;
    std::vector<VkComponentTypeKHR> accumulators;  // any one of them
    const char* name;
  };
  static const Combination kMandatory[] = {
      {VK_COMPONENT_TYPE_FLOAT16_KHR, {VK_COMPONENT_TYPE_FLOAT16_KHR, VK_COMPONENT_TYPE_FLOAT32_KHR}, "f16 x f16 -> f16 or f32"},
      {VK_COMPONENT_TYPE_UINT8_KHR, {VK_COMPONENT_TYPE_UINT32_KHR, VK_COMPONENT_TYPE_SINT32_KHR}, "u8 x u8 -> u32 or s32"},
      {VK_COMPONENT_TYPE_SINT8_KHR, {VK_COMPONENT_TYPE_SINT32_KHR}, "s8 x s8 -> s32"},
  };
  std::string missing;
  for (const Combination& c : kMandatory) {
    const bool present = std::any_of(list.begin(), list.end(), [&](const VkCooperativeMatrixProperties2EXT& p) {
      return p.AType == c.ab && p.BType == c.ab && p.CType == p.ResultType &&
             std::find(c.accumulators.begin(), c.accumulators.end(), p.CType) != c.accumulators.end();
    });
    if (!present) missing += missing.empty() ? c.name : std::string(", ") + c.name;
  }
  if (missing.empty()) return;
  {
    std::lock_guard lock(instance.physicalDevicesMutex);
    if (!instance.mandatoryMinimumReported.insert(physicalDevice).second) return;
  }
  Log(&instance, LogLevel::Warning,
      "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT: the driver's KHR list lacks the mandatory combination(s) " +
          missing + "; the emulated extension is not conformant on this device");
}

}  // namespace

VKAPI_ATTR VkResult VKAPI_CALL GetPhysicalDeviceCooperativeMatrixProperties2EXT(
    VkPhysicalDevice physicalDevice, const VkPhysicalDeviceCooperativeMatrixInfo2EXT* pCooperativeMatrixInfo,
    uint32_t* pPropertyCount, VkCooperativeMatrixProperties2EXT* pProperties) {
  InstanceData* instance = GetInstanceData(physicalDevice);
  if (!instance || !pPropertyCount) return VK_ERROR_UNKNOWN;
  const PhysicalDeviceInfo device = GetPhysicalDeviceInfo(*instance, physicalDevice);
  if (device.nativeExt && !device.serve && instance->dispatch.GetPhysicalDeviceCooperativeMatrixProperties2EXT)
    return instance->dispatch.GetPhysicalDeviceCooperativeMatrixProperties2EXT(physicalDevice, pCooperativeMatrixInfo,
                                                                               pPropertyCount, pProperties);
  if (!device.serve) {
    // The loader would abort here without us; say why and return nothing.
    Log(instance, LogLevel::Error,
        "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT called on a device without VK_KHR_cooperative_matrix");
    *pPropertyCount = 0;
    return VK_SUCCESS;
  }
  if (!pCooperativeMatrixInfo) return VK_ERROR_UNKNOWN;

  std::vector<VkCooperativeMatrixProperties2EXT> list;
  if (const std::string invalid = InvalidInput(device, *pCooperativeMatrixInfo); !invalid.empty()) {
    Log(instance, LogLevel::Warning, "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT: " + invalid);
  } else {
    // KHR properties hold for a pipeline at any subgroup size it may run at (KHR ties
    // no configuration to a size, and an app may require any size in [min, max]:
    // RADV runs cooperative matrices at wave32 and wave64), so every valid size,
    // and 0, gets the whole list.
    std::vector<VkCooperativeMatrixPropertiesKHR> khr;
    const VkResult result = QueryKhr(*instance, physicalDevice, khr);
    if (result != VK_SUCCESS) {
      Log(instance, LogLevel::Error,
          "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR failed (" + std::to_string(result) + ")");
      *pPropertyCount = 0;
      return AllowedError(result);
    }
    const bool saturating = pCooperativeMatrixInfo->flags & VK_COOPERATIVE_MATRIX_SATURATING_ACCUMULATION_BIT_EXT;
    for (const VkCooperativeMatrixPropertiesKHR& p : khr) {
      if (p.scope != pCooperativeMatrixInfo->scope || bool(p.saturatingAccumulation) != saturating) continue;
      VkCooperativeMatrixProperties2EXT out{VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_2_EXT};
      out.MGranularity = p.MSize;
      out.NGranularity = p.NSize;
      out.KGranularity = p.KSize;
      out.AType = p.AType;
      out.BType = p.BType;
      out.CType = p.CType;
      out.ResultType = p.ResultType;
      list.push_back(out);
    }
    if (!saturating) ReportMandatoryMinimum(*instance, physicalDevice, list);
  }
  if (!pProperties) {
    *pPropertyCount = static_cast<uint32_t>(list.size());
    return VK_SUCCESS;
  }
  const uint32_t copied = std::min<uint32_t>(*pPropertyCount, static_cast<uint32_t>(list.size()));
  for (uint32_t i = 0; i < copied; ++i) {
    void* next = pProperties[i].pNext;  // returned-only struct: keep the app's sType/pNext
    pProperties[i] = list[i];
    pProperties[i].pNext = next;
  }
  *pPropertyCount = copied;
  return copied < list.size() ? VK_INCOMPLETE : VK_SUCCESS;
}

}  // namespace coopmat::layer
