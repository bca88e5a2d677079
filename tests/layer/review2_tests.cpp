// Layer-side regression tests for the second round of review findings
// (review-901d75a.md): unknown pNext structs (11), blobs that are not SPIR-V (16),
// the feature warning said once (25), and what every refusal gives the user,
// a workgroup-scope module's included (test audit 4b565b7, section 0.7).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "compute.h"
#include "layer_test_util.h"
#include "storage_buffer_layout.h"
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

namespace {

// get_coordinate with a second entry point, Fragment, on the same function: the
// lowering refuses it (review finding 13), naming the entry point and the operation.
std::vector<uint32_t> WithFragmentEntry(std::vector<uint32_t> words) {
  for (size_t pos = 5; pos < words.size();) {
    const uint32_t count = words[pos] >> 16, opcode = words[pos] & 0xffff;
    if (opcode == 15 /*OpEntryPoint*/) {
      const uint32_t function = words[pos + 2];
      uint32_t name[2] = {0, 0};
      std::memcpy(name, "frag", 4);
      const std::vector<uint32_t> added = {(5u << 16) | 15u, 4u /*Fragment*/, function, name[0], name[1],
                                           (3u << 16) | 16u /*OpExecutionMode*/, function, 7u /*OriginUpperLeft*/};
      words.insert(words.begin() + static_cast<ptrdiff_t>(pos + count), added.begin(), added.end());
      return words;
    }
    pos += count;
  }
  FAIL("no OpEntryPoint");
  return words;
}

InstanceOptions DumpingTo(const std::string& dir) {
  InstanceOptions options;
  options.settings = {StringSetting("dump_dir", dir)};
  return options;
}

std::vector<uint32_t> ReadWords(const std::filesystem::path& path) { return ReadSpirv(path.string()); }

std::string ErrorMessages(const Instance& instance) {
  std::string all;
  for (const Message& m : instance.messages())
    if (m.severity == VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) all += m.text + "\n";
  return all;
}

}  // namespace

// Issue 9, item 5: a refusal names the instruction and the reason, returns a VkResult
// and writes the input (and for a pipeline-time refusal the specialization) to dump_dir.
TEST_CASE("refusals at module time name the instruction and dump the input", "[layer][review][malformed]") {
  const std::string dir = TempPath("dump-module");
  std::filesystem::remove_all(dir);
  Instance instance(DumpingTo(dir));
  Device device(instance);
  REQUIRE(device.ok());
  const std::vector<uint32_t> words = WithFragmentEntry(Shader("get_coordinate.spirv1.6.spv"));
  VkShaderModule module = VK_NULL_HANDLE;
  CHECK(CreateModule(device.handle(), words.data(), words.size() * 4, &module) == VK_ERROR_UNKNOWN);
  CHECK(module == VK_NULL_HANDLE);
  const std::string errors = ErrorMessages(instance);
  CHECK_THAT(errors, ContainsSubstring("vkCreateShaderModule: cannot lower the maintenance1 module: entry point \"frag\" (Fragment) reaches OpCooperativeMatrixGetCoordinateEXT %"));
  const std::filesystem::path dumped = DumpedFile(dir, ".original.spv");
  CHECK_THAT(errors, ContainsSubstring("input written to " + dumped.string()));
  CHECK(ReadWords(dumped) == words);
  std::filesystem::remove_all(dir);
}

// The lowering handles Subgroup scope only (lavapipe lists no other either). A
// workgroup-scope matrix used by an EXT operation is refused on every creation path:
// VK_ERROR_UNKNOWN, nothing created, and the reason on stderr (with the layer's
// prefix) and through VK_EXT_debug_utils.
TEST_CASE("a workgroup-scope cooperative matrix module is refused with a message on every path",
          "[layer][review][malformed]") {
  ScopedEnv path = FakeDriverOnPath();
  const std::string record = TempPath("record-workgroup-scope.bin");
  std::filesystem::remove(record);
  ScopedEnv recording("FAKE_DRIVER_RECORD", record);
  StderrCapture stderrText;
  InstanceOptions options = ThroughTheLayer();
  options.layersBelow = {kFakeDriverLayer};
  Instance instance(options);
  Device device(instance, DeviceOptions{.enableMaintenance5 = true, .enableShaderObject = true});
  REQUIRE(device.ok());
  const size_t recordedBefore = ReadRecord(record).size();  // the layout probe's modules
  const std::string reason = "matrix must have a constant Subgroup scope";
  for (const char* env : {"spirv1.3", "spirv1.6"})
    for (const auto& [shaderPath, call] : {std::pair{ShaderPath::Module, "vkCreateShaderModule"},
                                           std::pair{ShaderPath::InlineStage, "vkCreateComputePipelines"},
                                           std::pair{ShaderPath::ShaderObject, "vkCreateShadersEXT"}}) {
      INFO(env << " through " << call);
      instance.clearMessages();
      ComputeJob job;
      job.path = shaderPath;
      job.spirv = Shader(std::string("workgroup_scope.") + env + ".spv");
      std::vector<Bytes> buffers = {Bytes(2048)};
      const ComputeResult result = RunCompute(device, job, buffers);
      CHECK(result.result == VK_ERROR_UNKNOWN);
      CHECK(result.failedCall == call);
      const std::string expected = std::string(call) + ": cannot lower the maintenance1 module: " +
                                   "OpCooperativeMatrixGetCoordinateEXT %";
      CHECK_THAT(ErrorMessages(instance), ContainsSubstring(expected) && ContainsSubstring(reason));
    }
  const std::string printed = stderrText.Text();
  CHECK_THAT(printed, ContainsSubstring("coopmat-maintenance1: error: vkCreateShaderModule: cannot lower the maintenance1 module: "));
  CHECK_THAT(printed, ContainsSubstring("coopmat-maintenance1: error: vkCreateShadersEXT: cannot lower the maintenance1 module: "));
  CHECK_THAT(printed, ContainsSubstring(reason));
  CHECK(ReadRecord(record).size() == recordedBefore);  // no module of it reached the driver
  std::filesystem::remove(record);
}

TEST_CASE("refusals at pipeline time name the instruction and dump the input and its specialization",
          "[layer][review][malformed]") {
  const std::string dir = TempPath("dump-pipeline");
  std::filesystem::remove_all(dir);
  Instance instance(DumpingTo(dir));
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  const std::vector<uint32_t> words = Shader("spec_tiles.spirv1.6.spv");
  VkShaderModule module = VK_NULL_HANDLE;
  REQUIRE(CreateModule(device.handle(), words.data(), words.size() * 4, &module) == VK_SUCCESS);
  std::filesystem::remove_all(dir);  // the module-time lowering's own dump
  const StorageBufferLayout layout(device, 7);
  const uint32_t values[] = {16, 8, 8, 16, 8};  // TK != TN: the P conversion's shapes do not match
  const VkSpecializationMapEntry entries[] = {{0, 0, 4}, {3, 4, 4}, {4, 8, 4}, {5, 12, 4}, {6, 16, 4}};
  VkSpecializationInfo spec{5, entries, sizeof(values), values};

  SECTION("a compute pipeline") {
    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    info.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = &spec;
    info.layout = layout.pipelineLayout();
    VkPipeline pipeline = VK_NULL_HANDLE;
    CHECK(vkCreateComputePipelines(device.handle(), VK_NULL_HANDLE, 1, &info, nullptr, &pipeline) == VK_ERROR_UNKNOWN);
    CHECK(pipeline == VK_NULL_HANDLE);
    CHECK_THAT(ErrorMessages(instance), ContainsSubstring("vkCreateComputePipelines: cannot lower the maintenance1 module: OpFConvert %"));
  }
  SECTION("a shader object") {
    Device objects(instance, DeviceOptions{.enableNvCoopmat2 = true, .enableShaderObject = true});
    REQUIRE(objects.ok());
    std::filesystem::remove_all(dir);
    auto create = reinterpret_cast<PFN_vkCreateShadersEXT>(vkGetDeviceProcAddr(objects.handle(), "vkCreateShadersEXT"));
    REQUIRE(create);
    VkShaderCreateInfoEXT info{VK_STRUCTURE_TYPE_SHADER_CREATE_INFO_EXT};
    info.flags = VK_SHADER_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
    info.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.codeType = VK_SHADER_CODE_TYPE_SPIRV_EXT;
    info.codeSize = words.size() * 4;
    info.pCode = words.data();
    info.pName = "main";
    const StorageBufferLayout objectsLayout(objects, 7);  // the same bindings, on this device
    info.setLayoutCount = 1;
    info.pSetLayouts = objectsLayout.setLayout();
    info.pSpecializationInfo = &spec;
    VkShaderEXT shader = VK_NULL_HANDLE;
    CHECK(create(objects.handle(), 1, &info, nullptr, &shader) == VK_ERROR_UNKNOWN);
    CHECK(shader == VK_NULL_HANDLE);
    CHECK_THAT(ErrorMessages(instance), ContainsSubstring("vkCreateShadersEXT: cannot lower the maintenance1 module: OpFConvert %"));
  }
  const std::string errors = ErrorMessages(instance);
  CHECK_THAT(errors, ContainsSubstring("do not match"));
  const std::filesystem::path dumped = DumpedFile(dir, ".original.spv");
  CHECK_THAT(errors, ContainsSubstring("input written to " + dumped.string()));
  CHECK(ReadWords(dumped) == words);
  const std::string specText = ReadText(DumpedFile(dir, ".specialization.txt"));
  CHECK(specText == "--specialize 0=16\n--specialize 3=8\n--specialize 4=8\n--specialize 5=16\n--specialize 6=8\n");
  vkDestroyShaderModule(device.handle(), module, nullptr);
  std::filesystem::remove_all(dir);
}

// Finding 26: a driver error from vkEnumerateDeviceExtensionProperties became
// VK_SUCCESS with a list holding only the layer's extension.
TEST_CASE("review 26: the driver's error from vkEnumerateDeviceExtensionProperties comes back", "[layer][review][malformed]") {
  ScopedEnv path = FakeDriverOnPath();
  InstanceOptions options;
  options.layersBelow = {kFakeDriverLayer};
  Instance instance(options);
  REQUIRE(instance.ok());
  uint32_t count = 0;
  REQUIRE(vkEnumerateDeviceExtensionProperties(instance.physicalDevice(), nullptr, &count, nullptr) == VK_SUCCESS);
  REQUIRE(count > 1);
  ScopedEnv armed("FAKE_DRIVER_FAIL", "EnumerateDeviceExtensionProperties:1:" + std::to_string(VK_ERROR_OUT_OF_HOST_MEMORY));
  count = 0;
  CHECK(vkEnumerateDeviceExtensionProperties(instance.physicalDevice(), nullptr, &count, nullptr) == VK_ERROR_OUT_OF_HOST_MEMORY);
}
