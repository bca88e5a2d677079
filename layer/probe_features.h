// What the layout probe may use on the app's device: only features and
// extensions the app enabled itself (the probe runs on the app's VkDevice, and a
// module needing a feature the device was created without is invalid usage).
#pragma once

#include <vulkan/vulkan.h>

namespace coopmat::layer {

struct ProbeAllowance {
  bool any = false;       // the common needs: cooperativeMatrix, vulkanMemoryModel, and a way to
                          // require full subgroups (the flag, or a SPIR-V 1.6 module)
  bool float16 = false;   // shaderFloat16 + storageBuffer16BitAccess
  bool int8 = false;      // shaderInt8 + storageBuffer8BitAccess (+ VK_KHR_8bit_storage before 1.2)
  bool fullSubgroupsFlag = false;  // computeFullSubgroups enabled: the 1.3 module with the flag
  const char* missing = nullptr;   // why not `any`, for the log
};

// apiVersion: the device's effective version (min of instance and device).
ProbeAllowance AllowedProbe(const VkDeviceCreateInfo& info, uint32_t apiVersion);

}  // namespace coopmat::layer
