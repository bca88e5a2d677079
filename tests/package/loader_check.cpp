// coopmat_loader_check [--expect-loader-unaware]: what an application gets through the
// Vulkan loader it runs with, on the first device that lists VK_KHR_cooperative_matrix
// (the virtual device in CI), when it uses VK_EXT_cooperative_matrix_maintenance1 as
// with a native driver:
// - the device lists the extension, and vkGetInstanceProcAddr returns
//   vkGetPhysicalDeviceCooperativeMatrixProperties2EXT;
// - its answers, at subgroupSize 0 and at the device's subgroup size, are the device's
//   subgroup-scope, non-saturating KHR configurations with the KHR sizes as
//   granularities (the extension's rule for a KHR-only driver), and a short array gets
//   VK_INCOMPLETE;
// - vkGetPhysicalDeviceFeatures2 fills the feature struct, and vkCreateDevice takes the
//   extension with the struct chained.
// --expect-loader-unaware: the loader must not know the command itself (Debian 13's
// loader 1.4.309 predates the extension): with the installed layer switched off
// (DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1=1) it returns null, so the command above came
// from the layer's vk_layerGetPhysicalDeviceProcAddr.
// Prints one "ok:" or "FAIL:" line per check; the exit status is the number of failures.
#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

namespace {

int failures = 0;

bool Check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
  if (!ok) ++failures;
  return ok;
}

VkInstance CreateInstance() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "coopmat_loader_check";
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  return vkCreateInstance(&info, nullptr, &instance) == VK_SUCCESS ? instance : VK_NULL_HANDLE;
}

std::vector<VkExtensionProperties> Extensions(VkPhysicalDevice device) {
  uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> list(count);
  vkEnumerateDeviceExtensionProperties(device, nullptr, &count, list.data());
  list.resize(count);
  return list;
}

bool Lists(const std::vector<VkExtensionProperties>& list, const char* name) {
  return std::any_of(list.begin(), list.end(), [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// M, N, K, A, B, C, Result: one configuration, comparable across the KHR and EXT lists.
using Config = std::tuple<uint32_t, uint32_t, uint32_t, int, int, int, int>;

std::vector<Config> ExpectedFromKhr(VkInstance instance, VkPhysicalDevice device) {
  auto query = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  std::vector<Config> configs;
  if (!query) return configs;
  uint32_t count = 0;
  query(device, &count, nullptr);
  std::vector<VkCooperativeMatrixPropertiesKHR> khr(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
  query(device, &count, khr.data());
  for (uint32_t i = 0; i < count; ++i) {
    const VkCooperativeMatrixPropertiesKHR& p = khr[i];
    if (p.scope == VK_SCOPE_SUBGROUP_KHR && !p.saturatingAccumulation)
      configs.emplace_back(p.MSize, p.NSize, p.KSize, p.AType, p.BType, p.CType, p.ResultType);
  }
  std::sort(configs.begin(), configs.end());
  return configs;
}

std::vector<Config> Properties2(PFN_vkGetPhysicalDeviceCooperativeMatrixProperties2EXT query, VkPhysicalDevice device,
                                uint32_t subgroupSize, VkResult* result) {
  VkPhysicalDeviceCooperativeMatrixInfo2EXT info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_INFO_2_EXT};
  info.scope = VK_SCOPE_SUBGROUP_KHR;
  info.subgroupSize = subgroupSize;
  uint32_t count = 0;
  *result = query(device, &info, &count, nullptr);
  std::vector<VkCooperativeMatrixProperties2EXT> list(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_2_EXT});
  if (*result == VK_SUCCESS) *result = query(device, &info, &count, list.data());
  std::vector<Config> configs;
  for (uint32_t i = 0; i < count && i < list.size(); ++i) {
    const VkCooperativeMatrixProperties2EXT& p = list[i];
    configs.emplace_back(p.MGranularity, p.NGranularity, p.KGranularity, p.AType, p.BType, p.CType, p.ResultType);
  }
  std::sort(configs.begin(), configs.end());
  return configs;
}

void CheckProperties2(VkInstance instance, VkPhysicalDevice device, PFN_vkGetPhysicalDeviceCooperativeMatrixProperties2EXT query) {
  const std::vector<Config> expected = ExpectedFromKhr(instance, device);
  Check(!expected.empty(), "the device has subgroup-scope KHR configurations (" + std::to_string(expected.size()) + ")");
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &subgroup};
  vkGetPhysicalDeviceProperties2(device, &properties);
  for (uint32_t size : {0u, subgroup.subgroupSize}) {
    VkResult result = VK_SUCCESS;
    const std::vector<Config> got = Properties2(query, device, size, &result);
    Check(result == VK_SUCCESS && got == expected,
          "Properties2 at subgroupSize " + std::to_string(size) + ": " + std::to_string(got.size()) +
              " configurations, the KHR ones (result " + std::to_string(result) + ")");
  }
  if (expected.size() >= 2) {
    VkPhysicalDeviceCooperativeMatrixInfo2EXT info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_INFO_2_EXT};
    info.scope = VK_SCOPE_SUBGROUP_KHR;
    uint32_t count = static_cast<uint32_t>(expected.size()) - 1;
    std::vector<VkCooperativeMatrixProperties2EXT> list(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_2_EXT});
    const VkResult result = query(device, &info, &count, list.data());
    Check(result == VK_INCOMPLETE && count == expected.size() - 1, "Properties2 into a short array: VK_INCOMPLETE");
  }
}

VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT CheckFeatures(VkPhysicalDevice device) {
  VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT};
  VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &features};
  vkGetPhysicalDeviceFeatures2(device, &features2);
  Check(features.cooperativeMatrixProperties2 && features.cooperativeMatrixReductions &&
            features.cooperativeMatrixConversions && features.cooperativeMatrixPerElementOperations &&
            features.cooperativeMatrixGetCoordinate,
        "vkGetPhysicalDeviceFeatures2 fills VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT (all five)");
  return features;
}

void CheckCreateDevice(VkPhysicalDevice device, VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT features) {
  features.pNext = nullptr;
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR khr{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, &features};
  khr.cooperativeMatrix = VK_TRUE;
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  const char* extensions[] = {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME, VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME};
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &khr};
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = 2;
  info.ppEnabledExtensionNames = extensions;
  VkDevice created = VK_NULL_HANDLE;
  const VkResult result = vkCreateDevice(device, &info, nullptr, &created);
  Check(result == VK_SUCCESS, "vkCreateDevice with the extension and its feature struct (result " + std::to_string(result) + ")");
  if (created) vkDestroyDevice(created, nullptr);
}

// With the installed layer switched off, what the loader alone returns for the command.
bool LoaderKnowsProperties2() {
  setenv("DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1", "1", 1);
  const VkInstance instance = CreateInstance();
  unsetenv("DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1");
  if (!instance) return true;
  const bool known = vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT") != nullptr;
  vkDestroyInstance(instance, nullptr);
  return known;
}

}  // namespace

int main(int argc, char** argv) {
  const bool expectLoaderUnaware = argc > 1 && std::strcmp(argv[1], "--expect-loader-unaware") == 0;
  uint32_t loaderVersion = 0;
  vkEnumerateInstanceVersion(&loaderVersion);
  std::printf("loader: Vulkan %u.%u.%u\n", VK_API_VERSION_MAJOR(loaderVersion), VK_API_VERSION_MINOR(loaderVersion),
              VK_API_VERSION_PATCH(loaderVersion));
  if (expectLoaderUnaware)
    Check(!LoaderKnowsProperties2(),
          "without the layer the loader returns no vkGetPhysicalDeviceCooperativeMatrixProperties2EXT (it predates it)");

  const VkInstance instance = CreateInstance();
  if (!Check(instance != VK_NULL_HANDLE, "vkCreateInstance")) return failures;
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance, &count, devices.data());
  VkPhysicalDevice device = VK_NULL_HANDLE;
  for (VkPhysicalDevice candidate : devices)
    if (!device && Lists(Extensions(candidate), VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) device = candidate;
  if (Check(device != VK_NULL_HANDLE, "a device lists VK_KHR_cooperative_matrix")) {
    VkPhysicalDeviceProperties properties;
    vkGetPhysicalDeviceProperties(device, &properties);
    std::printf("device: %s\n", properties.deviceName);
    Check(Lists(Extensions(device), VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME),
          "the device lists VK_EXT_cooperative_matrix_maintenance1");
    auto query = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixProperties2EXT>(
        vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT"));
    if (Check(query != nullptr, "vkGetInstanceProcAddr returns vkGetPhysicalDeviceCooperativeMatrixProperties2EXT"))
      CheckProperties2(instance, device, query);
    CheckCreateDevice(device, CheckFeatures(device));
  }
  vkDestroyInstance(instance, nullptr);
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
  return failures;
}
