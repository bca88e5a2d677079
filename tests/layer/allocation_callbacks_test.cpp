// The application's VkAllocationCallbacks on the paths where the layer lowers code:
// the allocator given to vkCreateShaderModule, vkCreateComputePipelines and
// vkCreateShadersEXT must reach the driver with the lowered code, so the driver's
// allocations for the app's objects go through it and the app's destroy calls free
// them there; the layer's own temporary modules (pipeline-time lowering) must not mix
// allocators with them and must not leak (the fake driver layer counts driver objects).
#include <catch2/catch_test_macros.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "../layer/fake_driver_faults.h"
#include "layer_test_util.h"
#include "stage_objects.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;

namespace {

// An allocator that counts its calls and knows every block it handed out, so a free
// of a block it never allocated (another allocator's) is seen instead of crashing.
class CountingAllocator {
 public:
  struct Counts {
    long allocations = 0, reallocations = 0, frees = 0, foreignFrees = 0;
    size_t live = 0;
  };

  VkAllocationCallbacks Callbacks() {
    VkAllocationCallbacks callbacks{};
    callbacks.pUserData = this;
    callbacks.pfnAllocation = &Allocate;
    callbacks.pfnReallocation = &Reallocate;
    callbacks.pfnFree = &Free;
    return callbacks;
  }

  Counts counts() {
    std::lock_guard lock(mutex_);
    Counts out = counts_;
    out.live = blocks_.size();
    return out;
  }

 private:
  static CountingAllocator& Self(void* user) { return *static_cast<CountingAllocator*>(user); }

  void* New(size_t size, size_t alignment) {
    alignment = std::max<size_t>(alignment, sizeof(void*));
    void* block = std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
    if (block) blocks_[block] = size;
    return block;
  }
  // Frees `block` if this allocator made it; returns its size (0 for a foreign block).
  size_t Delete(void* block) {
    const auto it = blocks_.find(block);
    if (it == blocks_.end()) {
      ++counts_.foreignFrees;  // leaked rather than freed with the wrong allocator
      return 0;
    }
    const size_t size = it->second;
    blocks_.erase(it);
    std::free(block);
    return size;
  }

  static VKAPI_ATTR void* VKAPI_CALL Allocate(void* user, size_t size, size_t alignment, VkSystemAllocationScope) {
    CountingAllocator& self = Self(user);
    std::lock_guard lock(self.mutex_);
    ++self.counts_.allocations;
    return self.New(size, alignment);
  }
  static VKAPI_ATTR void* VKAPI_CALL Reallocate(void* user, void* original, size_t size, size_t alignment,
                                                VkSystemAllocationScope) {
    CountingAllocator& self = Self(user);
    std::lock_guard lock(self.mutex_);
    ++self.counts_.reallocations;
    if (!original) return self.New(size, alignment);
    const auto it = self.blocks_.find(original);
    if (it == self.blocks_.end()) {
      ++self.counts_.foreignFrees;
      return nullptr;
    }
    if (size == 0) {
      self.Delete(original);
      return nullptr;
    }
    const size_t old = it->second;
    void* block = self.New(size, alignment);
    if (!block) return nullptr;
    std::memcpy(block, original, std::min(old, size));
    self.Delete(original);
    return block;
  }
  static VKAPI_ATTR void VKAPI_CALL Free(void* user, void* block) {
    if (!block) return;
    CountingAllocator& self = Self(user);
    std::lock_guard lock(self.mutex_);
    ++self.counts_.frees;
    self.Delete(block);
  }

  std::mutex mutex_;
  Counts counts_;
  std::unordered_map<void*, size_t> blocks_;
};

long LiveDriverObjects() {
  void* library = dlopen(COOPMAT_FAKE_LAYER_DIR "/libVkLayer_COOPMAT_TEST_fake_driver.so", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(library);
  auto stats = reinterpret_cast<const FakeDriverStatsData* (*)()>(dlsym(library, "FakeDriverStats"));
  REQUIRE(stats);
  const long live = stats()->liveObjects;
  dlclose(library);
  return live;
}

std::vector<uint32_t> LayerShader(const char* file) {
  std::vector<uint32_t> words = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/" + file);
  REQUIRE(!words.empty());
  return words;
}

// Whether one creation path gave every block of the allocator back (and, with
// `called`, used it at all) and left no driver object behind (the layer's temporary
// modules included). Lavapipe allocates modules and shader objects with the app's
// allocator, compute pipelines with the device's.
void CheckBalanced(CountingAllocator& allocator, const CountingAllocator::Counts& before, long liveBefore,
                   bool called = true) {
  const CountingAllocator::Counts after = allocator.counts();
  if (called) CHECK(after.allocations + after.reallocations > before.allocations + before.reallocations);
  CHECK(after.live == before.live);  // every block it gave came back
  CHECK(after.foreignFrees == 0);    // and it was never asked to free another allocator's block
  CHECK(LiveDriverObjects() == liveBefore);
}

}  // namespace

TEST_CASE("the application's allocation callbacks are used and balanced on every lowering path",
          "[layer][paths][allocator]") {
  auto path = FakeDriverOnPath();
  InstanceOptions options = ThroughTheLayer({StringSetting("log_level", "debug"), StringSetting("shader_cache", "false")});
  options.layersBelow = {kFakeDriverLayer};
  Instance instance(options);
  REQUIRE(instance.ok());
  Device device(instance, DeviceOptions{.enableMaintenance5 = true, .enableShaderObject = true});
  REQUIRE(device.ok());
  StageObjects objects(device);
  CountingAllocator allocator;
  const VkAllocationCallbacks callbacks = allocator.Callbacks();
  const SpecTilesSpecialization spec;
  // Lowered per pipeline (its tile sizes are specialization constants), and lowered
  // when the module is created (scatter.comp: fixed sizes).
  const std::vector<uint32_t> specTiles = LayerShader("spec_tiles.spirv1.6.spv");
  const std::vector<uint32_t> scatter = LayerShader("scatter.spirv1.6.spv");
  const VkDevice handle = device.handle();

  SECTION("a module lowered per pipeline, the layer's temporary module in between") {
    const auto before = allocator.counts();
    const long live = LiveDriverObjects();
    VkShaderModule module = objects.CreateModule(specTiles, &callbacks);
    VkPipeline pipeline = VK_NULL_HANDLE;
    REQUIRE(objects.CreatePipeline(module, {}, &spec.info, &callbacks, &pipeline) == VK_SUCCESS);
    CHECK(CountMessages(instance, "pipeline-time lowering") == 1);  // the temporary module's code
    vkDestroyPipeline(handle, pipeline, &callbacks);
    vkDestroyShaderModule(handle, module, &callbacks);
    CheckBalanced(allocator, before, live);
  }
  SECTION("a module lowered when it is created") {
    const auto before = allocator.counts();
    const long live = LiveDriverObjects();
    VkShaderModule module = objects.CreateModule(scatter, &callbacks);
    VkPipeline pipeline = VK_NULL_HANDLE;
    REQUIRE(objects.CreatePipeline(module, {}, nullptr, &callbacks, &pipeline) == VK_SUCCESS);
    vkDestroyPipeline(handle, pipeline, &callbacks);
    vkDestroyShaderModule(handle, module, &callbacks);
    CheckBalanced(allocator, before, live);
  }
  SECTION("SPIR-V chained into the stage") {
    const auto before = allocator.counts();
    const long live = LiveDriverObjects();
    VkPipeline pipeline = VK_NULL_HANDLE;
    REQUIRE(objects.CreatePipeline(VK_NULL_HANDLE, specTiles, &spec.info, &callbacks, &pipeline) == VK_SUCCESS);
    vkDestroyPipeline(handle, pipeline, &callbacks);
    CheckBalanced(allocator, before, live, false);  // no module: only the pipeline's, lavapipe's allocator
  }
  SECTION("a shader object") {
    const auto before = allocator.counts();
    const long live = LiveDriverObjects();
    VkShaderEXT shader = VK_NULL_HANDLE;
    REQUIRE(objects.CreateShader(specTiles, &spec.info, &callbacks, &shader) == VK_SUCCESS);
    objects.DestroyShader(shader, &callbacks);
    CheckBalanced(allocator, before, live);
  }
  CHECK(instance.problems().empty());
}
