#include "messengers.h"

#include <algorithm>

#include "entry_points.h"
#include "state.h"

namespace coopmat::layer {

Messengers::Listener Messengers::ListenerOf(const VkDebugUtilsMessengerCreateInfoEXT& info) {
  return {info.messageSeverity, info.messageType, info.pfnUserCallback, info.pUserData};
}

void Messengers::CreatingInstance(const void* createInfoChain) {
  std::lock_guard lock(mutex_);
  creatingInstance_ = true;
  for (auto* s = static_cast<const VkBaseInStructure*>(createInfoChain); s; s = s->pNext)
    if (s->sType == VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT)
      instanceCreation_.push_back(ListenerOf(*reinterpret_cast<const VkDebugUtilsMessengerCreateInfoEXT*>(s)));
}

void Messengers::InstanceCreated() {
  std::lock_guard lock(mutex_);
  creatingInstance_ = false;
  instanceCreation_.clear();
}

void Messengers::Add(VkDebugUtilsMessengerEXT handle, const VkDebugUtilsMessengerCreateInfoEXT& info) {
  std::lock_guard lock(mutex_);
  created_.emplace_back(handle, ListenerOf(info));
}

void Messengers::Remove(VkDebugUtilsMessengerEXT handle) {
  std::lock_guard lock(mutex_);
  // Handles need not be unique: one destroy forgets one messenger.
  auto it = std::find_if(created_.begin(), created_.end(), [&](const auto& entry) { return entry.first == handle; });
  if (it != created_.end()) created_.erase(it);
}

void Messengers::Deliver(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT type,
                         const VkDebugUtilsMessengerCallbackDataEXT& data) const {
  std::lock_guard lock(mutex_);
  auto deliver = [&](const Listener& l) {
    if ((l.severities & severity) && (l.types & type) && l.callback) l.callback(severity, type, &data, l.userData);
  };
  if (creatingInstance_) {
    std::for_each(instanceCreation_.begin(), instanceCreation_.end(), deliver);
    return;
  }
  for (const auto& [handle, listener] : created_) deliver(listener);
}

VKAPI_ATTR VkResult VKAPI_CALL CreateDebugUtilsMessengerEXT(VkInstance instance,
                                                            const VkDebugUtilsMessengerCreateInfoEXT* pCreateInfo,
                                                            const VkAllocationCallbacks* pAllocator,
                                                            VkDebugUtilsMessengerEXT* pMessenger) {
  InstanceData* data = GetInstanceData(instance);
  if (!data || !data->dispatch.CreateDebugUtilsMessengerEXT) return VK_ERROR_EXTENSION_NOT_PRESENT;
  const VkResult result = data->dispatch.CreateDebugUtilsMessengerEXT(instance, pCreateInfo, pAllocator, pMessenger);
  if (result != VK_SUCCESS) return result;
  try {
    data->messengers.Add(*pMessenger, *pCreateInfo);
  } catch (...) {
    // The app gets an error, so it must not be left holding a messenger (review dbb465e #7).
    data->dispatch.DestroyDebugUtilsMessengerEXT(instance, *pMessenger, pAllocator);
    *pMessenger = VK_NULL_HANDLE;
    throw;
  }
  return result;
}

VKAPI_ATTR void VKAPI_CALL DestroyDebugUtilsMessengerEXT(VkInstance instance, VkDebugUtilsMessengerEXT messenger,
                                                         const VkAllocationCallbacks* pAllocator) {
  InstanceData* data = GetInstanceData(instance);
  if (!data || !data->dispatch.DestroyDebugUtilsMessengerEXT) return;
  if (messenger != VK_NULL_HANDLE) data->messengers.Remove(messenger);
  data->dispatch.DestroyDebugUtilsMessengerEXT(instance, messenger, pAllocator);
}

}  // namespace coopmat::layer
