// Driver faults through the real loader: the fake driver layer (fake_driver_faults.h)
// fails one call of the layout probe or of shader creation, times out a fence, or
// loses the device. The layer must return the right VkResult, leak nothing, and never
// destroy anything the GPU may still be using. [malformed] cases run under ASan/LSan too.
#include <catch2/catch_test_macros.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "../layer/fake_driver_faults.h"
#include "layer_test_util.h"
#include "stage_objects.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;

namespace {

// The fake driver's counters (the loader loaded it; dlopen finds the same copy).
FakeDriverStatsData Stats() {
  void* library = dlopen(COOPMAT_FAKE_LAYER_DIR "/libVkLayer_COOPMAT_TEST_fake_driver.so", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(library);
  auto stats = reinterpret_cast<const FakeDriverStatsData* (*)()>(dlsym(library, "FakeDriverStats"));
  REQUIRE(stats);
  const FakeDriverStatsData copy = *stats();
  dlclose(library);
  return copy;
}

// A fresh cache for every device, so the probe runs every time.
std::string FreshCache(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() / ("coopmat-fault-" + std::to_string(getpid()) + "-" + tag);
  std::filesystem::remove_all(dir);
  return dir.string();
}

struct Outcome {
  VkResult result;
  FakeDriverStatsData before, after;  // after: once the device (if any) is destroyed
};

// Creates (and destroys) one device with `fault` armed during vkCreateDevice.
Outcome CreateWithFault(const Instance& instance, const std::string& fault) {
  const std::string cache = FreshCache("device");
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache);
  Outcome outcome{};
  outcome.before = Stats();
  {
    ScopedEnv armed("FAKE_DRIVER_FAIL", fault);
    Device device(instance);
    outcome.result = device.createResult();
  }
  outcome.after = Stats();
  std::filesystem::remove_all(cache);
  return outcome;
}

void CheckClean(const Outcome& o) {
  CHECK(o.after.liveObjects == o.before.liveObjects);
  CHECK(o.after.liveDevices == o.before.liveDevices);
  CHECK(o.after.destroyedInFlight == o.before.destroyedInFlight);
}

InstanceOptions WithFakeDriver() {
  InstanceOptions options;
  options.layersBelow = {"VK_LAYER_COOPMAT_TEST_fake_driver"};
  return options;
}

}  // namespace

TEST_CASE("faults: every call of the layout probe may fail; the device is still created and nothing leaks",
          "[layer][faults][malformed]") {
  auto path = FakeDriverOnPath();
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");  // lowering=portable runs no probe
  Instance instance(WithFakeDriver());
  REQUIRE(instance.ok());
  const Outcome clean = CreateWithFault(instance, "");
  REQUIRE(clean.result == VK_SUCCESS);
  CheckClean(clean);
  for (const char* call : {"CreateBuffer", "AllocateMemory", "MapMemory", "BindBufferMemory", "CreateShaderModule",
                           "CreateDescriptorSetLayout", "CreatePipelineLayout", "CreateComputePipelines",
                           "CreateDescriptorPool", "AllocateDescriptorSets", "CreateCommandPool", "AllocateCommandBuffers",
                           "BeginCommandBuffer", "EndCommandBuffer", "CreateFence", "QueueSubmit"}) {
    // Every call the probe makes of it, in turn, until the n-th is past its last one
    // (test audit 0.10: only the first or second used to fail), with either
    // out-of-memory result.
    int calls = 0;
    for (int n = 1;; ++n) {
      const VkResult error = n % 2 ? VK_ERROR_OUT_OF_HOST_MEMORY : VK_ERROR_OUT_OF_DEVICE_MEMORY;
      const std::string fault = std::string(call) + ":" + std::to_string(n) + ":" + std::to_string(error);
      INFO(fault);
      const Outcome o = CreateWithFault(instance, fault);
      CHECK(o.result == VK_SUCCESS);  // a failed probe only costs the register path
      CheckClean(o);
      if (o.after.faultsInjected == o.before.faultsInjected) break;  // there is no n-th call
      calls = n;
      REQUIRE(n < 200);
    }
    INFO(call);
    CHECK(calls >= 1);  // the probe does make that call
  }
}

TEST_CASE("faults: a probe fence that times out is waited for before anything is destroyed", "[layer][faults][malformed]") {
  auto path = FakeDriverOnPath();
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");  // lowering=portable runs no probe
  Instance instance(WithFakeDriver());
  REQUIRE(instance.ok());
  const Outcome o = CreateWithFault(instance, "WaitForFences:1:" + std::to_string(VK_TIMEOUT));
  CHECK(o.after.faultsInjected == o.before.faultsInjected + 1);
  CHECK(o.result == VK_SUCCESS);
  CheckClean(o);
}

TEST_CASE("faults: a device lost while probing fails vkCreateDevice and destroys the device", "[layer][faults][malformed]") {
  auto path = FakeDriverOnPath();
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");  // lowering=portable runs no probe
  Instance instance(WithFakeDriver());
  REQUIRE(instance.ok());
  for (const std::string& fault : {"QueueSubmit:1:" + std::to_string(VK_ERROR_DEVICE_LOST),
                                  "WaitForFences:1:" + std::to_string(VK_ERROR_DEVICE_LOST)}) {
    INFO(fault);
    const Outcome o = CreateWithFault(instance, fault);
    CHECK(o.result == VK_ERROR_DEVICE_LOST);
    CheckClean(o);
  }
}

TEST_CASE("faults: the driver's own vkCreateDevice error comes back unchanged", "[layer][faults][malformed]") {
  auto path = FakeDriverOnPath();
  Instance instance(WithFakeDriver());
  REQUIRE(instance.ok());
  for (VkResult error : {VK_ERROR_OUT_OF_HOST_MEMORY, VK_ERROR_OUT_OF_DEVICE_MEMORY, VK_ERROR_DEVICE_LOST}) {
    const Outcome o = CreateWithFault(instance, "CreateDevice:1:" + std::to_string(error));
    CHECK(o.result == error);
    CheckClean(o);
  }
}

TEST_CASE("faults: a failed driver vkCreateShaderModule returns its result for lowered modules too",
          "[layer][faults][malformed]") {
  auto path = FakeDriverOnPath();
  Instance instance(WithFakeDriver());
  REQUIRE(instance.ok());
  const FakeDriverStatsData before = Stats();
  {
    Device device(instance);
    REQUIRE(device.ok());
    const std::vector<uint32_t> words = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/get_coordinate.spirv1.6.spv");
    REQUIRE(!words.empty());
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = words.size() * 4;
    info.pCode = words.data();
    for (VkResult error : {VK_ERROR_OUT_OF_HOST_MEMORY, VK_ERROR_OUT_OF_DEVICE_MEMORY}) {
      ScopedEnv armed("FAKE_DRIVER_FAIL", "CreateShaderModule:1:" + std::to_string(error));
      VkShaderModule module = VK_NULL_HANDLE;
      const size_t said = CountMessages(instance, "vkCreateShaderModule: the driver failed (");
      CHECK(vkCreateShaderModule(device.handle(), &info, nullptr, &module) == error);
      CHECK(module == VK_NULL_HANDLE);
      CHECK(CountMessages(instance, "vkCreateShaderModule: the driver failed (") == said + 1);  // the code was the layer's
    }
    VkShaderModule module = VK_NULL_HANDLE;
    REQUIRE(vkCreateShaderModule(device.handle(), &info, nullptr, &module) == VK_SUCCESS);
    vkDestroyShaderModule(device.handle(), module, nullptr);
  }
  const FakeDriverStatsData after = Stats();
  CHECK(after.liveObjects == before.liveObjects);
  CHECK(after.liveDevices == before.liveDevices);
}

namespace {
// Errors a driver's pipeline or shader creation may return.
constexpr VkResult kCreationErrors[] = {VK_ERROR_OUT_OF_HOST_MEMORY, VK_ERROR_OUT_OF_DEVICE_MEMORY};

std::vector<uint32_t> SpecTilesWords() {
  std::vector<uint32_t> words = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/spec_tiles.spirv1.6.spv");
  REQUIRE(!words.empty());
  return words;
}

// `fault` armed for one vkCreateComputePipelines of spec_tiles (lowered per pipeline)
// from a module (null: the SPIR-V chained into the stage). Returns the result and
// whether the handle came back null. The app's module is created before the fault is
// armed, which also restarts the fake driver's call counts.
std::pair<VkResult, bool> PipelineWithFault(const StageObjects& objects, bool fromModule, const std::string& fault) {
  const std::vector<uint32_t> words = SpecTilesWords();
  const SpecTilesSpecialization spec;
  VkShaderModule module = objects.CreateModule(words, nullptr);
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkResult result;
  {
    ScopedEnv armed("FAKE_DRIVER_FAIL", fault);
    result = objects.CreatePipeline(fromModule ? module : VK_NULL_HANDLE, words, &spec.info, nullptr, &pipeline);
  }
  const bool null = pipeline == VK_NULL_HANDLE;
  if (!null) vkDestroyPipeline(objects.device().handle(), pipeline, nullptr);
  vkDestroyShaderModule(objects.device().handle(), module, nullptr);
  return {result, null};
}

// The layer's warning when the driver fails on code it lowered.
constexpr const char* kDriverFailed = "the driver failed (";

InstanceOptions PipelineFaultInstance() {
  InstanceOptions options = ThroughTheLayer({StringSetting("log_level", "debug"), StringSetting("shader_cache", "false")});
  options.layersBelow = {kFakeDriverLayer};
  return options;
}
}  // namespace

// Test audit 3.4: the driver fails pipeline creation after the layer lowered the stage
// (per pipeline, through its temporary module, or from the SPIR-V chained into the
// stage): the app gets the driver's error and a null handle, the temporary module is
// destroyed, and the next creation works.
TEST_CASE("faults: a driver failing vkCreateComputePipelines after the layer lowered returns its error",
          "[layer][faults][malformed]") {
  auto path = FakeDriverOnPath();
  Instance instance(PipelineFaultInstance());
  REQUIRE(instance.ok());
  const FakeDriverStatsData before = Stats();
  {
    Device device(instance, DeviceOptions{.enableMaintenance5 = true});
    REQUIRE(device.ok());
    StageObjects objects(device);
    for (bool fromModule : {true, false})
      for (VkResult error : kCreationErrors) {
        INFO((fromModule ? "module" : "inline stage") << ", error " << error);
        const size_t lowered = CountMessages(instance, "pipeline-time lowering");
        const size_t said = CountMessages(instance, kDriverFailed);
        const auto [result, null] = PipelineWithFault(objects, fromModule, "CreateComputePipelines:1:" + std::to_string(error));
        CHECK(result == error);
        CHECK(null);
        CHECK(CountMessages(instance, "pipeline-time lowering") == lowered + 1);  // it did lower first
        CHECK(CountMessages(instance, kDriverFailed) == said + 1);  // and says the failed code was its own
      }
    // The layer's own temporary module fails (the first vkCreateShaderModule after arming).
    for (VkResult error : kCreationErrors) {
      INFO("temporary module, error " << error);
      const size_t said = CountMessages(instance, kDriverFailed);
      const auto [result, null] = PipelineWithFault(objects, true, "CreateShaderModule:1:" + std::to_string(error));
      CHECK(result == error);
      CHECK(null);
      CHECK(CountMessages(instance, kDriverFailed) == said + 1);
    }
    const size_t said = CountMessages(instance, kDriverFailed);
    for (bool fromModule : {true, false}) {
      const auto [result, null] = PipelineWithFault(objects, fromModule, "");
      CHECK(result == VK_SUCCESS);
      CHECK(!null);
    }
    CHECK(CountMessages(instance, kDriverFailed) == said);  // nothing said when the driver succeeds
  }
  const FakeDriverStatsData after = Stats();
  CHECK(after.faultsInjected == before.faultsInjected + 6);
  CHECK(after.liveObjects == before.liveObjects);
  CHECK(after.liveDevices == before.liveDevices);
}

TEST_CASE("faults: a driver failing vkCreateShadersEXT after the layer lowered returns its error",
          "[layer][faults][malformed]") {
  auto path = FakeDriverOnPath();
  Instance instance(PipelineFaultInstance());
  REQUIRE(instance.ok());
  const FakeDriverStatsData before = Stats();
  {
    Device device(instance, DeviceOptions{.enableShaderObject = true});
    REQUIRE(device.ok());
    StageObjects objects(device);
    const std::vector<uint32_t> words = SpecTilesWords();
    const SpecTilesSpecialization spec;
    for (VkResult error : kCreationErrors) {
      INFO("error " << error);
      VkShaderEXT shader = VK_NULL_HANDLE;
      VkResult result;
      {
        ScopedEnv armed("FAKE_DRIVER_FAIL", "CreateShadersEXT:1:" + std::to_string(error));
        result = objects.CreateShader(words, &spec.info, nullptr, &shader);
      }
      CHECK(result == error);
      CHECK(shader == VK_NULL_HANDLE);
      if (shader) objects.DestroyShader(shader, nullptr);
    }
    CHECK(CountMessages(instance, "pipeline-time lowering") >= 1);  // lowered before the driver failed
    CHECK(CountMessages(instance, kDriverFailed) == 2);  // and said so for each failure
    VkShaderEXT shader = VK_NULL_HANDLE;
    CHECK(objects.CreateShader(words, &spec.info, nullptr, &shader) == VK_SUCCESS);
    if (shader) objects.DestroyShader(shader, nullptr);
  }
  const FakeDriverStatsData after = Stats();
  CHECK(after.faultsInjected == before.faultsInjected + 2);
  CHECK(after.liveObjects == before.liveObjects);
  CHECK(after.liveDevices == before.liveDevices);
}

// Review finding 8: anything that throws after the driver created the device (here a
// driver that reports 2^31-1 KHR entries) must not leak the driver's device.
TEST_CASE("review 8: a failure after the driver created the device destroys it", "[layer][faults]") {
  auto path = FakeDriverOnPath();
  ScopedEnv huge("FAKE_DRIVER_KHR_HUGE", "1");
  Instance instance(WithFakeDriver());
  REQUIRE(instance.ok());
  const Outcome o = CreateWithFault(instance, "");
  CHECK(o.result == VK_ERROR_OUT_OF_HOST_MEMORY);
  CheckClean(o);
}

// Allocation failure on demand, for the layer's code after a driver call (review dbb465e
// finding 7). This executable's malloc is the one the layer's operator new calls (an
// executable's definition comes first in symbol lookup, the layer's static C++ runtime
// included), so while this thread has it armed every allocation fails, as when memory
// runs out. Not with a sanitizer, which brings its own malloc.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COOPMAT_TEST_MALLOC_FAILS 0
#else
#define COOPMAT_TEST_MALLOC_FAILS 1
extern "C" void* __libc_malloc(size_t size);
namespace {
thread_local bool tAllocationsFail = false;
thread_local size_t tAllocationsFailed = 0;  // the proof that the failure was injected at all
}  // namespace
extern "C" void* malloc(size_t size) {
  if (!tAllocationsFail) return __libc_malloc(size);
  ++tAllocationsFailed;
  return nullptr;
}
#endif

namespace {
#if COOPMAT_TEST_MALLOC_FAILS
void FailAllocations() { tAllocationsFail = true; }

// Arms FailAllocations to run when the fake driver has made all but the last object of
// a ":last" fault; disarms both when it goes.
class AllocationsFailAfterTheDriver {
 public:
  AllocationsFailAfterTheDriver() { REQUIRE(SetHook(&FailAllocations)); }
  ~AllocationsFailAfterTheDriver() {
    tAllocationsFail = false;
    SetHook(nullptr);
  }
  AllocationsFailAfterTheDriver(const AllocationsFailAfterTheDriver&) = delete;
  AllocationsFailAfterTheDriver& operator=(const AllocationsFailAfterTheDriver&) = delete;

 private:
  static bool SetHook(void (*hook)()) {
    void* library = dlopen(COOPMAT_FAKE_LAYER_DIR "/libVkLayer_COOPMAT_TEST_fake_driver.so", RTLD_NOW | RTLD_NOLOAD);
    if (!library) return false;
    auto set = reinterpret_cast<void (*)(void (*)())>(dlsym(library, "FakeDriverAfterPartialFault"));
    if (set) set(hook);
    dlclose(library);
    return set != nullptr;
  }
};
#endif
}  // namespace

// Review dbb465e finding 7: the driver created the first pipeline of a lowered batch and
// failed the second; the layer then runs out of memory for its warning. Before, the Guard turned the
// first pipeline's handle into NULL (the driver's object leaked) and the app got
// VK_ERROR_OUT_OF_HOST_MEMORY instead of the driver's error.
TEST_CASE("review dbb465e 7: an exception after the driver created pipelines leaves the app their handles",
          "[layer][faults]") {
#if !COOPMAT_TEST_MALLOC_FAILS
  SKIP("a sanitizer's malloc cannot be made to fail here");
#else
  auto path = FakeDriverOnPath();
  Instance instance(PipelineFaultInstance());
  REQUIRE(instance.ok());
  const FakeDriverStatsData before = Stats();
  {
    Device device(instance, DeviceOptions{.enableMaintenance5 = true});
    REQUIRE(device.ok());
    StageObjects objects(device);
    const std::vector<uint32_t> words = SpecTilesWords();
    const SpecTilesSpecialization spec;
    const VkShaderModuleCreateInfo code = StageObjects::ModuleInfo(words);
    const VkComputePipelineCreateInfo lowered = objects.PipelineInfo(VK_NULL_HANDLE, &code, &spec.info);
    const VkComputePipelineCreateInfo infos[2] = {lowered, lowered};
    VkPipeline pipelines[2] = {};
    VkResult result;
    const size_t messagesBefore = instance.messages().size();
    tAllocationsFailed = 0;
    {
      ScopedEnv armed("FAKE_DRIVER_FAIL", "CreateComputePipelines:1:" + std::to_string(VK_ERROR_OUT_OF_DEVICE_MEMORY) + ":last");
      const AllocationsFailAfterTheDriver failing;  // disarmed as it goes, right after the call
      result = vkCreateComputePipelines(device.handle(), VK_NULL_HANDLE, 2, infos, nullptr, pipelines);
    }
    // The layer did run out of memory after the driver (else this is review 8's plain
    // driver failure, with the same results): an allocation failed, and the layer's
    // warning about the driver's failure, which needs memory, never came.
    REQUIRE(tAllocationsFailed > 0);
    for (size_t i = messagesBefore; i < instance.messages().size(); ++i)
      CHECK(instance.messages()[i].text.find("the driver failed") == std::string::npos);
    CHECK(result == VK_ERROR_OUT_OF_DEVICE_MEMORY);  // the driver's error
    CHECK(pipelines[0] != VK_NULL_HANDLE);            // what the driver made, for the app to destroy
    CHECK(pipelines[1] == VK_NULL_HANDLE);
    for (VkPipeline pipeline : pipelines) vkDestroyPipeline(device.handle(), pipeline, nullptr);
  }
  const FakeDriverStatsData after = Stats();
  CHECK(after.faultsInjected == before.faultsInjected + 1);
  CHECK(after.liveObjects == before.liveObjects);
  CHECK(after.liveDevices == before.liveDevices);
#endif
}
