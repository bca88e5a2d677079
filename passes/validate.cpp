// spirv-val as a library call: the layer's `validate` setting and the tests use it.
#include <algorithm>

#include <spirv-tools/libspirv.hpp>

#include "coopmat/lower.h"

namespace coopmat {
namespace {

spv_target_env EnvForVulkan(int minor) {
  switch (minor) {
    case 0: return SPV_ENV_VULKAN_1_0;
    case 1: return SPV_ENV_VULKAN_1_1;
    case 2: return SPV_ENV_VULKAN_1_2;
    case 3: return SPV_ENV_VULKAN_1_3;
    default: return SPV_ENV_VULKAN_1_4;
  }
}

// The oldest Vulkan whose environment accepts a module's SPIR-V version.
int MinorForModule(std::span<const uint32_t> words) {
  if (words.size() < 2) return 4;
  const uint32_t spirvMinor = (words[1] >> 8) & 0xff;
  if (spirvMinor <= 3) return 1;
  if (spirvMinor <= 5) return 2;
  return 3;
}

}  // namespace

std::string ValidateModule(std::span<const uint32_t> words, int vulkanMinor) {
  // An environment older than the module's SPIR-V version would reject it for that
  // alone (an app may ask for Vulkan 1.0 yet use 1.3 modules through extensions).
  const int minor = vulkanMinor < 0 ? MinorForModule(words) : std::max(vulkanMinor, MinorForModule(words));
  const spv_target_env env = EnvForVulkan(minor);
  spvtools::SpirvTools tools(env);
  std::string messages;
  tools.SetMessageConsumer([&messages](spv_message_level_t, const char*, const spv_position_t& position,
                                       const char* message) {
    if (!messages.empty()) messages += "\n";
    // The validator counts instructions in position.index (spirv-val prints it as "line").
    std::string text = message;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    messages += "instruction " + std::to_string(position.index) + ": " + text;
  });
  spvtools::ValidatorOptions options;
  // 4,194,303 ids is the minimum every implementation supports, not a limit of
  // SPIR-V: a module beyond it is the driver's to accept (review finding 20).
  if (words.size() >= 5 && words[3] > 0x3FFFFF) options.SetUniversalLimit(spv_validator_limit_max_id_bound, words[3]);
  if (tools.Validate(words.data(), words.size(), options)) return {};
  return messages.empty() ? std::string("spirv-val rejected the module") : messages;
}

std::string LoweredModuleProblem(std::span<const uint32_t> input, std::span<const uint32_t> lowered, int vulkanMinor) {
  const std::string problem = ValidateModule(lowered, vulkanMinor);
  if (problem.empty()) return problem;
  const std::string inputProblem = ValidateModule(input, vulkanMinor);
  if (!inputProblem.empty()) return "the input module does not validate (nor, then, the lowered one): " + inputProblem;
  return "the lowered module does not validate: " + problem;
}

}  // namespace coopmat
