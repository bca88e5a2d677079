// The pipeline-time step, seen from an application and from the driver below the
// layer (the fake driver layer records every module the driver is given): a module
// whose tile sizes are specialization constants is lowered per specialization into
// register code, once per (module, specialization, subgroup size), and the result
// survives a restart on disk.
#include <catch2/catch_test_macros.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compute.h"
#include "coopmat/lower.h"
#include "layer_test_util.h"
#include "spec_tiles_pipelines.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;

namespace {

size_t CountWorkgroupVariables(const std::vector<uint32_t>& words) {
  size_t count = 0;
  for (size_t pos = 5; pos < words.size();) {
    const uint32_t n = words[pos] >> 16, opcode = words[pos] & 0xffff;
    if (n == 0) break;
    if (opcode == 59 /*OpVariable*/ && n >= 4 && words[pos + 3] == 4 /*Workgroup*/) ++count;
    pos += n;
  }
  return count;
}

InstanceOptions DebugLogging(bool diskCache) {
  InstanceOptions options;
  options.settings = {StringSetting("log_level", "debug"), StringSetting("shader_cache", diskCache ? "true" : "false")};
  return options;
}

constexpr const char* kLowered = "pipeline-time lowering";

}  // namespace

TEST_CASE("specialized pipelines reach the driver in registers, without shared-memory scratch",
          "[layer][specialization]") {
  if (const char* lowering = std::getenv("VK_COOPMAT_MAINTENANCE1_LOWERING"); lowering && std::string(lowering) == "portable")
    SKIP("the register path is off under lowering=portable");
  for (const char* env : {"spirv1.3", "spirv1.6"}) {
    INFO(env);
    ScopedEnv path = FakeDriverOnPath();
    const std::string record = TempPath(std::string("record-spec-") + env + ".bin");
    std::filesystem::remove(record);
    ScopedEnv recording("FAKE_DRIVER_RECORD", record);
    InstanceOptions options = DebugLogging(false);
    options.layersBelow = {kFakeDriverLayer};
    Instance instance(options);
    Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
    REQUIRE(device.ok());
    const std::vector<uint32_t> original = SpecTiles(env);
    const size_t recordedBefore = ReadRecord(record).size();  // the layout probe's modules
    VkShaderModule module = CreateModule(device, original);
    {
      SpecTilesPipelines pipelines(device);
      CHECK(pipelines.Create(module, 8, 8, 8) == VK_SUCCESS);
      CHECK(pipelines.Create(module, 16, 16, 16) == VK_SUCCESS);
    }
    vkDestroyShaderModule(device.handle(), module, nullptr);
    const std::vector<RecordedModule> recorded = ReadRecord(record);
    std::filesystem::remove(record);
    // The module handle's code, then one module per pipeline.
    REQUIRE(recorded.size() == recordedBefore + 3);
    const size_t appShared = CountWorkgroupVariables(original);  // gScale, gOffset
    CHECK(appShared == 2);
    CHECK(CountWorkgroupVariables(recorded[recordedBefore].words) == appShared + 1);  // control: portable scratch
    for (size_t i = recordedBefore + 1; i < recorded.size(); ++i) {
      CHECK(CountWorkgroupVariables(recorded[i].words) == appShared);
      CHECK(coopmat::ValidateModule(recorded[i].words, 3).empty());
    }
    CHECK(CountMessages(instance, "6 operations, 6 in registers, lowered in") == 2);
    CHECK(instance.problems().empty());
  }
}

TEST_CASE("a second pipeline from the same module and specialization costs no rewrite", "[layer][specialization]") {
  Instance instance(DebugLogging(false));
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  VkShaderModule module = CreateModule(device, SpecTiles("spirv1.6"));
  SpecTilesPipelines pipelines(device);
  CHECK(pipelines.Create(module, 8, 8, 8) == VK_SUCCESS);
  CHECK(CountMessages(instance, "lowered in") == 1);
  CHECK(pipelines.Create(module, 8, 8, 8) == VK_SUCCESS);
  CHECK(pipelines.Create(module, 8, 8, 8) == VK_SUCCESS);
  CHECK(CountMessages(instance, "lowered in") == 1);
  CHECK(CountMessages(instance, "from the memory cache") == 2);
  CHECK(pipelines.Create(module, 16, 16, 16) == VK_SUCCESS);  // another specialization: lowered once more
  CHECK(CountMessages(instance, "lowered in") == 2);
  // A second module with the same code shares the entries.
  VkShaderModule twin = CreateModule(device, SpecTiles("spirv1.6"));
  CHECK(pipelines.Create(twin, 16, 16, 16) == VK_SUCCESS);
  CHECK(CountMessages(instance, "from the memory cache") == 3);
  vkDestroyShaderModule(device.handle(), twin, nullptr);
  vkDestroyShaderModule(device.handle(), module, nullptr);
  CHECK(instance.problems().empty());
}

TEST_CASE("a restarted application finds its pipeline-time lowerings on disk, and never a damaged one",
          "[layer][specialization][cache]") {
  const std::filesystem::path home = TempPath("lowering-cache");
  std::filesystem::remove_all(home);
  ScopedEnv cache("XDG_CACHE_HOME", home.string());
  auto run = [&](const char* expected) {
    Instance instance(DebugLogging(true));
    Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
    REQUIRE(device.ok());
    VkShaderModule module = CreateModule(device, SpecTiles("spirv1.3"));
    {
      SpecTilesPipelines pipelines(device);
      CHECK(pipelines.Create(module, 16, 16, 16) == VK_SUCCESS);
    }
    vkDestroyShaderModule(device.handle(), module, nullptr);
    INFO("expected: " << expected);
    CHECK(CountMessages(instance, std::string(kLowered)) == 1);
    CHECK(CountMessages(instance, expected) == 1);
    CHECK(instance.problems().empty());
  };
  run("in registers, lowered in");
  // One folder per build identity (an upgraded layer never reads another build's entries).
  std::vector<std::filesystem::path> builds;
  for (const auto& entry : std::filesystem::directory_iterator(home / "coopmat-maintenance1" / "lowered"))
    builds.push_back(entry.path());
  REQUIRE(builds.size() == 1);
  const std::filesystem::path dir = builds[0];
  std::vector<std::filesystem::path> entries;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) entries.push_back(entry.path());
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].extension() == ".spv");
  run("from the disk cache");
  {  // One flipped bit in the stored module: the entry is not used, the module is lowered again.
    std::fstream file(entries[0], std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(200);
    char byte = 0;
    file.read(&byte, 1);
    file.seekp(200);
    byte ^= 0x10;
    file.write(&byte, 1);
  }
  run("in registers, lowered in");
  run("from the disk cache");  // and rewritten whole
  std::filesystem::remove_all(home);
}

TEST_CASE("a mis-specialized pipeline gets an error and a message, and nothing reaches the driver",
          "[layer][specialization][malformed]") {
  Instance instance(DebugLogging(false));
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  VkShaderModule module = CreateModule(device, SpecTiles("spirv1.6"));
  SpecTilesPipelines pipelines(device);
  CHECK(pipelines.Create(module, 8, 8, 16) == VK_ERROR_UNKNOWN);
  CHECK(AnyMessageContains(instance, "Result dimensions 8x16 do not match the Matrix dimensions 8x8 once specialized"));
  // Asking again gives the same answer from the cache, with the message again.
  instance.clearMessages();
  CHECK(pipelines.Create(module, 8, 8, 16) == VK_ERROR_UNKNOWN);
  CHECK(AnyMessageContains(instance, "do not match"));
  CHECK(pipelines.Create(module, 8, 8, 8) == VK_SUCCESS);  // the module itself is fine
  vkDestroyShaderModule(device.handle(), module, nullptr);
}

// Review 2 finding 11: one refused stage fails only its own pipeline (Vulkan, "Multiple
// Pipeline Creation"), unless it asks for an early return: the others of the call are
// created, and the call returns the error.
TEST_CASE("several pipelines in one call: a refused one does not take the others with it",
          "[layer][specialization][malformed]") {
  Instance instance(DebugLogging(false));
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  VkShaderModule module = CreateModule(device, SpecTiles("spirv1.6"));
  SpecTilesPipelines pipelines(device);
  {
    const auto [result, created] = pipelines.CreateBatch(module, {{16, 16, 16, 0}, {8, 8, 16, 0}, {8, 8, 8, 0}});
    CHECK(result == VK_ERROR_UNKNOWN);
    CHECK(created == std::vector<bool>{true, false, true});
  }
  {  // The refused one asks for an early return: nothing after it is created.
    const auto [result, created] = pipelines.CreateBatch(
        module, {{16, 16, 16, 0}, {8, 8, 16, VK_PIPELINE_CREATE_EARLY_RETURN_ON_FAILURE_BIT}, {8, 8, 8, 0}});
    CHECK(result == VK_ERROR_UNKNOWN);
    CHECK(created == std::vector<bool>{true, false, false});
  }
  {  // All refused: every handle null.
    const auto [result, created] = pipelines.CreateBatch(module, {{8, 8, 16, 0}, {8, 16, 8, 0}});
    CHECK(result == VK_ERROR_UNKNOWN);
    CHECK(created == std::vector<bool>{false, false});
  }
  {
    const auto [result, created] = pipelines.CreateBatch(module, {{8, 8, 8, 0}, {16, 16, 16, 0}});
    CHECK(result == VK_SUCCESS);
    CHECK(created == std::vector<bool>{true, true});
  }
  vkDestroyShaderModule(device.handle(), module, nullptr);
}

// Review 2 finding 14: a specialization value the module does not declare does not
// enter the cache key: pipelines that differ only there share one lowering.
TEST_CASE("a specialization constant the module does not declare does not split the cache", "[layer][specialization][cache]") {
  const std::filesystem::path home = TempPath("undeclared-spec");
  std::filesystem::remove_all(home);
  ScopedEnv cache("XDG_CACHE_HOME", home.string());  // an empty disk cache: the first one is lowered
  Instance instance(DebugLogging(true));
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  VkShaderModule module = CreateModule(device, SpecTiles("spirv1.6"));
  SpecTilesPipelines pipelines(device);
  for (uint32_t frame = 1; frame <= 3; ++frame) CHECK(pipelines.Create(module, 16, 16, 16, 0, frame) == VK_SUCCESS);
  CHECK(CountMessages(instance, "lowered in") == 1);
  CHECK(CountMessages(instance, "from the memory cache") == 2);
  CHECK(pipelines.Create(module, 16, 16, 8, 0, 1) != VK_SUCCESS);  // a declared one still counts (TK != TN)
  vkDestroyShaderModule(device.handle(), module, nullptr);
  std::filesystem::remove_all(home);
}

// Review 2 finding 11: with VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT an
// app asks not to wait for a compile. A pipeline-time lowering that is not cached is
// such a compile: VK_PIPELINE_COMPILE_REQUIRED and a null handle, nothing lowered on
// the app's thread (before: the layer lowered, or answered VK_ERROR_UNKNOWN). Once
// the lowering is cached the layer serves it and the driver decides.
TEST_CASE("a pipeline that may not compile gets VK_PIPELINE_COMPILE_REQUIRED while its lowering is not cached",
          "[layer][specialization][cache]") {
  const std::filesystem::path home = TempPath("compile-required");
  std::filesystem::remove_all(home);
  ScopedEnv cache("XDG_CACHE_HOME", home.string());
  Instance instance(DebugLogging(true));
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  VkShaderModule module = CreateModule(device, SpecTiles("spirv1.6"));
  SpecTilesPipelines pipelines(device);
  const uint32_t failOnCompile = VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT;
  {
    const auto [result, created] = pipelines.CreateBatch(module, {{16, 16, 16, failOnCompile}});
    CHECK(result == VK_PIPELINE_COMPILE_REQUIRED);
    CHECK(created == std::vector<bool>{false});
    CHECK(CountMessages(instance, "lowered in") == 0);
  }
  {  // Several at once: the one that may compile is created, the other is not.
    const auto [result, created] = pipelines.CreateBatch(module, {{16, 16, 16, failOnCompile}, {16, 16, 16, 0}});
    CHECK(result == VK_PIPELINE_COMPILE_REQUIRED);
    CHECK(created == std::vector<bool>{false, true});
    CHECK(CountMessages(instance, "lowered in") == 1);
  }
  {  // Cached now: the layer serves it from memory; what remains is the driver's answer.
    const auto [result, created] = pipelines.CreateBatch(module, {{16, 16, 16, failOnCompile}});
    CHECK(CountMessages(instance, "from the memory cache") == 1);
    CHECK((result == VK_SUCCESS || result == VK_PIPELINE_COMPILE_REQUIRED));
    CHECK(created[0] == (result == VK_SUCCESS));
  }
  vkDestroyShaderModule(device.handle(), module, nullptr);
  std::filesystem::remove_all(home);
}

namespace {

uint64_t FolderBytes(const std::filesystem::path& dir, size_t* files = nullptr) {
  uint64_t bytes = 0;
  if (files) *files = 0;
  if (!std::filesystem::exists(dir)) return 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    bytes += entry.file_size();
    if (files) ++*files;
  }
  return bytes;
}

InstanceOptions DiskCacheLimitedTo(const std::string& size) {
  InstanceOptions options = DebugLogging(true);
  options.settings.push_back(StringSetting("shader_cache_max_size", size));
  return options;
}

}  // namespace

// Review 2 finding 6: the disk cache had no limit. Specializations that vary per
// problem size now stay within shader_cache_max_size, least recently used out first.
TEST_CASE("the disk cache stays within shader_cache_max_size", "[layer][specialization][cache]") {
  const std::filesystem::path home = TempPath("cache-limit");
  std::filesystem::remove_all(home);
  ScopedEnv cache("XDG_CACHE_HOME", home.string());
  const std::filesystem::path lowered = home / "coopmat-maintenance1" / "lowered";
  auto create = [&](const InstanceOptions& options, const std::vector<uint32_t>& tiles) {
    Instance instance(options);
    Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
    REQUIRE(device.ok());
    VkShaderModule module = CreateModule(device, SpecTiles("spirv1.6"));
    {
      SpecTilesPipelines pipelines(device);
      for (uint32_t t : tiles) CHECK(pipelines.Create(module, t, t, t) == VK_SUCCESS);
    }
    vkDestroyShaderModule(device.handle(), module, nullptr);
    CHECK(instance.problems().empty());
  };
  create(DebugLogging(true), {16});
  size_t files = 0;
  const uint64_t one = FolderBytes(lowered, &files);
  REQUIRE(files == 1);
  // Room for about two entries: four specializations leave at most the limit behind.
  const uint64_t limit = one * 5 / 2;
  create(DiskCacheLimitedTo(std::to_string(limit)), {8, 16, 24, 32});
  const uint64_t kept = FolderBytes(lowered, &files);
  INFO("one entry " << one << " bytes, limit " << limit << ", kept " << kept << " in " << files << " files");
  CHECK(kept <= limit);
  CHECK(files >= 1);
  // A limit below one entry keeps nothing on disk, and pipelines are still created.
  std::filesystem::remove_all(home);
  create(DiskCacheLimitedTo("1K"), {16});
  CHECK(FolderBytes(lowered, &files) == 0);
  std::filesystem::remove_all(home);
}

// Review 2 finding 13: a cache that cannot be written was silent. It is said once per
// device, and the app works from memory.
TEST_CASE("a cache folder that cannot be written is warned about once per device", "[layer][specialization][cache]") {
  const std::filesystem::path home = TempPath("cache-unwritable");
  std::filesystem::remove_all(home);
  std::filesystem::create_directories(home);
  std::ofstream(home / "coopmat-maintenance1") << "a file where the cache folder should be";
  ScopedEnv cache("XDG_CACHE_HOME", home.string());
  Instance instance(DebugLogging(true));
  for (int device = 0; device < 2; ++device) {
    Device d(instance, DeviceOptions{.enableNvCoopmat2 = true});
    REQUIRE(d.ok());
    VkShaderModule module = CreateModule(d, SpecTiles("spirv1.6"));
    {
      SpecTilesPipelines pipelines(d);
      for (uint32_t t : {8u, 16u}) CHECK(pipelines.Create(module, t, t, t) == VK_SUCCESS);
    }
    vkDestroyShaderModule(d.handle(), module, nullptr);
    // Found when the cache is opened (the folder held for every read and write).
    CHECK(CountMessages(instance, "shader cache: " + (home / "coopmat-maintenance1").string() + " is not a folder") ==
          static_cast<size_t>(device + 1));
  }
  std::filesystem::remove_all(home);
}

TEST_CASE("shader_cache_max_size takes Mesa's sizes and refuses others", "[layer][settings][cache]") {
  for (const char* good : {"512M", "2G", "100k", "4096"}) {
    INFO(good);
    Instance instance(DiskCacheLimitedTo(good));
    REQUIRE(instance.ok());
    CHECK(CountMessages(instance, "invalid value") == 0);
  }
  for (const char* bad : {"12X", "-1", "G", "99999999999999999999"}) {
    INFO(bad);
    Instance instance(DiskCacheLimitedTo(bad));
    CHECK(CountMessages(instance, std::string("invalid value '") + bad + "' for setting 'shader_cache_max_size'") == 1);
  }
}

// Review 2 finding 17: non-dispatchable handles need not be unique. A driver that
// returns one handle for two identical modules made the layer forget the pending
// module when the first was destroyed: the other's pipelines got the module-time
// stand-in, lowered for the default specialization.
TEST_CASE("a handle the driver shares between identical modules stays pending until the last is destroyed",
          "[layer][specialization]") {
  ScopedEnv path = FakeDriverOnPath();
  ScopedEnv shared("FAKE_DRIVER_SHARED_MODULES", "1");
  InstanceOptions options = DebugLogging(false);
  options.layersBelow = {kFakeDriverLayer};
  Instance instance(options);
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  VkShaderModule first = CreateModule(device, SpecTiles("spirv1.6"));
  VkShaderModule second = CreateModule(device, SpecTiles("spirv1.6"));
  REQUIRE(first == second);  // the fake driver's doing
  vkDestroyShaderModule(device.handle(), first, nullptr);
  {
    SpecTilesPipelines pipelines(device);
    CHECK(pipelines.Create(second, 16, 16, 16) == VK_SUCCESS);
  }
  CHECK(CountMessages(instance, kLowered) == 1);
  vkDestroyShaderModule(device.handle(), second, nullptr);
  CHECK(instance.problems().empty());
}

// Review 2 finding 16: pipeline kinds the layer did not intercept got a pending
// module's module-time stand-in (lowered for the default specialization). Execution
// graphs (VK_AMDX_shader_enqueue, which RADV has) and data graphs (VK_ARM_data_graph)
// now get the code lowered for their own specialization. The fake driver lists both,
// creates nothing and logs the module each was given.
TEST_CASE("execution-graph and data-graph pipelines get the code lowered for their specialization",
          "[layer][specialization]") {
  ScopedEnv path = FakeDriverOnPath();
  ScopedEnv stages("FAKE_DRIVER_STAGES", "1");
  const std::string log = TempPath("graph-pipelines.log");
  std::filesystem::remove(log);
  ScopedEnv logging("FAKE_DRIVER_LOG", log);
  InstanceOptions options = DebugLogging(false);
  options.layersBelow = {kFakeDriverLayer};
  Instance instance(options);
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true,
                                        .extraExtensions = {VK_AMDX_SHADER_ENQUEUE_EXTENSION_NAME, VK_ARM_DATA_GRAPH_EXTENSION_NAME}});
  REQUIRE(device.ok());
  const VkDevice d = device.handle();
  VkShaderModule module = CreateModule(device, SpecTiles("spirv1.6"));
  const uint32_t values[] = {16, 16, 16, 16, 8};
  const VkSpecializationMapEntry entries[] = {{0, 0, 4}, {3, 4, 4}, {4, 8, 4}, {5, 12, 4}, {6, 16, 4}};
  const VkSpecializationInfo spec{5, entries, sizeof(values), values};
  VkPipeline pipeline = VK_NULL_HANDLE;
  char original[32];
  std::snprintf(original, sizeof(original), "module=0x%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(module)));
  auto given = [&](const char* kind) { return LastLineStarting(log, kind); };
  SECTION("vkCreateExecutionGraphPipelinesAMDX") {
    auto create = reinterpret_cast<PFN_vkCreateExecutionGraphPipelinesAMDX>(vkGetDeviceProcAddr(d, "vkCreateExecutionGraphPipelinesAMDX"));
    REQUIRE(create);
    VkPipelineShaderStageCreateInfo stage{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    stage.module = module;
    stage.pName = "main";
    stage.pSpecializationInfo = &spec;
    VkExecutionGraphPipelineCreateInfoAMDX info{VK_STRUCTURE_TYPE_EXECUTION_GRAPH_PIPELINE_CREATE_INFO_AMDX};
    info.stageCount = 1;
    info.pStages = &stage;
    info.basePipelineIndex = -1;
    CHECK(create(d, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline) == VK_ERROR_FEATURE_NOT_PRESENT);
    CHECK(stage.module == module);  // the app's structures are not written
    const std::string line = given("execution graph");
    REQUIRE(!line.empty());
    CHECK(line.find(original) == std::string::npos);  // a module lowered for this specialization
  }
  SECTION("vkCreateDataGraphPipelinesARM") {
    auto create = reinterpret_cast<PFN_vkCreateDataGraphPipelinesARM>(vkGetDeviceProcAddr(d, "vkCreateDataGraphPipelinesARM"));
    REQUIRE(create);
    VkDataGraphPipelineShaderModuleCreateInfoARM moduleInfo{VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SHADER_MODULE_CREATE_INFO_ARM};
    moduleInfo.module = module;
    moduleInfo.pName = "main";
    moduleInfo.pSpecializationInfo = &spec;
    VkDataGraphPipelineCreateInfoARM info{VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CREATE_INFO_ARM, &moduleInfo};
    CHECK(create(d, VK_NULL_HANDLE, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline) == VK_ERROR_FEATURE_NOT_PRESENT);
    CHECK(moduleInfo.module == module);
    const std::string line = given("data graph");
    REQUIRE(!line.empty());
    CHECK(line.find(original) == std::string::npos);
  }
  CHECK(pipeline == VK_NULL_HANDLE);
  CHECK(CountMessages(instance, kLowered) == 1);
  vkDestroyShaderModule(d, module, nullptr);
  std::filesystem::remove(log);
}
// Review 4b565b7 finding 10 through the real loader on lavapipe: a tile whose row
// count and Use are computed from gl_WorkGroupSize (local_size_x_id = 32: TM = 8,
// Use B; tests/passes/shaders/workgroup_size_tile.comp). Before, vkCreateShaderModule
// failed (the computed Use was refused); with the Use accepted, the pipeline-time
// lowering kept TM a specialization operation and the transpose went through the
// scratch ("0 in registers"). Now it runs in registers and matches the CPU.
TEST_CASE("a tile computed from gl_WorkGroupSize runs in registers once the pipeline specializes it",
          "[layer][specialization]") {
  if (const char* lowering = std::getenv("VK_COOPMAT_MAINTENANCE1_LOWERING"); lowering && std::string(lowering) == "portable")
    SKIP("the register path is off under lowering=portable");
  constexpr uint32_t kInvocations = 32, kRows = kInvocations / 4, kCols = 8, kGroups = 2;
  constexpr uint32_t kMatrices = kGroups * kInvocations / 8;  // one per subgroup of 8
  Instance instance(DebugLogging(false));
  Device device(instance);
  REQUIRE(device.ok());
  for (const char* env : {"spirv1.3", "spirv1.6"}) {
    INFO(env);
    std::vector<float> source(kMatrices * kRows * kCols);
    for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<float>(i % 61) * 0.25f - 7.0f;  // exact in f16
    std::vector<cmtest::Bytes> buffers{cmtest::ToBytes(source),
                                       cmtest::ToBytes(std::vector<uint16_t>(source.size(), 0xffff))};
    cmtest::ComputeJob job;
    job.spirv = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/workgroup_size_tile." + env + ".spv");
    REQUIRE(!job.spirv.empty());
    job.specialization = {{0, kInvocations}};
    job.groupCountX = kGroups;
    const cmtest::ComputeResult run = cmtest::RunCompute(device, job, buffers);
    INFO(run.Describe());
    REQUIRE(run);
    // Each subgroup's TM x 8 matrix, transposed to 8 x TM and converted to f16.
    const std::vector<_Float16> out = cmtest::FromBytes<_Float16>(buffers[1]);
    size_t wrong = 0;
    for (uint32_t m = 0; m < kMatrices; ++m)
      for (uint32_t r = 0; r < kRows; ++r)
        for (uint32_t c = 0; c < kCols; ++c) {
          const size_t base = size_t{m} * kRows * kCols;
          const float want = source[base + r * kCols + c], got = static_cast<float>(out[base + c * kRows + r]);
          if (got != want && wrong++ < 4) UNSCOPED_INFO("matrix " << m << " (" << r << ", " << c << "): got " << got << " want " << want);
        }
    CHECK(wrong == 0);
  }
  CHECK(CountMessages(instance, "1 operations, 1 in registers, lowered in") == 2);
  CHECK(CountMessages(instance, "operations, 0 in registers") == 0);  // pipeline time (module time is portable)
  CHECK(instance.problems().empty());
}
