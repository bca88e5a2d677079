// A small compute harness on top of cmtest::Device: host-visible storage
// buffers, one compute pipeline made from SPIR-V words, one dispatch, read back.
// Every Vulkan error comes back as a VkResult plus the name of the call that
// failed; nothing aborts, and every object is destroyed before RunCompute returns.
#pragma once

#include "vk_context.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace cmtest {

using Bytes = std::vector<std::byte>;

struct SpecConstant {
  uint32_t id;
  uint32_t value;  // every specialization constant the tests use is 32 bits wide
};

// How the SPIR-V reaches the device: every creation path the layer intercepts.
enum class ShaderPath {
  Module,        // vkCreateShaderModule, then the pipeline names the module
  InlineStage,   // VkShaderModuleCreateInfo chained into the stage (VK_KHR_maintenance5)
  ShaderObject,  // vkCreateShadersEXT with SPIR-V code (VK_EXT_shader_object), no pipeline
};

struct ComputeJob {
  ShaderPath path = ShaderPath::Module;
  std::vector<uint32_t> spirv;
  const char* entryPoint = "main";
  std::vector<SpecConstant> specialization;
  uint32_t requiredSubgroupSize = 0;  // 0: no VkPipelineShaderStageRequiredSubgroupSizeCreateInfo
  bool requireFullSubgroups = true;   // VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT
  Bytes pushConstants;                // size a multiple of 4; empty: no push-constant range
  uint32_t groupCountX = 1;
  uint64_t timeoutNs = 30'000'000'000ull;
  // How the compute pipeline is made from the create info the harness filled in
  // (default: vkCreateComputePipelines with that one info and no cache): a test that
  // batches pipelines or passes a VkPipelineCache does it here. The pipeline it
  // returns is the run's, destroyed with it.
  std::function<VkResult(VkDevice, const VkComputePipelineCreateInfo&, VkPipeline*)> createPipeline;
};

struct ComputeResult {
  VkResult result = VK_SUCCESS;
  std::string failedCall;  // empty on success
  explicit operator bool() const { return result == VK_SUCCESS; }
  std::string Describe() const;  // "vkCreateComputePipelines -> -13" or "ok"
};

// Binds buffers[i] as the storage buffer at set 0, binding i, uploads their
// contents, dispatches job.groupCountX workgroups, waits and copies every
// buffer back into buffers[i] (same size). An empty buffer is bound as 16 zero bytes.
ComputeResult RunCompute(const Device& device, const ComputeJob& job, std::vector<Bytes>& buffers);

template <typename T>
Bytes ToBytes(const std::vector<T>& values) {
  Bytes out(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

template <typename T>
std::vector<T> FromBytes(const Bytes& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace cmtest
