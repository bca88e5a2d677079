#include "vk_context.h"

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace cmtest {

namespace {

std::vector<const char*> LayerList(const InstanceOptions& options) {
  // ppEnabledLayerNames[0] is closest to the application.
  std::vector<const char*> layers;
  if (options.validation == Validation::AboveLayer) layers.push_back(kValidationLayerName);
  if (options.withLayer) layers.push_back(kLayerName);
  if (options.validation == Validation::BelowLayer) layers.push_back(kValidationLayerName);
  layers.insert(layers.end(), options.layersBelow.begin(), options.layersBelow.end());
  return layers;
}

VkPhysicalDevice PickPhysicalDevice(VkInstance instance, int index) {
  uint32_t count = 0;
  if (vkEnumeratePhysicalDevices(instance, &count, nullptr) != VK_SUCCESS || count == 0) return VK_NULL_HANDLE;
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance, &count, devices.data());
  if (index >= 0) return static_cast<uint32_t>(index) < count ? devices[static_cast<size_t>(index)] : VK_NULL_HANDLE;
  const char* wanted = std::getenv("COOPMAT_TEST_DEVICE");
  for (VkPhysicalDevice device : devices) {
    VkPhysicalDeviceProperties properties;
    vkGetPhysicalDeviceProperties(device, &properties);
    if (wanted ? std::strstr(properties.deviceName, wanted) != nullptr
               : properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)
      return device;
  }
  return wanted ? VK_NULL_HANDLE : devices[0];
}

}  // namespace

Instance::Instance(const InstanceOptions& options) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "coopmat-tests";
  app.apiVersion = options.apiVersion;

  VkDebugUtilsMessengerCreateInfoEXT messengerInfo{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messengerInfo.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_VERBOSE_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT |
                                  VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                  VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messengerInfo.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messengerInfo.pfnUserCallback = &Instance::OnMessage;
  messengerInfo.pUserData = this;

  VkLayerSettingsCreateInfoEXT settingsInfo{VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT};
  settingsInfo.settingCount = static_cast<uint32_t>(options.settings.size());
  settingsInfo.pSettings = options.settings.data();
  if (!options.settings.empty()) messengerInfo.pNext = &settingsInfo;

  const std::vector<const char*> layers = LayerList(options);
  std::vector<const char*> extensions = options.extensions;
  extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pNext = &messengerInfo;  // also catches messages from vkCreateInstance itself
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  createResult_ = vkCreateInstance(&info, nullptr, &instance_);
  if (createResult_ != VK_SUCCESS) {
    instance_ = VK_NULL_HANDLE;
    return;
  }
  messengerInfo.pNext = nullptr;
  auto create = proc<PFN_vkCreateDebugUtilsMessengerEXT>("vkCreateDebugUtilsMessengerEXT");
  if (create) create(instance_, &messengerInfo, nullptr, &messenger_);
  physicalDevice_ = PickPhysicalDevice(instance_, options.physicalDeviceIndex);
}

Instance::~Instance() {
  if (instance_ == VK_NULL_HANDLE) return;
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = proc<PFN_vkDestroyDebugUtilsMessengerEXT>("vkDestroyDebugUtilsMessengerEXT");
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  vkDestroyInstance(instance_, nullptr);
}

VKAPI_ATTR VkBool32 VKAPI_CALL Instance::OnMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* self) {
  auto* instance = static_cast<Instance*>(self);
  std::lock_guard lock(instance->mutex_);
  instance->messages_.push_back({severity, data->pMessageIdName ? data->pMessageIdName : "",
                                 data->pMessage ? data->pMessage : ""});
  return VK_FALSE;
}

std::vector<Message> Instance::messages() const {
  std::lock_guard lock(mutex_);
  return messages_;
}

std::vector<std::string> Instance::problems() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const Message& m : messages_) {
    if (m.severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) out.push_back(m.id + ": " + m.text);
  }
  return out;
}

void Instance::clearMessages() {
  std::lock_guard lock(mutex_);
  messages_.clear();
}

Device::Device(const Instance& instance, const DeviceOptions& options)
    : instance_(instance), physicalDevice_(options.physicalDevice ? options.physicalDevice : instance.physicalDevice()) {
  if (!instance.ok()) return;

  uint32_t familyCount = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physicalDevice_, &familyCount, nullptr);
  std::vector<VkQueueFamilyProperties> families(familyCount);
  vkGetPhysicalDeviceQueueFamilyProperties(physicalDevice_, &familyCount, families.data());
  for (uint32_t i = 0; i < familyCount; ++i) {
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      queueFamily_ = i;
      break;
    }
  }

  // Every feature the stack reports, the way a test app that wants "everything" asks.
  VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT m1{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT};
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV nv2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR khr{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &v11;
  v11.pNext = &v12;
  v12.pNext = &v13;
  v13.pNext = &khr;
  void** tail = &khr.pNext;
  const bool wantNv = options.enableNvCoopmat2 && HasDeviceExtension(instance, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
  if (wantNv) {
    *tail = &nv2;
    tail = &nv2.pNext;
  }
  VkPhysicalDeviceMaintenance5Features maintenance5{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_5_FEATURES};
  VkPhysicalDeviceShaderObjectFeaturesEXT shaderObject{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_OBJECT_FEATURES_EXT};
  if (options.enableMaintenance5) {
    *tail = &maintenance5;
    tail = &maintenance5.pNext;
  }
  if (options.enableShaderObject) {
    *tail = &shaderObject;
    tail = &shaderObject.pNext;
  }
  // bfloat16 and fp8 (the virtual device's GFX12 profiles, RADV on GFX12): where the
  // device has them, with their cooperative-matrix features, as an app using them asks.
  VkPhysicalDeviceShaderBfloat16FeaturesKHR bfloat16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
  VkPhysicalDeviceShaderFloat8FeaturesEXT float8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT8_FEATURES_EXT};
  const bool wantBfloat16 = HasDeviceExtension(instance, VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
  const bool wantFloat8 = HasDeviceExtension(instance, VK_EXT_SHADER_FLOAT8_EXTENSION_NAME);
  if (wantBfloat16) {
    *tail = &bfloat16;
    tail = &bfloat16.pNext;
  }
  if (wantFloat8) {
    *tail = &float8;
    tail = &float8.pNext;
  }
  void** maintenance1Link = nullptr;
  if (options.enableMaintenance1 && options.chainMaintenance1Features) {
    maintenance1Link = tail;
    *tail = &m1;
    tail = &m1.pNext;
  }
  vkGetPhysicalDeviceFeatures2(physicalDevice_, &features);
  if (wantNv) {
    // Only flexible dimensions: the tests must not lean on the driver's own NV ops.
    nv2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV, nv2.pNext};
    nv2.cooperativeMatrixFlexibleDimensions = VK_TRUE;
  }
  if (options.features) {
    void* next = m1.pNext;
    m1 = *options.features;
    m1.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT;
    m1.pNext = next;
  }

  if (options.editFeatures) options.editFeatures(features);

  if (options.beforeMaintenance1 && maintenance1Link) {
    options.beforeMaintenance1->pNext = reinterpret_cast<VkBaseOutStructure*>(*maintenance1Link);
    *maintenance1Link = options.beforeMaintenance1;
  }

  std::vector<const char*> extensions = {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME};
  if (options.enableMaintenance1) extensions.push_back(VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME);
  if (wantNv) extensions.push_back(VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
  if (options.enableMaintenance5) extensions.push_back(VK_KHR_MAINTENANCE_5_EXTENSION_NAME);
  if (options.enableShaderObject) extensions.push_back(VK_EXT_SHADER_OBJECT_EXTENSION_NAME);
  if (wantBfloat16) extensions.push_back(VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
  if (wantFloat8) extensions.push_back(VK_EXT_SHADER_FLOAT8_EXTENSION_NAME);
  extensions.insert(extensions.end(), options.extraExtensions.begin(), options.extraExtensions.end());

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queueInfo{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queueInfo.queueFamilyIndex = queueFamily_;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &features;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queueInfo;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  createResult_ = vkCreateDevice(physicalDevice_, &info, nullptr, &device_);
  if (createResult_ != VK_SUCCESS) {
    device_ = VK_NULL_HANDLE;
    return;
  }
  nvCoopmat2_ = wantNv;
  vkGetDeviceQueue(device_, queueFamily_, 0, &queue_);
}

Device::~Device() {
  if (device_ != VK_NULL_HANDLE) vkDestroyDevice(device_, nullptr);
}

std::vector<std::string> DeviceExtensions(const Instance& instance, const char* layerName) {
  std::vector<std::string> names;
  uint32_t count = 0;
  if (vkEnumerateDeviceExtensionProperties(instance.physicalDevice(), layerName, &count, nullptr) != VK_SUCCESS)
    return names;
  std::vector<VkExtensionProperties> properties(count);
  vkEnumerateDeviceExtensionProperties(instance.physicalDevice(), layerName, &count, properties.data());
  properties.resize(count);
  for (const auto& p : properties) names.emplace_back(p.extensionName);
  return names;
}

bool HasDeviceExtension(const Instance& instance, const char* name) {
  for (const std::string& n : DeviceExtensions(instance)) {
    if (n == name) return true;
  }
  return false;
}

std::vector<uint32_t> ReadSpirv(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) return {};
  const std::streamsize size = file.tellg();
  if (size <= 0 || size % 4 != 0) return {};
  std::vector<uint32_t> words(static_cast<size_t>(size) / 4);
  file.seekg(0);
  file.read(reinterpret_cast<char*>(words.data()), size);
  return file ? words : std::vector<uint32_t>{};
}

}  // namespace cmtest
