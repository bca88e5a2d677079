#include "profile.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace coopmat::virt {

std::optional<ElementLayout> Profile::FindLayout(const LayoutKey& key) const {
  for (const ElementLayout& layout : layouts)
    if (layout.Key() == key) return layout;
  if (!flexibleMaxDimension || key.rows > flexibleMaxDimension || key.cols > flexibleMaxDimension) return std::nullopt;
  for (const ElementLayout& tile : layouts) {
    const LayoutKey& t = tile.Key();
    if (t.componentType == key.componentType && t.use == key.use && t.subgroupSize == key.subgroupSize &&
        key.rows % t.rows == 0 && key.cols % t.cols == 0 && IsConfigurationShape(t))
      return tile.Tiled(key.rows, key.cols);
  }
  return std::nullopt;
}

bool Profile::IsConfigurationShape(const LayoutKey& key) const {
  return std::any_of(matrices.begin(), matrices.end(), [&](const MatrixConfig& m) {
    switch (key.use) {
      case kUseA: return key.rows == m.m && key.cols == m.k;
      case kUseB: return key.rows == m.k && key.cols == m.n;
      default: return key.rows == m.m && key.cols == m.n;
    }
  });
}

bool Profile::RunsSubgroupSize(uint32_t size) const {
  return std::find(subgroupSizes.begin(), subgroupSizes.end(), size) != subgroupSizes.end();
}

bool Profile::ListsComponentType(uint32_t type) const {
  return std::any_of(matrices.begin(), matrices.end(), [&](const MatrixConfig& m) {
    return m.aType == type || m.bType == type || m.cType == type || m.resultType == type;
  });
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> words;
  while (true) {
    s = Trim(s);
    if (s.empty()) return words;
    const size_t end = std::min(s.find(' '), s.find('\t'));
    words.push_back(s.substr(0, end));
    if (end == std::string_view::npos) return words;
    s.remove_prefix(end);
  }
}

bool Number(std::string_view text, uint32_t& out) {
  int base = 10;
  if (text.starts_with("0x") || text.starts_with("0X")) {
    text.remove_prefix(2);
    base = 16;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

// "26.1.6" as VK_MAKE_VERSION, or a plain number.
bool Version(std::string_view text, uint32_t& out) {
  uint32_t parts[3] = {0, 0, 0};
  size_t n = 0;
  for (std::string_view rest = text; n < 3; ++n) {
    const size_t dot = rest.find('.');
    if (!Number(rest.substr(0, dot), parts[n])) return false;
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  if (n == 0) {
    out = parts[0];
    return true;
  }
  if (n != 2 || parts[0] > 1023 || parts[1] > 1023 || parts[2] > 4095) return false;
  out = (parts[0] << 22) | (parts[1] << 12) | parts[2];
  return true;
}

bool DeviceType(std::string_view text, uint32_t& out) {
  const std::map<std::string_view, uint32_t> names = {{"other", 0}, {"integrated", 1}, {"discrete", 2}, {"virtual", 3}, {"cpu", 4}};
  auto it = names.find(text);
  if (it == names.end()) return false;
  out = it->second;
  return true;
}

bool IsPow2(uint32_t v) { return v && !(v & (v - 1)); }

}  // namespace

ProfileResult ParseProfile(std::string_view text) {
  ProfileResult result;
  Profile& p = result.profile;
  std::map<std::string, int> seen;
  int lineNumber = 0;
  auto fail = [&](const std::string& why) {
    result.ok = false;
    result.error = "line " + std::to_string(lineNumber) + ": " + why;
    return result;
  };
  for (std::string_view rest = text; !rest.empty();) {
    const size_t eol = rest.find('\n');
    std::string_view line = Trim(rest.substr(0, eol));
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    ++lineNumber;
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> words = Words(line);
    const std::string key(words[0]);
    const std::string_view value = Trim(line.substr(words[0].size()));
    if (key == "layout") {
      std::string error;
      auto layout = ElementLayout::Parse(line, error);
      if (!layout) return fail("layout: " + error);
      if (std::any_of(p.layouts.begin(), p.layouts.end(), [&](const ElementLayout& l) { return l.Key() == layout->Key(); }))
        return fail("two layouts for " + ToString(layout->Key()));
      p.layouts.push_back(std::move(*layout));
      continue;
    }
    if (key == "matrix") {
      MatrixConfig m;
      if (words.size() != 8 && !(words.size() == 9 && words[8] == "saturating"))
        return fail("matrix wants M N K A B C Result [saturating]");
      if (!Number(words[1], m.m) || !Number(words[2], m.n) || !Number(words[3], m.k) || !m.m || !m.n || !m.k)
        return fail("matrix M N K must be positive numbers");
      uint32_t* types[] = {&m.aType, &m.bType, &m.cType, &m.resultType};
      for (size_t i = 0; i < 4; ++i) {
        auto type = ComponentTypeByName(words[4 + i]);
        if (!type) return fail("unknown component type '" + std::string(words[4 + i]) + "'");
        *types[i] = *type;
      }
      m.saturating = words.size() == 9;
      p.matrices.push_back(m);
      continue;
    }
    if (seen[key]++) return fail("'" + key + "' given twice");
    if (value.empty()) return fail("'" + key + "' has no value");
    bool ok = true;
    if (key == "name") p.name = value;
    else if (key == "vendor_id") ok = Number(value, p.vendorId);
    else if (key == "device_id") ok = Number(value, p.deviceId);
    else if (key == "device_name") p.deviceName = value;
    else if (key == "device_type") ok = DeviceType(value, p.deviceType);
    else if (key == "driver_id") ok = Number(value, p.driverId);
    else if (key == "driver_name") p.driverName = value;
    else if (key == "driver_info") p.driverInfo = value;
    else if (key == "driver_version") ok = Version(value, p.driverVersion);
    else if (key == "default_subgroup_size") ok = Number(value, p.defaultSubgroupSize) && IsPow2(p.defaultSubgroupSize);
    else if (key == "shared_memory") ok = Number(value, p.sharedMemoryBytes);
    else if (key == "flexible_max_dimension") ok = Number(value, p.flexibleMaxDimension) && p.flexibleMaxDimension > 0;
    else if (key == "subgroup_sizes") {
      for (size_t i = 1; i < words.size() && ok; ++i) {
        uint32_t size = 0;
        ok = Number(words[i], size) && IsPow2(size) && size <= 128;
        p.subgroupSizes.push_back(size);
      }
      std::sort(p.subgroupSizes.begin(), p.subgroupSizes.end());
    } else
      return fail("unknown setting '" + key + "'");
    if (!ok) return fail("bad value for '" + key + "': " + std::string(value));
  }
  lineNumber = 0;
  for (const char* required : {"name", "vendor_id", "device_id", "device_name", "driver_id", "driver_name", "driver_version",
                               "subgroup_sizes", "default_subgroup_size", "shared_memory"})
    if (!seen.count(required)) return fail(std::string("missing setting '") + required + "'");
  if (!p.RunsSubgroupSize(p.defaultSubgroupSize)) return fail("default_subgroup_size is not one of subgroup_sizes");
  for (const ElementLayout& l : p.layouts)
    if (!p.RunsSubgroupSize(l.Key().subgroupSize)) return fail("layout " + ToString(l.Key()) + " is at a size the profile does not run");
  for (const MatrixConfig& m : p.matrices)
    for (uint32_t size : p.subgroupSizes) {
      const LayoutKey keys[] = {{m.aType, kUseA, m.m, m.k, size},
                                {m.bType, kUseB, m.k, m.n, size},
                                {m.cType, kUseAccumulator, m.m, m.n, size},
                                {m.resultType, kUseAccumulator, m.m, m.n, size}};
      for (const LayoutKey& key : keys)
        if (!p.FindLayout(key)) return fail("the matrix configurations need a layout for " + ToString(key));
    }
  result.ok = true;
  return result;
}

ProfileResult ReadProfileFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    ProfileResult result;
    result.error = "cannot read the profile file '" + path + "'";
    return result;
  }
  std::stringstream text;
  text << file.rdbuf();
  ProfileResult result = ParseProfile(text.str());
  if (!result.ok) result.error = path + ": " + result.error;
  return result;
}

}  // namespace coopmat::virt

namespace coopmat::virt {

const char* ChunkOrderName(Profile::ChunkOrder order) {
  return order == Profile::ChunkOrder::kFixed ? "fixed" : "shuffled";
}

ProfileResult ReadConfiguredProfile() {
  const char* path = std::getenv("COOPMAT_VIRTUAL_PROFILE");
  if (!path || !*path) {
    ProfileResult result;
    result.error = "COOPMAT_VIRTUAL_PROFILE is not set";
    return result;
  }
  ProfileResult result = ReadProfileFile(path);
  if (const char* lanes = std::getenv("COOPMAT_VIRTUAL_CHUNK_LANES"); result.ok && lanes && *lanes) {
    uint32_t value = 0;
    if (!Number(lanes, value) || (value != 8 && value != Profile::kLavapipeMostLanes)) {
      result.ok = false;
      result.error = std::string("COOPMAT_VIRTUAL_CHUNK_LANES=") + lanes + ": 8 or 16";
      return result;
    }
    result.profile.chunkLanes = value;
  }
  if (const char* order = std::getenv("COOPMAT_VIRTUAL_CHUNK_ORDER"); result.ok && order && *order) {
    if (std::string_view(order) == ChunkOrderName(Profile::ChunkOrder::kFixed)) {
      result.profile.chunkOrder = Profile::ChunkOrder::kFixed;
    } else if (std::string_view(order) != ChunkOrderName(Profile::ChunkOrder::kShuffled)) {
      result.ok = false;
      result.error = std::string("COOPMAT_VIRTUAL_CHUNK_ORDER=") + order + ": shuffled or fixed";
      return result;
    }
  }
  const char* size = std::getenv("COOPMAT_VIRTUAL_DEFAULT_SUBGROUP_SIZE");
  if (!result.ok || !size || !*size) return result;
  uint32_t value = 0;
  if (!Number(size, value) || !result.profile.RunsSubgroupSize(value)) {
    result.ok = false;
    result.error = std::string("COOPMAT_VIRTUAL_DEFAULT_SUBGROUP_SIZE=") + size + " is not a subgroup size of " + path;
    return result;
  }
  result.profile.defaultSubgroupSize = value;
  return result;
}

}  // namespace coopmat::virt
