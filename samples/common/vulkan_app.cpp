#include "vulkan_app.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "platform.h"

namespace sample {
namespace {

void Check(VkResult result, const char* call) {
  if (result != VK_SUCCESS) throw VulkanError(call, result);
}

bool HasLayer(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  return std::any_of(layers.begin(), layers.end(), [&](const auto& l) { return std::strcmp(l.layerName, name) == 0; });
}

bool HasExtension(const std::vector<VkExtensionProperties>& list, const char* name) {
  return std::any_of(list.begin(), list.end(), [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// Sets environment variables for its lifetime and puts back what was there before.
class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(const std::vector<std::pair<std::string, std::string>>& variables) {
    for (const auto& [name, value] : variables) {
      const char* old = std::getenv(name.c_str());
      saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
      coopmat::platform::SetEnvironment(name.c_str(), value.c_str());
    }
  }
  ~ScopedEnvironment() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      coopmat::platform::SetEnvironment(it->first.c_str(), it->second ? it->second->c_str() : nullptr);
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace

// ---------------------------------------------------------------------------
// Context

Context::Context(const ContextOptions& options) {
  CreateInstance(options);
  CreateDevice(options);
}

Context::~Context() {
  if (commandPool_) vkDestroyCommandPool(device_, commandPool_, nullptr);
  if (device_) vkDestroyDevice(device_, nullptr);
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
}

VKAPI_ATTR VkBool32 VKAPI_CALL Context::OnMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                  VkDebugUtilsMessageTypeFlagsEXT,
                                                  const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  const char* text = data->pMessage ? data->pMessage : "(no text)";
  // Errors: the driver's reason for a failed pipeline, the layer's for a failed rewrite.
  // Less severe ones come only where ContextOptions::layerMessages asked for them.
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) std::fprintf(stderr, "vulkan error: %s\n", text);
  else if (data->pMessageIdName && std::strcmp(data->pMessageIdName, kLayerName) == 0)  // not a test layer's below
    static_cast<Context*>(user)->layerMessages_.push_back(text);
  return VK_FALSE;
}

void Context::CreateInstance(const ContextOptions& options) {
  const char* disable = "DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1";
  if (options.layer && !HasLayer(kLayerName))
    throw std::runtime_error(std::string(kLayerName) + " is not on the layer path (set VK_ADD_LAYER_PATH=<build>/layer)");
  if (!options.layer) coopmat::platform::SetEnvironment(disable, "1");  // also off when installed as an implicit layer
  if (options.uncachedPipelines && !std::getenv("MESA_SHADER_CACHE_DISABLE"))
    coopmat::platform::SetEnvironment("MESA_SHADER_CACHE_DISABLE", "true");

  uint32_t count = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> available(count);
  vkEnumerateInstanceExtensionProperties(nullptr, &count, available.data());
  std::vector<const char*> extensions;
  const bool debugUtils = HasExtension(available, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  if (debugUtils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = options.appName;
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  info.enabledLayerCount = options.layer ? 1 : 0;
  info.ppEnabledLayerNames = &kLayerName;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  static const char* const kInfo = "info";
  std::vector<VkLayerSettingEXT> layerSettings;
  if (options.lowering) layerSettings.push_back({kLayerName, "lowering", VK_LAYER_SETTING_TYPE_STRING_EXT, 1, &options.lowering});
  if (options.layerMessages) layerSettings.push_back({kLayerName, "log_level", VK_LAYER_SETTING_TYPE_STRING_EXT, 1, &kInfo});
  VkLayerSettingsCreateInfoEXT settings{VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT};
  settings.settingCount = static_cast<uint32_t>(layerSettings.size());
  settings.pSettings = layerSettings.data();
  if (!layerSettings.empty()) info.pNext = &settings;
  // The messenger below hears what comes after vkCreateInstance; this one what it says.
  VkDebugUtilsMessengerCreateInfoEXT creationMessenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  creationMessenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                                      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                      VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT;
  creationMessenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
  creationMessenger.pfnUserCallback = &Context::OnMessage;
  creationMessenger.pUserData = this;
  if (options.layerMessages && debugUtils) {
    creationMessenger.pNext = info.pNext;
    info.pNext = &creationMessenger;
  }
  VkResult created;
  {
    const ScopedEnvironment driverEnvironment(options.driverEnvironment);
    created = vkCreateInstance(&info, nullptr, &instance_);
  }
  if (!options.layer) coopmat::platform::SetEnvironment(disable, nullptr);
  Check(created, "vkCreateInstance");
  layer_ = options.layer;

  if (debugUtils) {
    VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    if (options.layerMessages)
      messenger.messageSeverity |= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT;
    messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
    messenger.pfnUserCallback = &Context::OnMessage;
    messenger.pUserData = this;
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (create) create(instance_, &messenger, nullptr, &messenger_);
  }
}

void Context::CreateDevice(const ContextOptions& options) {
  // The first device with KHR cooperative matrices ($COOPMAT_SAMPLE_DEVICE picks by name).
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance_, &count, devices.data());
  const char* wanted = std::getenv("COOPMAT_SAMPLE_DEVICE");
  std::vector<VkExtensionProperties> extensions;
  for (VkPhysicalDevice candidate : devices) {
    VkPhysicalDeviceProperties properties;
    vkGetPhysicalDeviceProperties(candidate, &properties);
    if (wanted && !std::strstr(properties.deviceName, wanted)) continue;
    vkEnumerateDeviceExtensionProperties(candidate, nullptr, &count, nullptr);
    extensions.resize(count);
    vkEnumerateDeviceExtensionProperties(candidate, nullptr, &count, extensions.data());
    if (HasExtension(extensions, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
      physicalDevice_ = candidate;
      break;
    }
  }
  if (!physicalDevice_) throw std::runtime_error("no device with VK_KHR_cooperative_matrix");

  VkPhysicalDeviceSubgroupSizeControlProperties sizeControl{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, &sizeControl};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, &subgroup};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &driver};
  vkGetPhysicalDeviceProperties2(physicalDevice_, &properties);
  deviceName_ = properties.properties.deviceName;
  driverInfo_ = std::string(driver.driverName) + " " + driver.driverInfo;
  subgroupSize_ = subgroup.subgroupSize;
  minSubgroupSize_ = sizeControl.minSubgroupSize ? sizeControl.minSubgroupSize : subgroupSize_;
  maxSubgroupSize_ = sizeControl.maxSubgroupSize ? sizeControl.maxSubgroupSize : subgroupSize_;
  driverId_ = driver.driverID;
  vkGetPhysicalDeviceMemoryProperties(physicalDevice_, &memory_);

  auto khrQuery = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
      vkGetInstanceProcAddr(instance_, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  if (khrQuery && khrQuery(physicalDevice_, &count, nullptr) == VK_SUCCESS) {
    khrProperties_.assign(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
    khrQuery(physicalDevice_, &count, khrProperties_.data());
  }

  // Features: ask what the device has, keep what the samples use.
  VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT m1{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT};
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executableInfo{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  VkPhysicalDeviceShaderBfloat16FeaturesKHR bf16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
  VkPhysicalDeviceShaderFloat8FeaturesEXT fp8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT8_FEATURES_EXT};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR khr{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, &khr};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &v13};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &v12};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &v11};
  void** tail = &khr.pNext;
  std::vector<const char*> enabled = {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME};
  const bool wantM1 =
      options.maintenance1 && HasExtension(extensions, VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME);
  const bool wantNv = options.nvCoopmat2 && HasExtension(extensions, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
  if (wantM1) {
    enabled.push_back(VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME);
    *tail = &m1;
    tail = &m1.pNext;
  }
  if (wantNv) {
    enabled.push_back(VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
    *tail = &nv;
    tail = &nv.pNext;
  }
  const bool wantStatistics =
      options.pipelineStatistics && HasExtension(extensions, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  if (wantStatistics) {
    enabled.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    *tail = &executableInfo;
    tail = &executableInfo.pNext;
  }
  // bf16 and fp8 matrices (opbench's cases on drivers that list them).
  if (HasExtension(extensions, VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME)) {
    enabled.push_back(VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
    *tail = &bf16;
    tail = &bf16.pNext;
  }
  if (HasExtension(extensions, VK_EXT_SHADER_FLOAT8_EXTENSION_NAME)) {
    enabled.push_back(VK_EXT_SHADER_FLOAT8_EXTENSION_NAME);
    *tail = &fp8;
    tail = &fp8.pNext;
  }
  vkGetPhysicalDeviceFeatures2(physicalDevice_, &features);
  if (!khr.cooperativeMatrix) throw std::runtime_error("cooperativeMatrix feature not supported");

  // What the sample shaders need: f16 and 8-bit arithmetic and storage, the Vulkan
  // memory model; plus the cooperative-matrix features themselves.
  VkPhysicalDeviceVulkan11Features want11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  want11.storageBuffer16BitAccess = v11.storageBuffer16BitAccess;
  VkPhysicalDeviceVulkan12Features want12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  want12.shaderFloat16 = v12.shaderFloat16;
  want12.shaderInt8 = v12.shaderInt8;
  want12.storageBuffer8BitAccess = v12.storageBuffer8BitAccess;
  want12.vulkanMemoryModel = v12.vulkanMemoryModel;
  want12.vulkanMemoryModelDeviceScope = v12.vulkanMemoryModelDeviceScope;
  VkPhysicalDeviceVulkan13Features want13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  want13.subgroupSizeControl = options.pipelineStatistics && v13.subgroupSizeControl;
  want13.computeFullSubgroups = options.pipelineStatistics && v13.computeFullSubgroups;
  subgroupSizeControl_ = want13.subgroupSizeControl;
  pipelineStatistics_ = wantStatistics && executableInfo.pipelineExecutableInfo;
  VkPhysicalDeviceFeatures2 request{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &want11};
  want11.pNext = &want12;
  want12.pNext = &want13;
  want13.pNext = &khr;  // khr -> [m1] -> [nv] -> [...], the rest as the device reported them
  void* next = khr.pNext;
  khr = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, next};
  khr.cooperativeMatrix = VK_TRUE;
  if (wantNv) {
    // Tensor addressing, block loads and workgroup scope are not used.
    nv.cooperativeMatrixWorkgroupScope = VK_FALSE;
    nv.cooperativeMatrixTensorAddressing = VK_FALSE;
    nv.cooperativeMatrixBlockLoads = VK_FALSE;
    nvCoopmat2_ = nv.cooperativeMatrixReductions && nv.cooperativeMatrixConversions &&
                  nv.cooperativeMatrixPerElementOperations;
    flexibleDimensions_ = nv.cooperativeMatrixFlexibleDimensions;
  }
  maintenance1_ = wantM1 && m1.cooperativeMatrixReductions && m1.cooperativeMatrixConversions &&
                  m1.cooperativeMatrixPerElementOperations && m1.cooperativeMatrixGetCoordinate;

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
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queueInfo{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queueInfo.queueFamilyIndex = queueFamily_;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &request};
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queueInfo;
  info.enabledExtensionCount = static_cast<uint32_t>(enabled.size());
  info.ppEnabledExtensionNames = enabled.data();
  Check(vkCreateDevice(physicalDevice_, &info, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, queueFamily_, 0, &queue_);

  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = queueFamily_;
  Check(vkCreateCommandPool(device_, &pool, nullptr, &commandPool_), "vkCreateCommandPool");
}

uint32_t Context::MemoryType(uint32_t typeBits, VkMemoryPropertyFlags flags) const {
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if ((typeBits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & flags) == flags) return i;
  }
  throw std::runtime_error("no suitable memory type");
}

// ---------------------------------------------------------------------------
// Buffer

Buffer::Buffer(const Context& context, VkDeviceSize size) : device_(context.device()), size_(size) {
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = std::max<VkDeviceSize>(size, 16);
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  Check(vkCreateBuffer(device_, &info, nullptr, &buffer_), "vkCreateBuffer");
  VkMemoryRequirements requirements;
  vkGetBufferMemoryRequirements(device_, buffer_, &requirements);
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = requirements.size;
  alloc.memoryTypeIndex = context.MemoryType(requirements.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                                             VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  try {
    Check(vkAllocateMemory(device_, &alloc, nullptr, &memory_), "vkAllocateMemory");
    Check(vkBindBufferMemory(device_, buffer_, memory_, 0), "vkBindBufferMemory");
    Check(vkMapMemory(device_, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
  } catch (...) {
    if (memory_) vkFreeMemory(device_, memory_, nullptr);
    vkDestroyBuffer(device_, buffer_, nullptr);
    throw;
  }
  std::memset(mapped_, 0, static_cast<size_t>(size));
}

Buffer::Buffer(Buffer&& other) noexcept
    : device_(other.device_), buffer_(other.buffer_), memory_(other.memory_), size_(other.size_), mapped_(other.mapped_) {
  other.buffer_ = VK_NULL_HANDLE;
  other.memory_ = VK_NULL_HANDLE;
  other.mapped_ = nullptr;
}

Buffer::~Buffer() {
  if (buffer_) vkDestroyBuffer(device_, buffer_, nullptr);
  if (memory_) vkFreeMemory(device_, memory_, nullptr);
}

// ---------------------------------------------------------------------------
// Kernel

namespace {
using Clock = std::chrono::steady_clock;
double MicrosecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}
}  // namespace

Kernel::Kernel(const Context& context, std::span<const uint32_t> spirv, const KernelOptions& options)
    : context_(context), bindings_(options.bindings), pushConstantBytes_(options.pushConstantBytes) {
  const VkDevice device = context.device();
  // Anything thrown from here on leaves a half-made kernel: release it.
  try {
    VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    moduleInfo.codeSize = spirv.size_bytes();
    moduleInfo.pCode = spirv.data();
    auto start = Clock::now();
    Check(vkCreateShaderModule(device, &moduleInfo, nullptr, &module_), "vkCreateShaderModule");
    moduleUs_ = MicrosecondsSince(start);

    std::vector<VkDescriptorSetLayoutBinding> bindings(bindings_);
    for (uint32_t i = 0; i < bindings_; ++i)
      bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo setInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    setInfo.bindingCount = bindings_;
    setInfo.pBindings = bindings.data();
    Check(vkCreateDescriptorSetLayout(device, &setInfo, nullptr, &setLayout_), "vkCreateDescriptorSetLayout");

    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, pushConstantBytes_};
    VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layoutInfo.setLayoutCount = 1;
    layoutInfo.pSetLayouts = &setLayout_;
    layoutInfo.pushConstantRangeCount = pushConstantBytes_ ? 1 : 0;
    layoutInfo.pPushConstantRanges = &range;
    Check(vkCreatePipelineLayout(device, &layoutInfo, nullptr, &pipelineLayout_), "vkCreatePipelineLayout");

    VkComputePipelineCreateInfo pipelineInfo{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pipelineInfo.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipelineInfo.stage.module = module_;
    pipelineInfo.stage.pName = "main";
    std::vector<VkSpecializationMapEntry> entries;
    std::vector<uint32_t> values;
    for (const auto& [id, value] : options.specialization) {
      entries.push_back({id, static_cast<uint32_t>(values.size() * 4), 4});
      values.push_back(value);
    }
    const VkSpecializationInfo specialization{static_cast<uint32_t>(entries.size()), entries.data(), values.size() * 4,
                                              values.data()};
    if (!entries.empty()) pipelineInfo.stage.pSpecializationInfo = &specialization;
    pipelineInfo.layout = pipelineLayout_;
    start = Clock::now();
    const VkResult created = vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &pipelineInfo, nullptr, &pipeline_);
    pipelineUs_ = MicrosecondsSince(start);
    if (created != VK_SUCCESS) pipeline_ = VK_NULL_HANDLE;
    Check(created, "vkCreateComputePipelines");

    VkDescriptorPoolSize poolSize{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, bindings_};
    VkDescriptorPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    poolInfo.maxSets = 1;
    poolInfo.poolSizeCount = 1;
    poolInfo.pPoolSizes = &poolSize;
    Check(vkCreateDescriptorPool(device, &poolInfo, nullptr, &pool_), "vkCreateDescriptorPool");
    VkDescriptorSetAllocateInfo setAlloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    setAlloc.descriptorPool = pool_;
    setAlloc.descriptorSetCount = 1;
    setAlloc.pSetLayouts = &setLayout_;
    Check(vkAllocateDescriptorSets(device, &setAlloc, &set_), "vkAllocateDescriptorSets");

    VkCommandBufferAllocateInfo commandInfo{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    commandInfo.commandPool = context.commandPool();
    commandInfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    commandInfo.commandBufferCount = 1;
    Check(vkAllocateCommandBuffers(device, &commandInfo, &commands_), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fenceInfo{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    Check(vkCreateFence(device, &fenceInfo, nullptr, &fence_), "vkCreateFence");
  } catch (...) {
    Release();
    throw;
  }
}

Kernel::~Kernel() { Release(); }

void Kernel::Release() {
  const VkDevice device = context_.device();
  if (fence_) vkDestroyFence(device, fence_, nullptr);
  if (commands_) vkFreeCommandBuffers(device, context_.commandPool(), 1, &commands_);
  if (pool_) vkDestroyDescriptorPool(device, pool_, nullptr);
  if (pipeline_) vkDestroyPipeline(device, pipeline_, nullptr);
  if (pipelineLayout_) vkDestroyPipelineLayout(device, pipelineLayout_, nullptr);
  if (setLayout_) vkDestroyDescriptorSetLayout(device, setLayout_, nullptr);
  if (module_) vkDestroyShaderModule(device, module_, nullptr);
  fence_ = VK_NULL_HANDLE;
  commands_ = VK_NULL_HANDLE;
  pool_ = VK_NULL_HANDLE;
  pipeline_ = VK_NULL_HANDLE;
  pipelineLayout_ = VK_NULL_HANDLE;
  setLayout_ = VK_NULL_HANDLE;
  module_ = VK_NULL_HANDLE;
}

void Kernel::Record(std::initializer_list<const Buffer*> buffers, uint32_t x, uint32_t y, uint32_t z,
                    std::span<const std::byte> pushConstants) {
  if (buffers.size() != bindings_) throw std::runtime_error("Kernel::Record: wrong number of buffers");
  std::vector<VkDescriptorBufferInfo> infos;
  std::vector<VkWriteDescriptorSet> writes;
  infos.reserve(buffers.size());
  for (const Buffer* buffer : buffers) {
    infos.push_back({buffer->handle(), 0, VK_WHOLE_SIZE});
    VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    write.dstSet = set_;
    write.dstBinding = static_cast<uint32_t>(writes.size());
    write.descriptorCount = 1;
    write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    write.pBufferInfo = &infos.back();
    writes.push_back(write);
  }
  vkUpdateDescriptorSets(context_.device(), static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);

  Check(vkResetCommandBuffer(commands_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  Check(vkBeginCommandBuffer(commands_, &begin), "vkBeginCommandBuffer");
  vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipelineLayout_, 0, 1, &set_, 0, nullptr);
  if (!pushConstants.empty()) {
    vkCmdPushConstants(commands_, pipelineLayout_, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       static_cast<uint32_t>(pushConstants.size()), pushConstants.data());
  }
  vkCmdDispatch(commands_, x, y, z);
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                       nullptr, 0, nullptr);
  Check(vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
}

double Kernel::Run() {
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands_;
  const auto start = Clock::now();
  Check(vkQueueSubmit(context_.queue(), 1, &submit, fence_), "vkQueueSubmit");
  Check(vkWaitForFences(context_.device(), 1, &fence_, VK_TRUE, 60'000'000'000ull), "vkWaitForFences");
  const double us = MicrosecondsSince(start);
  Check(vkResetFences(context_.device(), 1, &fence_), "vkResetFences");
  if (firstRunUs_ == 0) firstRunUs_ = us;
  return us;
}

double Kernel::MedianMicroseconds(int runs, int warmups) {
  for (int i = 0; i < warmups; ++i) Run();
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) times.push_back(Run());
  return Median(std::move(times));
}

// ---------------------------------------------------------------------------
// Files

std::vector<uint32_t> ReadSpirv(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) throw std::runtime_error("cannot open " + path);
  const std::streamsize size = file.tellg();
  if (size <= 0 || size % 4 != 0) throw std::runtime_error(path + " is not a SPIR-V binary");
  std::vector<uint32_t> words(static_cast<size_t>(size) / 4);
  file.seekg(0);
  file.read(reinterpret_cast<char*>(words.data()), size);
  if (!file) throw std::runtime_error("cannot read " + path);
  return words;
}

std::string ShaderDir() {
  if (const char* dir = std::getenv("COOPMAT_SAMPLE_SHADER_DIR")) return dir;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("shaders") : (exe.parent_path() / "shaders").string();
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace sample
