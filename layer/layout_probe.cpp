#include "layout_probe.h"

#include "cache_files.h"


#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string_view>

#include "layout_probe_shaders.h"  // generated: kProbe<Type>[] SPIR-V words
#include "messages.h"
#include "state.h"

namespace coopmat::layer {
namespace {

// The file's first line; the build identity in the name retires files of other builds.
constexpr const char* kCacheFormat = "coopmat-maintenance1 layouts v3";

struct ProbeShader {
  uint32_t componentType;
  std::span<const uint32_t> words13;  // SPIR-V 1.3, run with REQUIRE_FULL_SUBGROUPS
  std::span<const uint32_t> words16;  // SPIR-V 1.6 (full subgroups implied)
  uint32_t bytes;          // element size in the code buffers
  uint32_t largestCode;    // largest coordinate the type holds exactly
};

const ProbeShader* ShaderFor(uint32_t componentType) {
  static const ProbeShader kShaders[] = {
      {kTypeF16, kProbeF16_13, kProbeF16_16, 2, 2048},     {kTypeF32, kProbeF32_13, kProbeF32_16, 4, 1u << 24},
      {kTypeU8, kProbeU8_13, kProbeU8_16, 1, 255},         {kTypeS8, kProbeS8_13, kProbeS8_16, 1, 127},
      {kTypeU32, kProbeU32_13, kProbeU32_16, 4, ~0u},      {kTypeS32, kProbeS32_13, kProbeS32_16, 4, 0x7fffffffu},
      // bf16: integers, exact up to 256; fp8: bit patterns below the first NaN (E4M3
      // 0x7f) or infinity (E5M2 0x7c), read back by a bitcast.
      {kTypeBF16, kProbeBF16_13, kProbeBF16_16, 2, 256},  {kTypeE4M3, kProbeE4M3_13, kProbeE4M3_16, 1, 0x7e},
      {kTypeE5M2, kProbeE5M2_13, kProbeE5M2_16, 1, 0x7b},
  };
  for (const ProbeShader& s : kShaders) {
    if (s.componentType == componentType) return &s;
  }
  return nullptr;
}

// Host encoding of a small non-negative integer in the component type.
void EncodeCode(uint32_t componentType, uint32_t value, std::byte* out) {
  switch (componentType) {
    case kTypeF16: {
      // Exact for value <= 2048: binary16 with a 10-bit mantissa.
      uint16_t half = 0;
      if (value != 0) {
        const int exponent = static_cast<int>(std::floor(std::log2(static_cast<double>(value))));
        const uint32_t mantissa = ((value << 10) >> exponent) & 0x3ff;
        half = static_cast<uint16_t>(((exponent + 15) << 10) | mantissa);
      }
      std::memcpy(out, &half, 2);
      break;
    }
    case kTypeF32: {
      const float f = static_cast<float>(value);
      std::memcpy(out, &f, 4);
      break;
    }
    case kTypeBF16: {
      // The top half of the binary32 value: exact for value <= 256.
      const float f = static_cast<float>(value);
      uint32_t bits = 0;
      std::memcpy(&bits, &f, 4);
      const uint16_t bf16 = static_cast<uint16_t>(bits >> 16);
      std::memcpy(out, &bf16, 2);
      break;
    }
    case kTypeE4M3:
    case kTypeE5M2:  // the code is the bit pattern
    case kTypeU8:
    case kTypeS8: {
      const uint8_t b = static_cast<uint8_t>(value);
      std::memcpy(out, &b, 1);
      break;
    }
    default:
      std::memcpy(out, &value, 4);
  }
}

// Device functions the probe needs, from the next layer down.
#define COOPMAT_PROBE_FUNCTIONS(X)                                                                              \
  X(CreateBuffer) X(DestroyBuffer) X(GetBufferMemoryRequirements) X(AllocateMemory) X(FreeMemory)               \
  X(BindBufferMemory) X(MapMemory) X(CreateShaderModule) X(DestroyShaderModule) X(CreateDescriptorSetLayout)    \
  X(DestroyDescriptorSetLayout) X(CreatePipelineLayout) X(DestroyPipelineLayout) X(CreateComputePipelines)      \
  X(DestroyPipeline) X(CreateDescriptorPool) X(DestroyDescriptorPool) X(AllocateDescriptorSets)                 \
  X(UpdateDescriptorSets) X(CreateCommandPool) X(DestroyCommandPool) X(AllocateCommandBuffers)                  \
  X(BeginCommandBuffer) X(EndCommandBuffer) X(CmdBindPipeline) X(CmdBindDescriptorSets) X(CmdDispatch)          \
  X(CreateFence) X(DestroyFence) X(WaitForFences) X(QueueSubmit) X(QueueWaitIdle) X(CmdPipelineBarrier)

struct Functions {
#define COOPMAT_PROBE_DECLARE(name) PFN_vk##name name = nullptr;
  COOPMAT_PROBE_FUNCTIONS(COOPMAT_PROBE_DECLARE)
#undef COOPMAT_PROBE_DECLARE

  bool Load(VkDevice device, PFN_vkGetDeviceProcAddr gdpa) {
    bool ok = true;
#define COOPMAT_PROBE_LOAD(name)                                       \
  name = reinterpret_cast<PFN_vk##name>(gdpa(device, "vk" #name)); \
  ok &= name != nullptr;
    COOPMAT_PROBE_FUNCTIONS(COOPMAT_PROBE_LOAD)
#undef COOPMAT_PROBE_LOAD
    return ok;
  }
};

// One probe dispatch with everything it creates; the destructor frees it all.
class ProbeRun {
 public:
  ProbeRun(const ProbeContext& context, const Functions& vk, const InstanceData& instance)
      : context_(context), vk_(vk), instance_(instance) {}
  ~ProbeRun() {
    VkDevice d = context_.device;
    // Nothing is destroyed while the GPU may still use it (a timed-out wait).
    if (inFlight_) vk_.QueueWaitIdle(context_.queue);
    if (fence_) vk_.DestroyFence(d, fence_, nullptr);
    if (commandPool_) vk_.DestroyCommandPool(d, commandPool_, nullptr);
    if (descriptorPool_) vk_.DestroyDescriptorPool(d, descriptorPool_, nullptr);
    if (pipeline_) vk_.DestroyPipeline(d, pipeline_, nullptr);
    if (pipelineLayout_) vk_.DestroyPipelineLayout(d, pipelineLayout_, nullptr);
    if (setLayout_) vk_.DestroyDescriptorSetLayout(d, setLayout_, nullptr);
    if (module_) vk_.DestroyShaderModule(d, module_, nullptr);
    for (const Buffer& b : buffers_) {
      vk_.DestroyBuffer(d, b.buffer, nullptr);
      vk_.FreeMemory(d, b.memory, nullptr);
    }
  }

  // Returns the observed (row, col) per slot, or an error message.
  // deviceLost is set when the device was lost: the caller must fail vkCreateDevice.
  bool DeviceLost() const { return deviceLost_; }

  std::optional<std::vector<Coord>> Run(const LayoutKey& key, const ProbeShader& shader, std::string& error) {
    const uint64_t elements = uint64_t{key.rows} * key.cols;
    // At most every invocation holds every element. Absurd shapes from a driver are
    // refused before any size wraps (review finding 24).
    const uint64_t observedWords = 2 * uint64_t{key.subgroupSize} * elements;
    if (key.rows == 0 || key.cols == 0 || key.subgroupSize == 0 || observedWords > (uint64_t{1} << 26))
      return Fail(error, "the shape is too large to probe");
    void* rowCodes = NewBuffer(elements * shader.bytes);
    void* colCodes = NewBuffer(elements * shader.bytes);
    auto* observed = static_cast<uint32_t*>(NewBuffer(observedWords * 4));
    if (!rowCodes || !colCodes || !observed) return Fail(error, "cannot allocate host-visible buffers");
    for (uint32_t r = 0; r < key.rows; ++r) {
      for (uint32_t c = 0; c < key.cols; ++c) {
        const size_t offset = (size_t{r} * key.cols + c) * shader.bytes;
        EncodeCode(key.componentType, r, static_cast<std::byte*>(rowCodes) + offset);
        EncodeCode(key.componentType, c, static_cast<std::byte*>(colCodes) + offset);
      }
    }
    std::fill(observed, observed + observedWords, kUnwritten);
    if (!BuildPipeline(key, shader)) return Fail(error, "cannot create the probe pipeline");
    if (const VkResult result = Dispatch(); result != VK_SUCCESS) {
      deviceLost_ = result == VK_ERROR_DEVICE_LOST;
      return Fail(error, std::string("the probe dispatch failed (") + ResultName(result) + ")");
    }

    uint32_t written = 0;
    while (written < observedWords / 2 && observed[2 * written] != kUnwritten) ++written;
    if (written == 0 || written % key.subgroupSize != 0)
      return Fail(error, "the probe wrote " + std::to_string(written) + " slots, not a multiple of the subgroup size");
    std::vector<Coord> coords(written);
    for (uint32_t i = 0; i < written; ++i) coords[i] = {observed[2 * i], observed[2 * i + 1]};
    return coords;
  }

 private:
  static constexpr uint32_t kUnwritten = 0xffffffffu;
  struct Buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
  };

  std::optional<std::vector<Coord>> Fail(std::string& error, const std::string& why) {
    error = why;
    return std::nullopt;
  }

  void* NewBuffer(VkDeviceSize size) {
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = size;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    Buffer b{};
    if (vk_.CreateBuffer(context_.device, &info, nullptr, &b.buffer) != VK_SUCCESS) return nullptr;
    VkMemoryRequirements requirements;
    vk_.GetBufferMemoryRequirements(context_.device, b.buffer, &requirements);
    VkPhysicalDeviceMemoryProperties memory;
    reinterpret_cast<PFN_vkGetPhysicalDeviceMemoryProperties>(instance_.dispatch.GetInstanceProcAddr(
        instance_.instance, "vkGetPhysicalDeviceMemoryProperties"))(context_.physicalDevice, &memory);
    const VkMemoryPropertyFlags wanted = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t typeIndex = UINT32_MAX;
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
      if ((requirements.memoryTypeBits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & wanted) == wanted) {
        typeIndex = i;
        break;
      }
    }
    VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    allocate.allocationSize = requirements.size;
    allocate.memoryTypeIndex = typeIndex;
    if (typeIndex == UINT32_MAX || vk_.AllocateMemory(context_.device, &allocate, nullptr, &b.memory) != VK_SUCCESS) {
      vk_.DestroyBuffer(context_.device, b.buffer, nullptr);
      return nullptr;
    }
    buffers_.push_back(b);
    void* mapped = nullptr;
    if (vk_.BindBufferMemory(context_.device, b.buffer, b.memory, 0) != VK_SUCCESS ||
        vk_.MapMemory(context_.device, b.memory, 0, VK_WHOLE_SIZE, 0, &mapped) != VK_SUCCESS)
      return nullptr;
    return mapped;
  }

  bool BuildPipeline(const LayoutKey& key, const ProbeShader& shader) {
    VkDevice d = context_.device;
    VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    const std::span<const uint32_t> words = context_.fullSubgroupsFlag ? shader.words13 : shader.words16;
    moduleInfo.codeSize = words.size_bytes();
    moduleInfo.pCode = words.data();
    if (vk_.CreateShaderModule(d, &moduleInfo, nullptr, &module_) != VK_SUCCESS) return false;

    VkDescriptorSetLayoutBinding bindings[3];
    for (uint32_t i = 0; i < 3; ++i)
      bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo setInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    setInfo.bindingCount = 3;
    setInfo.pBindings = bindings;
    if (vk_.CreateDescriptorSetLayout(d, &setInfo, nullptr, &setLayout_) != VK_SUCCESS) return false;
    VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layoutInfo.setLayoutCount = 1;
    layoutInfo.pSetLayouts = &setLayout_;
    if (vk_.CreatePipelineLayout(d, &layoutInfo, nullptr, &pipelineLayout_) != VK_SUCCESS) return false;

    const uint32_t constants[4] = {key.rows, key.cols, key.use, key.subgroupSize};
    VkSpecializationMapEntry entries[4];
    for (uint32_t i = 0; i < 4; ++i) entries[i] = {i, i * 4, 4};
    VkSpecializationInfo specialization{4, entries, sizeof(constants), constants};
    VkComputePipelineCreateInfo pipelineInfo{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pipelineInfo.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    if (context_.fullSubgroupsFlag) pipelineInfo.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    pipelineInfo.stage.module = module_;
    pipelineInfo.stage.pName = "main";
    pipelineInfo.stage.pSpecializationInfo = &specialization;
    // Where pipelines may run at several sizes, the probe runs at the key's size.
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo required{
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
    required.requiredSubgroupSize = key.subgroupSize;
    if (context_.requireSubgroupSize) {
      pipelineInfo.stage.pNext = &required;
      pipelineInfo.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    }
    pipelineInfo.layout = pipelineLayout_;
    if (vk_.CreateComputePipelines(d, VK_NULL_HANDLE, 1, &pipelineInfo, nullptr, &pipeline_) != VK_SUCCESS)
      return false;

    VkDescriptorPoolSize poolSize{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3};
    VkDescriptorPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    poolInfo.maxSets = 1;
    poolInfo.poolSizeCount = 1;
    poolInfo.pPoolSizes = &poolSize;
    if (vk_.CreateDescriptorPool(d, &poolInfo, nullptr, &descriptorPool_) != VK_SUCCESS) return false;
    VkDescriptorSetAllocateInfo allocate{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    allocate.descriptorPool = descriptorPool_;
    allocate.descriptorSetCount = 1;
    allocate.pSetLayouts = &setLayout_;
    if (vk_.AllocateDescriptorSets(d, &allocate, &set_) != VK_SUCCESS) return false;
    VkDescriptorBufferInfo infos[3];
    VkWriteDescriptorSet writes[3];
    for (uint32_t i = 0; i < 3; ++i) {
      infos[i] = {buffers_[i].buffer, 0, VK_WHOLE_SIZE};
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set_;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vk_.UpdateDescriptorSets(d, 3, writes, 0, nullptr);
    return true;
  }

  VkResult Dispatch() {
    VkDevice d = context_.device;
    VkCommandPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    poolInfo.queueFamilyIndex = context_.queueFamily;
    if (VkResult r = vk_.CreateCommandPool(d, &poolInfo, nullptr, &commandPool_); r != VK_SUCCESS) return r;
    VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    allocate.commandPool = commandPool_;
    allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    allocate.commandBufferCount = 1;
    VkCommandBuffer commands = VK_NULL_HANDLE;
    if (VkResult r = vk_.AllocateCommandBuffers(d, &allocate, &commands); r != VK_SUCCESS) return r;
    // A dispatchable object made below the loader's trampoline needs the loader's dispatch pointer.
    if (context_.setDeviceLoaderData)
      if (VkResult r = context_.setDeviceLoaderData(d, commands); r != VK_SUCCESS) return r;
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (VkResult r = vk_.BeginCommandBuffer(commands, &begin); r != VK_SUCCESS) return r;
    vk_.CmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
    vk_.CmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipelineLayout_, 0, 1, &set_, 0, nullptr);
    vk_.CmdDispatch(commands, 1, 1, 1);
    // A fence wait does not make device writes visible to the host: this barrier does.
    VkMemoryBarrier toHost{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    toHost.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    toHost.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk_.CmdPipelineBarrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &toHost, 0,
                           nullptr, 0, nullptr);
    if (VkResult r = vk_.EndCommandBuffer(commands); r != VK_SUCCESS) return r;
    VkFenceCreateInfo fenceInfo{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (VkResult r = vk_.CreateFence(d, &fenceInfo, nullptr, &fence_); r != VK_SUCCESS) return r;
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &commands;
    if (VkResult r = vk_.QueueSubmit(context_.queue, 1, &submit, fence_); r != VK_SUCCESS) return r;
    inFlight_ = true;
    constexpr uint64_t kTimeoutNs = 10'000'000'000ull;
    VkResult waited = vk_.WaitForFences(d, 1, &fence_, VK_TRUE, kTimeoutNs);
    if (waited == VK_TIMEOUT) {
      // Too slow to trust, but it must finish before anything it uses is freed.
      const VkResult idle = vk_.QueueWaitIdle(context_.queue);
      if (idle == VK_SUCCESS) inFlight_ = false;
      return idle == VK_ERROR_DEVICE_LOST ? idle : VK_TIMEOUT;
    }
    if (waited == VK_SUCCESS || waited == VK_ERROR_DEVICE_LOST) inFlight_ = false;
    return waited;
  }

  const ProbeContext& context_;
  const Functions& vk_;
  const InstanceData& instance_;
  std::vector<Buffer> buffers_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptorPool_ = VK_NULL_HANDLE;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  VkCommandPool commandPool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  bool inFlight_ = false;
  bool deviceLost_ = false;
};

// Every (type, use, shape) the driver's KHR list names, at the default subgroup size.
std::vector<LayoutKey> KeysToProbe(const InstanceData& instance, VkPhysicalDevice physicalDevice,
                                   uint32_t subgroupSize) {
  std::vector<LayoutKey> keys;
  auto query = instance.dispatch.GetPhysicalDeviceCooperativeMatrixPropertiesKHR;
  uint32_t count = 0;
  if (!query || query(physicalDevice, &count, nullptr) != VK_SUCCESS) return keys;
  std::vector<VkCooperativeMatrixPropertiesKHR> list(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
  if (query(physicalDevice, &count, list.data()) < VK_SUCCESS) return keys;
  list.resize(count);
  auto add = [&](uint32_t type, uint32_t use, uint32_t rows, uint32_t cols) {
    const LayoutKey key{type, use, rows, cols, subgroupSize};
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  };
  for (const auto& p : list) {
    if (p.scope != VK_SCOPE_SUBGROUP_KHR) continue;
    add(p.AType, kUseA, p.MSize, p.KSize);
    add(p.BType, kUseB, p.KSize, p.NSize);
    add(p.CType, kUseAccumulator, p.MSize, p.NSize);
    add(p.ResultType, kUseAccumulator, p.MSize, p.NSize);
  }
  return keys;
}

std::string Hex(const uint8_t* bytes, size_t n) {
  std::string out;
  char buffer[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buffer, sizeof(buffer), "%02x", bytes[i]);
    out += buffer;
  }
  return out;
}

struct DeviceIdentity {
  std::string cacheName;  // unique per device, driver build, subgroup sizes and layer build
  VkDriverId driverId = VkDriverId(0);
  uint32_t driverVersion = 0;
  std::string deviceName;
};

// From what the layer read once per physical device (PhysicalDeviceInfo): no Vulkan call.
DeviceIdentity Identify(const PhysicalDeviceInfo& info) {
  DeviceIdentity identity;
  // A 1.0 instance without VK_KHR_get_physical_device_properties2 (review 27): no
  // identity, so no cache file and no known family.
  if (!info.hasIdentity) return identity;
  identity.driverId = info.driverId;
  identity.driverVersion = info.driverVersion;
  identity.deviceName = info.deviceName;
  // The sizes belong in the key: a driver setting can change them and leave the UUIDs
  // alone. The vendor, device and name: two GPUs whose drivers leave the UUIDs zero.
  std::string sizes;
  for (uint32_t size : info.PipelineSubgroupSizes()) sizes += "-sg" + std::to_string(size);
  char ids[32];
  std::snprintf(ids, sizeof(ids), "%04x-%04x-%08x", info.vendorID, info.deviceID,
                static_cast<uint32_t>(Hasher().Add(info.deviceName).Finish().low));
  identity.cacheName = "layouts-" + Hex(info.deviceUUID.data(), VK_UUID_SIZE) + "-" + Hex(info.driverUUID.data(), VK_UUID_SIZE) +
                       "-" + ids + "-" + std::to_string(info.driverVersion) + sizes + "-" + BuildId() + ".txt";
  return identity;
}

// The last line of a layout file: a checksum of everything before it, so that a torn
// or edited file is probed again rather than trusted.
std::string ChecksumLine(std::string_view text) {
  char line[40];
  std::snprintf(line, sizeof(line), "# checksum %016" PRIx64 "\n",
                Hasher().Add(std::string(text)).Finish().low);
  return line;
}

// A layout file: the layouts that fitted, and the component types an app left out (it
// had not enabled the features their probe needs), which a later app may probe.
struct CachedLayouts {
  std::vector<LinearLayout> layouts;
  std::set<uint32_t> unprobedTypes;
};
constexpr std::string_view kUnprobedLine = "# unprobed component type ";

std::optional<CachedLayouts> ReadCache(const platform::TrustedFolder& folder, const std::string& name) {
  const std::optional<std::string> content = ReadCacheFile(folder, name, 1u << 20);
  if (!content || content->rfind(std::string("# ") + kCacheFormat, 0) != 0) return std::nullopt;
  const size_t last = content->rfind("# checksum ");
  if (last == std::string::npos || content->substr(last) != ChecksumLine(std::string_view(*content).substr(0, last)))
    return std::nullopt;
  ParseResult parsed = ParseLayouts(content->substr(0, last));
  if (!parsed.ok) return std::nullopt;
  CachedLayouts cached{std::move(parsed.layouts), {}};
  for (size_t at = content->find(kUnprobedLine); at < last; at = content->find(kUnprobedLine, at + 1))
    cached.unprobedTypes.insert(static_cast<uint32_t>(std::strtoul(content->c_str() + at + kUnprobedLine.size(), nullptr, 10)));
  return cached;
}

// Removes the layout files in `dir` other than `kept` that nothing has read or written
// for kUnusedCacheKept: those of builds, driver versions or subgroup sizes no longer in
// use. Not the others at once: two builds (or drivers) used in turn would each find
// theirs gone and probe again at every start (review dbb465e finding 6).
void RemoveUnusedLayoutFiles(const platform::TrustedFolder& folder, const std::string& kept) {
  const auto limit = std::chrono::system_clock::now() - kUnusedCacheKept;
  for (const platform::TrustedFolder::Entry& entry : folder.List())
    if (entry.name.rfind("layouts-", 0) == 0 && entry.name.find(".tmp.") == std::string::npos && entry.name != kept &&
        entry.kind == platform::TrustedFolder::Entry::Kind::File && entry.modified < limit)
      folder.Remove(entry.name);
}

// Written atomically (cache_files.h); unused layout files are removed.
bool WriteCache(const platform::TrustedFolder& folder, const std::string& name, const std::vector<LinearLayout>& layouts,
                const std::vector<std::string>& notes, const std::set<uint32_t>& unprobedTypes) {
  std::string text = std::string("# ") + kCacheFormat + "\n";
  for (const std::string& note : notes) text += "# " + note + "\n";
  for (uint32_t type : unprobedTypes) text += std::string(kUnprobedLine) + std::to_string(type) + "\n";
  for (const LinearLayout& layout : layouts) text += FormatLayout(layout) + "\n";
  text += ChecksumLine(text);
  if (!WriteCacheFileAtomically(folder, name, text)) return false;
  RemoveUnusedLayoutFiles(folder, name);
  RemoveStaleTemporaries(folder);
  return true;
}

// RADV names the chip in deviceName, e.g. "AMD Radeon RX 7900 XTX (RADV NAVI31)",
// "AMD Radeon RX 9070 XT (RADV GFX1201)". GFX11 (NAVI3x, GFX110x, GFX115x) has the
// replicated A/B layout; GFX11.7 (GFX117x) and GFX12 (GFX12xx, NAVI4x) the C layout
// (layouts.md sections 3 and 4; its GFX12 A/B table is that of current Mesa).
std::optional<DriverFamily> RadvFamily(const std::string& deviceName) {
  const size_t radv = deviceName.find("(RADV ");
  if (radv == std::string::npos) return std::nullopt;
  const std::string chip = deviceName.substr(radv + 6);
  auto starts = [&](const char* prefix) { return chip.rfind(prefix, 0) == 0; };
  if (starts("GFX117") || starts("GFX12") || starts("NAVI4")) return DriverFamily::RadvGfx12;
  if (starts("GFX11") || starts("NAVI3")) return DriverFamily::RadvGfx11;
  return std::nullopt;
}

std::optional<DriverFamily> KnownFamily(const DeviceIdentity& identity) {
  if (identity.driverId == VK_DRIVER_ID_MESA_LLVMPIPE) return DriverFamily::Lavapipe;
  if (identity.driverId == VK_DRIVER_ID_MESA_RADV) return RadvFamily(identity.deviceName);
  // NVK: its compiler's costs apply; its table only by the builtin_layouts setting.
  if (identity.driverId == VK_DRIVER_ID_MESA_NVK) return DriverFamily::NvidiaMma;
  return std::nullopt;
}

bool Supported(const std::vector<uint32_t>& sizes, const LinearLayout& layout) {
  return std::find(sizes.begin(), sizes.end(), layout.key.subgroupSize) != sizes.end();
}

}  // namespace

namespace {

// What one pass of the probe over every key found.
struct ProbeOutcome {
  std::vector<LinearLayout> layouts;
  std::vector<std::string> notes;
  bool runFailed = false;  // a key could not be probed or fitted nothing: not cacheable
  bool observedAny = false;  // some dispatch read back slots (fitted or not): the probe runs here
  bool limited = false;    // some types were left out for the app's features (unprobedTypes)
  std::set<uint32_t> unprobedTypes;
  bool deviceLost = false;
};

ProbeOutcome Probe(const InstanceData& instance, const ProbeContext& context, const std::vector<LayoutKey>& keys,
                   std::optional<DriverFamily> family) {
  ProbeOutcome out;
  Functions vk;
  if (!vk.Load(context.device, context.getDeviceProcAddr)) {
    out.notes.push_back("the driver lacks a function the probe needs");
    out.runFailed = true;
    return out;
  }
  for (const LayoutKey& key : keys) {
    const ProbeShader* shader = ShaderFor(key.componentType);
    if (shader && !context.TypeAllowed(key.componentType)) {
      out.notes.push_back("not probed: " + ToString(key) + " (the app did not enable the features its probe needs)");
      out.limited = true;
      out.unprobedTypes.insert(key.componentType);
      continue;
    }
    if (!shader || std::max(key.rows, key.cols) - 1 > shader->largestCode) {
      out.notes.push_back("not probed: " + ToString(key) + " (no probe for this type or shape)");
      continue;
    }
    std::string error;
    ProbeRun run(context, vk, instance);
    const std::optional<std::vector<Coord>> observed = run.Run(key, *shader, error);
    if (run.DeviceLost()) {
      out.notes.push_back("the device was lost probing " + ToString(key));
      out.deviceLost = true;
      return out;
    }
    FitResult fit;
    out.observedAny |= observed.has_value();
    if (observed) fit = FitLinearLayout(key, *observed);
    if (!observed || !fit.ok) {
      out.notes.push_back("no linear layout: " + (observed ? fit.error : ToString(key) + ": " + error));  // a fit error names the key
      out.runFailed = true;
      continue;
    }
    if (family) {
      const std::optional<LinearLayout> expected = BuiltinLayout(*family, key);
      if (expected && !(*expected == fit.layout))
        Log(&instance, LogLevel::Warning,
            std::string("layout probe: ") + ToString(key) + " differs from the built-in " + ToString(*family) +
                " layout (probed: " + FormatLayout(fit.layout) + "; expected: " + FormatLayout(*expected) + ")");
    }
    out.layouts.push_back(fit.layout);
  }
  return out;
}

std::string Join(const std::vector<uint32_t>& sizes) {
  std::string out;
  for (uint32_t size : sizes) out += (out.empty() ? "" : ", ") + std::to_string(size);
  return out;
}

// One line per key the driver lists: "layout: <text form>  # <origin>" for the
// layouts the register path will use, "no layout: <key>" for the others (their
// operations take the portable path). coopmat-info shows these lines.
void ReportLayouts(const InstanceData& instance, const std::vector<LayoutKey>& keys, const std::vector<LinearLayout>& layouts,
                   const std::string& origin) {
  for (const LinearLayout& layout : layouts) Log(&instance, LogLevel::Info, "layout: " + FormatLayout(layout) + "  # " + origin);
  for (const LayoutKey& key : keys)
    if (std::none_of(layouts.begin(), layouts.end(), [&](const LinearLayout& l) { return l.key == key; }))
      Log(&instance, LogLevel::Info, "no layout: " + ToString(key));
}

// A cached layout file whose types an earlier app left out: those this app allows are
// probed now, added to `cached` and the file rewritten (unless that probe failed).
void ProbeTypesLeftOut(const InstanceData& instance, const ProbeContext& context, const std::vector<LayoutKey>& keys,
                       std::optional<DriverFamily> family, const platform::TrustedFolder& folder,
                       const std::string& cacheName, CachedLayouts& cached,
                       bool* deviceLost) {
  std::vector<LayoutKey> missing;
  for (const LayoutKey& key : keys)
    if (cached.unprobedTypes.count(key.componentType) && context.TypeAllowed(key.componentType)) missing.push_back(key);
  if (missing.empty()) return;
  const ProbeOutcome more = Probe(instance, context, missing, family);
  if (more.deviceLost) {
    Log(&instance, LogLevel::Error, "layout probe: the device was lost");
    *deviceLost = true;
    return;
  }
  for (const std::string& note : more.notes)
    Log(&instance, LogLevel::Warning, "layout probe: " + note + "; operations on it use the portable path");
  cached.layouts.insert(cached.layouts.end(), more.layouts.begin(), more.layouts.end());
  for (const LayoutKey& key : missing) cached.unprobedTypes.erase(key.componentType);
  if (!more.runFailed && !WriteCache(folder, cacheName, cached.layouts, {}, cached.unprobedTypes))
    Log(&instance, LogLevel::Warning, "layout probe: cannot write the cache " + (folder.path() / cacheName).string());
}

// The layer's cache folder, opened (created when missing) and held, or none (with a
// warning) when it cannot be trusted: a planted layout file would put wrong layouts into
// every shader (review 130c39d finding 6, review dbb465e finding 5).
platform::TrustedFolder TrustedLayoutFolder(const InstanceData& instance) {
  platform::TrustedFolder folder = OpenCacheDirectory();
  if (!folder.valid() && !folder.why().empty())
    Log(&instance, LogLevel::Warning, "layout probe: " + folder.why() + "; layouts are not cached");
  return folder;
}

}  // namespace

std::vector<LinearLayout> DiscoverLayouts(DeviceData& device, const ProbeContext& context, bool* deviceLost) {
  const InstanceData& instance = *device.instance;
  const std::vector<uint32_t> sizes = device.physicalDevice.PipelineSubgroupSizes();
  const DeviceIdentity identity = Identify(device.physicalDevice);
  const std::optional<DriverFamily> family = KnownFamily(identity);
  const platform::TrustedFolder folder = TrustedLayoutFolder(instance);
  const std::string& cacheName = identity.cacheName;
  const bool cacheable = folder.valid() && !cacheName.empty();
  const std::string cachePath = (folder.path() / cacheName).string();  // for messages
  std::vector<LayoutKey> keys;
  for (uint32_t size : sizes)
    for (const LayoutKey& key : KeysToProbe(instance, context.physicalDevice, size)) keys.push_back(key);
  // Probing at a size other than the default needs a required size, which needs the
  // app's subgroupSizeControl and computeFullSubgroups.
  const bool canProbe = sizes.size() == 1 || context.requireSubgroupSize;
  if (cacheable) {
    if (auto cached = ReadCache(folder, cacheName)) {
      TouchCacheFile(folder, cacheName);  // in use: other builds and devices leave it alone
      // A layout for a size pipelines here cannot run at would be applied to the wrong lanes.
      std::erase_if(cached->layouts, [&](const LinearLayout& layout) { return !Supported(sizes, layout); });
      if (!cached->layouts.empty()) {
        Log(&instance, LogLevel::Info, "layouts: " + std::to_string(cached->layouts.size()) + " from " + cachePath);
        if (canProbe) ProbeTypesLeftOut(instance, context, keys, family, folder, cacheName, *cached, deviceLost);
        ReportLayouts(instance, keys, cached->layouts, "probed (cached)");
        return *deviceLost ? std::vector<LinearLayout>{} : cached->layouts;
      }
    }
  }

  ProbeOutcome outcome;
  if (canProbe) {
    outcome = Probe(instance, context, keys, family);
  } else {
    outcome.runFailed = true;
    outcome.notes.push_back("not probed: pipelines may run at subgroup sizes " + Join(sizes) +
                            " and the device was created without subgroupSizeControl and computeFullSubgroups");
  }
  if (outcome.deviceLost) {
    Log(&instance, LogLevel::Error, "layout probe: the device was lost");
    *deviceLost = true;
    return {};
  }
  // builtin_layouts names a family for a driver the layer cannot vouch for (a drm-shim lane).
  const std::optional<DriverFamily> named = instance.settings.builtinLayouts;
  const LayoutChoice choice = ChooseLayouts(outcome.layouts, outcome.observedAny, named ? named : family, identity.driverVersion,
                                            keys, named.has_value());
  if (outcome.layouts.empty()) {
    // Nothing fitted. A table is used only where the probe read nothing (Mesa's
    // drm-shim executes nothing; a failing dispatch), never cached, so that a working
    // probe replaces it.
    const auto failure = std::find_if(outcome.notes.begin(), outcome.notes.end(),
                                      [](const std::string& note) { return note.rfind("not probed: ", 0) != 0; });
    const std::string why = failure != outcome.notes.end() ? *failure
                            : outcome.notes.empty()        ? "no key to probe"
                                                           : outcome.notes.front();
    if (choice.builtin) {
      const DriverFamily used = named ? *named : *family;
      Log(&instance, LogLevel::Info,
          std::string("layouts: the probe fitted nothing (") + why + "); using the built-in " + ToString(used) +
              " table (driver " + DriverVersionString(identity.driverVersion) + "), " +
              std::to_string(choice.layouts.size()) + " layouts at subgroup sizes " + Join(sizes));
      const DriverVersionRange range = BuiltinDriverRange(used);
      ReportLayouts(instance, keys, choice.layouts,
                    named ? std::string("built-in ") + ToString(used) + " table, named by the builtin_layouts setting"
                          : std::string("built-in ") + ToString(used) + " table, driver versions " +
                                DriverVersionString(range.first) + " to " + DriverVersionString(range.last));
      return choice.layouts;
    }
    if (!outcome.observedAny) {
      Log(&instance, LogLevel::Warning,
          "layout probe: no layout read (" + why + (choice.refusal.empty() ? "" : "; " + choice.refusal) +
              "); operations use the portable path");
      ReportLayouts(instance, keys, {}, "");
      return {};
    }
    if (!choice.refusal.empty()) Log(&instance, LogLevel::Info, "layout probe: " + choice.refusal);
  }
  // A failure is a warning; a type left out on purpose (the app's features, no probe
  // for the shape) is said at info level.
  for (const std::string& note : outcome.notes)
    Log(&instance, note.rfind("not probed: ", 0) != 0 ? LogLevel::Warning : LogLevel::Info,
        "layout probe: " + note + "; operations on it use the portable path");
  ReportLayouts(instance, keys, outcome.layouts, "probed");
  // Cached with the types left out for this app's features: another app probes just those
  // (review 130c39d finding 2: before, such a device probed everything at every creation).
  if (!outcome.runFailed && cacheable && !WriteCache(folder, cacheName, outcome.layouts, outcome.notes, outcome.unprobedTypes))
    Log(&instance, LogLevel::Warning, "layout probe: cannot write the cache " + cachePath);
  return outcome.layouts;
}

namespace {

// The layouts_file setting's layouts at the sizes pipelines here run at; a file that cannot
// be read or parsed is a warning and no layouts (the portable path).
std::vector<LinearLayout> FileLayouts(const InstanceData& instance, const std::vector<LayoutKey>& keys,
                                      const std::vector<uint32_t>& sizes) {
  const std::string& path = instance.settings.layoutsFile;
  const ParseResult parsed = ReadLayouts(path);
  if (!parsed.ok) {
    Log(&instance, LogLevel::Warning, "layouts_file " + path + ": " + parsed.error + "; operations use the portable path");
    return {};
  }
  std::vector<LinearLayout> layouts;
  for (const LinearLayout& layout : parsed.layouts)
    if (Supported(sizes, layout)) layouts.push_back(layout);
  Log(&instance, LogLevel::Info,
      "layouts: not probed (layout_probe=false); " + std::to_string(layouts.size()) + " from the layouts_file " + path);
  ReportLayouts(instance, keys, layouts, "from the layouts_file setting, unprobed");
  return layouts;
}

// The builtin_layouts setting's table for every listed key.
std::vector<LinearLayout> TableLayouts(const InstanceData& instance, const std::vector<LayoutKey>& keys, DriverFamily named) {
  std::vector<LinearLayout> table;
  for (const LayoutKey& key : keys)
    if (std::optional<LinearLayout> layout = BuiltinLayout(named, key)) table.push_back(std::move(*layout));
  Log(&instance, LogLevel::Info,
      std::string("layouts: not probed (layout_probe=false); the built-in ") + ToString(named) + " table, " +
          std::to_string(table.size()) + " layouts");
  ReportLayouts(instance, keys, table,
                std::string("built-in ") + ToString(named) + " table, named by the builtin_layouts setting, unprobed");
  return table;
}

}  // namespace

std::vector<LinearLayout> UnprobedLayouts(const DeviceData& device, VkPhysicalDevice physicalDevice) {
  const InstanceData& instance = *device.instance;
  if (instance.settings.layoutsFile.empty() && !instance.settings.builtinLayouts) return {};
  const std::vector<uint32_t> sizes = device.physicalDevice.PipelineSubgroupSizes();
  std::vector<LayoutKey> keys;
  for (uint32_t size : sizes)
    for (const LayoutKey& key : KeysToProbe(instance, physicalDevice, size)) keys.push_back(key);
  if (!instance.settings.layoutsFile.empty()) return FileLayouts(instance, keys, sizes);
  return TableLayouts(instance, keys, *instance.settings.builtinLayouts);
}

}  // namespace coopmat::layer

namespace coopmat::layer {

std::optional<DriverFamily> RecognizedFamily(const DeviceData& device) {
  return KnownFamily(Identify(device.physicalDevice));
}

std::vector<LinearLayout> LayoutsForLowering(const DeviceData& device, const std::vector<LinearLayout>& probed) {
  const PhysicalDeviceInfo& info = device.physicalDevice;
  if (probed.empty()) return {};
  // The register path moves elements with subgroup shuffles in compute shaders.
  const VkSubgroupFeatureFlags needed = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  if ((info.subgroupOperations & needed) != needed || !(info.subgroupStages & VK_SHADER_STAGE_COMPUTE_BIT)) return {};
  // Layouts of every size a pipeline may run at (the lowering picks per size, or
  // stays portable where it cannot); none of a size it cannot run at.
  const std::vector<uint32_t> sizes = info.PipelineSubgroupSizes();
  std::vector<LinearLayout> layouts;
  for (const LinearLayout& layout : probed)
    if (Supported(sizes, layout)) layouts.push_back(layout);
  const std::optional<DriverFamily> family = KnownFamily(Identify(info));
  // Other shapes exist only under NV flexible dimensions.
  if (layouts.empty() || !family || !device.lowerOptions.flexibleDimensions) return layouts;
  // Outside the versions the table was read from only where builtin_layouts names this
  // very table (review of 2026-12-07: any name lifted the check).
  return WithBuiltinShapes(layouts, *family, sizes, info.driverVersion, device.instance->settings.builtinLayouts == family);
}

}  // namespace coopmat::layer
