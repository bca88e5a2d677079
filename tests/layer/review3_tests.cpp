// Regression tests for the third review (review-130c39d.md) through the real loader.
// Each case fails on the code before its fix.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "layer_test_util.h"
#include "spec_tiles_pipelines.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;
using Catch::Matchers::ContainsSubstring;

namespace {

// While alive, the process may map only `headroom` bytes more than it has mapped now.
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(uint64_t headroom) {
    REQUIRE(getrlimit(RLIMIT_AS, &saved_) == 0);
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    statm >> pages;
    REQUIRE(pages > 0);
    rlimit limited = saved_;
    limited.rlim_cur = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) + headroom;
    REQUIRE(setrlimit(RLIMIT_AS, &limited) == 0);
  }
  ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }
  AddressSpaceLimit(const AddressSpaceLimit&) = delete;
  AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;

 private:
  rlimit saved_{};
};

InstanceOptions DebugLogging(bool diskCache) {
  InstanceOptions options;
  options.settings = {StringSetting("log_level", "debug"), StringSetting("shader_cache", diskCache ? "true" : "false")};
  return options;
}

}  // namespace

// Finding 4: with VkPipelineCreateFlags2CreateInfoKHR chained, its flags replace the
// info's. A refused pipeline asking there for an early return stops the batch, as the
// same bit in info.flags does (pipeline_time_test.cpp); before, the pipelines after it
// were still created.
TEST_CASE("review 130c39d finding 4: early return asked in VkPipelineCreateFlags2CreateInfoKHR", "[layer][review3][malformed]") {
  Instance instance(DebugLogging(false));
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  VkShaderModule module = CreateModule(device, SpecTiles("spirv1.6"));
  SpecTilesPipelines pipelines(device);
  const auto [result, created] = pipelines.CreateBatch(
      module, {{16, 16, 16, 0}, {8, 8, 16, VK_PIPELINE_CREATE_EARLY_RETURN_ON_FAILURE_BIT}, {8, 8, 8, 0}}, /*inFlags2=*/true);
  CHECK(result == VK_ERROR_UNKNOWN);
  CHECK(created == std::vector<bool>{true, false, false});
  vkDestroyShaderModule(device.handle(), module, nullptr);
}

// Finding 4, the derivative hint: a derivative whose base the layer refused is passed
// down without DERIVATIVE (it has no base left), in the flags2 structure too; before,
// only info.flags was cleared and the driver got a derivative with no valid base.
TEST_CASE("review 130c39d finding 4: a derivative of a refused base loses DERIVATIVE in flags2", "[layer][review3]") {
  const std::filesystem::path log = TempPath("review3-derivative.log");
  std::filesystem::remove(log);
  ScopedEnv fakeLog("FAKE_DRIVER_LOG", log.string());
  ScopedEnv path = FakeDriverOnPath();
  InstanceOptions options = DebugLogging(false);
  options.layersBelow = {kFakeDriverLayer};
  Instance instance(options);
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  VkShaderModule module = CreateModule(device, SpecTiles("spirv1.6"));
  SpecTilesPipelines pipelines(device);
  std::filesystem::remove(log);  // the layout probe's pipelines
  const auto [result, created] = pipelines.CreateBatch(
      module, {{8, 8, 16, VK_PIPELINE_CREATE_ALLOW_DERIVATIVES_BIT}, {8, 8, 8, VK_PIPELINE_CREATE_DERIVATIVE_BIT}},
      /*inFlags2=*/true, {-1, 0});
  CHECK(result == VK_ERROR_UNKNOWN);
  CHECK(created == std::vector<bool>{false, true});
  std::vector<std::string> lines;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("pipeline ", 0) == 0) lines.push_back(line);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], ContainsSubstring("derivative=0 basePipelineIndex=-1"));
  vkDestroyShaderModule(device.handle(), module, nullptr);
  std::filesystem::remove(log);
}

// Finding 10: an exception that leaves an intercept becomes an error code, and every
// output handle is written NULL; before, the app's array kept whatever it held. The
// exception: std::bad_alloc reading a disk-cache entry of 200 MiB (the cache takes up
// to 256 MiB) under an address-space limit. Not [malformed]: the sanitizers' shadow
// memory does not live under RLIMIT_AS.
TEST_CASE("review 130c39d finding 10: a create call failed by an exception leaves every handle NULL", "[layer][review3]") {
  const std::filesystem::path home = TempPath("review3-exception");
  std::filesystem::remove_all(home);
  ScopedEnv cache("XDG_CACHE_HOME", home.string());
  auto withDevice = [&](const std::function<void(const Device&, VkShaderModule)>& use) {
    Instance instance(DebugLogging(true));
    Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
    REQUIRE(device.ok());
    VkShaderModule module = CreateModule(device, SpecTiles("spirv1.6"));
    use(device, module);
    vkDestroyShaderModule(device.handle(), module, nullptr);
  };
  withDevice([](const Device& device, VkShaderModule module) {  // the entry on disk
    CHECK(SpecTilesPipelines(device).Create(module, 16, 16, 16) == VK_SUCCESS);
  });
  std::vector<std::filesystem::path> entries;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(home / "coopmat-maintenance1" / "lowered"))
    if (entry.is_regular_file()) entries.push_back(entry.path());
  REQUIRE(entries.size() == 1);
  std::filesystem::resize_file(entries[0], uint64_t{200} << 20);
  withDevice([](const Device& device, VkShaderModule module) {
    SpecTilesPipelines pipelines(device);
    std::pair<VkResult, std::vector<bool>> outcome;
    {
      const AddressSpaceLimit limit(uint64_t{64} << 20);
      outcome = pipelines.CreateBatch(module, {{16, 16, 16, 0}, {16, 16, 16, 0}});
    }
    CHECK(outcome.first == VK_ERROR_OUT_OF_HOST_MEMORY);
    CHECK(outcome.second == std::vector<bool>{false, false});
  });
  std::filesystem::remove_all(home);
}

// Finding 6, the layout cache: a coopmat-maintenance1 folder others may write is not
// used (a planted layout file would put wrong layouts into every shader): the probe
// says so and writes nothing there; before, the file was written into it.
TEST_CASE("review 130c39d finding 6: the layout probe does not cache into a folder others may write", "[layer][review3][cache]") {
  const std::filesystem::path home = TempPath("review3-loose-cache");
  std::filesystem::remove_all(home);
  const std::filesystem::path folder = home / "coopmat-maintenance1";
  std::filesystem::create_directories(folder);
  std::filesystem::permissions(folder, std::filesystem::perms::all);
  ScopedEnv cache("XDG_CACHE_HOME", home.string());
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");  // lowering=portable runs no probe
  Instance instance(DebugLogging(false));
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  CHECK(AnyMessageContains(instance, "writable by others; layouts are not cached"));
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) files += entry.is_regular_file();
  CHECK(files == 0);
  std::filesystem::remove_all(home);
}

// Finding 5: vkCreateShadersEXT with one shader the layer refuses (a mis-specialized
// tile) and one it lowers: only the refused one is VK_NULL_HANDLE, so the app's "first
// VK_NULL_HANDLE" names it; before, every handle was nulled (index 0 was blamed).
TEST_CASE("review 130c39d finding 5: vkCreateShadersEXT nulls only the shader that failed", "[layer][review3][malformed]") {
  Instance instance(DebugLogging(false));
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true, .enableShaderObject = true});
  REQUIRE(device.ok());
  auto create = reinterpret_cast<PFN_vkCreateShadersEXT>(vkGetDeviceProcAddr(device.handle(), "vkCreateShadersEXT"));
  auto destroy = reinterpret_cast<PFN_vkDestroyShaderEXT>(vkGetDeviceProcAddr(device.handle(), "vkDestroyShaderEXT"));
  REQUIRE(create);
  REQUIRE(destroy);
  std::vector<VkDescriptorSetLayoutBinding> bindings;
  for (uint32_t i = 0; i < 7; ++i) bindings.push_back({i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  VkDescriptorSetLayoutCreateInfo setInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  setInfo.bindingCount = static_cast<uint32_t>(bindings.size());
  setInfo.pBindings = bindings.data();
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  REQUIRE(vkCreateDescriptorSetLayout(device.handle(), &setInfo, nullptr, &setLayout) == VK_SUCCESS);
  const std::vector<uint32_t> words = SpecTiles("spirv1.6");
  const uint32_t refused[] = {16, 8, 8, 16, 8}, lowered[] = {16, 8, 8, 8, 8};  // local size, TM, TN, TK, 8
  const VkSpecializationMapEntry entries[] = {{0, 0, 4}, {3, 4, 4}, {4, 8, 4}, {5, 12, 4}, {6, 16, 4}};
  const VkSpecializationInfo specs[] = {{5, entries, sizeof(refused), refused}, {5, entries, sizeof(lowered), lowered}};
  VkShaderCreateInfoEXT infos[2];
  for (int i = 0; i < 2; ++i) {
    infos[i] = {VK_STRUCTURE_TYPE_SHADER_CREATE_INFO_EXT};
    infos[i].flags = VK_SHADER_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
    infos[i].stage = VK_SHADER_STAGE_COMPUTE_BIT;
    infos[i].codeType = VK_SHADER_CODE_TYPE_SPIRV_EXT;
    infos[i].codeSize = words.size() * 4;
    infos[i].pCode = words.data();
    infos[i].pName = "main";
    infos[i].setLayoutCount = 1;
    infos[i].pSetLayouts = &setLayout;
    infos[i].pSpecializationInfo = &specs[i];
  }
  VkShaderEXT shaders[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
  CHECK(create(device.handle(), 2, infos, nullptr, shaders) == VK_ERROR_UNKNOWN);
  CHECK(shaders[0] == VK_NULL_HANDLE);
  CHECK(shaders[1] != VK_NULL_HANDLE);
  CHECK(AnyMessageContains(instance, "do not match"));
  for (VkShaderEXT shader : shaders)
    if (shader) destroy(device.handle(), shader, nullptr);
  vkDestroyDescriptorSetLayout(device.handle(), setLayout, nullptr);
}

// Finding 2: a device that lists a type whose probe needs a feature the app did not
// enable (here a bf16 entry; RADV GFX12 lists bf16 and fp8) still caches the layouts
// that fitted, recording the type left out, so the next device reads the cache instead
// of probing everything again; before, no layout file was ever written there.
TEST_CASE("review 130c39d finding 2: a type left out for the app's features does not stop the layout cache", "[layer][review3][cache]") {
  ScopedEnv path = FakeDriverOnPath();
  ScopedEnv bf16("FAKE_DRIVER_KHR_BF16", "1");
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");
  const std::filesystem::path home = TempPath("review3-limited-probe");
  std::filesystem::remove_all(home);
  ScopedEnv cache("XDG_CACHE_HOME", home.string());
  InstanceOptions options = DebugLogging(false);
  options.layersBelow = {kFakeDriverLayer};
  auto layoutFiles = [&] {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(home / "coopmat-maintenance1"))
      if (entry.path().filename().string().rfind("layouts-", 0) == 0) files.push_back(entry.path());
    return files;
  };
  {
    Instance instance(options);
    Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
    REQUIRE(device.ok());
    CHECK(AnyMessageContains(instance, "(the app did not enable the features its probe needs)"));
  }
  const auto files = layoutFiles();
  REQUIRE(files.size() == 1);
  std::ifstream in(files[0]);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("# unprobed component type " + std::to_string(VK_COMPONENT_TYPE_BFLOAT16_KHR)) != std::string::npos);
  {
    Instance instance(options);
    Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
    REQUIRE(device.ok());
    CHECK(AnyMessageContains(instance, "layouts: 10 from " + files[0].string()));
    CHECK_FALSE(AnyMessageContains(instance, "the app did not enable the features its probe needs"));
  }
  std::filesystem::remove_all(home);
}
