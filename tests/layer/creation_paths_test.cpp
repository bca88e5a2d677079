// Every path by which SPIR-V reaches the driver is lowered: a module object, a
// module chained into a pipeline stage, and a shader object. Each runs a GetCoordinate
// scatter whose output must equal its input, on both lowering paths.
#include <catch2/catch_test_macros.hpp>

#include <cstdlib>
#include <numeric>
#include <string>

#include "compute.h"
#include "vk_context.h"

using namespace cmtest;

namespace {

std::vector<float> RunScatter(const Device& device, ShaderPath path, const std::string& spirvFile) {
  ComputeJob job;
  job.path = path;
  job.spirv = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/" + spirvFile);
  REQUIRE(!job.spirv.empty());
  std::vector<float> input(64);
  std::iota(input.begin(), input.end(), 1.0f);
  std::vector<Bytes> buffers = {ToBytes(input), ToBytes(std::vector<float>(64, -1.0f))};
  const ComputeResult result = RunCompute(device, job, buffers);
  INFO(result.Describe());
  REQUIRE(result);
  return FromBytes<float>(buffers[1]);
}

}  // namespace

TEST_CASE("GetCoordinate is lowered on every shader creation path", "[layer][paths]") {
  const char* lowering = std::getenv("VK_COOPMAT_MAINTENANCE1_LOWERING");
  INFO("lowering=" << (lowering ? lowering : "auto"));
  Instance instance;
  Device device(instance, DeviceOptions{.enableMaintenance5 = true, .enableShaderObject = true});
  REQUIRE(device.ok());
  std::vector<float> expected(64);
  std::iota(expected.begin(), expected.end(), 1.0f);
  for (const char* file : {"scatter.spirv1.3.spv", "scatter.spirv1.6.spv"}) {
    INFO(file);
    CHECK(RunScatter(device, ShaderPath::Module, file) == expected);
    CHECK(RunScatter(device, ShaderPath::InlineStage, file) == expected);
    CHECK(RunScatter(device, ShaderPath::ShaderObject, file) == expected);
  }
  CHECK(instance.problems().empty());
}

TEST_CASE("without the layer the driver cannot run the module on any path", "[layer][paths]") {
  // Negative control: lavapipe rejects the EXT capability itself.
  Instance instance(InstanceOptions{.withLayer = false});
  Device device(instance, DeviceOptions{.enableMaintenance1 = false, .enableMaintenance5 = true,
                                        .enableShaderObject = true});
  REQUIRE(device.ok());
  for (ShaderPath path : {ShaderPath::Module, ShaderPath::InlineStage, ShaderPath::ShaderObject}) {
    ComputeJob job;
    job.path = path;
    job.spirv = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/scatter.spirv1.6.spv");
    std::vector<Bytes> buffers = {Bytes(256), Bytes(256)};
    const ComputeResult result = RunCompute(device, job, buffers);
    INFO(result.Describe());
    CHECK(result.result < 0);  // lavapipe says VK_ERROR_UNKNOWN for pipelines, OUT_OF_HOST_MEMORY for shader objects
    CHECK(result.failedCall == (path == ShaderPath::ShaderObject ? "vkCreateShadersEXT" : "vkCreateComputePipelines"));
  }
}
