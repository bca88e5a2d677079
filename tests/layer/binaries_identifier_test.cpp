// Review finding 6: SPIR-V that reaches the driver by way of module identifiers,
// pipeline keys and pipeline binaries is the lowered code, as for modules and
// pipelines. lavapipe has neither VK_EXT_shader_module_identifier nor
// VK_KHR_pipeline_binary, so the fake driver layer implements them below the layer
// (FAKE_DRIVER_BINARIES): its identifiers and keys hash the SPIR-V it receives.
#include <catch2/catch_test_macros.hpp>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "coopmat/lower.h"
#include "layer_test_util.h"
#include "storage_buffer_layout.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;

namespace {

constexpr uint32_t kExtCapabilities[] = {5429u, 5430u, 5432u, 5438u};

struct BinariesDevice {
  ScopedEnv path = FakeDriverOnPath();
  ScopedEnv emulate{"FAKE_DRIVER_BINARIES", "1"};
  std::string record = TempPath("record-binaries.bin");
  ScopedEnv recording{"FAKE_DRIVER_RECORD", record};
  Instance instance{InstanceOptions{.layersBelow = {kFakeDriverLayer}}};
  Device device{instance, DeviceOptions{.extraExtensions = {VK_KHR_PIPELINE_BINARY_EXTENSION_NAME,
                                                            VK_EXT_SHADER_MODULE_IDENTIFIER_EXTENSION_NAME}}};
  BinariesDevice() { std::filesystem::remove(record); }
  ~BinariesDevice() { std::filesystem::remove(record); }
  template <typename Fn> Fn Function(const char* name) {
    auto fn = reinterpret_cast<Fn>(vkGetDeviceProcAddr(device.handle(), name));
    REQUIRE(fn);
    return fn;
  }
};

std::vector<uint32_t> Shader(const std::string& name) {
  std::vector<uint32_t> words = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/" + name);
  REQUIRE(!words.empty());
  return words;
}

void CheckLowered(const std::vector<uint32_t>& words) {
  for (uint32_t capability : kExtCapabilities) CHECK_FALSE(DeclaresCapability(words, capability));
  CHECK(coopmat::ValidateModule(words, 6).empty());
}

std::vector<uint8_t> Bytes(const VkShaderModuleIdentifierEXT& id) {
  return std::vector<uint8_t>(id.identifier, id.identifier + id.identifierSize);
}

}  // namespace

TEST_CASE("review 6: the create-info identifier of an EXT module equals its module's identifier", "[layer][review]") {
  BinariesDevice b;
  REQUIRE(b.device.ok());
  auto moduleId = b.Function<PFN_vkGetShaderModuleIdentifierEXT>("vkGetShaderModuleIdentifierEXT");
  auto infoId = b.Function<PFN_vkGetShaderModuleCreateInfoIdentifierEXT>("vkGetShaderModuleCreateInfoIdentifierEXT");
  for (const char* name : {"get_coordinate.spirv1.6.spv", "plain_khr.spirv1.6.spv"}) {
    INFO(name);
    const std::vector<uint32_t> words = Shader(name);
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = words.size() * 4;
    info.pCode = words.data();
    VkShaderModule module = VK_NULL_HANDLE;
    REQUIRE(vkCreateShaderModule(b.device.handle(), &info, nullptr, &module) == VK_SUCCESS);
    VkShaderModuleIdentifierEXT fromModule{VK_STRUCTURE_TYPE_SHADER_MODULE_IDENTIFIER_EXT};
    VkShaderModuleIdentifierEXT fromInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_IDENTIFIER_EXT};
    moduleId(b.device.handle(), module, &fromModule);
    infoId(b.device.handle(), &info, &fromInfo);
    vkDestroyShaderModule(b.device.handle(), module, nullptr);
    REQUIRE(fromModule.identifierSize == 16);
    CHECK(Bytes(fromInfo) == Bytes(fromModule));
  }
  // Control: the EXT original's own identifier (what the layer used to pass down) differs.
  const std::vector<uint32_t> ext = Shader("get_coordinate.spirv1.6.spv");
  const auto recorded = ReadRecord(b.record);
  REQUIRE(recorded.size() >= 1);
  CHECK(recorded.front().words != ext);
  CheckLowered(recorded.front().words);
}

TEST_CASE("review 6: pipeline keys and pipeline binaries get the lowered stage code", "[layer][review]") {
  BinariesDevice b;
  REQUIRE(b.device.ok());
  auto getKey = b.Function<PFN_vkGetPipelineKeyKHR>("vkGetPipelineKeyKHR");
  auto createBinaries = b.Function<PFN_vkCreatePipelineBinariesKHR>("vkCreatePipelineBinariesKHR");

  const std::vector<uint32_t> words = Shader("get_coordinate.spirv1.6.spv");
  REQUIRE(DeclaresCapability(words, 5438));
  VkShaderModuleCreateInfo code{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  code.codeSize = words.size() * 4;
  code.pCode = words.data();
  const StorageBufferLayout layout(b.device, 2);

  VkComputePipelineCreateInfo compute{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  compute.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, &code};
  compute.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  compute.stage.pName = "main";
  compute.layout = layout.pipelineLayout();
  VkPipelineCreateInfoKHR pipeline{VK_STRUCTURE_TYPE_PIPELINE_CREATE_INFO_KHR, &compute};

  VkPipelineBinaryKeyKHR key{VK_STRUCTURE_TYPE_PIPELINE_BINARY_KEY_KHR};
  CHECK(getKey(b.device.handle(), &pipeline, &key) == VK_SUCCESS);
  CHECK(key.keySize == 16);
  VkPipelineBinaryKeyKHR global{VK_STRUCTURE_TYPE_PIPELINE_BINARY_KEY_KHR};
  CHECK(getKey(b.device.handle(), nullptr, &global) == VK_SUCCESS);  // the global key passes through

  VkPipelineBinaryCreateInfoKHR binaryInfo{VK_STRUCTURE_TYPE_PIPELINE_BINARY_CREATE_INFO_KHR};
  binaryInfo.pPipelineCreateInfo = &pipeline;
  VkPipelineBinaryHandlesInfoKHR handles{VK_STRUCTURE_TYPE_PIPELINE_BINARY_HANDLES_INFO_KHR};
  CHECK(createBinaries(b.device.handle(), &binaryInfo, nullptr, &handles) == VK_PIPELINE_BINARY_MISSING_KHR);

  // Both calls handed the fake lowered, valid SPIR-V, and the same code: the key
  // of a pipeline is that of the code the driver would compile.
  const auto recorded = ReadRecord(b.record);
  REQUIRE(recorded.size() == 2);
  for (const RecordedModule& m : recorded) CheckLowered(m.words);
  CHECK(recorded[0].words == recorded[1].words);
}

TEST_CASE("review 6: ray-tracing stages and NV shader-group stages get the lowered code", "[layer][review]") {
  // The fake records the SPIR-V chained into every stage it receives and creates
  // nothing; each way must hand it lowered code (the EXT original declares 5438).
  ScopedEnv path = FakeDriverOnPath();
  ScopedEnv stagesOnly("FAKE_DRIVER_STAGES", "1");
  const std::string record = TempPath("record-stages.bin");
  std::filesystem::remove(record);
  ScopedEnv recording("FAKE_DRIVER_RECORD", record);
  Instance instance(InstanceOptions{.layersBelow = {kFakeDriverLayer}});
  Device device(instance, DeviceOptions{.extraExtensions = {VK_NV_RAY_TRACING_EXTENSION_NAME,
                                                            VK_NV_DEVICE_GENERATED_COMMANDS_EXTENSION_NAME,
                                                            VK_KHR_RAY_TRACING_PIPELINE_EXTENSION_NAME,
                                                            VK_KHR_ACCELERATION_STRUCTURE_EXTENSION_NAME,
                                                            VK_KHR_DEFERRED_HOST_OPERATIONS_EXTENSION_NAME}});
  REQUIRE(device.ok());
  const VkDevice d = device.handle();

  const std::vector<uint32_t> words = Shader("get_coordinate.spirv1.6.spv");
  REQUIRE(DeclaresCapability(words, 5438));
  VkShaderModuleCreateInfo code{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  code.codeSize = words.size() * 4;
  code.pCode = words.data();
  auto stage = [&](VkShaderStageFlagBits bit) {
    VkPipelineShaderStageCreateInfo s{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, &code};
    s.stage = bit;
    s.pName = "main";
    return s;
  };
  VkPipeline pipeline = VK_NULL_HANDLE;
  size_t stages = 1;  // stages the way hands down

  SECTION("vkCreateRayTracingPipelinesKHR") {
    auto create = reinterpret_cast<PFN_vkCreateRayTracingPipelinesKHR>(vkGetDeviceProcAddr(d, "vkCreateRayTracingPipelinesKHR"));
    REQUIRE(create);
    const VkPipelineShaderStageCreateInfo raygen = stage(VK_SHADER_STAGE_RAYGEN_BIT_KHR);
    VkRayTracingPipelineCreateInfoKHR info{VK_STRUCTURE_TYPE_RAY_TRACING_PIPELINE_CREATE_INFO_KHR};
    info.stageCount = 1;
    info.pStages = &raygen;
    CHECK(create(d, VK_NULL_HANDLE, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline) == VK_ERROR_FEATURE_NOT_PRESENT);
  }
  SECTION("vkCreateRayTracingPipelinesNV") {
    auto create = reinterpret_cast<PFN_vkCreateRayTracingPipelinesNV>(vkGetDeviceProcAddr(d, "vkCreateRayTracingPipelinesNV"));
    REQUIRE(create);
    const VkPipelineShaderStageCreateInfo raygen = stage(VK_SHADER_STAGE_RAYGEN_BIT_NV);
    VkRayTracingPipelineCreateInfoNV info{VK_STRUCTURE_TYPE_RAY_TRACING_PIPELINE_CREATE_INFO_NV};
    info.stageCount = 1;
    info.pStages = &raygen;
    CHECK(create(d, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline) == VK_ERROR_FEATURE_NOT_PRESENT);
  }
  SECTION("VkGraphicsPipelineShaderGroupsCreateInfoNV") {
    const VkPipelineShaderStageCreateInfo vertex[2] = {stage(VK_SHADER_STAGE_VERTEX_BIT), stage(VK_SHADER_STAGE_VERTEX_BIT)};
    VkGraphicsShaderGroupCreateInfoNV group{VK_STRUCTURE_TYPE_GRAPHICS_SHADER_GROUP_CREATE_INFO_NV};
    group.stageCount = 1;
    group.pStages = &vertex[1];
    VkGraphicsPipelineShaderGroupsCreateInfoNV groups{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_SHADER_GROUPS_CREATE_INFO_NV};
    groups.groupCount = 1;
    groups.pGroups = &group;
    VkGraphicsPipelineCreateInfo info{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO, &groups};
    info.stageCount = 1;
    info.pStages = &vertex[0];
    CHECK(vkCreateGraphicsPipelines(d, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline) == VK_ERROR_FEATURE_NOT_PRESENT);
    CHECK(group.pStages == &vertex[1]);  // the app's structures are not written
    stages = 2;
  }
  CHECK(pipeline == VK_NULL_HANDLE);
  const auto recorded = ReadRecord(record);
  CHECK(recorded.size() == stages);
  for (const RecordedModule& m : recorded) CheckLowered(m.words);
  std::filesystem::remove(record);
}
