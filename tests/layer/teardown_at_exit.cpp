// An app that owns its Vulkan objects in a global and destroys them in the global's
// destructor, at exit: a common pattern, and valid (the loader supports it). The
// layer's own state is first touched inside vkCreateInstance, after this global was
// made, so any static of the layer's would be destroyed before the app's teardown.
// Passes when the device's destruction still reaches the layer's device state: the
// layer reports its pipeline-time lowerings there (log level info).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "compute.h"
#include "layer_test_util.h"
#include "vk_context.h"

namespace {

struct GlobalContext {
  std::unique_ptr<cmtest::Instance> instance;
  std::unique_ptr<cmtest::Device> device;

  ~GlobalContext() {
    if (!device) return;  // main failed and said why
    device.reset();
    bool reported = false;
    for (const cmtest::Message& message : instance->messages())
      reported |= message.text.find("pipeline-time lowering on this device: 1 stages") != std::string::npos;
    instance.reset();
    if (!reported) {
      std::fprintf(stderr, "FAIL: vkDestroyDevice at exit did not reach the layer's device state\n");
      std::_Exit(1);
    }
    std::printf("PASS: device and instance destroyed from a static destructor\n");
  }
} context;

}  // namespace

int main() {
  context.instance = std::make_unique<cmtest::Instance>(layertest::ThroughTheLayer({layertest::StringSetting("log_level", "info")}));
  if (!context.instance->ok()) return std::fprintf(stderr, "FAIL: no instance\n"), 1;
  auto device = std::make_unique<cmtest::Device>(*context.instance);
  if (!device->ok()) return std::fprintf(stderr, "FAIL: no device with the extension\n"), 1;

  // One pipeline lowered at pipeline time (its shapes are specialization constants).
  cmtest::ComputeJob job;
  job.spirv = cmtest::ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/spec_scatter.spirv1.6.spv");
  if (job.spirv.empty()) return std::fprintf(stderr, "FAIL: spec_scatter.spirv1.6.spv not found\n"), 1;
  job.specialization = {{0, 8}, {1, 8}, {2, 8}};
  std::vector<cmtest::Bytes> buffers = {cmtest::ToBytes(std::vector<float>(64, 1.0f)),
                                        cmtest::ToBytes(std::vector<float>(64, 0.0f))};
  if (const cmtest::ComputeResult result = cmtest::RunCompute(*device, job, buffers); !result)
    return std::fprintf(stderr, "FAIL: %s\n", result.Describe().c_str()), 1;
  context.device = std::move(device);
  return 0;  // the global's destructor runs after the layer's statics' would
}
