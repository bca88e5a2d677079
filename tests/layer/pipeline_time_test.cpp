// The pipeline-time step, seen from an application and from the driver below the
// layer (the fake driver layer records every module the driver is given): a module
// whose tile sizes are specialization constants is lowered per specialization into
// register code, once per (module, specialization, subgroup size), and the result
// survives a restart on disk.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compute.h"
#include "coopmat/lower.h"
#include "layer_test_util.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;

namespace {

std::vector<uint32_t> SpecTiles(const char* env) {
  std::vector<uint32_t> words = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/spec_tiles." + env + ".spv");
  REQUIRE(!words.empty());
  return words;
}

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

// A compute pipeline layout for spec_tiles.comp (7 storage buffers), and pipelines
// made from one module with a given specialization.
class SpecTilesPipelines {
 public:
  explicit SpecTilesPipelines(const Device& device) : device_(device) {
    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (uint32_t i = 0; i < 7; ++i)
      bindings.push_back({i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
    VkDescriptorSetLayoutCreateInfo setInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    setInfo.bindingCount = static_cast<uint32_t>(bindings.size());
    setInfo.pBindings = bindings.data();
    REQUIRE(vkCreateDescriptorSetLayout(device.handle(), &setInfo, nullptr, &setLayout_) == VK_SUCCESS);
    VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layoutInfo.setLayoutCount = 1;
    layoutInfo.pSetLayouts = &setLayout_;
    REQUIRE(vkCreatePipelineLayout(device.handle(), &layoutInfo, nullptr, &layout_) == VK_SUCCESS);
  }
  ~SpecTilesPipelines() {
    vkDestroyPipelineLayout(device_.handle(), layout_, nullptr);
    vkDestroyDescriptorSetLayout(device_.handle(), setLayout_, nullptr);
  }

  // One vkCreateComputePipelines call with a pipeline per (TM, TN, TK, flags); returns
  // the result and which handles it created (then destroys them).
  std::pair<VkResult, std::vector<bool>> CreateBatch(VkShaderModule module,
                                                     const std::vector<std::array<uint32_t, 4>>& shapes) {
    std::vector<std::array<uint32_t, 5>> values;
    for (const auto& s : shapes) values.push_back({16, s[0], s[1], s[2], 8});
    const VkSpecializationMapEntry entries[] = {{0, 0, 4}, {3, 4, 4}, {4, 8, 4}, {5, 12, 4}, {6, 16, 4}};
    std::vector<VkSpecializationInfo> specs;
    for (const auto& v : values) specs.push_back({5, entries, sizeof(v), v.data()});
    std::vector<VkComputePipelineCreateInfo> infos(shapes.size(), {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO});
    for (size_t i = 0; i < shapes.size(); ++i) {
      VkComputePipelineCreateInfo& info = infos[i];
      info.flags = shapes[i][3];
      info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
      info.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
      info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
      info.stage.module = module;
      info.stage.pName = "main";
      info.stage.pSpecializationInfo = &specs[i];
      info.layout = layout_;
      info.basePipelineIndex = -1;
    }
    std::vector<VkPipeline> pipelines(shapes.size(), reinterpret_cast<VkPipeline>(uintptr_t{0xdead}));
    const VkResult result = vkCreateComputePipelines(device_.handle(), VK_NULL_HANDLE, static_cast<uint32_t>(infos.size()),
                                                     infos.data(), nullptr, pipelines.data());
    std::vector<bool> created;
    for (VkPipeline p : pipelines) {
      created.push_back(p != VK_NULL_HANDLE);
      if (p != VK_NULL_HANDLE) vkDestroyPipeline(device_.handle(), p, nullptr);
    }
    return {result, created};
  }

  // Creates (and destroys) a pipeline of `module` with TM, TN, TK; returns the result.
  // `unused`: the value of a SpecId (99) the module does not declare, as an engine's
  // shared VkSpecializationInfo carries.
  VkResult Create(VkShaderModule module, uint32_t tm, uint32_t tn, uint32_t tk, uint32_t requiredSubgroupSize = 0,
                  uint32_t unused = 0) {
    const uint32_t values[] = {16, tm, tn, tk, 8, unused};  // local size: two subgroups of 8
    const VkSpecializationMapEntry entries[] = {{0, 0, 4}, {3, 4, 4}, {4, 8, 4}, {5, 12, 4}, {6, 16, 4}, {99, 20, 4}};
    VkSpecializationInfo spec{6, entries, sizeof(values), values};
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo required{
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
    required.requiredSubgroupSize = requiredSubgroupSize;
    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    info.stage.pNext = requiredSubgroupSize ? &required : nullptr;
    info.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = &spec;
    info.layout = layout_;
    VkPipeline pipeline = VK_NULL_HANDLE;
    const VkResult result = vkCreateComputePipelines(device_.handle(), VK_NULL_HANDLE, 1, &info, nullptr, &pipeline);
    if (pipeline) vkDestroyPipeline(device_.handle(), pipeline, nullptr);
    return result;
  }

 private:
  const Device& device_;
  VkDescriptorSetLayout setLayout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
};

VkShaderModule CreateModule(const Device& device, const std::vector<uint32_t>& words) {
  VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  info.codeSize = words.size() * 4;
  info.pCode = words.data();
  VkShaderModule module = VK_NULL_HANDLE;
  REQUIRE(vkCreateShaderModule(device.handle(), &info, nullptr, &module) == VK_SUCCESS);
  return module;
}

size_t CountMessages(const Instance& instance, const std::string& needle) {
  const std::vector<Message> messages = instance.messages();
  return static_cast<size_t>(std::count_if(messages.begin(), messages.end(), [&](const Message& m) {
    return m.text.find(needle) != std::string::npos;
  }));
}

const VkLayerSettingEXT* Setting(const char* key, const char* const* value) {
  static thread_local std::vector<VkLayerSettingEXT> settings;
  settings.push_back({kLayerName, key, VK_LAYER_SETTING_TYPE_STRING_EXT, 1, value});
  return &settings.back();
}

InstanceOptions DebugLogging(bool diskCache) {
  static const char* debug = "debug";
  static const char* on = "true";
  static const char* off = "false";
  InstanceOptions options;
  options.settings = {*Setting("log_level", &debug), *Setting("shader_cache", diskCache ? &on : &off)};
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
