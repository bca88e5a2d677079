#include "messages.h"

#include <cstdio>
#include <mutex>

#include "layer_names.h"
#include "state.h"

namespace coopmat::layer {
namespace {

VkDebugUtilsMessageSeverityFlagBitsEXT SeverityOf(LogLevel level) {
  switch (level) {
    case LogLevel::Error: return VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    case LogLevel::Warning: return VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
    case LogLevel::Info: return VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT;
    case LogLevel::Debug: return VK_DEBUG_UTILS_MESSAGE_SEVERITY_VERBOSE_BIT_EXT;
  }
  return VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT;
}

std::mutex& StderrMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

void Log(const InstanceData* instance, LogLevel level, const std::string& message) {
  const LogLevel threshold = instance ? instance->settings.logLevel : LogLevel::Warning;
  if (level > threshold) return;
  {
    // One line per message, never interleaved between threads.
    std::lock_guard lock(StderrMutex());
    std::fprintf(stderr, "%s: %s: %s\n", kLogPrefix, LogLevelName(level), message.c_str());
    std::fflush(stderr);
  }
  if (!instance || !instance->debugUtilsEnabled) return;
  VkDebugUtilsMessengerCallbackDataEXT data{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CALLBACK_DATA_EXT};
  data.pMessageIdName = kLayerName;
  data.pMessage = message.c_str();
  instance->messengers.Deliver(SeverityOf(level), VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT, data);
}

std::string ResultName(VkResult result) {
  switch (result) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_UNKNOWN: return "VK_ERROR_UNKNOWN";
    default: return "VkResult " + std::to_string(static_cast<int>(result));
  }
}

}  // namespace coopmat::layer
