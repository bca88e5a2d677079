// The little Vulkan the sample apps need: an instance and device that enable
// VK_EXT_cooperative_matrix_maintenance1 (through VK_LAYER_coopmat_maintenance1 when
// the driver lacks it) and VK_NV_cooperative_matrix2 where the driver has it,
// host-visible storage buffers, and compute kernels that can be dispatched and timed.
//
// Every failing Vulkan call throws sample::VulkanError naming the call.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sample {

inline constexpr const char* kLayerName = "VK_LAYER_coopmat_maintenance1";

class VulkanError : public std::runtime_error {
 public:
  VulkanError(const std::string& call, VkResult result)
      : std::runtime_error(call + " failed (VkResult " + std::to_string(static_cast<int>(result)) + ")"),
        result_(result) {}
  VkResult result() const { return result_; }

 private:
  VkResult result_;
};

struct ContextOptions {
  const char* appName = "coopmat-sample";
  // List VK_LAYER_coopmat_maintenance1 in ppEnabledLayerNames. When false, an
  // implicitly installed copy is switched off too (DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1).
  bool layer = true;
  // Enable VK_EXT_cooperative_matrix_maintenance1 and all of its features when offered.
  bool maintenance1 = true;
  // Enable VK_NV_cooperative_matrix2 (flexible dimensions, reductions, conversions,
  // per-element operations) when the driver offers it.
  bool nvCoopmat2 = true;
  // Switch off Mesa's on-disk shader cache (MESA_SHADER_CACHE_DISABLE, unless set
  // already), so that pipeline creation times are compilations, not cache hits.
  bool uncachedPipelines = false;
  // When set, VK_LAYER_coopmat_maintenance1's "lowering" setting for this instance
  // ("portable": every operation through the Workgroup scratch; "auto": the register
  // path where the driver's layout is known), chained as VkLayerSettingsCreateInfoEXT.
  const char* lowering = nullptr;
  // Ask the layer for its info lines (log_level=info, the lowest-precedence source) and keep
  // them and its warnings: layerMessages(). What a test reads to know which settings and
  // layouts the layer really took (the environment overrides what the app asks).
  bool layerMessages = false;
  // Enable VK_KHR_pipeline_executable_properties (pipelineExecutableInfo) and subgroup
  // size control, each where offered: what sample::CompileForStatistics uses.
  bool pipelineStatistics = false;
  // Environment variables set only while the driver's instance is created (Mesa's
  // driconf options, e.g. radv_cooperative_matrix2_nv=true), then restored.
  std::vector<std::pair<std::string, std::string>> driverEnvironment;
};

class Context {
 public:
  explicit Context(const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  VkDevice device() const { return device_; }
  VkPhysicalDevice physicalDevice() const { return physicalDevice_; }
  VkQueue queue() const { return queue_; }
  uint32_t queueFamily() const { return queueFamily_; }
  VkCommandPool commandPool() const { return commandPool_; }

  const std::string& deviceName() const { return deviceName_; }
  const std::string& driverInfo() const { return driverInfo_; }  // "llvmpipe: Mesa 26.1.6 ..."
  uint32_t subgroupSize() const { return subgroupSize_; }
  // [min, max] subgroup size a pipeline may require (both = subgroupSize() without
  // subgroup size control).
  uint32_t minSubgroupSize() const { return minSubgroupSize_; }
  uint32_t maxSubgroupSize() const { return maxSubgroupSize_; }
  // VK_KHR_pipeline_executable_properties and subgroup size control are enabled.
  bool pipelineStatistics() const { return pipelineStatistics_; }
  // subgroupSizeControl is enabled (ContextOptions::pipelineStatistics asks for it).
  bool subgroupSizeControl() const { return subgroupSizeControl_; }
  VkDriverId driverId() const { return driverId_; }
  bool layerEnabled() const { return layer_; }
  // VK_EXT_cooperative_matrix_maintenance1 is enabled (natively or through the layer).
  bool maintenance1() const { return maintenance1_; }
  // VK_NV_cooperative_matrix2 is enabled with its reduction, conversion and per-element features.
  bool nvCoopmat2() const { return nvCoopmat2_; }
  // Shapes other than the KHR-advertised ones are legal (NV flexible dimensions).
  bool flexibleDimensions() const { return flexibleDimensions_; }
  // The KHR-advertised subgroup-scope (M, N, K, A, C) combinations.
  const std::vector<VkCooperativeMatrixPropertiesKHR>& khrProperties() const { return khrProperties_; }
  // The layer's info and warning lines, from instance creation on (ContextOptions::layerMessages).
  const std::vector<std::string>& layerMessages() const { return layerMessages_; }

  uint32_t MemoryType(uint32_t typeBits, VkMemoryPropertyFlags flags) const;

 private:
  static VKAPI_ATTR VkBool32 VKAPI_CALL OnMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                  VkDebugUtilsMessageTypeFlagsEXT types,
                                                  const VkDebugUtilsMessengerCallbackDataEXT* data, void* user);
  void CreateInstance(const ContextOptions& options);
  void CreateDevice(const ContextOptions& options);

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physicalDevice_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queueFamily_ = 0;
  VkCommandPool commandPool_ = VK_NULL_HANDLE;
  std::string deviceName_, driverInfo_;
  uint32_t subgroupSize_ = 0, minSubgroupSize_ = 0, maxSubgroupSize_ = 0;
  bool pipelineStatistics_ = false, subgroupSizeControl_ = false;
  VkDriverId driverId_ = {};
  bool layer_ = false, maintenance1_ = false, nvCoopmat2_ = false, flexibleDimensions_ = false;
  std::vector<VkCooperativeMatrixPropertiesKHR> khrProperties_;
  std::vector<std::string> layerMessages_;
  VkPhysicalDeviceMemoryProperties memory_{};
};

// A host-visible, host-coherent storage buffer, mapped for its whole life.
class Buffer {
 public:
  Buffer(const Context& context, VkDeviceSize size);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&&) = delete;
  Buffer(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  VkDeviceSize size() const { return size_; }
  void* data() const { return mapped_; }
  template <typename T> T* as() const { return static_cast<T*>(mapped_); }

 private:
  VkDevice device_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkDeviceSize size_;
  void* mapped_ = nullptr;
};

struct KernelOptions {
  uint32_t bindings = 1;           // storage buffers at set 0, bindings 0..bindings-1
  uint32_t pushConstantBytes = 0;  // one range at offset 0, compute stage
  // 32-bit specialization constants: (constantID, value).
  std::vector<std::pair<uint32_t, uint32_t>> specialization;
};

// One compute pipeline with its descriptor set and a command buffer holding one
// dispatch. Creating it measures vkCreateShaderModule (where a layer rewrites the
// module) and vkCreateComputePipelines (where the driver compiles it).
class Kernel {
 public:
  Kernel(const Context& context, std::span<const uint32_t> spirv, const KernelOptions& options);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  double moduleMicroseconds() const { return moduleUs_; }
  double pipelineMicroseconds() const { return pipelineUs_; }
  // The first Run's time. Some drivers (lavapipe among them) compile the shader to
  // machine code at its first dispatch, not in vkCreateComputePipelines.
  double firstRunMicroseconds() const { return firstRunUs_; }

  // Binds buffers[i] at binding i and records one dispatch of groups (x, y, z).
  void Record(std::initializer_list<const Buffer*> buffers, uint32_t x, uint32_t y = 1, uint32_t z = 1,
              std::span<const std::byte> pushConstants = {});
  // Submits the recorded dispatch and waits; returns the wall time in microseconds.
  double Run();
  // Median of `runs` timed Runs after `warmups` untimed ones.
  double MedianMicroseconds(int runs, int warmups = 2);

 private:
  void Release();

  const Context& context_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  uint32_t bindings_, pushConstantBytes_;
  double moduleUs_ = 0, pipelineUs_ = 0, firstRunUs_ = 0;
};

template <typename T> std::span<const std::byte> AsBytes(const T& value) {
  return std::as_bytes(std::span<const T>(&value, 1));
}

// Reads a SPIR-V binary; throws std::runtime_error when it cannot.
std::vector<uint32_t> ReadSpirv(const std::string& path);
// The folder holding a sample's compiled shaders: $COOPMAT_SAMPLE_SHADER_DIR, else
// "shaders" next to the executable.
std::string ShaderDir();
double Median(std::vector<double> values);

}  // namespace sample
