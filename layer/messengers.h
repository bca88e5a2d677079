// The application's VK_EXT_debug_utils messengers, which the layer calls itself.
// Submitting a message down the chain (vkSubmitDebugUtilsMessageEXT) reaches them
// through the loader, but loaders before 1.4.345 (Debian 13's 1.4.309, Ubuntu 24.04's
// 1.3.275) take their global lock there, which vkCreateInstance, vkCreateDevice and the
// other commands the layer logs from already hold: the application would hang. As the
// loader does, messengers chained into VkInstanceCreateInfo hear vkCreateInstance only;
// those made with vkCreateDebugUtilsMessengerEXT hear everything after it.
#pragma once

#include <vulkan/vulkan.h>

#include <mutex>
#include <utility>
#include <vector>

namespace coopmat::layer {

class Messengers {
 public:
  // The messengers chained into the instance's create info, for the messages of
  // vkCreateInstance until InstanceCreated().
  void CreatingInstance(const void* createInfoChain);
  void InstanceCreated();

  void Add(VkDebugUtilsMessengerEXT handle, const VkDebugUtilsMessengerCreateInfoEXT& info);
  void Remove(VkDebugUtilsMessengerEXT handle);

  // Calls every messenger that listens to this severity and type.
  void Deliver(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT type,
               const VkDebugUtilsMessengerCallbackDataEXT& data) const;

 private:
  struct Listener {
    VkDebugUtilsMessageSeverityFlagsEXT severities = 0;
    VkDebugUtilsMessageTypeFlagsEXT types = 0;
    PFN_vkDebugUtilsMessengerCallbackEXT callback = nullptr;
    void* userData = nullptr;
  };
  static Listener ListenerOf(const VkDebugUtilsMessengerCreateInfoEXT& info);

  // Held while a callback runs: the callback may not call Vulkan (the extension's
  // valid usage), and a messenger is not destroyed under it.
  mutable std::mutex mutex_;
  bool creatingInstance_ = false;
  std::vector<Listener> instanceCreation_;
  std::vector<std::pair<VkDebugUtilsMessengerEXT, Listener>> created_;
};

}  // namespace coopmat::layer
