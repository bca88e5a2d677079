// The layer on a device whose pipelines run at several subgroup sizes (RADV through
// Mesa's drm-shim, ctest label amd) and on lavapipe (one size): Properties2 per
// subgroup size, and what the layout probe does where it reads nothing.
#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "../layer/layer_test_util.h"
#include "vk_context.h"

namespace {

using cmtest::Device;
using cmtest::Instance;
using layertest::KhrProperties;
using layertest::ScopedEnv;

// A fresh, empty layout cache folder for one test.
std::filesystem::path FreshCache(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("coopmat-amd-" + name + "-" +
                                                                             std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

size_t FilesUnder(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir)) return 0;
  size_t n = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) n += entry.is_regular_file();
  return n;
}

struct Sizes {
  uint32_t defaultSize, min, max;
  VkDriverId driver;
};

Sizes SubgroupSizes(const Instance& instance) {
  VkPhysicalDeviceSubgroupSizeControlProperties control{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, &control};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, &subgroup};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &driver};
  vkGetPhysicalDeviceProperties2(instance.physicalDevice(), &properties);
  const uint32_t min = control.minSubgroupSize ? control.minSubgroupSize : subgroup.subgroupSize;
  const uint32_t max = control.maxSubgroupSize ? control.maxSubgroupSize : subgroup.subgroupSize;
  return {subgroup.subgroupSize, min, max, driver.driverID};
}

std::vector<VkCooperativeMatrixPropertiesKHR> NonSaturatingKhr(const Instance& instance) {
  std::vector<VkCooperativeMatrixPropertiesKHR> out;
  for (const auto& p : KhrProperties(instance))
    if (p.scope == VK_SCOPE_SUBGROUP_KHR && !p.saturatingAccumulation) out.push_back(p);
  return out;
}

std::vector<VkCooperativeMatrixProperties2EXT> Properties2(const Instance& instance, uint32_t subgroupSize) {
  auto query = instance.proc<PFN_vkGetPhysicalDeviceCooperativeMatrixProperties2EXT>(
      "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT");
  REQUIRE(query);
  VkPhysicalDeviceCooperativeMatrixInfo2EXT info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_INFO_2_EXT};
  info.scope = VK_SCOPE_SUBGROUP_KHR;
  info.subgroupSize = subgroupSize;
  uint32_t count = 0;
  REQUIRE(query(instance.physicalDevice(), &info, &count, nullptr) == VK_SUCCESS);
  std::vector<VkCooperativeMatrixProperties2EXT> list(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_2_EXT});
  REQUIRE(query(instance.physicalDevice(), &info, &count, list.data()) == VK_SUCCESS);
  list.resize(count);
  return list;
}

int CountMessages(const Instance& instance, const std::string& needle) {
  int n = 0;
  for (const cmtest::Message& m : instance.messages()) n += m.text.find(needle) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("Properties2 gives the KHR list at every subgroup size a pipeline may run at, and at 0", "[amd][properties2]") {
  Instance instance;
  REQUIRE(instance.ok());
  const Sizes sizes = SubgroupSizes(instance);
  const auto khr = NonSaturatingKhr(instance);
  REQUIRE(!khr.empty());
  std::vector<uint32_t> valid = {0};
  for (uint32_t s = sizes.min; s <= sizes.max; s *= 2) valid.push_back(s);
  for (uint32_t size : valid) {
    INFO("subgroupSize " << size << " (device: default " << sizes.defaultSize << ", [" << sizes.min << ", " << sizes.max
                         << "])");
    const auto list = Properties2(instance, size);
    REQUIRE(list.size() == khr.size());
    for (size_t i = 0; i < list.size(); ++i) {
      CHECK(list[i].MGranularity == khr[i].MSize);
      CHECK(list[i].NGranularity == khr[i].NSize);
      CHECK(list[i].KGranularity == khr[i].KSize);
      CHECK(list[i].AType == khr[i].AType);
      CHECK(list[i].CType == khr[i].CType);
      CHECK(list[i].ResultType == khr[i].ResultType);
    }
  }
  // Outside [min, max]: invalid input, nothing listed.
  CHECK(Properties2(instance, sizes.max * 2).empty());
}

TEST_CASE("a probe that reads nothing is not cached; RADV falls back to its built-in table", "[amd][probe]") {
  const std::filesystem::path cache = FreshCache("probe");
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
  ScopedEnv verbose("VK_COOPMAT_MAINTENANCE1_LOG_LEVEL", "info");
  Instance instance;
  REQUIRE(instance.ok());
  if (SubgroupSizes(instance).driver != VK_DRIVER_ID_MESA_RADV) SKIP("needs RADV (through the drm-shim)");
  {
    Device device(instance);
    REQUIRE(device.ok());
  }
  // Nothing executes on the shim: the probe fits nothing, so no cache, and one line.
  CHECK(FilesUnder(cache / "coopmat-maintenance1") == 0);  // Mesa's own shader cache lives beside it
  CHECK(CountMessages(instance, "using the built-in radv-gfx1") == 1);
  CHECK(CountMessages(instance, "subgroup sizes 32, 64") == 1);
  CHECK(CountMessages(instance, "layout probe: ") == 0);  // no warning per key
  std::filesystem::remove_all(cache);
}

TEST_CASE("lowering=portable runs no probe", "[amd][probe][settings]") {
  const std::filesystem::path cache = FreshCache("portable");
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
  ScopedEnv verbose("VK_COOPMAT_MAINTENANCE1_LOG_LEVEL", "info");
  ScopedEnv portable("VK_COOPMAT_MAINTENANCE1_LOWERING", "portable");
  Instance instance;
  REQUIRE(instance.ok());
  {
    Device device(instance);
    REQUIRE(device.ok());
  }
  CHECK(FilesUnder(cache / "coopmat-maintenance1") == 0);  // Mesa's own shader cache lives beside it
  CHECK(CountMessages(instance, "layout: ") == 0);
  std::filesystem::remove_all(cache);
}
