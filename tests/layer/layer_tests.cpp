// The layer as an application sees it through the real Vulkan loader, on lavapipe.
// Expected values come from the driver itself (queried without the layer, or the
// KHR list) and from the specification, never from the layer's code.
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "coopmat/layout.h"
#include "coopmat/lower.h"
#include "layer_test_util.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;

namespace {

constexpr const char* kExtName = VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME;



size_t CountOf(const std::vector<std::string>& list, const std::string& name) {
  return static_cast<size_t>(std::count(list.begin(), list.end(), name));
}

VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT QueryFeatures(const Instance& instance) {
  VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT m1{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &m1};
  vkGetPhysicalDeviceFeatures2(instance.physicalDevice(), &features);
  return m1;
}

struct Properties2Answer {
  VkResult result;
  std::vector<VkCooperativeMatrixProperties2EXT> list;
};

Properties2Answer QueryProperties2(const Instance& instance, const VkPhysicalDeviceCooperativeMatrixInfo2EXT& info) {
  auto query = instance.proc<PFN_vkGetPhysicalDeviceCooperativeMatrixProperties2EXT>(
      "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT");
  REQUIRE(query);
  uint32_t count = 0;
  Properties2Answer answer{query(instance.physicalDevice(), &info, &count, nullptr), {}};
  if (answer.result != VK_SUCCESS) return answer;
  answer.list.assign(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_2_EXT});
  answer.result = query(instance.physicalDevice(), &info, &count, answer.list.data());
  answer.list.resize(count);
  return answer;
}

VkPhysicalDeviceCooperativeMatrixInfo2EXT SubgroupInfo(uint32_t subgroupSize, VkCooperativeMatrixFlagsEXT flags = 0) {
  VkPhysicalDeviceCooperativeMatrixInfo2EXT info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_INFO_2_EXT};
  info.scope = VK_SCOPE_SUBGROUP_KHR;
  info.subgroupSize = subgroupSize;
  info.flags = flags;
  return info;
}

uint32_t DefaultSubgroupSize(const Instance& instance) {
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &subgroup};
  vkGetPhysicalDeviceProperties2(instance.physicalDevice(), &properties);
  return subgroup.subgroupSize;
}

bool SameEntry(const VkCooperativeMatrixPropertiesKHR& k, const VkCooperativeMatrixProperties2EXT& e) {
  return k.MSize == e.MGranularity && k.NSize == e.NGranularity && k.KSize == e.KGranularity && k.AType == e.AType &&
         k.BType == e.BType && k.CType == e.CType && k.ResultType == e.ResultType;
}

// Properties2 must be the KHR entries of this scope and saturation, in order.
void RequireMatchesKhr(const std::vector<VkCooperativeMatrixPropertiesKHR>& khr,
                       const std::vector<VkCooperativeMatrixProperties2EXT>& got, bool saturating) {
  std::vector<VkCooperativeMatrixPropertiesKHR> expected;
  for (const auto& k : khr) {
    if (k.scope == VK_SCOPE_SUBGROUP_KHR && bool(k.saturatingAccumulation) == saturating) expected.push_back(k);
  }
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].sType == VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_2_EXT);
    CHECK(got[i].pNext == nullptr);
    CHECK(SameEntry(expected[i], got[i]));
  }
}


std::vector<uint32_t> LoadShader(const std::string& name) {
  std::vector<uint32_t> words = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/" + name);
  REQUIRE(!words.empty());
  return words;
}

VkResult CreateModule(const Device& device, const std::vector<uint32_t>& words, VkShaderModule* module) {
  VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  info.codeSize = words.size() * 4;
  info.pCode = words.data();
  return vkCreateShaderModule(device.handle(), &info, nullptr, module);
}




std::vector<std::filesystem::path> CacheFiles(const std::filesystem::path& dir);


bool IsLavapipe(const Instance& instance) {
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &driver};
  vkGetPhysicalDeviceProperties2(instance.physicalDevice(), &properties);
  return driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE;
}

}  // namespace

TEST_CASE("the extension is listed exactly once through the layer", "[layer][extensions]") {
  Instance with;
  REQUIRE(with.ok());
  const std::vector<std::string> extensions = DeviceExtensions(with);
  REQUIRE(CountOf(extensions, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) == 1);
  CHECK(CountOf(extensions, kExtName) == 1);

  // Negative control: the driver alone does not have it.
  Instance without(InstanceOptions{.withLayer = false});
  REQUIRE(without.ok());
  const std::vector<std::string> driverOnly = DeviceExtensions(without);
  CHECK(CountOf(driverOnly, kExtName) == 0);
  CHECK(extensions.size() == driverOnly.size() + 1);

  // Queried by layer name: only the layer's own extension, with spec version 1.
  uint32_t count = 0;
  REQUIRE(vkEnumerateDeviceExtensionProperties(with.physicalDevice(), kLayerName, &count, nullptr) == VK_SUCCESS);
  REQUIRE(count == 1);
  VkExtensionProperties own{};
  REQUIRE(vkEnumerateDeviceExtensionProperties(with.physicalDevice(), kLayerName, &count, &own) == VK_SUCCESS);
  CHECK(std::string(own.extensionName) == kExtName);
  CHECK(own.specVersion == 1);
}

TEST_CASE("a short array gets VK_INCOMPLETE and a prefix of the full list", "[layer][extensions]") {
  Instance instance;
  REQUIRE(instance.ok());
  uint32_t total = 0;
  REQUIRE(vkEnumerateDeviceExtensionProperties(instance.physicalDevice(), nullptr, &total, nullptr) == VK_SUCCESS);
  std::vector<VkExtensionProperties> full(total);
  REQUIRE(vkEnumerateDeviceExtensionProperties(instance.physicalDevice(), nullptr, &total, full.data()) == VK_SUCCESS);
  for (uint32_t shortBy : {1u, 2u, total}) {
    uint32_t count = total - shortBy;
    std::vector<VkExtensionProperties> part(total);
    CHECK(vkEnumerateDeviceExtensionProperties(instance.physicalDevice(), nullptr, &count, part.data()) == VK_INCOMPLETE);
    REQUIRE(count == total - shortBy);
    for (uint32_t i = 0; i < count; ++i) CHECK(std::string(part[i].extensionName) == full[i].extensionName);
  }
}

TEST_CASE("the feature struct is filled and the rest of the chain still reaches the driver", "[layer][features]") {
  Instance instance;
  REQUIRE(instance.ok());
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR khr{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT m1{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT, &khr};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &m1};
  vkGetPhysicalDeviceFeatures2(instance.physicalDevice(), &features);
  CHECK(m1.cooperativeMatrixProperties2 == VK_TRUE);  // mandatory with the extension
  CHECK(m1.cooperativeMatrixReductions == VK_TRUE);
  CHECK(m1.cooperativeMatrixConversions == VK_TRUE);
  CHECK(m1.cooperativeMatrixPerElementOperations == VK_TRUE);
  CHECK(m1.cooperativeMatrixGetCoordinate == VK_TRUE);
  CHECK(khr.cooperativeMatrix == VK_TRUE);  // the driver filled the struct behind ours
  CHECK(m1.pNext == &khr);                  // and the app's chain is as it was

  // The KHR-suffixed entry point behaves the same.
  Instance khrInstance(InstanceOptions{.extensions = {VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME}});
  REQUIRE(khrInstance.ok());
  auto features2KHR = khrInstance.proc<PFN_vkGetPhysicalDeviceFeatures2KHR>("vkGetPhysicalDeviceFeatures2KHR");
  REQUIRE(features2KHR);
  VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT again{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT};
  VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &again};
  features2KHR(khrInstance.physicalDevice(), &features2);
  CHECK(again.cooperativeMatrixGetCoordinate == VK_TRUE);
}

TEST_CASE("device creation with and without the feature struct", "[layer][device]") {
  Instance instance;
  REQUIRE(instance.ok());
  SECTION("extension and feature struct") {
    Device device(instance, DeviceOptions{.enableMaintenance1 = true, .chainMaintenance1Features = true});
    CHECK(device.createResult() == VK_SUCCESS);
  }
  SECTION("extension only") {
    Device device(instance, DeviceOptions{.enableMaintenance1 = true, .chainMaintenance1Features = false});
    CHECK(device.createResult() == VK_SUCCESS);
  }
  SECTION("neither") {
    Device device(instance, DeviceOptions{.enableMaintenance1 = false});
    CHECK(device.createResult() == VK_SUCCESS);
  }
  CHECK(instance.problems().empty());
}

TEST_CASE("without the layer the driver refuses the extension", "[layer][device]") {
  Instance instance(InstanceOptions{.withLayer = false});
  REQUIRE(instance.ok());
  Device device(instance, DeviceOptions{.enableMaintenance1 = true, .chainMaintenance1Features = false});
  CHECK(device.createResult() == VK_ERROR_EXTENSION_NOT_PRESENT);
}

TEST_CASE("a feature switched off by disabled_features is reported and refused", "[layer][device][settings]") {
  const char* conversions = "conversions";
  VkLayerSettingEXT setting{kLayerName, "disabled_features", VK_LAYER_SETTING_TYPE_STRING_EXT, 1, &conversions};
  Instance instance(InstanceOptions{.settings = {setting}});
  REQUIRE(instance.ok());
  const auto features = QueryFeatures(instance);
  CHECK(features.cooperativeMatrixConversions == VK_FALSE);
  CHECK(features.cooperativeMatrixReductions == VK_TRUE);

  VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT request{};
  request.cooperativeMatrixConversions = VK_TRUE;
  Device refused(instance, DeviceOptions{.features = &request});
  CHECK(refused.createResult() == VK_ERROR_FEATURE_NOT_PRESENT);
  CHECK(AnyMessageContains(instance, "cooperativeMatrixConversions"));

  request.cooperativeMatrixConversions = VK_FALSE;
  request.cooperativeMatrixReductions = VK_TRUE;
  Device accepted(instance, DeviceOptions{.features = &request});
  CHECK(accepted.createResult() == VK_SUCCESS);
}

TEST_CASE("Properties2 answers every input class from the KHR list", "[layer][properties2]") {
  Instance instance;
  REQUIRE(instance.ok());
  const auto khr = KhrProperties(instance);
  const uint32_t defaultSize = DefaultSubgroupSize(instance);

  SECTION("subgroupSize 0 and the default size give the non-saturating KHR entries") {
    for (uint32_t size : {0u, defaultSize}) {
      const auto answer = QueryProperties2(instance, SubgroupInfo(size));
      REQUIRE(answer.result == VK_SUCCESS);
      RequireMatchesKhr(khr, answer.list, false);
    }
  }
  SECTION("the saturating flag selects saturating KHR entries") {
    const auto answer = QueryProperties2(instance, SubgroupInfo(0, VK_COOPERATIVE_MATRIX_SATURATING_ACCUMULATION_BIT_EXT));
    REQUIRE(answer.result == VK_SUCCESS);
    RequireMatchesKhr(khr, answer.list, true);
  }
  SECTION("the mandatory minimum holds wherever the driver's KHR list has it") {
    const auto answer = QueryProperties2(instance, SubgroupInfo(0));
    // Vulkan-Docs: one property for each of A = B = f16 with C = Result f16 or f32,
    // A = B = u8 with C = Result u32 or s32, A = B = s8 with C = Result s32.
    struct Combination {
      VkComponentTypeKHR ab;
      std::vector<VkComponentTypeKHR> accumulators;
    };
    const Combination mandatory[] = {{VK_COMPONENT_TYPE_FLOAT16_KHR, {VK_COMPONENT_TYPE_FLOAT16_KHR, VK_COMPONENT_TYPE_FLOAT32_KHR}},
                                     {VK_COMPONENT_TYPE_UINT8_KHR, {VK_COMPONENT_TYPE_UINT32_KHR, VK_COMPONENT_TYPE_SINT32_KHR}},
                                     {VK_COMPONENT_TYPE_SINT8_KHR, {VK_COMPONENT_TYPE_SINT32_KHR}}};
    bool anyMissing = false;
    for (const Combination& c : mandatory) {
      auto matches = [&](auto a, auto b, auto cc, auto r) {
        return a == c.ab && b == c.ab && cc == r && std::find(c.accumulators.begin(), c.accumulators.end(), cc) != c.accumulators.end();
      };
      const bool inKhr = std::any_of(khr.begin(), khr.end(), [&](const auto& k) {
        return k.scope == VK_SCOPE_SUBGROUP_KHR && !k.saturatingAccumulation && matches(k.AType, k.BType, k.CType, k.ResultType);
      });
      const bool inAnswer = std::any_of(answer.list.begin(), answer.list.end(), [&](const auto& e) {
        return matches(e.AType, e.BType, e.CType, e.ResultType);
      });
      CHECK(inAnswer == inKhr);
      anyMissing |= !inKhr;
    }
    // A driver lacking a mandatory combination makes the emulation non-conformant: the
    // user is told; lavapipe (f16 -> f16 and f32, u8 -> u32, s8 -> s32) has them all.
    CHECK(AnyMessageContains(instance, "mandatory combination") == anyMissing);
    if (IsLavapipe(instance)) CHECK_FALSE(anyMissing);
    // At least one entry has power-of-two granularities.
    CHECK(std::any_of(answer.list.begin(), answer.list.end(), [](const auto& e) {
      auto pow2 = [](uint32_t v) { return v && !(v & (v - 1)); };
      return pow2(e.MGranularity) && pow2(e.NGranularity) && pow2(e.KGranularity);
    }));
  }
  SECTION("invalid inputs get no properties and a message, never a crash") {
    VkPhysicalDeviceCooperativeMatrixInfo2EXT notPowerOfTwo = SubgroupInfo(3);
    VkPhysicalDeviceCooperativeMatrixInfo2EXT tooLarge = SubgroupInfo(defaultSize * 1024);
    VkPhysicalDeviceCooperativeMatrixInfo2EXT workgroup = SubgroupInfo(0);
    workgroup.scope = VK_SCOPE_WORKGROUP_KHR;
    workgroup.invocations = 64;
    VkPhysicalDeviceCooperativeMatrixInfo2EXT invocations = SubgroupInfo(0);
    invocations.invocations = 32;
    for (const auto& info : {notPowerOfTwo, tooLarge, workgroup, invocations}) {
      instance.clearMessages();
      const auto answer = QueryProperties2(instance, info);
      CHECK(answer.result == VK_SUCCESS);
      CHECK(answer.list.empty());
      CHECK(AnyMessageContains(instance, "VUID"));
    }
  }
  SECTION("two-call idiom with a short array returns VK_INCOMPLETE") {
    auto query = instance.proc<PFN_vkGetPhysicalDeviceCooperativeMatrixProperties2EXT>(
        "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT");
    const auto info = SubgroupInfo(0);
    uint32_t count = 0;
    REQUIRE(query(instance.physicalDevice(), &info, &count, nullptr) == VK_SUCCESS);
    REQUIRE(count >= 2);
    uint32_t shortCount = count - 1;
    std::vector<VkCooperativeMatrixProperties2EXT> list(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_2_EXT});
    CHECK(query(instance.physicalDevice(), &info, &shortCount, list.data()) == VK_INCOMPLETE);
    CHECK(shortCount == count - 1);
    CHECK(list[count - 1].MGranularity == 0);  // untouched
  }
}

TEST_CASE("on a driver with the extension natively the layer steps aside", "[layer][native]") {
  ScopedEnv path = FakeDriverOnPath();
  ScopedEnv notForced("VK_COOPMAT_MAINTENANCE1_FORCE_ENABLE", "false");  // the suite's environment forces it
  ScopedEnv native("FAKE_DRIVER_NATIVE_EXT", "1");
  Instance instance(InstanceOptions{.layersBelow = {kFakeDriverLayer}});
  REQUIRE(instance.ok());
  CHECK(CountOf(DeviceExtensions(instance), kExtName) == 1);  // the driver's, not a second copy
  // The driver's own answers come through: the fake reports conversions FALSE and a 16x16x16 entry.
  CHECK(QueryFeatures(instance).cooperativeMatrixConversions == VK_FALSE);
  const auto answer = QueryProperties2(instance, SubgroupInfo(0));
  REQUIRE(answer.result == VK_SUCCESS);
  REQUIRE(answer.list.size() == 1);
  CHECK(answer.list[0].MGranularity == 16);
  Device device(instance);
  CHECK(device.createResult() == VK_SUCCESS);
}

TEST_CASE("force_enable makes the layer serve a native driver", "[layer][native][settings]") {
  ScopedEnv path = FakeDriverOnPath();
  ScopedEnv native("FAKE_DRIVER_NATIVE_EXT", "1");
  const VkBool32 on = VK_TRUE;
  VkLayerSettingEXT force{kLayerName, "force_enable", VK_LAYER_SETTING_TYPE_BOOL32_EXT, 1, &on};
  Instance instance(InstanceOptions{.settings = {force}, .layersBelow = {kFakeDriverLayer}});
  REQUIRE(instance.ok());
  CHECK(CountOf(DeviceExtensions(instance), kExtName) == 1);  // still once
  CHECK(QueryFeatures(instance).cooperativeMatrixConversions == VK_TRUE);  // the layer's answer
  const auto answer = QueryProperties2(instance, SubgroupInfo(0));
  REQUIRE(answer.result == VK_SUCCESS);
  RequireMatchesKhr(KhrProperties(instance), answer.list, false);
}

TEST_CASE("a driver without the mandatory combinations is named once, with what it lacks", "[layer][properties2]") {
  ScopedEnv path = FakeDriverOnPath();
  ScopedEnv one("FAKE_DRIVER_KHR_ABSURD", "1");  // one f32 x f32 -> f32 entry
  Instance instance(InstanceOptions{.layersBelow = {kFakeDriverLayer}});
  REQUIRE(instance.ok());
  for (int call = 0; call < 2; ++call) REQUIRE(QueryProperties2(instance, SubgroupInfo(0)).result == VK_SUCCESS);
  size_t warnings = 0;
  for (const auto& m : instance.messages())
    if (m.text.find("mandatory combination") != std::string::npos) {
      ++warnings;
      CHECK_THAT(m.text, Catch::Matchers::ContainsSubstring("f16 x f16 -> f16 or f32, u8 x u8 -> u32 or s32, s8 x s8 -> s32"));
    }
  CHECK(warnings == 1);
}

TEST_CASE("Properties2 survives a driver whose KHR query fails", "[layer][properties2]") {
  ScopedEnv path = FakeDriverOnPath();
  Instance instance(InstanceOptions{.layersBelow = {kFakeDriverLayer}});
  REQUIRE(instance.ok());
  ScopedEnv fails("FAKE_DRIVER_KHR_FAILS", "1");
  auto query = instance.proc<PFN_vkGetPhysicalDeviceCooperativeMatrixProperties2EXT>(
      "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT");
  const auto info = SubgroupInfo(0);
  uint32_t count = 77;
  CHECK(query(instance.physicalDevice(), &info, &count, nullptr) == VK_ERROR_OUT_OF_HOST_MEMORY);
  CHECK(count == 0);
  CHECK(AnyMessageContains(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR failed"));
}

TEST_CASE("settings: environment beats vk_layer_settings.txt beats the API", "[layer][settings]") {
  const char* apiValue = "reductions";
  VkLayerSettingEXT api{kLayerName, "disabled_features", VK_LAYER_SETTING_TYPE_STRING_EXT, 1, &apiValue};
  const std::string file = TempPath("vk_layer_settings.txt");
  {
    std::ofstream out(file);
    out << "# another layer's line is ignored\nkhronos_validation.enables = x\n"
        << "coopmat_maintenance1.disabled_features = conversions\n";
  }
  auto disabled = [](const Instance& instance) {
    const auto f = QueryFeatures(instance);
    std::string s;
    if (!f.cooperativeMatrixReductions) s += "R";
    if (!f.cooperativeMatrixConversions) s += "C";
    if (!f.cooperativeMatrixGetCoordinate) s += "G";
    return s;
  };
  SECTION("API alone") {
    Instance instance(InstanceOptions{.settings = {api}});
    CHECK(disabled(instance) == "R");
  }
  SECTION("file beats API") {
    ScopedEnv settingsPath("VK_LAYER_SETTINGS_PATH", file);
    Instance instance(InstanceOptions{.settings = {api}});
    CHECK(disabled(instance) == "C");
  }
  SECTION("environment beats file and API") {
    ScopedEnv settingsPath("VK_LAYER_SETTINGS_PATH", file);
    ScopedEnv env("VK_COOPMAT_MAINTENANCE1_DISABLED_FEATURES", "get_coordinate");
    Instance instance(InstanceOptions{.settings = {api}});
    CHECK(disabled(instance) == "G");
  }
  std::filesystem::remove(file);
}

TEST_CASE("unknown settings and bad values are reported through debug utils", "[layer][settings]") {
  const VkBool32 on = VK_TRUE;
  const char* bad = "loud";
  VkLayerSettingEXT unknown{kLayerName, "no_such_key", VK_LAYER_SETTING_TYPE_BOOL32_EXT, 1, &on};
  VkLayerSettingEXT badValue{kLayerName, "log_level", VK_LAYER_SETTING_TYPE_STRING_EXT, 1, &bad};
  ScopedEnv env("VK_COOPMAT_MAINTENANCE1_FROBNICATE", "1");
  Instance instance(InstanceOptions{.settings = {unknown, badValue}});
  REQUIRE(instance.ok());
  CHECK(AnyMessageContains(instance, "unknown setting 'no_such_key'"));
  CHECK(AnyMessageContains(instance, "unknown setting 'frobnicate'"));
  CHECK(AnyMessageContains(instance, "invalid value 'loud'"));
  for (const Message& m : instance.messages()) {
    if (m.text.find("unknown setting") != std::string::npos) CHECK(m.id == kLayerName);
  }
}

TEST_CASE("the implicit manifest loads the layer unless the disable variable is set", "[layer][manifest]") {
  ScopedEnv implicitPath("VK_IMPLICIT_LAYER_PATH", COOPMAT_IMPLICIT_MANIFEST_DIR);
  SECTION("enabled implicitly") {
    ScopedEnv verbose("VK_COOPMAT_MAINTENANCE1_LOG_LEVEL", "info");
    Instance instance(InstanceOptions{.withLayer = false});
    REQUIRE(instance.ok());
    CHECK(CountOf(DeviceExtensions(instance), kExtName) == 1);
    const auto features = QueryFeatures(instance);
    CHECK(features.cooperativeMatrixReductions);
    CHECK(features.cooperativeMatrixGetCoordinate);
    // The layer must see the driver's own list: a manifest listing the extension as the
    // layer's made the loader add it there, and the layer stepped aside as for a native
    // driver (which the suite's force_enable hides but for this line).
    Device device(instance);
    CHECK(device.ok());
    CHECK(!AnyMessageContains(instance, "the driver implements VK_EXT_cooperative_matrix_maintenance1 itself"));
    CHECK(AnyMessageContains(instance, "emulating VK_EXT_cooperative_matrix_maintenance1 on this device"));
  }
  SECTION("implicit and also enabled by name, as apps that look for the layer do") {
    Instance instance(InstanceOptions{.withLayer = true});
    REQUIRE(instance.ok());
    CHECK(CountOf(DeviceExtensions(instance), kExtName) == 1);
    const auto features = QueryFeatures(instance);
    CHECK(features.cooperativeMatrixReductions);
    CHECK(features.cooperativeMatrixGetCoordinate);
    Device device(instance);
    CHECK(device.ok());
  }
  SECTION("disabled by DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1=1") {
    ScopedEnv disable("DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1", "1");
    Instance instance(InstanceOptions{.withLayer = false});
    REQUIRE(instance.ok());
    CHECK(CountOf(DeviceExtensions(instance), kExtName) == 0);
  }
}

TEST_CASE("a module without the extension reaches the driver bit-identical and uncopied", "[layer][shaders]") {
  ScopedEnv path = FakeDriverOnPath();
  const std::string record = TempPath("record.bin");
  std::filesystem::remove(record);
  ScopedEnv recording("FAKE_DRIVER_RECORD", record);
  Instance instance(InstanceOptions{.layersBelow = {kFakeDriverLayer}});
  Device device(instance);
  REQUIRE(device.ok());
  for (const char* name : {"plain_khr.spirv1.3.spv", "plain_khr.spirv1.6.spv"}) {
    const std::vector<uint32_t> words = LoadShader(name);
    VkShaderModule module = VK_NULL_HANDLE;
    REQUIRE(CreateModule(device, words, &module) == VK_SUCCESS);
    vkDestroyShaderModule(device.handle(), module, nullptr);
    const auto recorded = ReadRecord(record);
    REQUIRE(!recorded.empty());
    CHECK(recorded.back().words == words);
    CHECK(recorded.back().address == reinterpret_cast<uintptr_t>(words.data()));
  }
  std::filesystem::remove(record);
}

TEST_CASE("a maintenance1 module is lowered before it reaches the driver", "[layer][shaders]") {
  ScopedEnv path = FakeDriverOnPath();
  const std::string record = TempPath("record-ext.bin");
  std::filesystem::remove(record);
  ScopedEnv recording("FAKE_DRIVER_RECORD", record);
  Instance instance(InstanceOptions{.layersBelow = {kFakeDriverLayer}});
  Device device(instance);
  REQUIRE(device.ok());
  const std::vector<uint32_t> words = LoadShader("get_coordinate.spirv1.3.spv");
  REQUIRE(DeclaresCapability(words, 5438));
  VkShaderModule module = VK_NULL_HANDLE;
  REQUIRE(CreateModule(device, words, &module) == VK_SUCCESS);
  vkDestroyShaderModule(device.handle(), module, nullptr);
  const auto recorded = ReadRecord(record);
  REQUIRE(recorded.size() == 1);
  for (uint32_t capability : {5429u, 5430u, 5432u, 5438u}) CHECK_FALSE(DeclaresCapability(recorded[0].words, capability));
  CHECK(recorded[0].words != words);
  CHECK(coopmat::ValidateModule(recorded[0].words, 3).empty());
  std::filesystem::remove(record);
}

// Malformed SPIR-V that declares a maintenance1 capability (blobs that are not
// SPIR-V at all go down untouched: review2_tests.cpp, finding 16).
TEST_CASE("malformed SPIR-V gets a message and an error, never reaches the driver", "[layer][shaders][malformed]") {
  Instance instance;
  Device device(instance);
  REQUIRE(device.ok());
  const std::vector<uint32_t> good = LoadShader("get_coordinate.spirv1.3.spv");
  std::vector<std::vector<uint32_t>> bad;
  bad.push_back(std::vector<uint32_t>(good.begin(), good.begin() + good.size() / 2)); // truncated mid-function
  std::vector<uint32_t> zeroCount = good;
  zeroCount[5] &= 0xffff;  // first instruction has word count 0
  bad.push_back(zeroCount);
  std::vector<uint32_t> pastEnd = good;
  pastEnd[5] = (0xffffu << 16) | (pastEnd[5] & 0xffff);  // word count runs past the end
  bad.push_back(pastEnd);
  for (const auto& words : bad) {
    instance.clearMessages();
    VkShaderModule module = VK_NULL_HANDLE;
    CHECK(CreateModule(device, words, &module) != VK_SUCCESS);
    CHECK(module == VK_NULL_HANDLE);
    CHECK_FALSE(instance.problems().empty());
  }
}

TEST_CASE("shader modules are created concurrently from 8 threads", "[layer][threads]") {
  Instance instance;
  Device device(instance);
  REQUIRE(device.ok());
  const std::vector<uint32_t> plain = LoadShader("plain_khr.spirv1.6.spv");
  const std::vector<uint32_t> ext = LoadShader("get_coordinate.spirv1.6.spv");
  std::atomic<int> plainFailures{0}, extFailures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        VkShaderModule module = VK_NULL_HANDLE;
        if (CreateModule(device, plain, &module) != VK_SUCCESS) ++plainFailures;
        if (module) vkDestroyShaderModule(device.handle(), module, nullptr);
        module = VK_NULL_HANDLE;
        if (CreateModule(device, ext, &module) != VK_SUCCESS) ++extFailures;
        if (module) vkDestroyShaderModule(device.handle(), module, nullptr);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(plainFailures == 0);
  CHECK(extFailures == 0);
  CHECK(instance.problems().empty());
}

TEST_CASE("validation above and below the layer sees nothing wrong", "[layer][validation]") {
  for (Validation where : {Validation::AboveLayer, Validation::BelowLayer}) {
    // A fresh cache, so the layout probe runs under validation too (lowering=auto:
    // lowering=portable runs no probe).
    const std::filesystem::path cache = TempPath("cache-validation");
    std::filesystem::remove_all(cache);
    ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
    ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");
    Instance instance(InstanceOptions{.validation = where});
    REQUIRE(instance.ok());
    (void)QueryFeatures(instance);
    (void)QueryProperties2(instance, SubgroupInfo(0));
    Device device(instance);
    REQUIRE(device.ok());
    VkShaderModule module = VK_NULL_HANDLE;
    REQUIRE(CreateModule(device, LoadShader("plain_khr.spirv1.6.spv"), &module) == VK_SUCCESS);
    vkDestroyShaderModule(device.handle(), module, nullptr);
    module = VK_NULL_HANDLE;
    REQUIRE(CreateModule(device, LoadShader("get_coordinate.spirv1.6.spv"), &module) == VK_SUCCESS);
    vkDestroyShaderModule(device.handle(), module, nullptr);
    std::vector<std::string> problems;
    for (const std::string& p : instance.problems()) {
      // The layer's own non-conformance notice about lavapipe's KHR list is expected.
      if (p.find("mandatory combination") == std::string::npos) problems.push_back(p);
    }
    INFO((where == Validation::AboveLayer ? "validation above: " : "validation below: ")
         << (problems.empty() ? std::string() : problems.front()));
    CHECK(problems.empty());
    CHECK(CacheFiles(cache).size() == 1);  // the probe did run
    std::filesystem::remove_all(cache);
  }
}

namespace {

// lavapipe's measured layout (lavapipe.md §3), typed in independently of the layer:
// 8x8, subgroup 8: A and Accumulator hold (row, col) = (index, lane); B holds (lane, index).
coopmat::Coord LavapipeCoordinate(uint32_t use, uint32_t lane, uint32_t index) {
  return use == coopmat::kUseB ? coopmat::Coord{lane, index} : coopmat::Coord{index, lane};
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The layout files (not the lowered folder, made when a device opens the cache).
std::vector<std::filesystem::path> CacheFiles(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "coopmat-maintenance1", ec))
    if (entry.is_regular_file(ec)) files.push_back(entry.path());
  return files;
}

}  // namespace

TEST_CASE("the layout probe finds every KHR type's layout and caches it", "[layer][probe]") {
  const std::filesystem::path cache = TempPath("cache");
  std::filesystem::remove_all(cache);
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");  // lowering=portable runs no probe
  Instance instance;
  REQUIRE(IsLavapipe(instance));
  {
    Device device(instance);
    REQUIRE(device.ok());
  }
  const auto files = CacheFiles(cache);
  REQUIRE(files.size() == 1);
  const coopmat::ParseResult parsed = coopmat::ParseLayouts(ReadFile(files[0]));
  REQUIRE(parsed.ok);

  // One layout per distinct (type, use) of the KHR list: A, B, C and Result types.
  std::vector<std::pair<uint32_t, uint32_t>> expected;
  for (const auto& p : KhrProperties(instance)) {
    for (auto typeUse : {std::pair<uint32_t, uint32_t>{p.AType, coopmat::kUseA}, {p.BType, coopmat::kUseB},
                         {p.CType, coopmat::kUseAccumulator}, {p.ResultType, coopmat::kUseAccumulator}}) {
      if (std::find(expected.begin(), expected.end(), typeUse) == expected.end()) expected.push_back(typeUse);
    }
  }
  CHECK(parsed.layouts.size() == expected.size());
  for (const coopmat::LinearLayout& layout : parsed.layouts) {
    INFO(coopmat::FormatLayout(layout));
    CHECK(layout.key.rows == 8);
    CHECK(layout.key.cols == 8);
    CHECK(layout.key.subgroupSize == 8);
    for (uint32_t lane = 0; lane < 8; ++lane) {
      for (uint32_t index = 0; index < layout.length; ++index)
        CHECK(layout.CoordinateOf(lane, index) == LavapipeCoordinate(layout.key.use, lane, index));
    }
  }

  SECTION("a second device reads the cache instead of probing") {
    ScopedEnv verbose("VK_COOPMAT_MAINTENANCE1_LOG_LEVEL", "info");
    Instance again;
    Device device(again);
    REQUIRE(device.ok());
    CHECK(AnyMessageContains(again, "from " + files[0].string()));
  }
  SECTION("a damaged cache file is ignored and written anew") {
    std::ofstream(files[0], std::ios::trunc) << "# coopmat-maintenance1 layouts v1\nlayout type=f16 garbage\n";
    Device device(instance);
    REQUIRE(device.ok());
    CHECK(coopmat::ParseLayouts(ReadFile(files[0])).layouts.size() == expected.size());
  }
  SECTION("an edited cache file that still parses is probed again (review 2 finding 18)") {
    // Swap the A layout's lane and index bits: a valid layout, and a wrong one.
    std::string text = ReadFile(files[0]);
    const std::string original = "use=A rows=8 cols=8 subgroup=8 length=8 lane=c0,c1,c2 index=r0,r1,r2";
    const size_t at = text.find(original);
    REQUIRE(at != std::string::npos);
    text.replace(at, original.size(), "use=A rows=8 cols=8 subgroup=8 length=8 lane=r0,r1,r2 index=c0,c1,c2");
    REQUIRE(coopmat::ParseLayouts(text).ok);
    std::ofstream(files[0], std::ios::trunc) << text;
    ScopedEnv verbose("VK_COOPMAT_MAINTENANCE1_LOG_LEVEL", "info");
    Instance again;
    Device device(again);
    REQUIRE(device.ok());
    CHECK_FALSE(AnyMessageContains(again, "from " + files[0].string()));
    CHECK(ReadFile(files[0]).find(original) != std::string::npos);  // probed and written anew
  }
  SECTION("the file name carries the vendor and device ids (GPUs whose UUIDs are zero differ)") {
    VkPhysicalDeviceProperties properties{};
    vkGetPhysicalDeviceProperties(instance.physicalDevice(), &properties);
    char ids[16];
    std::snprintf(ids, sizeof(ids), "-%04x-%04x-", properties.vendorID, properties.deviceID);
    CHECK(files[0].filename().string().find(ids) != std::string::npos);
  }
  std::filesystem::remove_all(cache);
}

TEST_CASE("layout_probe=false leaves the driver alone at device creation", "[layer][probe][settings]") {
  const std::filesystem::path cache = TempPath("cache-off");
  std::filesystem::remove_all(cache);
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
  ScopedEnv off("VK_COOPMAT_MAINTENANCE1_LAYOUT_PROBE", "false");
  Instance instance;
  Device device(instance);
  REQUIRE(device.ok());
  CHECK(CacheFiles(cache).empty());
}

TEST_CASE("the layer offers no device command the driver below lacks", "[layer][dispatch]") {
  Instance instance;
  Device device(instance);  // VK_EXT_shader_object not enabled
  REQUIRE(device.ok());
  CHECK(vkGetDeviceProcAddr(device.handle(), "vkCreateShadersEXT") == nullptr);
  CHECK(vkGetDeviceProcAddr(device.handle(), "vkCreateShaderModule") != nullptr);
  Device withShaderObject(instance, DeviceOptions{.enableShaderObject = true});
  REQUIRE(withShaderObject.ok());
  CHECK(vkGetDeviceProcAddr(withShaderObject.handle(), "vkCreateShadersEXT") != nullptr);
}

TEST_CASE("a device without the extension gets the driver's own functions", "[layer][dispatch]") {
  // The pass-through fast path: what the layer hands out equals what the driver hands
  // out without the layer loaded.
  Instance with;
  Device served(with);
  Device plain(with, DeviceOptions{.enableMaintenance1 = false});
  REQUIRE(served.ok());
  REQUIRE(plain.ok());
  CHECK(vkGetDeviceProcAddr(plain.handle(), "vkCreateShaderModule") !=
        vkGetDeviceProcAddr(served.handle(), "vkCreateShaderModule"));
  CHECK(vkGetDeviceProcAddr(plain.handle(), "vkCreateComputePipelines") !=
        vkGetDeviceProcAddr(served.handle(), "vkCreateComputePipelines"));
}

namespace {

bool DeclaresWorkgroupVariable(const std::vector<uint32_t>& words) {
  for (size_t pos = 5; pos < words.size();) {
    const uint32_t count = words[pos] >> 16, opcode = words[pos] & 0xffff;
    if (count == 0) break;
    if (opcode == 59 /*OpVariable*/ && count >= 4 && words[pos + 3] == 4 /*Workgroup*/) return true;
    pos += count;
  }
  return false;
}

std::vector<uint32_t> LoweredByLayer(const std::string& shader, const char* lowering) {
  ScopedEnv path = FakeDriverOnPath();
  const std::string record = TempPath(std::string("record-") + lowering + ".bin");
  std::filesystem::remove(record);
  ScopedEnv recording("FAKE_DRIVER_RECORD", record);
  ScopedEnv setting("VK_COOPMAT_MAINTENANCE1_LOWERING", lowering);
  Instance instance(InstanceOptions{.layersBelow = {kFakeDriverLayer}});
  Device device(instance);
  REQUIRE(device.ok());
  VkShaderModule module = VK_NULL_HANDLE;
  REQUIRE(CreateModule(device, LoadShader(shader), &module) == VK_SUCCESS);
  vkDestroyShaderModule(device.handle(), module, nullptr);
  std::vector<RecordedModule> recorded = ReadRecord(record);
  std::filesystem::remove(record);
  // The fake driver also sees the layer's own layout probe modules; ours is the last.
  REQUIRE(!recorded.empty());
  return recorded.back().words;
}

}  // namespace

TEST_CASE("with the driver's layout known, GetCoordinate, PerElementOp and Reduce use no shared memory",
          "[layer][register]") {
  for (const char* shader : {"get_coordinate.spirv1.6.spv", "reduce_per_element.spirv1.3.spv",
                             "reduce_per_element.spirv1.6.spv"}) {
    INFO(shader);
    const std::vector<uint32_t> registerPath = LoweredByLayer(shader, "auto");
    const std::vector<uint32_t> portablePath = LoweredByLayer(shader, "portable");
    CHECK_FALSE(DeclaresWorkgroupVariable(registerPath));
    CHECK(DeclaresWorkgroupVariable(portablePath));  // control: the same module, portable
    CHECK(coopmat::ValidateModule(registerPath, 3).empty());
  }
}

// The loader resolves vkGetPhysicalDeviceProperties2 on any instance, but a 1.0 app may
// call only the KHR alias, and only with its extension: the layer's own queries follow
// the app's effective version, or the app's validation blames it for them (review of
// 2026-12-07: UNASSIGNED-API-Version-Violation from VVL below the layer).
TEST_CASE("a Vulkan 1.0 app with validation below the layer gets no message the layer caused", "[layer][validation]") {
  for (const bool properties2 : {false, true}) {
    INFO((properties2 ? "with" : "without") << " VK_KHR_get_physical_device_properties2");
    InstanceOptions options{.validation = Validation::BelowLayer, .apiVersion = VK_API_VERSION_1_0};
    if (properties2) options.extensions = {VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME};
    Instance instance(options);
    REQUIRE(instance.ok());
    const std::vector<std::string> extensions = DeviceExtensions(instance);
    // Served either way (KHR cooperative matrix is listed); a device as a 1.0 app makes it.
    CHECK(std::count(extensions.begin(), extensions.end(), VK_EXT_COOPERATIVE_MATRIX_MAINTENANCE_1_EXTENSION_NAME) == 1);
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue;
    VkDevice device = VK_NULL_HANDLE;
    CHECK(vkCreateDevice(instance.physicalDevice(), &info, nullptr, &device) == VK_SUCCESS);
    if (device) vkDestroyDevice(device, nullptr);
    CHECK(instance.problems().empty());
  }
}

TEST_CASE("validate=true checks a SPIR-V 1.3 module even when the app asked for Vulkan 1.0", "[layer][settings]") {
  const VkBool32 on = VK_TRUE;
  VkLayerSettingEXT validate{kLayerName, "validate", VK_LAYER_SETTING_TYPE_BOOL32_EXT, 1, &on};
  Instance instance(InstanceOptions{.settings = {validate},
                                    .extensions = {VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME},
                                    .apiVersion = VK_API_VERSION_1_0});
  REQUIRE(instance.ok());
  Device device(instance);
  REQUIRE(device.ok());
  VkShaderModule module = VK_NULL_HANDLE;
  CHECK(CreateModule(device, LoadShader("get_coordinate.spirv1.3.spv"), &module) == VK_SUCCESS);
  if (module) vkDestroyShaderModule(device.handle(), module, nullptr);
  CHECK(instance.problems().empty());
}
