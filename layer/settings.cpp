#include "settings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "layer_names.h"
#include "platform.h"

extern char** environ;

namespace coopmat::layer {
namespace {

std::string Trim(std::string s) {
  auto notSpace = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
  s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
  return s;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<bool> ParseBool(const std::string& value) {
  const std::string v = Lower(Trim(value));
  if (v == "1" || v == "true" || v == "on" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "off" || v == "no") return false;
  return std::nullopt;
}

std::optional<LogLevel> ParseLogLevel(const std::string& value) {
  const std::string v = Lower(Trim(value));
  if (v == "error") return LogLevel::Error;
  if (v == "warning" || v == "warn") return LogLevel::Warning;
  if (v == "info") return LogLevel::Info;
  if (v == "debug" || v == "verbose") return LogLevel::Debug;
  return std::nullopt;
}

// A size as Mesa's MESA_SHADER_CACHE_MAX_SIZE writes it, with a K, M or G suffix
// (binary units); a plain number is bytes.
std::optional<uint64_t> ParseSize(const std::string& value) {
  const std::string v = Trim(value);
  size_t digits = 0;
  while (digits < v.size() && std::isdigit(static_cast<unsigned char>(v[digits]))) ++digits;
  if (digits == 0 || digits > 15) return std::nullopt;
  const uint64_t number = std::stoull(v.substr(0, digits));
  const std::string unit = Lower(v.substr(digits));
  const int shift = unit.empty() ? 0 : unit == "k" ? 10 : unit == "m" ? 20 : unit == "g" ? 30 : -1;
  if (shift < 0 || number > (UINT64_MAX >> shift)) return std::nullopt;
  return number << shift;
}

// Applies one textual key/value; `source` names where it came from for messages.
void Apply(const std::string& key, const std::string& value, const std::string& source, SettingsResult& out) {
  auto bad = [&] { out.warnings.push_back(source + ": invalid value '" + value + "' for setting '" + key + "'"); };
  if (key == "force_enable") {
    if (auto b = ParseBool(value)) out.settings.forceEnable = *b; else bad();
  } else if (key == "validate") {
    if (auto b = ParseBool(value)) out.settings.validate = *b; else bad();
  } else if (key == "log_level") {
    if (auto l = ParseLogLevel(value)) out.settings.logLevel = *l; else bad();
  } else if (key == "lowering") {
    const std::string v = Lower(Trim(value));
    if (v == "auto" || v == "portable" || v == "registers") {
      out.settings.portableOnly = v == "portable";
      out.settings.registerMoves = v == "registers";
    } else {
      bad();
    }
  } else if (key == "builtin_layouts") {
    const std::string v = Lower(Trim(value));
    out.settings.builtinLayouts = DriverFamilyByName(v);
    if (!out.settings.builtinLayouts && !v.empty()) bad();
  } else if (key == "layout_probe") {
    if (auto b = ParseBool(value)) out.settings.layoutProbe = *b; else bad();
  } else if (key == "shader_cache") {
    if (auto b = ParseBool(value)) out.settings.shaderCache = *b; else bad();
  } else if (key == "shader_cache_max_size") {
    if (auto size = ParseSize(value)) out.settings.shaderCacheMaxSize = *size; else bad();
  } else if (key == "layouts_file") {
    out.settings.layoutsFile = Trim(value);
  } else if (key == "dump_dir") {
    out.settings.dumpDir = Trim(value);
  } else if (key == "disabled_features") {
    Settings& s = out.settings;
    s.disableReductions = s.disableConversions = s.disablePerElementOperations = s.disableGetCoordinate = false;
    std::string list = value;
    std::replace(list.begin(), list.end(), ',', ' ');
    std::istringstream words(list);
    for (std::string word; words >> word;) {
      word = Lower(word);
      if (word == "reductions") s.disableReductions = true;
      else if (word == "conversions") s.disableConversions = true;
      else if (word == "per_element_operations") s.disablePerElementOperations = true;
      else if (word == "get_coordinate") s.disableGetCoordinate = true;
      else out.warnings.push_back(source + ": unknown feature '" + word + "' in disabled_features");
    }
  } else {
    out.warnings.push_back(source + ": unknown setting '" + key +
                           "' (known: force_enable, log_level, dump_dir, validate, disabled_features, layout_probe, builtin_layouts, layouts_file, lowering, shader_cache, shader_cache_max_size)");
  }
}

void ApplyApiSettings(const VkInstanceCreateInfo* createInfo, SettingsResult& out) {
  for (auto* s = static_cast<const VkBaseInStructure*>(createInfo ? createInfo->pNext : nullptr); s; s = s->pNext) {
    if (s->sType != VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT) continue;
    const auto* info = reinterpret_cast<const VkLayerSettingsCreateInfoEXT*>(s);
    for (uint32_t i = 0; i < info->settingCount; ++i) {
      const VkLayerSettingEXT& setting = info->pSettings[i];
      if (!setting.pLayerName || std::strcmp(setting.pLayerName, kLayerName) != 0 || !setting.pSettingName) continue;
      const std::string key = setting.pSettingName;
      const std::string source = "VkLayerSettingsCreateInfoEXT";
      if (setting.valueCount == 0 || !setting.pValues) {
        out.warnings.push_back(source + ": setting '" + key + "' has no value");
        continue;
      }
      switch (setting.type) {
        case VK_LAYER_SETTING_TYPE_BOOL32_EXT:
          Apply(key, *static_cast<const VkBool32*>(setting.pValues) ? "true" : "false", source, out);
          break;
        case VK_LAYER_SETTING_TYPE_STRING_EXT: {
          // A list setting may come as several strings: join them.
          std::string joined;
          for (uint32_t v = 0; v < setting.valueCount; ++v) {
            const char* item = static_cast<const char* const*>(setting.pValues)[v];
            if (!item) continue;
            if (!joined.empty()) joined += ",";
            joined += item;
          }
          Apply(key, joined, source, out);
          break;
        }
        case VK_LAYER_SETTING_TYPE_INT32_EXT:
          Apply(key, std::to_string(*static_cast<const int32_t*>(setting.pValues)), source, out);
          break;
        case VK_LAYER_SETTING_TYPE_UINT32_EXT:
          Apply(key, std::to_string(*static_cast<const uint32_t*>(setting.pValues)), source, out);
          break;
        default:
          out.warnings.push_back(source + ": setting '" + key + "' has an unsupported value type");
      }
    }
  }
}

std::filesystem::path SettingsFilePath() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("VK_LAYER_SETTINGS_PATH"); env && *env) {
    fs::path p(env);
    std::error_code ec;
    return fs::is_directory(p, ec) ? p / "vk_layer_settings.txt" : p;
  }
  return "vk_layer_settings.txt";
}

void ApplySettingsFile(SettingsResult& out) {
  const std::filesystem::path path = SettingsFilePath();
  std::ifstream file(path);
  if (!file) return;
  std::string line;
  int number = 0;
  while (std::getline(file, line)) {
    ++number;
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = Trim(line.substr(0, eq));
    if (key.rfind(kFilePrefix, 0) != 0) continue;  // another layer's setting
    Apply(key.substr(std::strlen(kFilePrefix)), Trim(line.substr(eq + 1)),
          path.string() + ":" + std::to_string(number), out);
  }
}

bool HasSettingsInEnvironment() {
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, kEnvPrefix, std::strlen(kEnvPrefix)) == 0) return true;
  return std::getenv("VK_LAYER_SETTINGS_PATH") != nullptr;
}

void ApplyEnvironment(SettingsResult& out) {
  const size_t prefixLength = std::strlen(kEnvPrefix);
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    if (entry.rfind(kEnvPrefix, 0) != 0) continue;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = Lower(entry.substr(prefixLength, eq - prefixLength));
    Apply(key, entry.substr(eq + 1), "environment " + entry.substr(0, eq), out);
  }
}

// Settings that take effect only with another one: a user who set one alone expects it used,
// so the layer says what it did instead.
void WarnIgnoredLayoutSources(SettingsResult& out) {
  const Settings& s = out.settings;
  if (s.layoutsFile.empty()) return;
  if (s.layoutProbe)
    out.warnings.push_back("layouts_file '" + s.layoutsFile +
                           "' is read only with layout_probe=false: the layer probes the layouts and ignores the file");
  else if (s.builtinLayouts)
    out.warnings.push_back(std::string("builtin_layouts '") + ToString(*s.builtinLayouts) + "' and layouts_file '" +
                           s.layoutsFile + "' both set: the layer takes the file's layouts and not the table");
}

}  // namespace

SettingsResult ReadSettings(const VkInstanceCreateInfo* createInfo) {
  return ReadSettings(createInfo, platform::PrivilegedProcess());
}

SettingsResult ReadSettings(const VkInstanceCreateInfo* createInfo, bool privileged) {
  SettingsResult result;
  // Lowest precedence first; later sources overwrite earlier ones.
  ApplyApiSettings(createInfo, result);
  if (privileged) {
    if (HasSettingsInEnvironment())
      result.warnings.push_back("a setuid/setgid process: " + std::string(kEnvPrefix) +
                                "* and vk_layer_settings.txt are ignored");
  } else {
    ApplySettingsFile(result);
    ApplyEnvironment(result);
  }
  WarnIgnoredLayoutSources(result);
  return result;
}

std::string Describe(const Settings& s) {
  auto flag = [](bool b) { return b ? "true" : "false"; };
  auto text = [](const std::string& v) { return "'" + v + "'"; };
  return std::string("force_enable=") + flag(s.forceEnable) + " log_level=" + LogLevelName(s.logLevel) +
         " validate=" + flag(s.validate) +
         " lowering=" + (s.portableOnly ? "portable" : s.registerMoves ? "registers" : "auto") +
         " layout_probe=" + flag(s.layoutProbe) +
         " builtin_layouts=" + text(s.builtinLayouts ? ToString(*s.builtinLayouts) : "") +
         " layouts_file=" + text(s.layoutsFile) + " shader_cache=" + flag(s.shaderCache) + " dump_dir=" + text(s.dumpDir);
}

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::Error: return "error";
    case LogLevel::Warning: return "warning";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
  }
  return "?";
}

}  // namespace coopmat::layer
