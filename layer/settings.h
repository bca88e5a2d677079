// Layer settings, read once per instance from (highest precedence first):
//   1. environment variables VK_COOPMAT_MAINTENANCE1_<KEY>
//   2. vk_layer_settings.txt lines "coopmat_maintenance1.<key> = <value>"
//      (file named by VK_LAYER_SETTINGS_PATH, a file or a folder, else the working folder)
//   3. VkLayerSettingsCreateInfoEXT entries with pLayerName == VK_LAYER_coopmat_maintenance1
// the same precedence as Vulkan-Utility-Libraries' vkuLayerSettings.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coopmat/layout.h"

namespace coopmat::layer {

enum class LogLevel { Error = 0, Warning = 1, Info = 2, Debug = 3 };

struct Settings {
  bool forceEnable = false;    // serve the extension even where the driver implements it natively
  LogLevel logLevel = LogLevel::Warning;
  std::string dumpDir;         // write original and rewritten SPIR-V of every lowered module here
  bool validate = false;       // run spirv-val on every rewritten module
  bool layoutProbe = true;     // discover the driver's register layouts once per device (cached)
  bool shaderCache = true;     // keep pipeline-time lowerings on disk (always in memory)
  uint64_t shaderCacheMaxSize = uint64_t{1} << 30;  // shader_cache_max_size: the disk cache's limit (LRU)
  bool portableOnly = false;   // lowering=portable: never use the register path
  bool registerMoves = false;  // lowering=registers: register moves wherever planned, whatever the measured costs
  // builtin_layouts=<family>: where the probe reads nothing, this family's table
  // whatever the driver and its version (compile-only lanes on Mesa's drm-shim,
  // where nothing executes; wrong layouts compute wrong results on real hardware).
  std::optional<DriverFamily> builtinLayouts;
  // With layout_probe=false: register layouts read from this file (the text form of
  // coopmat/layout.h, what coopmat-info --layouts writes) instead of any probe or table.
  std::string layoutsFile;
  // Op features the layer reports as unsupported (to test an app's fallbacks):
  // any of reductions, conversions, per_element_operations, get_coordinate.
  bool disableReductions = false;
  bool disableConversions = false;
  bool disablePerElementOperations = false;
  bool disableGetCoordinate = false;
};

struct SettingsResult {
  Settings settings;
  std::vector<std::string> warnings;  // unknown keys and unparsable values
};

SettingsResult ReadSettings(const VkInstanceCreateInfo* createInfo);
// The same; a privileged process (platform::PrivilegedProcess) takes only the
// VkLayerSettingsCreateInfoEXT entries: its environment and working folder are its
// caller's (review 130c39d finding 9: dump_dir would write where the caller says).
SettingsResult ReadSettings(const VkInstanceCreateInfo* createInfo, bool privileged);

const char* LogLevelName(LogLevel level);

// The settings in effect, "name=value" by setting name (text values quoted), as the layer
// logs them at instance creation: what a tool that set some of them checks (coopmat-selftest:
// the environment and vk_layer_settings.txt override VkLayerSettingsCreateInfoEXT).
std::string Describe(const Settings& settings);

}  // namespace coopmat::layer
