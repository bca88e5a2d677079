// The layer under concurrent use, as a multi-threaded engine would drive it: 64
// threads create and destroy shader modules (plain, EXT, and with
// specialization-constant tile sizes), compute pipelines (the pipeline-time step and
// its cache) and shader objects on one device, while two more threads create and
// destroy devices on the same physical device starting from an empty layout cache
// (both probe at once). Runs through the real loader with the validation layer
// above, then below the layer; scripts/test also runs it in a ThreadSanitizer build
// (build-tsan), where any data race fails the run.
#include <catch2/catch_test_macros.hpp>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "layer_test_util.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;

namespace {

constexpr int kWorkers = 64;
constexpr int kRoundsPerWorker = 2;
constexpr int kDeviceThreads = 2;
constexpr int kDevicesPerThread = 2;

std::vector<uint32_t> LayerShader(const std::string& name) {
  return ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/" + name);
}

// The descriptor layout of spec_tiles.comp (7 storage buffers).
struct SpecTilesLayout {
  explicit SpecTilesLayout(VkDevice d) : device(d) {
    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (uint32_t i = 0; i < 7; ++i) bindings.push_back({i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
    VkDescriptorSetLayoutCreateInfo setInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    setInfo.bindingCount = static_cast<uint32_t>(bindings.size());
    setInfo.pBindings = bindings.data();
    ok = vkCreateDescriptorSetLayout(device, &setInfo, nullptr, &setLayout) == VK_SUCCESS;
    VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layoutInfo.setLayoutCount = 1;
    layoutInfo.pSetLayouts = &setLayout;
    ok = ok && vkCreatePipelineLayout(device, &layoutInfo, nullptr, &pipelineLayout) == VK_SUCCESS;
  }
  ~SpecTilesLayout() {
    vkDestroyPipelineLayout(device, pipelineLayout, nullptr);
    vkDestroyDescriptorSetLayout(device, setLayout, nullptr);
  }
  VkDevice device;
  bool ok = false;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout = VK_NULL_HANDLE;
};

// Tile sizes as specialization constants (SpecIds 0, 3-6 of spec_tiles.comp).
struct TileSpecialization {
  explicit TileSpecialization(uint32_t tile) : values{16, tile, tile, tile, 8} {}
  uint32_t values[5];
  VkSpecializationMapEntry entries[5] = {{0, 0, 4}, {3, 4, 4}, {4, 8, 4}, {5, 12, 4}, {6, 16, 4}};
  VkSpecializationInfo info{5, entries, sizeof(values), values};
};

bool CreateAndDestroyModule(VkDevice device, const std::vector<uint32_t>& words, VkShaderModule* kept = nullptr) {
  VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  info.codeSize = words.size() * 4;
  info.pCode = words.data();
  VkShaderModule module = VK_NULL_HANDLE;
  if (vkCreateShaderModule(device, &info, nullptr, &module) != VK_SUCCESS) return false;
  if (kept) *kept = module;
  else vkDestroyShaderModule(device, module, nullptr);
  return true;
}

bool CreateAndDestroyPipeline(VkDevice device, VkShaderModule module, VkPipelineLayout layout, uint32_t tile) {
  TileSpecialization spec(tile);
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = &spec.info;
  info.layout = layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  if (vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline) != VK_SUCCESS) return false;
  vkDestroyPipeline(device, pipeline, nullptr);
  return true;
}

bool CreateAndDestroyShaderObject(VkDevice device, const std::vector<uint32_t>& words, VkDescriptorSetLayout setLayout, uint32_t tile) {
  auto create = reinterpret_cast<PFN_vkCreateShadersEXT>(vkGetDeviceProcAddr(device, "vkCreateShadersEXT"));
  auto destroy = reinterpret_cast<PFN_vkDestroyShaderEXT>(vkGetDeviceProcAddr(device, "vkDestroyShaderEXT"));
  if (!create || !destroy) return false;
  TileSpecialization spec(tile);
  VkShaderCreateInfoEXT info{VK_STRUCTURE_TYPE_SHADER_CREATE_INFO_EXT};
  info.flags = VK_SHADER_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
  info.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.codeType = VK_SHADER_CODE_TYPE_SPIRV_EXT;
  info.codeSize = words.size() * 4;
  info.pCode = words.data();
  info.pName = "main";
  info.setLayoutCount = 1;
  info.pSetLayouts = &setLayout;
  info.pSpecializationInfo = &spec.info;
  VkShaderEXT shader = VK_NULL_HANDLE;
  if (create(device, 1, &info, nullptr, &shader) != VK_SUCCESS) return false;
  destroy(device, shader, nullptr);
  return true;
}

}  // namespace

TEST_CASE("64 threads create modules, pipelines and shader objects while two threads create and destroy devices",
          "[layer][concurrency]") {
  const std::vector<uint32_t> plain = LayerShader("plain_khr.spirv1.6.spv");
  const std::vector<uint32_t> ext = LayerShader("get_coordinate.spirv1.6.spv");
  const std::vector<uint32_t> tiles = LayerShader("spec_tiles.spirv1.6.spv");
  REQUIRE_FALSE(plain.empty());
  REQUIRE_FALSE(ext.empty());
  REQUIRE_FALSE(tiles.empty());
  const std::filesystem::path cache = TempPath("cache-concurrency");
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());  // set before any thread starts
  const DeviceOptions deviceOptions{.enableNvCoopmat2 = true, .enableShaderObject = true};
  for (Validation where : {Validation::AboveLayer, Validation::BelowLayer}) {
    INFO((where == Validation::AboveLayer ? "validation above the layer" : "validation below the layer"));
    std::filesystem::remove_all(cache);  // an empty layout cache: the first devices probe at once
    std::filesystem::create_directories(cache);
    Instance instance(InstanceOptions{.validation = where});
    REQUIRE(instance.ok());
    std::atomic<int> deviceFailures{0}, moduleFailures{0}, pipelineFailures{0}, shaderObjectFailures{0};
    std::vector<std::thread> deviceThreads;
    for (int t = 0; t < kDeviceThreads; ++t)
      deviceThreads.emplace_back([&] {
        for (int i = 0; i < kDevicesPerThread; ++i) {
          Device device(instance, deviceOptions);
          if (!device.ok()) ++deviceFailures;
        }
      });
    {
      Device device(instance, deviceOptions);
      REQUIRE(device.ok());
      SpecTilesLayout layout(device.handle());
      REQUIRE(layout.ok);
      std::vector<std::thread> workers;
      for (int t = 0; t < kWorkers; ++t)
        workers.emplace_back([&, t] {
          const VkDevice d = device.handle();
          const uint32_t tile = t % 2 ? 16 : 8;
          for (int round = 0; round < kRoundsPerWorker; ++round) {
            if (!CreateAndDestroyModule(d, plain) || !CreateAndDestroyModule(d, ext)) ++moduleFailures;
            VkShaderModule module = VK_NULL_HANDLE;
            if (!CreateAndDestroyModule(d, tiles, &module)) {
              ++moduleFailures;
              continue;
            }
            if (!CreateAndDestroyPipeline(d, module, layout.pipelineLayout, tile)) ++pipelineFailures;
            vkDestroyShaderModule(d, module, nullptr);
            if ((t + round) % 4 == 0 && !CreateAndDestroyShaderObject(d, tiles, layout.setLayout, tile)) ++shaderObjectFailures;
          }
        });
      for (auto& worker : workers) worker.join();
    }
    for (auto& thread : deviceThreads) thread.join();
    CHECK(deviceFailures == 0);
    CHECK(moduleFailures == 0);
    CHECK(pipelineFailures == 0);
    CHECK(shaderObjectFailures == 0);
    const std::vector<std::string> problems = instance.problems();
    for (const std::string& problem : problems) UNSCOPED_INFO(problem);
    CHECK(problems.empty());
  }
  std::filesystem::remove_all(cache);
}
