// Layer-side regression tests for the second round of review findings
// (review-901d75a.md): unknown pNext structs (11), blobs that are not SPIR-V (16),
// the feature warning said once (25), and what every refusal gives the user.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "layer_test_util.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;
using Catch::Matchers::ContainsSubstring;

namespace {

// A struct from Vulkan headers newer than the layer's: an sType no header defines.
constexpr auto kFutureSType = static_cast<VkStructureType>(1000999123);
struct FutureStruct {
  VkStructureType sType = kFutureSType;
  void* pNext = nullptr;
  uint32_t payload[6] = {1, 2, 3, 4, 5, 6};
};

std::vector<uint32_t> Shader(const std::string& name) {
  std::vector<uint32_t> words = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/" + name);
  REQUIRE(!words.empty());
  return words;
}

VkResult CreateModule(VkDevice device, const void* code, size_t codeSize, VkShaderModule* module) {
  VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  info.codeSize = codeSize;
  info.pCode = static_cast<const uint32_t*>(code);
  return vkCreateShaderModule(device, &info, nullptr, module);
}

size_t CountMessages(const Instance& instance, const std::string& needle) {
  const std::vector<Message> messages = instance.messages();
  return static_cast<size_t>(std::count_if(messages.begin(), messages.end(),
                                           [&](const Message& m) { return m.text.find(needle) != std::string::npos; }));
}

}  // namespace

// Finding 11: a node the layer cannot copy before the feature struct failed
// vkCreateDevice with VK_ERROR_INITIALIZATION_FAILED.
TEST_CASE("review 11: an unknown struct before the feature struct does not fail vkCreateDevice", "[layer][review]") {
  Instance instance;
  REQUIRE(instance.ok());
  FutureStruct future;
  Device device(instance, DeviceOptions{.beforeMaintenance1 = reinterpret_cast<VkBaseOutStructure*>(&future)});
  INFO(device.createResult());
  REQUIRE(device.ok());
  // The app's struct is unchanged, and the device serves the extension.
  CHECK(future.sType == kFutureSType);
  CHECK(future.payload[5] == 6);
  const std::vector<uint32_t> words = Shader("get_coordinate.spirv1.6.spv");
  VkShaderModule module = VK_NULL_HANDLE;
  CHECK(CreateModule(device.handle(), words.data(), words.size() * 4, &module) == VK_SUCCESS);
  if (module) vkDestroyShaderModule(device.handle(), module, nullptr);
  CHECK(instance.problems().empty());
}

TEST_CASE("review 11: an unknown struct before an inline VkShaderModuleCreateInfo gets an error that names it",
          "[layer][review][malformed]") {
  Instance instance;
  Device device(instance, DeviceOptions{.enableMaintenance5 = true});
  REQUIRE(device.ok());
  const std::vector<uint32_t> words = Shader("get_coordinate.spirv1.6.spv");
  VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  moduleInfo.codeSize = words.size() * 4;
  moduleInfo.pCode = words.data();
  FutureStruct future;
  future.pNext = &moduleInfo;
  VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  VkPipelineLayout layout = VK_NULL_HANDLE;
  REQUIRE(vkCreatePipelineLayout(device.handle(), &layoutInfo, nullptr, &layout) == VK_SUCCESS);
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, &future};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.pName = "main";
  info.layout = layout;
  VkPipeline pipeline = reinterpret_cast<VkPipeline>(uint64_t{1});
  CHECK(vkCreateComputePipelines(device.handle(), VK_NULL_HANDLE, 1, &info, nullptr, &pipeline) == VK_ERROR_UNKNOWN);
  CHECK(pipeline == VK_NULL_HANDLE);
  CHECK(CountMessages(instance, "sType 1000999123 is chained before VkShaderModuleCreateInfo and unknown to the layer") == 1);
  CHECK(future.pNext == &moduleInfo);
  vkDestroyPipelineLayout(device.handle(), layout, nullptr);
}

// Finding 16: anything that is not SPIR-V (VK_NV_glsl_shader source, a wrong magic
// number, a stub) was refused on a served device; it now reaches the driver as the
// very same bytes, which decides about it as it would without the layer.
TEST_CASE("review 16: a blob that is not SPIR-V reaches the driver untouched", "[layer][review][malformed]") {
  ScopedEnv path = FakeDriverOnPath();
  const std::string record = TempPath("record-not-spirv.bin");
  std::filesystem::remove(record);
  ScopedEnv recording("FAKE_DRIVER_RECORD", record);
  InstanceOptions options;
  options.layersBelow = {kFakeDriverLayer};
  Instance instance(options);
  Device device(instance);
  REQUIRE(device.ok());
  const size_t recordedBefore = ReadRecord(record).size();  // the layout probe's modules

  std::string glsl = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";
  glsl.resize((glsl.size() + 3) / 4 * 4, ' ');
  std::vector<uint32_t> text(glsl.size() / 4);
  std::memcpy(text.data(), glsl.data(), glsl.size());
  std::vector<uint32_t> badMagic = Shader("plain_khr.spirv1.6.spv");
  badMagic[0] = 0x12345678;
  const std::vector<uint32_t> stub = {0x07230203u, 0x00010600u, 0};  // shorter than a header
  const std::vector<std::vector<uint32_t>> blobs = {text, badMagic, stub};
  for (const auto& blob : blobs) {
    VkShaderModule module = VK_NULL_HANDLE;
    const VkResult result = CreateModule(device.handle(), blob.data(), blob.size() * 4, &module);
    if (result == VK_SUCCESS) vkDestroyShaderModule(device.handle(), module, nullptr);
  }
  const auto recorded = ReadRecord(record);
  REQUIRE(recorded.size() == recordedBefore + blobs.size());
  for (size_t i = 0; i < blobs.size(); ++i) CHECK(recorded[recordedBefore + i].words == blobs[i]);
  CHECK(CountMessages(instance, "not passed to the driver") == 0);
  std::filesystem::remove(record);
}

// Finding 25: the missing-feature warning came once per module.
TEST_CASE("review 25: a module using a feature the app did not enable is warned about once per device",
          "[layer][review]") {
  Instance instance;
  Device device(instance, DeviceOptions{.chainMaintenance1Features = false});
  REQUIRE(device.ok());
  const std::vector<uint32_t> words = Shader("get_coordinate.spirv1.6.spv");
  for (int i = 0; i < 3; ++i) {
    VkShaderModule module = VK_NULL_HANDLE;
    CHECK(CreateModule(device.handle(), words.data(), words.size() * 4, &module) == VK_SUCCESS);
    if (module) vkDestroyShaderModule(device.handle(), module, nullptr);
  }
  CHECK(CountMessages(instance, "feature cooperativeMatrixGetCoordinate was not enabled") == 1);
  // A second device warns again: the app may have fixed one and not the other.
  Device second(instance, DeviceOptions{.chainMaintenance1Features = false});
  REQUIRE(second.ok());
  VkShaderModule module = VK_NULL_HANDLE;
  CHECK(CreateModule(second.handle(), words.data(), words.size() * 4, &module) == VK_SUCCESS);
  if (module) vkDestroyShaderModule(second.handle(), module, nullptr);
  CHECK(CountMessages(instance, "feature cooperativeMatrixGetCoordinate was not enabled") == 2);
}
