// Every message the layer emits goes to stderr, prefixed "coopmat-maintenance1: ",
// and to the application's VK_EXT_debug_utils messengers when it enabled the extension.
#pragma once

#include <vulkan/vulkan.h>

#include <string>

#include "settings.h"

namespace coopmat::layer {

struct InstanceData;

// instance may be null (before an instance exists): then only stderr.
void Log(const InstanceData* instance, LogLevel level, const std::string& message);

// "VK_ERROR_DEVICE_LOST" and the like, for messages.
std::string ResultName(VkResult result);

}  // namespace coopmat::layer
