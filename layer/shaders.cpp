// Shader interception: every path by which SPIR-V reaches the driver. A module
// that does not declare the EXT capabilities goes down untouched (no copy); one
// that does is lowered by the passes/ library, or the call fails with a message.
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "coopmat/lower.h"
#include "dump.h"
#include "entry_points.h"
#include "messages.h"
#include "pnext_chain.h"
#include "state.h"

namespace coopmat::layer {
namespace {

// Warns when a module uses an operation whose feature the app did not enable
// (the layer still lowers it: the result is defined either way).
void CheckEnabledFeatures(const DeviceData& device, const ExtUsage& usage, const char* where) {
  const auto& f = device.enabledFeatures;
  auto warn = [&](const char* feature) {
    Log(device.instance, LogLevel::Warning,
        std::string(where) + ": module uses an operation whose feature " + feature + " was not enabled");
  };
  if (usage.conversions && !f.cooperativeMatrixConversions) warn("cooperativeMatrixConversions");
  if (usage.getCoordinate && !f.cooperativeMatrixGetCoordinate) warn("cooperativeMatrixGetCoordinate");
  if (usage.reductions && !f.cooperativeMatrixReductions) warn("cooperativeMatrixReductions");
  if (usage.perElement && !f.cooperativeMatrixPerElementOperations) warn("cooperativeMatrixPerElementOperations");
}

// The SPIR-V to hand down for one blob.
struct PreparedCode {
  VkResult result = VK_SUCCESS;   // an error: do not call down
  bool replaced = false;          // true: use `words` instead of the app's code
  std::vector<uint32_t> words;
};

PreparedCode Prepare(const DeviceData& device, const void* code, size_t codeSize, const char* where) {
  PreparedCode prepared;
  if (!device.emulating) return prepared;
  const InstanceData* instance = device.instance;
  if (!code || codeSize % 4 != 0 || codeSize < 20) {
    Log(instance, LogLevel::Error, std::string(where) + ": codeSize " + std::to_string(codeSize) +
                                       " is not a whole SPIR-V module; not passed to the driver");
    prepared.result = VK_ERROR_UNKNOWN;
    return prepared;
  }
  const std::span<const uint32_t> words(static_cast<const uint32_t*>(code), codeSize / 4);
  const ScanResult scan = ScanModule(words);
  if (!scan.ok) {
    Log(instance, LogLevel::Error, std::string(where) + ": malformed SPIR-V (" + scan.error + "); not passed to the driver");
    prepared.result = VK_ERROR_UNKNOWN;
    return prepared;
  }
  if (!scan.usage.NeedsLowering()) return prepared;
  CheckEnabledFeatures(device, scan.usage, where);

  LowerResult lowered = LowerModule(words, device.lowerOptions);
  if (!lowered.ok) {
    Log(instance, LogLevel::Error, std::string(where) + ": cannot lower the maintenance1 module: " + lowered.error);
    DumpLowering(device, words, &lowered, where);
    prepared.result = VK_ERROR_UNKNOWN;
    return prepared;
  }
  if (instance->settings.validate) {
    const std::string problem = ValidateModule(lowered.words, static_cast<int>(device.vulkanMinor));
    if (!problem.empty()) {
      Log(instance, LogLevel::Error, std::string(where) + ": the rewritten module does not validate: " + problem);
      DumpLowering(device, words, &lowered, where);
      prepared.result = VK_ERROR_UNKNOWN;
      return prepared;
    }
  }
  DumpLowering(device, words, &lowered, where);
  Log(instance, LogLevel::Debug,
      std::string(where) + ": lowered " + std::to_string(lowered.stats.OpsLowered()) + " operations, " +
          std::to_string(lowered.stats.wordsIn) + " -> " + std::to_string(lowered.stats.wordsOut) + " words in " +
          std::to_string(static_cast<long long>(lowered.stats.microseconds)) + " us");
  prepared.replaced = true;
  prepared.words = std::move(lowered.words);
  return prepared;
}

// Rewrites the stages of pipeline create infos whose SPIR-V is chained in the stage
// (VkShaderModuleCreateInfo in VkPipelineShaderStageCreateInfo::pNext).
class StageRewriter {
 public:
  explicit StageRewriter(const DeviceData& device) : device_(device) {}

  // Returns a stage to use instead of `stage` (itself when unchanged), or null on error.
  const VkPipelineShaderStageCreateInfo* Rewrite(const VkPipelineShaderStageCreateInfo& stage, const char* where) {
    if (stage.module != VK_NULL_HANDLE) return &stage;  // a module object was lowered when it was created
    const auto* moduleInfo = reinterpret_cast<const VkShaderModuleCreateInfo*>(
        FindInChain(stage.pNext, VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO));
    if (!moduleInfo) return &stage;
    PreparedCode prepared = Prepare(device_, moduleInfo->pCode, moduleInfo->codeSize, where);
    if (prepared.result != VK_SUCCESS) {
      result_ = prepared.result;
      return nullptr;
    }
    if (!prepared.replaced) return &stage;
    auto& words = code_.emplace_back(std::make_unique<std::vector<uint32_t>>(std::move(prepared.words)));
    VkShaderModuleCreateInfo replacement = *moduleInfo;
    replacement.pCode = words->data();
    replacement.codeSize = words->size() * 4;
    VkPipelineShaderStageCreateInfo* copy = chains_.Own(stage);
    if (!chains_.Copy(stage.pNext, VK_STRUCTURE_TYPE_MAX_ENUM, &copy->pNext,
                      reinterpret_cast<const VkBaseInStructure*>(&replacement))) {
      Log(device_.instance, LogLevel::Error,
          std::string(where) + ": a structure chained before VkShaderModuleCreateInfo is unknown to the layer");
      result_ = VK_ERROR_UNKNOWN;
      return nullptr;
    }
    return copy;
  }

  // Rewrites an array of stages; returns the array to use.
  const VkPipelineShaderStageCreateInfo* RewriteStages(const VkPipelineShaderStageCreateInfo* stages, uint32_t count,
                                                       const char* where) {
    std::vector<VkPipelineShaderStageCreateInfo> out;
    bool changed = false;
    for (uint32_t i = 0; i < count; ++i) {
      const VkPipelineShaderStageCreateInfo* stage = Rewrite(stages[i], where);
      if (!stage) return nullptr;
      changed |= stage != &stages[i];
      out.push_back(*stage);
    }
    if (!changed) return stages;
    return stageArrays_.emplace_back(std::move(out)).data();
  }

  VkResult result() const { return result_; }

 private:
  const DeviceData& device_;
  VkResult result_ = VK_SUCCESS;
  ChainCopy chains_;
  std::vector<std::unique_ptr<std::vector<uint32_t>>> code_;
  std::vector<std::vector<VkPipelineShaderStageCreateInfo>> stageArrays_;
};

}  // namespace

VKAPI_ATTR VkResult VKAPI_CALL CreateShaderModule(VkDevice device, const VkShaderModuleCreateInfo* pCreateInfo,
                                                  const VkAllocationCallbacks* pAllocator,
                                                  VkShaderModule* pShaderModule) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  PreparedCode prepared = Prepare(*data, pCreateInfo->pCode, pCreateInfo->codeSize, "vkCreateShaderModule");
  if (prepared.result != VK_SUCCESS) return prepared.result;
  if (!prepared.replaced) return data->dispatch.CreateShaderModule(device, pCreateInfo, pAllocator, pShaderModule);
  VkShaderModuleCreateInfo info = *pCreateInfo;
  info.pCode = prepared.words.data();
  info.codeSize = prepared.words.size() * 4;
  return data->dispatch.CreateShaderModule(device, &info, pAllocator, pShaderModule);
}

VKAPI_ATTR VkResult VKAPI_CALL CreateComputePipelines(VkDevice device, VkPipelineCache cache, uint32_t count,
                                                      const VkComputePipelineCreateInfo* pCreateInfos,
                                                      const VkAllocationCallbacks* pAllocator, VkPipeline* pPipelines) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  if (!data->emulating)
    return data->dispatch.CreateComputePipelines(device, cache, count, pCreateInfos, pAllocator, pPipelines);
  StageRewriter rewriter(*data);
  std::vector<VkComputePipelineCreateInfo> infos(pCreateInfos, pCreateInfos + count);
  for (VkComputePipelineCreateInfo& info : infos) {
    const VkPipelineShaderStageCreateInfo* stage = rewriter.Rewrite(info.stage, "vkCreateComputePipelines");
    if (!stage) {
      for (uint32_t i = 0; i < count; ++i) pPipelines[i] = VK_NULL_HANDLE;
      return rewriter.result();
    }
    info.stage = *stage;
  }
  return data->dispatch.CreateComputePipelines(device, cache, count, infos.data(), pAllocator, pPipelines);
}

VKAPI_ATTR VkResult VKAPI_CALL CreateGraphicsPipelines(VkDevice device, VkPipelineCache cache, uint32_t count,
                                                       const VkGraphicsPipelineCreateInfo* pCreateInfos,
                                                       const VkAllocationCallbacks* pAllocator,
                                                       VkPipeline* pPipelines) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  if (!data->emulating)
    return data->dispatch.CreateGraphicsPipelines(device, cache, count, pCreateInfos, pAllocator, pPipelines);
  StageRewriter rewriter(*data);
  std::vector<VkGraphicsPipelineCreateInfo> infos(pCreateInfos, pCreateInfos + count);
  for (VkGraphicsPipelineCreateInfo& info : infos) {
    if (!info.pStages) continue;
    info.pStages = rewriter.RewriteStages(info.pStages, info.stageCount, "vkCreateGraphicsPipelines");
    if (!info.pStages) {
      for (uint32_t i = 0; i < count; ++i) pPipelines[i] = VK_NULL_HANDLE;
      return rewriter.result();
    }
  }
  return data->dispatch.CreateGraphicsPipelines(device, cache, count, infos.data(), pAllocator, pPipelines);
}

VKAPI_ATTR VkResult VKAPI_CALL CreateShadersEXT(VkDevice device, uint32_t count,
                                                const VkShaderCreateInfoEXT* pCreateInfos,
                                                const VkAllocationCallbacks* pAllocator, VkShaderEXT* pShaders) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  if (!data->emulating) return data->dispatch.CreateShadersEXT(device, count, pCreateInfos, pAllocator, pShaders);
  std::vector<VkShaderCreateInfoEXT> infos(pCreateInfos, pCreateInfos + count);
  std::vector<std::vector<uint32_t>> code(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (infos[i].codeType != VK_SHADER_CODE_TYPE_SPIRV_EXT) continue;  // binaries were lowered before
    PreparedCode prepared = Prepare(*data, infos[i].pCode, infos[i].codeSize, "vkCreateShadersEXT");
    if (prepared.result != VK_SUCCESS) {
      for (uint32_t j = 0; j < count; ++j) pShaders[j] = VK_NULL_HANDLE;
      return prepared.result;
    }
    if (!prepared.replaced) continue;
    code[i] = std::move(prepared.words);
    infos[i].pCode = code[i].data();
    infos[i].codeSize = code[i].size() * 4;
  }
  return data->dispatch.CreateShadersEXT(device, count, infos.data(), pAllocator, pShaders);
}

}  // namespace coopmat::layer
