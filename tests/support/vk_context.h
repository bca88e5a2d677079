// A Vulkan instance + device made through the real loader, the way an app would,
// for the tests. Captures every VK_EXT_debug_utils message so tests can assert
// "no validation message" or "the layer said X".
#pragma once

#include <vulkan/vulkan.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cmtest {

inline constexpr const char* kLayerName = "VK_LAYER_coopmat_maintenance1";
inline constexpr const char* kValidationLayerName = "VK_LAYER_KHRONOS_validation";

enum class Validation { Off, AboveLayer, BelowLayer };

struct InstanceOptions {
  bool withLayer = true;                 // enable our layer explicitly
  Validation validation = Validation::Off;
  std::vector<VkLayerSettingEXT> settings;  // VkLayerSettingsCreateInfoEXT contents
  std::vector<const char*> layersBelow;     // extra layers between ours and the driver
  std::vector<const char*> extensions;      // instance extensions besides VK_EXT_debug_utils
  uint32_t apiVersion = VK_API_VERSION_1_3;
  int physicalDeviceIndex = -1;             // that device (vkEnumeratePhysicalDevices order); -1: see physicalDevice()
};

struct DeviceOptions {
  bool enableMaintenance1 = true;        // VK_EXT_cooperative_matrix_maintenance1 + every op feature
  bool chainMaintenance1Features = true; // chain VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT
  bool enableNvCoopmat2 = false;         // VK_NV_cooperative_matrix2 flexible dimensions (bigger shapes)
  bool enableMaintenance5 = false;       // VK_KHR_maintenance5: SPIR-V chained into pipeline stages
  bool enableShaderObject = false;       // VK_EXT_shader_object: vkCreateShadersEXT
  // Overrides for the feature struct when chained (null: every feature the device reports).
  const VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT* features = nullptr;
  // A node (its pNext is overwritten) put into vkCreateDevice's chain right before the
  // maintenance1 feature struct: e.g. a struct from newer headers.
  VkBaseOutStructure* beforeMaintenance1 = nullptr;
  // Called with the filled chain (Features2 -> 1.1 -> 1.2 -> 1.3 -> KHR coopmat -> ...)
  // before vkCreateDevice: a test that wants fewer features switches them off here.
  std::function<void(VkPhysicalDeviceFeatures2&)> editFeatures;
  std::vector<const char*> extraExtensions;  // more device extensions to enable
  VkPhysicalDevice physicalDevice = VK_NULL_HANDLE;  // null: the instance's physicalDevice()
};

struct Message {
  VkDebugUtilsMessageSeverityFlagBitsEXT severity;
  std::string id;
  std::string text;
};

class Instance {
 public:
  explicit Instance(const InstanceOptions& options = {});
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  // The lavapipe device, or the first one whose name contains $COOPMAT_TEST_DEVICE, or the
  // one InstanceOptions::physicalDeviceIndex names.
  VkPhysicalDevice physicalDevice() const { return physicalDevice_; }
  bool ok() const { return instance_ != VK_NULL_HANDLE && physicalDevice_ != VK_NULL_HANDLE; }
  VkResult createResult() const { return createResult_; }

  std::vector<Message> messages() const;
  // Messages at warning or error severity, each as "id: text".
  std::vector<std::string> problems() const;
  void clearMessages();

  template <typename Fn> Fn proc(const char* name) const {
    return reinterpret_cast<Fn>(vkGetInstanceProcAddr(instance_, name));
  }

 private:
  static VKAPI_ATTR VkBool32 VKAPI_CALL OnMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                  VkDebugUtilsMessageTypeFlagsEXT types,
                                                  const VkDebugUtilsMessengerCallbackDataEXT* data, void* self);
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physicalDevice_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkResult createResult_ = VK_ERROR_INITIALIZATION_FAILED;
  mutable std::mutex mutex_;
  std::vector<Message> messages_;
};

class Device {
 public:
  Device(const Instance& instance, const DeviceOptions& options = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  bool ok() const { return device_ != VK_NULL_HANDLE; }
  VkResult createResult() const { return createResult_; }
  VkDevice handle() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queueFamily() const { return queueFamily_; }
  VkPhysicalDevice physicalDevice() const { return physicalDevice_; }
  const Instance& instance() const { return instance_; }
  bool nvCoopmat2() const { return nvCoopmat2_; }

 private:
  const Instance& instance_;
  VkPhysicalDevice physicalDevice_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queueFamily_ = 0;
  VkResult createResult_ = VK_ERROR_INITIALIZATION_FAILED;
  bool nvCoopmat2_ = false;
};

// Device extension names as the instance (through any enabled layers) reports them.
std::vector<std::string> DeviceExtensions(const Instance& instance, const char* layerName = nullptr);
bool HasDeviceExtension(const Instance& instance, const char* name);

// Reads a binary SPIR-V file; empty on failure.
std::vector<uint32_t> ReadSpirv(const std::string& path);

}  // namespace cmtest
