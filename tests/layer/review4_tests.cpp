// The fourth review's (dbb465e) product findings, through the real loader.
#include <catch2/catch_test_macros.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "layer_test_util.h"
#include "stage_objects.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;

namespace {

// Info messages say where the layouts came from; no lowered-code disk cache.
InstanceOptions LoggingLayouts() {
  return ThroughTheLayer({StringSetting("log_level", "debug"), StringSetting("shader_cache", "false")});
}

std::vector<std::filesystem::path> LayoutFiles(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.path().filename().string().rfind("layouts-", 0) == 0) files.push_back(entry.path());
  return files;
}

// A device of this build on lavapipe; true when it took its layouts from the layout file
// (no probe).
bool DeviceReadLayoutFile(const std::filesystem::path& file) {
  Instance instance(LoggingLayouts());
  Device device(instance);
  REQUIRE(device.ok());
  return AnyMessageContains(instance, " from " + file.string());
}

void MakeUnusedFor(const std::filesystem::path& file, std::chrono::hours age) {
  std::filesystem::last_write_time(file, std::filesystem::file_time_type::clock::now() - age);
}

bool RecentlyUsed(const std::filesystem::path& file) {
  return std::filesystem::last_write_time(file) > std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
}

}  // namespace

// Finding 6: writing a layout file deleted every other build's, so two builds used in
// turn (a distribution's package and a developer's sharing ~/.cache) each probed again
// at every start; files of this build for old drivers were never removed. Now a layout
// file goes when nothing has used it for 30 days, and reading one marks it used. The
// other build is stood for by a copy of this build's file under its name.
TEST_CASE("review dbb465e 6: two builds used in turn probe once each; unused layout files age out",
          "[layer][review4][cache]") {
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");  // lowering=portable runs no probe
  const std::filesystem::path home = TempPath("review4-layout-files");
  std::filesystem::remove_all(home);
  ScopedEnv cache("XDG_CACHE_HOME", home.string());
  const std::filesystem::path folder = home / "coopmat-maintenance1";

  CHECK_FALSE(DeviceReadLayoutFile(folder / "none"));  // probes and writes this build's file
  const std::vector<std::filesystem::path> written = LayoutFiles(folder);
  REQUIRE(written.size() == 1);
  const std::filesystem::path ours = written[0];
  const std::string name = ours.filename().string();
  const std::string buildSuffix = name.substr(name.rfind('-'));  // "-<build>.txt"
  const std::filesystem::path otherBuild = folder / (name.substr(0, name.rfind('-')) + "-0ther0build.txt");
  const std::filesystem::path otherBuildUnused = folder / (name.substr(0, name.rfind('-')) + "-0ld0build.txt");
  const std::filesystem::path otherDevice = folder / ("layouts-another-gpu" + buildSuffix);
  const std::filesystem::path oldDriver = folder / ("layouts-an-old-driver-version" + buildSuffix);
  for (const auto& copy : {otherBuild, otherBuildUnused, otherDevice, oldDriver}) std::filesystem::copy_file(ours, copy);
  MakeUnusedFor(otherBuildUnused, std::chrono::hours(24 * 31));
  MakeUnusedFor(oldDriver, std::chrono::hours(24 * 31));

  // This build's turn again, its file gone (as the other build's write removed it before).
  std::filesystem::remove(ours);
  CHECK_FALSE(DeviceReadLayoutFile(ours));  // probes once more and writes
  CHECK(std::filesystem::exists(ours));
  CHECK(std::filesystem::exists(otherBuild));  // the other build's turn will not probe
  CHECK(std::filesystem::exists(otherDevice));
  CHECK_FALSE(std::filesystem::exists(otherBuildUnused));
  CHECK_FALSE(std::filesystem::exists(oldDriver));

  // Read, not written: still marked as in use.
  MakeUnusedFor(ours, std::chrono::hours(24 * 20));
  CHECK(DeviceReadLayoutFile(ours));
  CHECK(RecentlyUsed(ours));
  std::filesystem::remove_all(home);
}

namespace {

constexpr const char* kDriverFailed = "the driver failed (";

std::vector<uint32_t> LayerShader(const std::string& name) {
  std::vector<uint32_t> words = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/" + name);
  REQUIRE(!words.empty());
  return words;
}

// The fake driver (FAKE_DRIVER_STAGES) lists both and creates neither.
DeviceOptions RayTracingAndDataGraph() {
  return DeviceOptions{.extraExtensions = {VK_KHR_RAY_TRACING_PIPELINE_EXTENSION_NAME, VK_KHR_ACCELERATION_STRUCTURE_EXTENSION_NAME,
                                           VK_KHR_DEFERRED_HOST_OPERATIONS_EXTENSION_NAME, VK_ARM_DATA_GRAPH_EXTENSION_NAME}};
}

// A ray-tracing pipeline of one ray generation stage, its code chained (`code`) or in `module`.
struct RaygenPipeline {
  RaygenPipeline(const VkShaderModuleCreateInfo* code, VkShaderModule module) {
    stage.pNext = code;
    stage.stage = VK_SHADER_STAGE_RAYGEN_BIT_KHR;
    stage.module = module;
    stage.pName = "main";
    info.stageCount = 1;
    info.pStages = &stage;
  }
  RaygenPipeline(const RaygenPipeline&) = delete;
  RaygenPipeline& operator=(const RaygenPipeline&) = delete;
  VkPipelineShaderStageCreateInfo stage{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  VkRayTracingPipelineCreateInfoKHR info{VK_STRUCTURE_TYPE_RAY_TRACING_PIPELINE_CREATE_INFO_KHR};
};

InstanceOptions OverTheFakeDriver() {
  InstanceOptions options = ThroughTheLayer({StringSetting("log_level", "warning"), StringSetting("shader_cache", "false")});
  options.layersBelow = {kFakeDriverLayer};
  return options;
}

}  // namespace

// Finding 8: the driver-fault warning blamed the layer's code for a failure anywhere in
// a batch where one stage was lowered. Now it names the pipeline and the stage the layer
// lowered, and says nothing when the driver failed a pipeline the layer left alone. The
// fake driver creates both pipelines and fails the last (":last").
TEST_CASE("review dbb465e 8: the driver-fault warning names the pipeline and stage the layer lowered",
          "[layer][review4][faults]") {
  ScopedEnv path = FakeDriverOnPath();
  Instance instance(OverTheFakeDriver());
  REQUIRE(instance.ok());
  Device device(instance);
  REQUIRE(device.ok());
  StageObjects objects(device);
  const SpecTilesSpecialization spec;
  const VkShaderModule lowered = objects.CreateModule(LayerShader("spec_tiles.spirv1.6.spv"), nullptr);
  const VkShaderModule untouched = objects.CreateModule(LayerShader("plain_khr.spirv1.6.spv"), nullptr);
  // `error`: the fake counts calls from when FAKE_DRIVER_FAIL changed, so each use arms another.
  auto createFailingLast = [&](VkShaderModule first, VkShaderModule second, VkResult error) {
    const VkComputePipelineCreateInfo infos[2] = {
        objects.PipelineInfo(first, nullptr, first == lowered ? &spec.info : nullptr),
        objects.PipelineInfo(second, nullptr, second == lowered ? &spec.info : nullptr)};
    VkPipeline pipelines[2] = {};
    ScopedEnv armed("FAKE_DRIVER_FAIL", "CreateComputePipelines:1:" + std::to_string(error) + ":last");
    CHECK(vkCreateComputePipelines(device.handle(), VK_NULL_HANDLE, 2, infos, nullptr, pipelines) == error);
    CHECK(pipelines[0] != VK_NULL_HANDLE);
    CHECK(pipelines[1] == VK_NULL_HANDLE);
    for (VkPipeline pipeline : pipelines) vkDestroyPipeline(device.handle(), pipeline, nullptr);
  };

  createFailingLast(lowered, untouched, VK_ERROR_OUT_OF_HOST_MEMORY);  // the driver failed the one the layer left alone
  CHECK(CountMessages(instance, kDriverFailed) == 0);
  createFailingLast(untouched, lowered, VK_ERROR_OUT_OF_DEVICE_MEMORY);
  CHECK(CountMessages(instance, kDriverFailed) == 1);
  CHECK(AnyMessageContains(instance, "vkCreateComputePipelines: the driver failed (VK_ERROR_OUT_OF_DEVICE_MEMORY) on "
                                     "pipeline 1's compute stage that the layer lowered"));
  vkDestroyShaderModule(device.handle(), lowered, nullptr);
  vkDestroyShaderModule(device.handle(), untouched, nullptr);
}

// Finding 8: the ray-tracing KHR and data-graph paths called the driver without the
// warning. The fake driver lists both, creates nothing and returns
// VK_ERROR_FEATURE_NOT_PRESENT for stages the layer lowered.
TEST_CASE("review dbb465e 8: the driver-fault warning covers ray-tracing and data-graph pipelines",
          "[layer][review4][faults]") {
  ScopedEnv path = FakeDriverOnPath();
  ScopedEnv stages("FAKE_DRIVER_STAGES", "1");
  Instance instance(OverTheFakeDriver());
  REQUIRE(instance.ok());
  Device device(instance, RayTracingAndDataGraph());
  REQUIRE(device.ok());
  const VkDevice d = device.handle();
  VkPipeline pipeline = VK_NULL_HANDLE;
  SECTION("vkCreateRayTracingPipelinesKHR") {
    const std::vector<uint32_t> words = LayerShader("get_coordinate.spirv1.6.spv");
    const VkShaderModuleCreateInfo code = StageObjects::ModuleInfo(words);
    const RaygenPipeline raygen(&code, VK_NULL_HANDLE);
    auto create = reinterpret_cast<PFN_vkCreateRayTracingPipelinesKHR>(vkGetDeviceProcAddr(d, "vkCreateRayTracingPipelinesKHR"));
    REQUIRE(create);
    CHECK(create(d, VK_NULL_HANDLE, VK_NULL_HANDLE, 1, &raygen.info, nullptr, &pipeline) == VK_ERROR_FEATURE_NOT_PRESENT);
    CHECK(AnyMessageContains(instance, "vkCreateRayTracingPipelinesKHR: the driver failed (VK_ERROR_FEATURE_NOT_PRESENT) "
                                       "on pipeline 0's ray generation stage that the layer lowered"));
  }
  SECTION("vkCreateDataGraphPipelinesARM") {
    const SpecTilesSpecialization spec;
    const std::vector<uint32_t> words = LayerShader("spec_tiles.spirv1.6.spv");
    const VkShaderModuleCreateInfo code = StageObjects::ModuleInfo(words);
    VkShaderModule module = VK_NULL_HANDLE;
    REQUIRE(vkCreateShaderModule(d, &code, nullptr, &module) == VK_SUCCESS);
    VkDataGraphPipelineShaderModuleCreateInfoARM moduleInfo{VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SHADER_MODULE_CREATE_INFO_ARM};
    moduleInfo.module = module;
    moduleInfo.pName = "main";
    moduleInfo.pSpecializationInfo = &spec.info;
    VkDataGraphPipelineCreateInfoARM info{VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CREATE_INFO_ARM, &moduleInfo};
    auto create = reinterpret_cast<PFN_vkCreateDataGraphPipelinesARM>(vkGetDeviceProcAddr(d, "vkCreateDataGraphPipelinesARM"));
    REQUIRE(create);
    CHECK(create(d, VK_NULL_HANDLE, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline) == VK_ERROR_FEATURE_NOT_PRESENT);
    CHECK(AnyMessageContains(instance, "vkCreateDataGraphPipelinesARM: the driver failed (VK_ERROR_FEATURE_NOT_PRESENT) "
                                       "on pipeline 0's compute stage that the layer lowered"));
    vkDestroyShaderModule(d, module, nullptr);
  }
  CHECK(pipeline == VK_NULL_HANDLE);
  CHECK(CountMessages(instance, kDriverFailed) == 1);
}

// Review of 2026-12-07: with a deferred operation and nothing to rewrite at pipeline
// time (modules lowered when they were made), the driver got the layer's copy of the
// create infos, freed when the call returned, though a deferring driver may read them
// until the operation completes (ASan: heap-use-after-free at join). The fake driver
// logs the address of the infos a deferred creation gives it.
TEST_CASE("a deferred ray-tracing or data-graph creation the layer leaves alone gets the app's create infos",
          "[layer][review4]") {
  ScopedEnv path = FakeDriverOnPath();
  ScopedEnv stages("FAKE_DRIVER_STAGES", "1");
  const std::string log = TempPath("deferred-infos.log");
  std::filesystem::remove(log);
  ScopedEnv logging("FAKE_DRIVER_LOG", log);
  Instance instance(OverTheFakeDriver());
  REQUIRE(instance.ok());
  Device device(instance, RayTracingAndDataGraph());
  REQUIRE(device.ok());
  const VkDevice d = device.handle();
  auto createDeferred = reinterpret_cast<PFN_vkCreateDeferredOperationKHR>(vkGetDeviceProcAddr(d, "vkCreateDeferredOperationKHR"));
  auto destroyDeferred = reinterpret_cast<PFN_vkDestroyDeferredOperationKHR>(vkGetDeviceProcAddr(d, "vkDestroyDeferredOperationKHR"));
  REQUIRE(createDeferred);
  REQUIRE(destroyDeferred);
  VkDeferredOperationKHR deferred = VK_NULL_HANDLE;
  REQUIRE(createDeferred(d, nullptr, &deferred) == VK_SUCCESS);
  // Lowered when it is made: a pipeline naming it has nothing to rewrite.
  const std::vector<uint32_t> words = LayerShader("get_coordinate.spirv1.6.spv");
  const VkShaderModuleCreateInfo code = StageObjects::ModuleInfo(words);
  VkShaderModule module = VK_NULL_HANDLE;
  REQUIRE(vkCreateShaderModule(d, &code, nullptr, &module) == VK_SUCCESS);
  auto address = [](const void* p) {
    char text[48];
    std::snprintf(text, sizeof(text), "infos=0x%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
    return std::string(text);
  };
  VkPipeline pipeline = VK_NULL_HANDLE;
  SECTION("vkCreateRayTracingPipelinesKHR") {
    const RaygenPipeline raygen(nullptr, module);
    auto create = reinterpret_cast<PFN_vkCreateRayTracingPipelinesKHR>(vkGetDeviceProcAddr(d, "vkCreateRayTracingPipelinesKHR"));
    REQUIRE(create);
    CHECK(create(d, deferred, VK_NULL_HANDLE, 1, &raygen.info, nullptr, &pipeline) == VK_ERROR_FEATURE_NOT_PRESENT);
    CHECK(LastLineStarting(log, "ray tracing deferred") == "ray tracing deferred " + address(&raygen.info));
  }
  SECTION("vkCreateDataGraphPipelinesARM") {
    VkDataGraphPipelineShaderModuleCreateInfoARM moduleInfo{VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SHADER_MODULE_CREATE_INFO_ARM};
    moduleInfo.module = module;
    moduleInfo.pName = "main";
    VkDataGraphPipelineCreateInfoARM info{VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CREATE_INFO_ARM, &moduleInfo};
    auto create = reinterpret_cast<PFN_vkCreateDataGraphPipelinesARM>(vkGetDeviceProcAddr(d, "vkCreateDataGraphPipelinesARM"));
    REQUIRE(create);
    CHECK(create(d, deferred, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline) == VK_ERROR_FEATURE_NOT_PRESENT);
    CHECK(LastLineStarting(log, "data graph deferred") == "data graph deferred " + address(&info));
  }
  CHECK(pipeline == VK_NULL_HANDLE);
  vkDestroyShaderModule(d, module, nullptr);
  destroyDeferred(d, deferred, nullptr);
  std::filesystem::remove(log);
}
