// Every Vulkan command the layer intercepts. Everything else goes straight to the
// next layer or driver.
#pragma once

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

namespace coopmat::layer {

VKAPI_ATTR VkResult VKAPI_CALL CreateInstance(const VkInstanceCreateInfo*, const VkAllocationCallbacks*, VkInstance*);
VKAPI_ATTR void VKAPI_CALL DestroyInstance(VkInstance, const VkAllocationCallbacks*);
VKAPI_ATTR VkResult VKAPI_CALL CreateDebugUtilsMessengerEXT(VkInstance, const VkDebugUtilsMessengerCreateInfoEXT*,
                                                            const VkAllocationCallbacks*, VkDebugUtilsMessengerEXT*);
VKAPI_ATTR void VKAPI_CALL DestroyDebugUtilsMessengerEXT(VkInstance, VkDebugUtilsMessengerEXT, const VkAllocationCallbacks*);
VKAPI_ATTR VkResult VKAPI_CALL EnumerateDeviceExtensionProperties(VkPhysicalDevice, const char*, uint32_t*,
                                                                  VkExtensionProperties*);
VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceFeatures2(VkPhysicalDevice, VkPhysicalDeviceFeatures2*);
VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceFeatures2KHR(VkPhysicalDevice, VkPhysicalDeviceFeatures2*);
VKAPI_ATTR VkResult VKAPI_CALL GetPhysicalDeviceCooperativeMatrixProperties2EXT(
    VkPhysicalDevice, const VkPhysicalDeviceCooperativeMatrixInfo2EXT*, uint32_t*, VkCooperativeMatrixProperties2EXT*);

VKAPI_ATTR VkResult VKAPI_CALL CreateDevice(VkPhysicalDevice, const VkDeviceCreateInfo*, const VkAllocationCallbacks*,
                                            VkDevice*);
VKAPI_ATTR void VKAPI_CALL DestroyDevice(VkDevice, const VkAllocationCallbacks*);
VKAPI_ATTR VkResult VKAPI_CALL CreateShaderModule(VkDevice, const VkShaderModuleCreateInfo*,
                                                  const VkAllocationCallbacks*, VkShaderModule*);
VKAPI_ATTR VkResult VKAPI_CALL CreateComputePipelines(VkDevice, VkPipelineCache, uint32_t,
                                                      const VkComputePipelineCreateInfo*, const VkAllocationCallbacks*,
                                                      VkPipeline*);
VKAPI_ATTR VkResult VKAPI_CALL CreateGraphicsPipelines(VkDevice, VkPipelineCache, uint32_t,
                                                       const VkGraphicsPipelineCreateInfo*,
                                                       const VkAllocationCallbacks*, VkPipeline*);
VKAPI_ATTR VkResult VKAPI_CALL CreateShadersEXT(VkDevice, uint32_t, const VkShaderCreateInfoEXT*,
                                                const VkAllocationCallbacks*, VkShaderEXT*);
VKAPI_ATTR void VKAPI_CALL DestroyShaderModule(VkDevice, VkShaderModule, const VkAllocationCallbacks*);
VKAPI_ATTR VkResult VKAPI_CALL CreateRayTracingPipelinesKHR(VkDevice, VkDeferredOperationKHR, VkPipelineCache, uint32_t,
                                                            const VkRayTracingPipelineCreateInfoKHR*,
                                                            const VkAllocationCallbacks*, VkPipeline*);
VKAPI_ATTR VkResult VKAPI_CALL CreateRayTracingPipelinesNV(VkDevice, VkPipelineCache, uint32_t,
                                                           const VkRayTracingPipelineCreateInfoNV*,
                                                           const VkAllocationCallbacks*, VkPipeline*);
VKAPI_ATTR VkResult VKAPI_CALL CreateExecutionGraphPipelinesAMDX(VkDevice, VkPipelineCache, uint32_t,
                                                                 const VkExecutionGraphPipelineCreateInfoAMDX*,
                                                                 const VkAllocationCallbacks*, VkPipeline*);
VKAPI_ATTR VkResult VKAPI_CALL CreateDataGraphPipelinesARM(VkDevice, VkDeferredOperationKHR, VkPipelineCache, uint32_t,
                                                           const VkDataGraphPipelineCreateInfoARM*,
                                                           const VkAllocationCallbacks*, VkPipeline*);
VKAPI_ATTR VkResult VKAPI_CALL CreatePipelineBinariesKHR(VkDevice, const VkPipelineBinaryCreateInfoKHR*,
                                                         const VkAllocationCallbacks*, VkPipelineBinaryHandlesInfoKHR*);
VKAPI_ATTR VkResult VKAPI_CALL GetPipelineKeyKHR(VkDevice, const VkPipelineCreateInfoKHR*, VkPipelineBinaryKeyKHR*);
VKAPI_ATTR void VKAPI_CALL GetShaderModuleCreateInfoIdentifierEXT(VkDevice, const VkShaderModuleCreateInfo*,
                                                                  VkShaderModuleIdentifierEXT*);

// The op features the layer can lower on a served device.
struct Settings;
void SupportedMaintenance1Features(const Settings& settings,
                                   VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT& features);

}  // namespace coopmat::layer
