#include "pipeline_stats.h"

#include <stdexcept>

namespace sample {
namespace {

// Destroys what one measurement made, whatever step failed.
struct Objects {
  VkDevice device;
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  ~Objects() {
    if (pipeline) vkDestroyPipeline(device, pipeline, nullptr);
    if (pipelineLayout) vkDestroyPipelineLayout(device, pipelineLayout, nullptr);
    if (setLayout) vkDestroyDescriptorSetLayout(device, setLayout, nullptr);
    if (module) vkDestroyShaderModule(device, module, nullptr);
  }
};

void Check(VkResult result, const char* call) {
  if (result != VK_SUCCESS) throw VulkanError(call, result);
}

VkPipelineLayout MakeLayout(Objects& objects, const StatsPipelineOptions& options) {
  std::vector<VkDescriptorSetLayoutBinding> bindings(options.bindings);
  for (uint32_t i = 0; i < options.bindings; ++i)
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo setInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  setInfo.bindingCount = options.bindings;
  setInfo.pBindings = bindings.data();
  Check(vkCreateDescriptorSetLayout(objects.device, &setInfo, nullptr, &objects.setLayout),
        "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, options.pushConstantBytes};
  VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layoutInfo.setLayoutCount = 1;
  layoutInfo.pSetLayouts = &objects.setLayout;
  layoutInfo.pushConstantRangeCount = options.pushConstantBytes ? 1 : 0;
  layoutInfo.pPushConstantRanges = &range;
  Check(vkCreatePipelineLayout(objects.device, &layoutInfo, nullptr, &objects.pipelineLayout),
        "vkCreatePipelineLayout");
  return objects.pipelineLayout;
}

double StatisticValue(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return s.value.b32;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return static_cast<double>(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return static_cast<double>(s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: return s.value.f64;
    default: return 0;
  }
}

// The statistics of the pipeline's compute executable (executable 0: one stage).
void ReadStatistics(const Context& context, VkPipeline pipeline, PipelineStats& out) {
  const VkDevice device = context.device();
  auto properties = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR"));
  auto statistics = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR"));
  if (!properties || !statistics) throw std::runtime_error("VK_KHR_pipeline_executable_properties is not loaded");
  VkPipelineInfoKHR pipelineInfo{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pipelineInfo.pipeline = pipeline;
  uint32_t count = 0;
  Check(properties(device, &pipelineInfo, &count, nullptr), "vkGetPipelineExecutablePropertiesKHR");
  std::vector<VkPipelineExecutablePropertiesKHR> executables(count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  Check(properties(device, &pipelineInfo, &count, executables.data()), "vkGetPipelineExecutablePropertiesKHR");
  if (executables.empty()) return;
  out.subgroupSize = executables[0].subgroupSize;
  VkPipelineExecutableInfoKHR executable{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
  executable.pipeline = pipeline;
  executable.executableIndex = 0;
  Check(statistics(device, &executable, &count, nullptr), "vkGetPipelineExecutableStatisticsKHR");
  std::vector<VkPipelineExecutableStatisticKHR> list(count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
  Check(statistics(device, &executable, &count, list.data()), "vkGetPipelineExecutableStatisticsKHR");
  for (const VkPipelineExecutableStatisticKHR& s : list) out.values.emplace_back(s.name, StatisticValue(s));
}

}  // namespace

double PipelineStats::Get(const std::string& name) const {
  for (const auto& [key, value] : values)
    if (key == name) return value;
  return -1;
}

PipelineStats CompileForStatistics(const Context& context, std::span<const uint32_t> spirv,
                                   const StatsPipelineOptions& options) {
  PipelineStats out;
  Objects objects{context.device()};
  VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  moduleInfo.codeSize = spirv.size_bytes();
  moduleInfo.pCode = spirv.data();
  out.module = vkCreateShaderModule(objects.device, &moduleInfo, nullptr, &objects.module);
  if (out.module != VK_SUCCESS) {
    objects.module = VK_NULL_HANDLE;
    return out;
  }

  std::vector<VkSpecializationMapEntry> entries;
  std::vector<uint32_t> data;
  for (const auto& [id, value] : options.specialization) {
    entries.push_back({id, static_cast<uint32_t>(data.size() * 4), 4});
    data.push_back(value);
  }
  VkSpecializationInfo specialization{static_cast<uint32_t>(entries.size()), entries.data(), data.size() * 4,
                                      data.data()};
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo required{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
  required.requiredSubgroupSize = options.requiredSubgroupSize;
  VkComputePipelineCreateInfo pipelineInfo{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipelineInfo.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  pipelineInfo.stage.pNext = options.requiredSubgroupSize ? &required : nullptr;
  pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipelineInfo.stage.module = objects.module;
  pipelineInfo.stage.pName = "main";
  pipelineInfo.stage.pSpecializationInfo = entries.empty() ? nullptr : &specialization;
  pipelineInfo.layout = MakeLayout(objects, options);
  if (context.pipelineStatistics()) pipelineInfo.flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  out.pipeline = vkCreateComputePipelines(objects.device, VK_NULL_HANDLE, 1, &pipelineInfo, nullptr, &objects.pipeline);
  if (out.pipeline != VK_SUCCESS) {
    objects.pipeline = VK_NULL_HANDLE;
    return out;
  }
  if (context.pipelineStatistics()) ReadStatistics(context, objects.pipeline, out);
  return out;
}

}  // namespace sample
