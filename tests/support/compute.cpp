#include "compute.h"

#include <algorithm>

namespace cmtest {

std::string ComputeResult::Describe() const {
  if (result == VK_SUCCESS) return "ok";
  return failedCall + " -> " + std::to_string(static_cast<int>(result));
}

namespace {

// Owns every object of one run; the destructor releases whatever was made.
struct Run {
  VkDevice device;
  std::vector<VkBuffer> buffers;
  std::vector<VkDeviceMemory> memories;
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkShaderEXT shader = VK_NULL_HANDLE;
  PFN_vkDestroyShaderEXT destroyShader = nullptr;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;

  explicit Run(VkDevice d) : device(d) {}
  ~Run() {
    if (fence) vkDestroyFence(device, fence, nullptr);
    if (commandPool) vkDestroyCommandPool(device, commandPool, nullptr);
    if (pool) vkDestroyDescriptorPool(device, pool, nullptr);
    if (pipeline) vkDestroyPipeline(device, pipeline, nullptr);
    if (shader) destroyShader(device, shader, nullptr);
    if (pipelineLayout) vkDestroyPipelineLayout(device, pipelineLayout, nullptr);
    if (setLayout) vkDestroyDescriptorSetLayout(device, setLayout, nullptr);
    if (module) vkDestroyShaderModule(device, module, nullptr);
    for (VkBuffer b : buffers) vkDestroyBuffer(device, b, nullptr);
    for (VkDeviceMemory m : memories) vkFreeMemory(device, m, nullptr);
  }
};

int FindHostVisibleType(VkPhysicalDevice physical, uint32_t typeBits) {
  VkPhysicalDeviceMemoryProperties props;
  vkGetPhysicalDeviceMemoryProperties(physical, &props);
  const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i) {
    if ((typeBits & (1u << i)) && (props.memoryTypes[i].propertyFlags & want) == want) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

ComputeResult RunCompute(const Device& device, const ComputeJob& job, std::vector<Bytes>& buffers) {
  ComputeResult out;
  auto fail = [&](const char* call, VkResult r) {
    out.result = r;
    out.failedCall = call;
    return out;
  };
  if (!device.ok()) return fail("Device", device.createResult());
  Run run(device.handle());
  const VkDevice dev = device.handle();
  const uint32_t count = static_cast<uint32_t>(buffers.size());

  // Buffers, one allocation each, mapped for the whole run.
  std::vector<void*> mapped(count, nullptr);
  std::vector<VkDeviceSize> sizes(count);
  for (uint32_t i = 0; i < count; ++i) {
    sizes[i] = std::max<VkDeviceSize>(16, (buffers[i].size() + 15) & ~VkDeviceSize(15));
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = sizes[i];
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VkBuffer buffer;
    if (VkResult r = vkCreateBuffer(dev, &info, nullptr, &buffer); r != VK_SUCCESS) return fail("vkCreateBuffer", r);
    run.buffers.push_back(buffer);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, buffer, &req);
    const int type = FindHostVisibleType(device.physicalDevice(), req.memoryTypeBits);
    if (type < 0) return fail("no host-visible memory type", VK_ERROR_FEATURE_NOT_PRESENT);
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = static_cast<uint32_t>(type);
    VkDeviceMemory memory;
    if (VkResult r = vkAllocateMemory(dev, &alloc, nullptr, &memory); r != VK_SUCCESS)
      return fail("vkAllocateMemory", r);
    run.memories.push_back(memory);
    if (VkResult r = vkBindBufferMemory(dev, buffer, memory, 0); r != VK_SUCCESS)
      return fail("vkBindBufferMemory", r);
    if (VkResult r = vkMapMemory(dev, memory, 0, VK_WHOLE_SIZE, 0, &mapped[i]); r != VK_SUCCESS)
      return fail("vkMapMemory", r);
    std::memset(mapped[i], 0, sizes[i]);
    if (!buffers[i].empty()) std::memcpy(mapped[i], buffers[i].data(), buffers[i].size());
  }

  // Shader module and pipeline.
  VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  moduleInfo.codeSize = job.spirv.size() * sizeof(uint32_t);
  moduleInfo.pCode = job.spirv.data();
  if (job.path == ShaderPath::Module) {
    if (VkResult r = vkCreateShaderModule(dev, &moduleInfo, nullptr, &run.module); r != VK_SUCCESS) {
      run.module = VK_NULL_HANDLE;
      return fail("vkCreateShaderModule", r);
    }
  }

  std::vector<VkDescriptorSetLayoutBinding> bindings(count);
  for (uint32_t i = 0; i < count; ++i) {
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  }
  VkDescriptorSetLayoutCreateInfo setInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  setInfo.bindingCount = count;
  setInfo.pBindings = bindings.data();
  if (VkResult r = vkCreateDescriptorSetLayout(dev, &setInfo, nullptr, &run.setLayout); r != VK_SUCCESS)
    return fail("vkCreateDescriptorSetLayout", r);

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(job.pushConstants.size())};
  VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layoutInfo.setLayoutCount = 1;
  layoutInfo.pSetLayouts = &run.setLayout;
  layoutInfo.pushConstantRangeCount = job.pushConstants.empty() ? 0 : 1;
  layoutInfo.pPushConstantRanges = &range;
  if (VkResult r = vkCreatePipelineLayout(dev, &layoutInfo, nullptr, &run.pipelineLayout); r != VK_SUCCESS)
    return fail("vkCreatePipelineLayout", r);

  std::vector<VkSpecializationMapEntry> entries;
  std::vector<uint32_t> values;
  for (const SpecConstant& s : job.specialization) {
    entries.push_back({s.id, static_cast<uint32_t>(values.size() * 4), 4});
    values.push_back(s.value);
  }
  VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(), values.size() * 4, values.data()};
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroupSize{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
  subgroupSize.requiredSubgroupSize = job.requiredSubgroupSize;

  if (job.path == ShaderPath::ShaderObject) {
    auto createShaders =
        reinterpret_cast<PFN_vkCreateShadersEXT>(vkGetDeviceProcAddr(dev, "vkCreateShadersEXT"));
    run.destroyShader = reinterpret_cast<PFN_vkDestroyShaderEXT>(vkGetDeviceProcAddr(dev, "vkDestroyShaderEXT"));
    if (!createShaders || !run.destroyShader) return fail("vkGetDeviceProcAddr(vkCreateShadersEXT)", VK_ERROR_EXTENSION_NOT_PRESENT);
    VkShaderCreateInfoEXT shaderInfo{VK_STRUCTURE_TYPE_SHADER_CREATE_INFO_EXT};
    shaderInfo.pNext = job.requiredSubgroupSize ? &subgroupSize : nullptr;
    shaderInfo.flags = job.requireFullSubgroups ? VK_SHADER_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT : 0;
    shaderInfo.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    shaderInfo.codeType = VK_SHADER_CODE_TYPE_SPIRV_EXT;
    shaderInfo.codeSize = moduleInfo.codeSize;
    shaderInfo.pCode = moduleInfo.pCode;
    shaderInfo.pName = job.entryPoint;
    shaderInfo.setLayoutCount = 1;
    shaderInfo.pSetLayouts = &run.setLayout;
    shaderInfo.pushConstantRangeCount = layoutInfo.pushConstantRangeCount;
    shaderInfo.pPushConstantRanges = &range;
    shaderInfo.pSpecializationInfo = entries.empty() ? nullptr : &spec;
    if (VkResult r = createShaders(dev, 1, &shaderInfo, nullptr, &run.shader); r != VK_SUCCESS) {
      run.shader = VK_NULL_HANDLE;
      return fail("vkCreateShadersEXT", r);
    }
  } else {
    VkComputePipelineCreateInfo pipelineInfo{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pipelineInfo.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    pipelineInfo.stage.pNext = job.requiredSubgroupSize ? &subgroupSize : nullptr;
    if (job.path == ShaderPath::InlineStage) {
      // The module info goes behind the other stage struct, as an app may chain it.
      if (job.requiredSubgroupSize) subgroupSize.pNext = &moduleInfo;
      else pipelineInfo.stage.pNext = &moduleInfo;
    }
    pipelineInfo.stage.flags =
        job.requireFullSubgroups ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT : 0;
    pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipelineInfo.stage.module = run.module;
    pipelineInfo.stage.pName = job.entryPoint;
    pipelineInfo.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec;
    pipelineInfo.layout = run.pipelineLayout;
    const VkResult r = job.createPipeline ? job.createPipeline(dev, pipelineInfo, &run.pipeline)
                                          : vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &pipelineInfo, nullptr, &run.pipeline);
    if (r != VK_SUCCESS) {
      run.pipeline = VK_NULL_HANDLE;
      return fail("vkCreateComputePipelines", r);
    }
  }

  // Descriptors.
  VkDescriptorPoolSize poolSize{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max(count, 1u)};
  VkDescriptorPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  poolInfo.maxSets = 1;
  poolInfo.poolSizeCount = 1;
  poolInfo.pPoolSizes = &poolSize;
  if (VkResult r = vkCreateDescriptorPool(dev, &poolInfo, nullptr, &run.pool); r != VK_SUCCESS)
    return fail("vkCreateDescriptorPool", r);
  VkDescriptorSetAllocateInfo setAlloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  setAlloc.descriptorPool = run.pool;
  setAlloc.descriptorSetCount = 1;
  setAlloc.pSetLayouts = &run.setLayout;
  VkDescriptorSet set;
  if (VkResult r = vkAllocateDescriptorSets(dev, &setAlloc, &set); r != VK_SUCCESS)
    return fail("vkAllocateDescriptorSets", r);
  std::vector<VkDescriptorBufferInfo> infos(count);
  std::vector<VkWriteDescriptorSet> writes(count);
  for (uint32_t i = 0; i < count; ++i) {
    infos[i] = {run.buffers[i], 0, VK_WHOLE_SIZE};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(dev, count, writes.data(), 0, nullptr);

  // Record, submit, wait.
  VkCommandPoolCreateInfo cpInfo{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpInfo.queueFamilyIndex = device.queueFamily();
  if (VkResult r = vkCreateCommandPool(dev, &cpInfo, nullptr, &run.commandPool); r != VK_SUCCESS)
    return fail("vkCreateCommandPool", r);
  VkCommandBufferAllocateInfo cbAlloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cbAlloc.commandPool = run.commandPool;
  cbAlloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cbAlloc.commandBufferCount = 1;
  VkCommandBuffer cb;
  if (VkResult r = vkAllocateCommandBuffers(dev, &cbAlloc, &cb); r != VK_SUCCESS)
    return fail("vkAllocateCommandBuffers", r);
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (VkResult r = vkBeginCommandBuffer(cb, &begin); r != VK_SUCCESS) return fail("vkBeginCommandBuffer", r);
  if (run.shader) {
    auto bindShaders = reinterpret_cast<PFN_vkCmdBindShadersEXT>(vkGetDeviceProcAddr(dev, "vkCmdBindShadersEXT"));
    const VkShaderStageFlagBits stage = VK_SHADER_STAGE_COMPUTE_BIT;
    bindShaders(cb, 1, &stage, &run.shader);
  } else {
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, run.pipeline);
  }
  vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, run.pipelineLayout, 0, 1, &set, 0, nullptr);
  if (!job.pushConstants.empty()) {
    vkCmdPushConstants(cb, run.pipelineLayout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       static_cast<uint32_t>(job.pushConstants.size()), job.pushConstants.data());
  }
  vkCmdDispatch(cb, job.groupCountX, 1, 1);
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                       nullptr, 0, nullptr);
  if (VkResult r = vkEndCommandBuffer(cb); r != VK_SUCCESS) return fail("vkEndCommandBuffer", r);

  VkFenceCreateInfo fenceInfo{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (VkResult r = vkCreateFence(dev, &fenceInfo, nullptr, &run.fence); r != VK_SUCCESS)
    return fail("vkCreateFence", r);
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cb;
  if (VkResult r = vkQueueSubmit(device.queue(), 1, &submit, run.fence); r != VK_SUCCESS)
    return fail("vkQueueSubmit", r);
  if (VkResult r = vkWaitForFences(dev, 1, &run.fence, VK_TRUE, job.timeoutNs); r != VK_SUCCESS) {
    // Do not free what the GPU may still use: wait for the device before the cleanup runs.
    vkDeviceWaitIdle(dev);
    return fail("vkWaitForFences", r);
  }

  for (uint32_t i = 0; i < count; ++i) {
    if (!buffers[i].empty()) std::memcpy(buffers[i].data(), mapped[i], buffers[i].size());
  }
  return out;
}

}  // namespace cmtest
