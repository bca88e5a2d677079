// Regression tests for the layout probe's review findings (review-901d75a.md):
// the probe uses only what the app enabled (4), its cache writes do not collide
// between threads (14), an absurd driver shape is refused before any size wraps
// (24), and a driver without vkGetPhysicalDeviceProperties2 is survived (27).
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "layer_test_util.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;
using Catch::Matchers::ContainsSubstring;

namespace {

std::vector<std::filesystem::path> LayoutCacheFiles(const std::filesystem::path& cacheHome) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cacheHome / "coopmat-maintenance1", ec))
    if (entry.is_regular_file()) files.push_back(entry.path());
  return files;
}

std::vector<std::string> Texts(const Instance& instance, const std::string& needle) {
  std::vector<std::string> out;
  for (const Message& m : instance.messages())
    if (m.text.find(needle) != std::string::npos) out.push_back(m.text);
  return out;
}

// Validation messages other than the layer's notice about lavapipe's KHR list.
std::vector<std::string> Problems(const Instance& instance) {
  std::vector<std::string> out;
  for (const std::string& p : instance.problems())
    if (p.find("mandatory combination") == std::string::npos) out.push_back(p);
  return out;
}

template <typename T> T* Find(VkPhysicalDeviceFeatures2& features, VkStructureType type) {
  for (auto* s = static_cast<VkBaseOutStructure*>(features.pNext); s; s = s->pNext)
    if (s->sType == type) return reinterpret_cast<T*>(s);
  return nullptr;
}

// Switches off the small-type features and full subgroups (a device that enables
// only cooperative matrices); float16 back on when `float16`.
void WithoutSmallTypes(VkPhysicalDeviceFeatures2& features, bool float16) {
  auto* v11 = Find<VkPhysicalDeviceVulkan11Features>(features, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  auto* v12 = Find<VkPhysicalDeviceVulkan12Features>(features, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  auto* v13 = Find<VkPhysicalDeviceVulkan13Features>(features, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES);
  REQUIRE((v11 && v12 && v13));
  v11->storageBuffer16BitAccess = float16;
  v11->uniformAndStorageBuffer16BitAccess = VK_FALSE;
  v11->storagePushConstant16 = VK_FALSE;
  v11->storageInputOutput16 = VK_FALSE;
  v12->shaderFloat16 = float16;
  v12->shaderInt8 = VK_FALSE;
  v12->storageBuffer8BitAccess = VK_FALSE;
  v12->uniformAndStorageBuffer8BitAccess = VK_FALSE;
  v12->storagePushConstant8 = VK_FALSE;
  v13->computeFullSubgroups = VK_FALSE;
}

std::vector<uint32_t> Shader(const std::string& name) {
  std::vector<uint32_t> words = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/" + name);
  REQUIRE(!words.empty());
  return words;
}

VkResult CreateModule(VkDevice device, const std::vector<uint32_t>& words) {
  VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  info.codeSize = words.size() * 4;
  info.pCode = words.data();
  VkShaderModule module = VK_NULL_HANDLE;
  const VkResult result = vkCreateShaderModule(device, &info, nullptr, &module);
  if (module) vkDestroyShaderModule(device, module, nullptr);
  return result;
}

}  // namespace

TEST_CASE("review 4: the probe uses only the features the app enabled, under validation below the layer",
          "[layer][review][probe]") {
  const bool float16 = GENERATE(false, true);
  INFO((float16 ? "float16 and 16-bit storage enabled" : "no small-type feature"));
  const std::filesystem::path cache = TempPath(float16 ? "probe-f16" : "probe-none");
  std::filesystem::remove_all(cache);
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");
  ScopedEnv verbose("VK_COOPMAT_MAINTENANCE1_LOG_LEVEL", "info");
  Instance instance(InstanceOptions{.validation = Validation::BelowLayer});
  REQUIRE(instance.ok());
  DeviceOptions options;
  options.editFeatures = [&](VkPhysicalDeviceFeatures2& features) { WithoutSmallTypes(features, float16); };
  {
    Device device(instance, options);
    REQUIRE(device.ok());
    // A module with no small types still lowers on this device.
    CHECK(CreateModule(device.handle(), Shader("get_coordinate.spirv1.6.spv")) == VK_SUCCESS);
  }
  const std::vector<std::string> problems = Problems(instance);
  INFO((problems.empty() ? std::string() : problems.front()));
  CHECK(problems.empty());  // no module with Int8/Float16 capabilities, no 1.3 module without the flag
  // lavapipe lists f16, u8 and s8: the 8-bit ones are left out and said so; f16 is
  // probed exactly when its features are on.
  CHECK(!Texts(instance, "not probed: u8").empty());
  CHECK(!Texts(instance, "not probed: s8").empty());
  CHECK(Texts(instance, "not probed: f16").empty() == float16);
  CHECK(Texts(instance, "layout type=f16").empty() == !float16);
  CHECK(Texts(instance, "layout type=u8").empty());
  // A result limited by this app's features is not cached for other apps.
  CHECK(LayoutCacheFiles(cache).empty());
  std::filesystem::remove_all(cache);
}

TEST_CASE("review 14: devices created at once on one GPU write the layout cache without colliding",
          "[layer][review][probe][threads]") {
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");
  const std::filesystem::path cache = TempPath("probe-threads");
  std::filesystem::remove_all(cache);
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
  Instance instance;
  REQUIRE(instance.ok());
  { Device first(instance); }  // learns the cache file's name
  const std::vector<std::filesystem::path> files = LayoutCacheFiles(cache);
  REQUIRE(files.size() == 1);
  const std::string name = files[0].string();

  SECTION("a stale temporary file of this process does not block the write") {
    // Another thread's write in progress (or one that crashed) at this process's name:
    // the per-process name of finding 14 collided with it and the cache was never written.
    std::filesystem::remove(files[0]);
    std::filesystem::create_directory(name + ".tmp." + std::to_string(getpid()));
    { Device again(instance); }
    CHECK(LayoutCacheFiles(cache).size() == 1);
    CHECK(std::filesystem::is_regular_file(files[0]));
    CHECK(Texts(instance, "cannot write the cache").empty());
  }
  SECTION("eight threads creating devices from an empty cache, five times") {
    for (int round = 0; round < 5; ++round) {
      std::filesystem::remove(files[0]);
      std::vector<std::thread> threads;
      std::vector<VkResult> results(8, VK_ERROR_UNKNOWN);
      for (size_t t = 0; t < results.size(); ++t)
        threads.emplace_back([&, t] {
          Device device(instance);
          results[t] = device.createResult();
        });
      for (std::thread& t : threads) t.join();
      CHECK(std::all_of(results.begin(), results.end(), [](VkResult r) { return r == VK_SUCCESS; }));
      CHECK(std::filesystem::is_regular_file(files[0]));
      // No temporary file is left behind and none of the writes failed.
      CHECK(LayoutCacheFiles(cache).size() == 1);
    }
    CHECK(Texts(instance, "cannot write the cache").empty());
  }
  std::filesystem::remove_all(cache);
}

TEST_CASE("review 24: a driver listing a 65536x65536 type is refused before the probe sizes wrap",
          "[layer][review][probe][malformed]") {
  auto path = FakeDriverOnPath();
  ScopedEnv absurd("FAKE_DRIVER_KHR_ABSURD", "1");
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");
  const std::filesystem::path cache = TempPath("probe-absurd");
  std::filesystem::remove_all(cache);
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
  InstanceOptions options;
  options.layersBelow = {kFakeDriverLayer};
  Instance instance(options);
  REQUIRE(instance.ok());
  REQUIRE(KhrProperties(instance).size() == 1);
  REQUIRE(KhrProperties(instance)[0].MSize == 65536);
  {
    Device device(instance);
    REQUIRE(device.ok());  // the probe only costs the register path
  }
  // Before the fix the host buffers' 32-bit sizes wrapped and the fill loop wrote
  // past them (AddressSanitizer in the malformed run); now the shape is refused.
  CHECK(!Texts(instance, "too large to probe").empty());
  CHECK(LayoutCacheFiles(cache).empty());  // a failed probe is never cached
  std::filesystem::remove_all(cache);
}

TEST_CASE("review 27: a driver without vkGetPhysicalDeviceProperties2 gets a device and lowered modules",
          "[layer][review][malformed]") {
  auto path = FakeDriverOnPath();
  ScopedEnv hidden("FAKE_DRIVER_NO_PROPERTIES2", "1");
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");  // the probe identifies the device
  const std::filesystem::path cache = TempPath("probe-noprops2");
  std::filesystem::remove_all(cache);
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
  InstanceOptions options;
  options.layersBelow = {kFakeDriverLayer};
  options.apiVersion = VK_API_VERSION_1_0;  // no vkGetPhysicalDeviceProperties2 and no KHR extension
  Instance instance(options);
  REQUIRE(instance.ok());
  DeviceOptions deviceOptions;
  deviceOptions.enableNvCoopmat2 = true;  // the flexible-dimensions branch reads Properties2 too
  Device device(instance, deviceOptions);
  REQUIRE(device.ok());
  CHECK(CreateModule(device.handle(), Shader("get_coordinate.spirv1.6.spv")) == VK_SUCCESS);
  std::filesystem::remove_all(cache);
}
