// The layer's settings sources, compiled in from layer/settings.cpp: in a privileged
// (setuid/setgid, AT_SECURE) process the environment and vk_layer_settings.txt are
// the caller's, so only VkLayerSettingsCreateInfoEXT counts (review 130c39d finding 9).
#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "platform.h"
#include "settings.h"

using coopmat::layer::ReadSettings;

namespace {

struct ScopedVariable {
  ScopedVariable(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
  ~ScopedVariable() { unsetenv(name_); }
  const char* name_;
};

// A settings file and environment that both try to steer the layer.
struct CallerControlled {
  std::filesystem::path file = std::filesystem::temp_directory_path() /
                               ("coopmat-settings-" + std::to_string(getpid()) + ".txt");
  CallerControlled() { std::ofstream(file) << "coopmat_maintenance1.builtin_layouts = radv-gfx11\n"; }
  ~CallerControlled() { std::filesystem::remove(file); }
  ScopedVariable path{"VK_LAYER_SETTINGS_PATH", file.string()};
  ScopedVariable dump{"VK_COOPMAT_MAINTENANCE1_DUMP_DIR", "/caller/chose/this"};
};

VkInstanceCreateInfo WithApiSetting(VkLayerSettingsCreateInfoEXT& settings, VkLayerSettingEXT& setting, const VkBool32& value) {
  setting = {"VK_LAYER_coopmat_maintenance1", "validate", VK_LAYER_SETTING_TYPE_BOOL32_EXT, 1, &value};
  settings = {VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT, nullptr, 1, &setting};
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pNext = &settings;
  return info;
}

}  // namespace

TEST_CASE("settings: an ordinary process takes the environment and the settings file", "[layer][settings]") {
  CallerControlled caller;
  CHECK_FALSE(coopmat::platform::PrivilegedProcess());
  const auto result = ReadSettings(nullptr);
  CHECK(result.settings.dumpDir == "/caller/chose/this");
  CHECK(result.settings.builtinLayouts == coopmat::DriverFamily::RadvGfx11);
}

TEST_CASE("settings: a setuid process ignores the environment and the settings file", "[layer][settings]") {
  CallerControlled caller;
  VkLayerSettingsCreateInfoEXT settings;
  VkLayerSettingEXT setting;
  const VkBool32 on = VK_TRUE;
  const VkInstanceCreateInfo info = WithApiSetting(settings, setting, on);
  const auto result = ReadSettings(&info, /*privileged=*/true);
  CHECK(result.settings.dumpDir.empty());
  CHECK_FALSE(result.settings.builtinLayouts);
  CHECK(result.settings.validate);  // the app's own VkLayerSettingsCreateInfoEXT still counts
  CHECK(result.warnings.size() == 1);
}
