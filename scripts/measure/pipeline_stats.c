// pipeline_stats FILE.spv...: compiles each compute module into a pipeline on the
// first Vulkan device and prints "file compile_ms instructions" (instructions from
// VK_KHR_pipeline_executable_properties' "Instructions" statistic where the driver
// reports one, e.g. RADV/ACO; -1 otherwise). Every feature the device has is
// enabled; set 0 holds eight storage buffers, 128 bytes of push constants, spec
// constant 0 (the local size) is 32. For docs/design.md's optimizer measurement.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vulkan/vulkan.h>

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void* Read(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = malloc(*size);
  if (fread(data, 1, *size, f) != *size) *size = 0;
  fclose(f);
  return data;
}

int main(int argc, char** argv) {
  VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_3};
  VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
  VkInstance instance;
  if (vkCreateInstance(&ici, NULL, &instance)) return 1;
  uint32_t n = 1;
  VkPhysicalDevice pd;
  vkEnumeratePhysicalDevices(instance, &n, &pd);
  if (!n) return 1;
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec = {
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, &exec};
  VkPhysicalDeviceVulkan13Features v13 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, &coop};
  VkPhysicalDeviceVulkan12Features v12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &v13};
  VkPhysicalDeviceVulkan11Features v11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &v12};
  VkPhysicalDeviceFeatures2 features = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &v11};
  vkGetPhysicalDeviceFeatures2(pd, &features);
  const char* extensions[2] = {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME};
  float priority = 1;
  VkDeviceQueueCreateInfo queue = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueCount = 1, .pQueuePriorities = &priority};
  VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &features, .queueCreateInfoCount = 1,
                            .pQueueCreateInfos = &queue, .enabledExtensionCount = exec.pipelineExecutableInfo ? 2 : 1,
                            .ppEnabledExtensionNames = extensions};
  VkDevice device;
  if (vkCreateDevice(pd, &dci, NULL, &device)) return 1;
  VkDescriptorSetLayoutBinding bindings[8];
  for (uint32_t b = 0; b < 8; ++b)
    bindings[b] = (VkDescriptorSetLayoutBinding){b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
  VkDescriptorSetLayoutCreateInfo dsl = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = 8, .pBindings = bindings};
  VkDescriptorSetLayout setLayout;
  vkCreateDescriptorSetLayout(device, &dsl, NULL, &setLayout);
  VkPushConstantRange push = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
  VkPipelineLayoutCreateInfo plci = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1, .pSetLayouts = &setLayout,
                                     .pushConstantRangeCount = 1, .pPushConstantRanges = &push};
  VkPipelineLayout layout;
  vkCreatePipelineLayout(device, &plci, NULL, &layout);
  PFN_vkGetPipelineExecutablePropertiesKHR getExecutables =
      (PFN_vkGetPipelineExecutablePropertiesKHR)vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR");
  PFN_vkGetPipelineExecutableStatisticsKHR getStatistics =
      (PFN_vkGetPipelineExecutableStatisticsKHR)vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR");
  for (int i = 1; i < argc; ++i) {
    size_t size = 0;
    void* code = Read(argv[i], &size);
    VkShaderModuleCreateInfo smci = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = size, .pCode = code};
    VkShaderModule module;
    if (!code || vkCreateShaderModule(device, &smci, NULL, &module)) {
      printf("%s error -1\n", argv[i]);
      continue;
    }
    uint32_t localSize = 32;
    VkSpecializationMapEntry entry = {0, 0, 4};
    VkSpecializationInfo spec = {1, &entry, 4, &localSize};
    VkComputePipelineCreateInfo cpci = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                        .flags = exec.pipelineExecutableInfo ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
                                        .stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                                                  .module = module, .pName = "main", .pSpecializationInfo = &spec},
                                        .layout = layout};
    VkPipeline pipeline;
    const double begin = Now();
    const VkResult r = vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &cpci, NULL, &pipeline);
    const double ms = Now() - begin;
    long long instructions = -1;
    if (r == VK_SUCCESS && exec.pipelineExecutableInfo) {
      VkPipelineInfoKHR info = {VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pipeline};
      uint32_t count = 0;
      getExecutables(device, &info, &count, NULL);
      for (uint32_t e = 0; e < count; ++e) {
        VkPipelineExecutableInfoKHR ei = {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = pipeline, .executableIndex = e};
        VkPipelineExecutableStatisticKHR stats[64];
        uint32_t nstats = 64;
        for (uint32_t s = 0; s < nstats; ++s) stats[s] = (VkPipelineExecutableStatisticKHR){VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
        getStatistics(device, &ei, &nstats, stats);
        for (uint32_t s = 0; s < nstats; ++s)
          if (!strcmp(stats[s].name, "Instructions")) instructions = (long long)stats[s].value.u64;
      }
    }
    printf("%s %.2f %lld%s\n", argv[i], ms, instructions, r ? " (pipeline failed)" : "");
    if (r == VK_SUCCESS) vkDestroyPipeline(device, pipeline, NULL);
    vkDestroyShaderModule(device, module, NULL);
    free(code);
  }
  vkDestroyDevice(device, NULL);
  vkDestroyInstance(instance, NULL);
  return 0;
}
