// coopmat-info: what a machine offers for cooperative matrices, with and without
// VK_LAYER_coopmat_maintenance1 — KHR properties, the maintenance1 features and
// the Properties2 answers for every legal subgroup size.
//
//   coopmat-info [--no-layer | --layer-only] [--layouts FILE]
//
// With the layer, it also creates a device so the layer discovers the driver's
// register layouts, prints them, and with --layouts writes them to FILE in the
// text form coopmat-lower --layouts reads (one device's a file: a second device's
// go to FILE.1, and so on).
#include <vulkan/vulkan.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "platform.h"

namespace {

constexpr const char* kLayerName = "VK_LAYER_coopmat_maintenance1";
constexpr const char* kDisableVariable = "DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1";
constexpr const char* kLoaderDisableVariable = "VK_LOADER_LAYERS_DISABLE";

const char* ComponentName(VkComponentTypeKHR type) {
  switch (type) {
    case VK_COMPONENT_TYPE_FLOAT16_KHR: return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_KHR: return "f32";
    case VK_COMPONENT_TYPE_FLOAT64_KHR: return "f64";
    case VK_COMPONENT_TYPE_SINT8_KHR: return "s8";
    case VK_COMPONENT_TYPE_SINT16_KHR: return "s16";
    case VK_COMPONENT_TYPE_SINT32_KHR: return "s32";
    case VK_COMPONENT_TYPE_SINT64_KHR: return "s64";
    case VK_COMPONENT_TYPE_UINT8_KHR: return "u8";
    case VK_COMPONENT_TYPE_UINT16_KHR: return "u16";
    case VK_COMPONENT_TYPE_UINT32_KHR: return "u32";
    case VK_COMPONENT_TYPE_UINT64_KHR: return "u64";
    case VK_COMPONENT_TYPE_BFLOAT16_KHR: return "bf16";
    case VK_COMPONENT_TYPE_FLOAT8_E4M3_EXT: return "e4m3";
    case VK_COMPONENT_TYPE_FLOAT8_E5M2_EXT: return "e5m2";
    default: return "?";
  }
}

const char* ScopeName(VkScopeKHR scope) {
  switch (scope) {
    case VK_SCOPE_DEVICE_KHR: return "device";
    case VK_SCOPE_WORKGROUP_KHR: return "workgroup";
    case VK_SCOPE_SUBGROUP_KHR: return "subgroup";
    case VK_SCOPE_QUEUE_FAMILY_KHR: return "queuefamily";
    default: return "?";
  }
}

bool LayerInstalled() {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  for (const auto& l : layers) {
    if (std::strcmp(l.layerName, kLayerName) == 0) return true;
  }
  return false;
}

bool HasExtension(VkPhysicalDevice device, const char* name) {
  uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> list(count);
  vkEnumerateDeviceExtensionProperties(device, nullptr, &count, list.data());
  for (const auto& e : list) {
    if (std::strcmp(e.extensionName, name) == 0) return true;
  }
  return false;
}

void PrintKhr(VkInstance instance, VkPhysicalDevice device) {
  auto query = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  uint32_t count = 0;
  if (!query || query(device, &count, nullptr) != VK_SUCCESS) {
    std::printf("    KHR properties: query failed\n");
    return;
  }
  std::vector<VkCooperativeMatrixPropertiesKHR> list(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
  query(device, &count, list.data());
  std::printf("    KHR properties: %u\n", count);
  for (const auto& p : list) {
    std::printf("      M=%-3u N=%-3u K=%-3u A=%-4s B=%-4s C=%-4s Result=%-4s saturating=%u scope=%s\n", p.MSize, p.NSize,
                p.KSize, ComponentName(p.AType), ComponentName(p.BType), ComponentName(p.CType),
                ComponentName(p.ResultType), p.saturatingAccumulation, ScopeName(p.scope));
  }
}

void PrintProperties2(VkInstance instance, VkPhysicalDevice device, uint32_t subgroupSize) {
  auto query = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixProperties2EXT>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT"));
  if (!query) return;
  VkPhysicalDeviceCooperativeMatrixInfo2EXT info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_INFO_2_EXT};
  info.scope = VK_SCOPE_SUBGROUP_KHR;
  info.subgroupSize = subgroupSize;
  uint32_t count = 0;
  const VkResult result = query(device, &info, &count, nullptr);
  std::vector<VkCooperativeMatrixProperties2EXT> list(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_2_EXT});
  if (result == VK_SUCCESS && count) query(device, &info, &count, list.data());
  std::printf("    Properties2 (subgroup scope, subgroupSize=%u%s): %u%s\n", subgroupSize,
              subgroupSize == 0 ? " = unknown at creation" : "", count, result == VK_SUCCESS ? "" : " (query failed)");
  for (const auto& p : list) {
    std::printf("      granularity M=%-3u N=%-3u K=%-3u A=%-4s B=%-4s C=%-4s Result=%s\n", p.MGranularity, p.NGranularity,
                p.KGranularity, ComponentName(p.AType), ComponentName(p.BType), ComponentName(p.CType),
                ComponentName(p.ResultType));
  }
}

// What the layer reports (at log level info) while a device is created: a line per
// matrix type and subgroup size, "layout: <text form>  # <origin>" or "no layout: <key>".
struct LayoutReport {
  std::vector<std::string> layouts;  // the text form, for --layouts
  std::vector<std::string> origins;  // probed, probed (cached), built-in <family> table, driver versions ...
  std::vector<std::string> missing;  // keys whose operations take the portable path
  std::string settings;              // the layer's "settings: ..." line: why it reports none
  std::vector<std::string> warnings;  // warnings and errors: the report shows them, since stderr is silenced
};

VKAPI_ATTR VkBool32 VKAPI_CALL CollectLayouts(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT,
                                              const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* report = static_cast<LayoutReport*>(user);
  const std::string text = data->pMessage ? data->pMessage : "";
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    report->warnings.push_back(std::string(severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error: " : "warning: ") +
                               text);
  } else if (text.rfind("layout: ", 0) == 0) {
    const std::string line = text.substr(8);
    const size_t comment = line.find("  # ");
    report->layouts.push_back(line.substr(0, comment));
    report->origins.push_back(comment == std::string::npos ? "" : line.substr(comment + 4));
  } else if (text.rfind("no layout: ", 0) == 0) {
    report->missing.push_back(text.substr(11));
  } else if (text.rfind("settings: ", 0) == 0) {
    report->settings = text.substr(10);
  }
  return VK_FALSE;
}

// The warnings and errors heard since the last call, where the report is (the tool silences
// the layer's stderr copy of its lines).
void PrintWarnings(LayoutReport& report, const char* indent) {
  for (auto line = report.warnings.begin(); line != report.warnings.end(); ++line)
    if (std::find(report.warnings.begin(), line, *line) == line)  // the loader says some twice
      std::printf("%s%s\n", indent, line->c_str());
  report.warnings.clear();
}

// Creates and destroys a device with the extension enabled: the layer probes the
// register layouts then (or reads them from its cache) and reports them.
void CreateDeviceForLayouts(VkPhysicalDevice device) {
  uint32_t familyCount = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(device, &familyCount, nullptr);
  std::vector<VkQueueFamilyProperties> families(familyCount);
  vkGetPhysicalDeviceQueueFamilyProperties(device, &familyCount, families.data());
  uint32_t family = 0;
  while (family < familyCount && !(families[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
  if (family == familyCount) return;
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR khr{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  khr.cooperativeMatrix = VK_TRUE;
  std::vector<const char*> extensions = {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME,
                                         VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME};
  // bf16 and fp8 matrices as an app that uses them enables them (the layer probes a
  // type only where the app enabled it; it turns on the f16 and 8-bit features itself).
  VkPhysicalDeviceShaderBfloat16FeaturesKHR bf16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
  VkPhysicalDeviceShaderFloat8FeaturesEXT fp8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT8_FEATURES_EXT, &bf16};
  VkPhysicalDeviceFeatures2 supported{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &fp8};
  vkGetPhysicalDeviceFeatures2(device, &supported);
  void* chain = nullptr;
  if (HasExtension(device, VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME) && bf16.shaderBFloat16Type &&
      bf16.shaderBFloat16CooperativeMatrix) {
    extensions.push_back(VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
    bf16 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR, chain, VK_TRUE, VK_FALSE, VK_TRUE};
    chain = &bf16;
  }
  if (HasExtension(device, VK_EXT_SHADER_FLOAT8_EXTENSION_NAME) && fp8.shaderFloat8 && fp8.shaderFloat8CooperativeMatrix) {
    extensions.push_back(VK_EXT_SHADER_FLOAT8_EXTENSION_NAME);
    fp8 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT8_FEATURES_EXT, chain, VK_TRUE, VK_TRUE};
    chain = &fp8;
  }
  khr.pNext = chain;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &khr};
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VkDevice logical = VK_NULL_HANDLE;
  VkResult result;
  {
    // The layer also writes its info lines to stderr; the report shows them once, on stdout.
    const coopmat::platform::SilencedStderr silenced;
    result = vkCreateDevice(device, &info, nullptr, &logical);
    if (result == VK_SUCCESS) vkDestroyDevice(logical, nullptr);
  }
  if (result != VK_SUCCESS) std::printf("    (device creation failed: %d)\n", result);
}

// Sets an environment variable for one vkCreateInstance (the loader reads its
// settings there) and puts the old value back.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    coopmat::platform::SetEnvironment(name, value.c_str());
  }
  ~ScopedVariable() { coopmat::platform::SetEnvironment(name_, old_ ? old_->c_str() : nullptr); }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Whether the instance runs with our layer: the loader lists an instance's enabled
// layers (the environment's included) as its device layers.
bool LayerActive(VkPhysicalDevice device) {
  uint32_t count = 0;
  vkEnumerateDeviceLayerProperties(device, &count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateDeviceLayerProperties(device, &count, layers.data());
  return std::any_of(layers.begin(), layers.begin() + count,
                     [](const VkLayerProperties& l) { return std::strcmp(l.layerName, kLayerName) == 0; });
}

// VK_LOADER_LAYERS_DISABLE with our layer added to what the user already disables.
std::string LoaderDisableList() {
  const char* current = std::getenv(kLoaderDisableVariable);
  return current && *current ? std::string(current) + "," + kLayerName : std::string(kLayerName);
}

// Writes one device's layout lines; false (and says so) where the file cannot be written.
bool WriteLayouts(const std::string& path, const std::vector<std::string>& lines) {
  FILE* out = std::fopen(path.c_str(), "w");
  if (!out) {
    std::fprintf(stderr, "coopmat-info: cannot write %s\n", path.c_str());
    return false;
  }
  for (const std::string& line : lines) std::fprintf(out, "%s\n", line.c_str());
  return std::fclose(out) == 0;
}

// False where a --layouts file could not be written.
bool Report(bool withLayer, const char* layoutsFile) {
  // Without the layer: switch it off for this instance however it would be enabled:
  // an implicit install (its disable variable) and VK_INSTANCE_LAYERS or
  // VK_LOADER_LAYERS_ENABLE (the loader's disable filter wins over both).
  std::optional<ScopedVariable> disableImplicit, disableFilter, infoLevel;
  if (!withLayer) {
    disableImplicit.emplace(kDisableVariable, "1");
    disableFilter.emplace(kLoaderDisableVariable, LoaderDisableList());
  } else {
    // The layout lines come at log level info; the environment and vk_layer_settings.txt
    // take precedence over VkLayerSettingsCreateInfoEXT, so a lower level set there
    // would have left the report empty (review of 2026-12-07).
    infoLevel.emplace("VK_COOPMAT_MAINTENANCE1_LOG_LEVEL", "info");
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "coopmat-info";
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  const char* layers[] = {kLayerName};
  if (withLayer) {
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = layers;
  }
  // With the layer: hear its "layout:" lines (log level info, debug-utils only).
  LayoutReport layoutLines;
  VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;  // the loader's errors too
  messenger.pfnUserCallback = &CollectLayouts;
  messenger.pUserData = &layoutLines;
  const char* debugUtils[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  if (withLayer) {
    info.pNext = &messenger;  // also hears the settings line vkCreateInstance logs
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = debugUtils;
  }
  VkInstance instance = VK_NULL_HANDLE;
  VkResult created;
  {
    // With the layer, its info lines (the settings line) would reach stderr as well: the
    // messenger hears them, and its warnings, for the report.
    std::optional<coopmat::platform::SilencedStderr> silenced;
    if (withLayer) silenced.emplace();
    created = vkCreateInstance(&info, nullptr, &instance);
  }
  disableImplicit.reset();
  disableFilter.reset();
  infoLevel.reset();
  std::printf("== %s ==\n", withLayer ? "with VK_LAYER_coopmat_maintenance1" : "without the layer");
  PrintWarnings(layoutLines, "  ");
  if (created != VK_SUCCESS) {
    std::printf("  vkCreateInstance failed (%d)\n", created);
    return true;
  }
  const std::string settingsLine = layoutLines.settings;
  bool written = true;
  int layoutFiles = 0;
  VkDebugUtilsMessengerEXT messengerHandle = VK_NULL_HANDLE;
  if (withLayer) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    if (create) create(instance, &messenger, nullptr, &messengerHandle);
  }
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance, &count, devices.data());
  for (VkPhysicalDevice device : devices) {
    VkPhysicalDeviceSubgroupSizeControlProperties sizes{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, &sizes};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, &subgroup};
    VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &driver};
    vkGetPhysicalDeviceProperties2(device, &properties);
    const bool khr = HasExtension(device, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    const bool ext = HasExtension(device, VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME);
    std::printf("  %s (%s %s)\n", properties.properties.deviceName, driver.driverName, driver.driverInfo);
    if (!withLayer && LayerActive(device))
      std::printf("    note: the environment forces %s on and this loader cannot switch it off; the answers below "
                  "are the layer's, not the driver's\n", kLayerName);
    std::printf("    subgroupSize=%u min=%u max=%u maxComputeSharedMemorySize=%u\n", subgroup.subgroupSize,
                sizes.minSubgroupSize, sizes.maxSubgroupSize, properties.properties.limits.maxComputeSharedMemorySize);
    std::printf("    %s: %s\n", VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME, khr ? "yes" : "no");
    std::printf("    %s: %s\n", VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME, ext ? "yes" : "no");
    if (!khr) continue;
    PrintKhr(instance, device);
    if (!ext) continue;
    VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT m1{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &m1};
    vkGetPhysicalDeviceFeatures2(device, &features);
    std::printf("    features: cooperativeMatrixProperties2=%u Reductions=%u Conversions=%u PerElementOperations=%u "
                "GetCoordinate=%u\n",
                m1.cooperativeMatrixProperties2, m1.cooperativeMatrixReductions, m1.cooperativeMatrixConversions,
                m1.cooperativeMatrixPerElementOperations, m1.cooperativeMatrixGetCoordinate);
    if (withLayer) {
      layoutLines = {};
      CreateDeviceForLayouts(device);
      PrintWarnings(layoutLines, "    ");
      // The layer enables what its probe needs itself: every app gets these.
      std::printf("    register layouts the layer uses, per type and subgroup size: %zu, portable: %zu\n",
                  layoutLines.layouts.size(), layoutLines.missing.size());
      if (layoutLines.layouts.empty() && layoutLines.missing.empty())
        std::printf("      none reported: every operation takes the portable path (the layer's settings: %s)\n",
                    settingsLine.c_str());
      for (size_t i = 0; i < layoutLines.layouts.size(); ++i)
        std::printf("      %s\n        from: %s\n", layoutLines.layouts[i].c_str(), layoutLines.origins[i].c_str());
      for (const std::string& key : layoutLines.missing) std::printf("      %s: none (the portable path)\n", key.c_str());
      if (layoutsFile) {
        // One device's layouts a file: a layouts_file names one device's.
        const std::string path = std::string(layoutsFile) + (layoutFiles ? "." + std::to_string(layoutFiles) : "");
        ++layoutFiles;
        if (WriteLayouts(path, layoutLines.layouts)) std::printf("    layouts written to %s\n", path.c_str());
        else written = false;
      }
    }
    PrintProperties2(instance, device, 0);
    for (uint32_t size = sizes.minSubgroupSize ? sizes.minSubgroupSize : subgroup.subgroupSize;
         size && size <= std::max(sizes.maxSubgroupSize, subgroup.subgroupSize); size *= 2)
      PrintProperties2(instance, device, size);
  }
  if (messengerHandle) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    destroy(instance, messengerHandle, nullptr);
  }
  vkDestroyInstance(instance, nullptr);
  return written;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr const char* kUsage = "usage: coopmat-info [--no-layer | --layer-only] [--layouts FILE]\n";
  bool withLayer = true, withoutLayer = true;
  const char* layoutsFile = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-layer") == 0) withLayer = false;
    else if (std::strcmp(argv[i], "--layer-only") == 0) withoutLayer = false;
    else if (std::strcmp(argv[i], "--layouts") == 0 && i + 1 < argc) layoutsFile = argv[++i];
    else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fputs(kUsage, stderr);
      return 2;
    }
  }
  // Options that would leave nothing to do, or a file unwritten, without a word.
  if (!withLayer && (!withoutLayer || layoutsFile)) {
    std::fprintf(stderr, "coopmat-info: --no-layer %s\n%s",
                 !withoutLayer ? "and --layer-only leave nothing to report" : "writes no --layouts file", kUsage);
    return 2;
  }
  if (withoutLayer) Report(false, nullptr);
  if (withLayer) {
    if (!LayerInstalled()) {
      std::printf("== %s is not on the layer path (set VK_ADD_LAYER_PATH=<build>/layer) ==\n", kLayerName);
      return withoutLayer ? 0 : 1;
    }
    if (!Report(true, layoutsFile)) return 1;
  }
  return 0;
}
