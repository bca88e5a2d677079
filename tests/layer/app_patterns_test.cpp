// How applications commonly make pipelines, beyond one pipeline per call on one
// device (test audit 4b565b7, section 0.6): several create infos in one call with
// one refused by the layer, a VkPipelineCache whose data serves a second device,
// and two devices lowering and running pipelines in turn. Every pipeline created
// runs, and its output is checked.
#include <catch2/catch_test_macros.hpp>

#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "compute.h"
#include "layer_test_util.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;

namespace {

using CreatePipeline = std::function<VkResult(VkDevice, const VkComputePipelineCreateInfo&, VkPipeline*)>;

// spec_scatter.comp's specialization: ROWS x COLS loaded, converted to ROWS x K
// (runs when K == COLS; the layer refuses any other K).
struct Shape {
  uint32_t rows, cols, k;
};

// Runs scatter.comp (lowered when its module is created) or, with a shape,
// spec_scatter.comp (lowered per pipeline); "" when the output equals the input.
std::string RunScatter(const Device& device, const Shape* shape, const CreatePipeline& createPipeline = nullptr) {
  ComputeJob job;
  job.spirv = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + (shape ? "/spec_scatter" : "/scatter") + ".spirv1.6.spv");
  if (job.spirv.empty()) return "shader not found";
  const Shape fixed{8, 8, 8};
  if (shape) job.specialization = {{0, shape->rows}, {1, shape->cols}, {2, shape->k}};
  else shape = &fixed;
  job.createPipeline = createPipeline;
  std::vector<float> input(shape->rows * shape->cols);
  std::iota(input.begin(), input.end(), 1.0f);  // exact in f16 (the conversion's type) up to 2048
  std::vector<Bytes> buffers = {ToBytes(input), ToBytes(std::vector<float>(shape->rows * shape->k, -1.0f))};
  if (const ComputeResult result = RunCompute(device, job, buffers); !result) return result.Describe();
  return FromBytes<float>(buffers[1]) == input ? "" : "the output is not the input";
}

std::string RunScatter(const Device& device, const Shape& shape, const CreatePipeline& createPipeline = nullptr) {
  return RunScatter(device, &shape, createPipeline);
}

CreatePipeline Through(VkPipelineCache cache) {
  return [cache](VkDevice device, const VkComputePipelineCreateInfo& info, VkPipeline* pipeline) {
    return vkCreateComputePipelines(device, cache, 1, &info, nullptr, pipeline);
  };
}

}  // namespace

// Vulkan, "Multiple Pipeline Creation": a failed pipeline gets VK_NULL_HANDLE and the
// others are created, unless it asks for an early return (then none after it is).
// pipeline_time_test.cpp checks the handles; here the pipelines created run.
TEST_CASE("several pipelines in one call with one refused: the others are created and run correctly",
          "[layer][batch]") {
  Instance instance(ThroughTheLayer());
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  const std::vector<Shape> batch = {{8, 8, 8}, {8, 8, 16}, {16, 16, 16}};  // the second is refused
  const VkSpecializationMapEntry entries[] = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}};
  for (const bool earlyReturn : {false, true})
    for (const size_t kept : {size_t{0}, size_t{2}}) {
      if (earlyReturn && kept == 2) continue;  // not created
      INFO("early return " << earlyReturn << ", running pipeline " << kept);
      VkResult callResult = VK_SUCCESS;
      std::vector<bool> created;
      // One call with every shape of the batch; the run keeps pipeline `kept`.
      const CreatePipeline inOneCall = [&](VkDevice dev, const VkComputePipelineCreateInfo& info, VkPipeline* out) {
        std::vector<VkSpecializationInfo> specs(batch.size());
        std::vector<VkComputePipelineCreateInfo> infos(batch.size(), info);
        for (size_t i = 0; i < batch.size(); ++i) {
          specs[i] = {3, entries, sizeof(Shape), &batch[i]};
          infos[i].stage.pSpecializationInfo = &specs[i];
          if (earlyReturn && i == 1) infos[i].flags |= VK_PIPELINE_CREATE_EARLY_RETURN_ON_FAILURE_BIT;
        }
        std::vector<VkPipeline> pipelines(batch.size(), reinterpret_cast<VkPipeline>(uintptr_t{0xdead}));
        callResult = vkCreateComputePipelines(dev, VK_NULL_HANDLE, static_cast<uint32_t>(infos.size()), infos.data(),
                                              nullptr, pipelines.data());
        for (size_t i = 0; i < pipelines.size(); ++i) {
          created.push_back(pipelines[i] != VK_NULL_HANDLE);
          if (i != kept && pipelines[i] != VK_NULL_HANDLE) vkDestroyPipeline(dev, pipelines[i], nullptr);
        }
        *out = pipelines[kept];
        return *out != VK_NULL_HANDLE ? VK_SUCCESS : callResult;
      };
      CHECK(RunScatter(device, batch[kept], inOneCall) == "");
      CHECK(callResult == VK_ERROR_UNKNOWN);
      CHECK(created == (earlyReturn ? std::vector<bool>{true, false, false} : std::vector<bool>{true, false, true}));
    }
  CHECK(AnyMessageContains(instance, "do not match"));
}

// The layer hands the app's VkPipelineCache to the driver with the lowered stage, so
// the driver's cache (and its data, in another device) serves the lowered pipelines
// as it would the app's own. Whether the driver found them in its cache is not
// observable here: lavapipe's creation feedback never sets
// VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT.
TEST_CASE("pipelines through a VkPipelineCache are lowered and run; its data serves a second device",
          "[layer][pipeline-cache]") {
  Instance instance(ThroughTheLayer());
  const std::vector<Shape> shapes = {{8, 8, 8}, {16, 16, 16}};
  auto runAll = [&](const Device& device, VkPipelineCache cache) {
    CHECK(RunScatter(device, nullptr, Through(cache)) == "");  // lowered at module time
    for (const Shape& shape : shapes) {
      INFO(shape.rows << "x" << shape.cols);
      CHECK(RunScatter(device, shape, Through(cache)) == "");  // lowered per pipeline
    }
  };
  std::vector<uint8_t> data;
  {
    Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
    REQUIRE(device.ok());
    VkPipelineCacheCreateInfo cacheInfo{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    VkPipelineCache cache = VK_NULL_HANDLE;
    REQUIRE(vkCreatePipelineCache(device.handle(), &cacheInfo, nullptr, &cache) == VK_SUCCESS);
    runAll(device, cache);
    runAll(device, cache);  // the same pipelines again, from the same cache
    size_t size = 0;
    REQUIRE(vkGetPipelineCacheData(device.handle(), cache, &size, nullptr) == VK_SUCCESS);
    REQUIRE(size >= 16 + VK_UUID_SIZE);  // at least the header
    data.resize(size);
    REQUIRE(vkGetPipelineCacheData(device.handle(), cache, &size, data.data()) == VK_SUCCESS);
    data.resize(size);
    uint32_t headerVersion = 0;
    std::memcpy(&headerVersion, data.data() + 4, 4);
    CHECK(headerVersion == VK_PIPELINE_CACHE_HEADER_VERSION_ONE);
    vkDestroyPipelineCache(device.handle(), cache, nullptr);
  }
  Device second(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(second.ok());
  VkPipelineCacheCreateInfo cacheInfo{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  cacheInfo.initialDataSize = data.size();
  cacheInfo.pInitialData = data.data();
  VkPipelineCache cache = VK_NULL_HANDLE;
  REQUIRE(vkCreatePipelineCache(second.handle(), &cacheInfo, nullptr, &cache) == VK_SUCCESS);
  runAll(second, cache);
  vkDestroyPipelineCache(second.handle(), cache, nullptr);
  CHECK(instance.problems().empty());
}

// Per-device state (lowering options, caches, pending modules) is the device's own.
// The loader of the test environment sees one physical device (VK_DRIVER_FILES
// names lavapipe alone; the AMD and NVK lanes' drivers need a drm-shim preloaded
// into the process), so both devices are lavapipe's.
TEST_CASE("two devices lower and run pipelines in turn; destroying one leaves the other working", "[layer][devices]") {
  Instance instance(ThroughTheLayer());
  auto first = std::make_unique<Device>(instance, DeviceOptions{.enableNvCoopmat2 = true});
  Device second(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(first->ok());
  REQUIRE(second.ok());
  const std::vector<Shape> shapes = {{8, 8, 8}, {16, 16, 16}, {16, 8, 8}};
  for (int round = 0; round < 2; ++round)
    for (const Device* device : {first.get(), &second})
      for (const Shape& shape : shapes) {
        INFO("round " << round << ", device " << (device == &second) << ", " << shape.rows << "x" << shape.cols);
        CHECK(RunScatter(*device, nullptr) == "");
        CHECK(RunScatter(*device, shape) == "");
      }
  // A module the second device keeps across the first one's destruction: the layer
  // still knows it must lower it per pipeline.
  const std::vector<uint32_t> words = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/spec_scatter.spirv1.6.spv");
  VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  moduleInfo.codeSize = words.size() * 4;
  moduleInfo.pCode = words.data();
  VkShaderModule kept = VK_NULL_HANDLE;
  REQUIRE(vkCreateShaderModule(second.handle(), &moduleInfo, nullptr, &kept) == VK_SUCCESS);
  first.reset();
  const CreatePipeline withKeptModule = [&](VkDevice device, const VkComputePipelineCreateInfo& info, VkPipeline* out) {
    VkComputePipelineCreateInfo copy = info;
    copy.stage.module = kept;
    return vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &copy, nullptr, out);
  };
  for (const Shape& shape : {Shape{8, 8, 8}, Shape{16, 16, 16}, Shape{24, 8, 8}}) {
    INFO("after the first device's destruction, " << shape.rows << "x" << shape.cols);
    CHECK(RunScatter(second, nullptr) == "");
    CHECK(RunScatter(second, shape) == "");
    CHECK(RunScatter(second, shape, withKeptModule) == "");
  }
  vkDestroyShaderModule(second.handle(), kept, nullptr);
  // And a device made afterwards.
  Device third(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(third.ok());
  CHECK(RunScatter(third, Shape{16, 16, 16}) == "");
  CHECK(instance.problems().empty());
}
