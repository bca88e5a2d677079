#include "freeze.h"

#include <unordered_map>

#include <spirv-tools/optimizer.hpp>

namespace coopmat::virt {

std::vector<uint32_t> FreezeWithSpirvTools(std::span<const uint32_t> words, const Specialization& specialization,
                                           std::string& error) {
  // Each value as the words of its bit pattern (VkSpecializationInfo's bytes, little-endian).
  std::unordered_map<uint32_t, std::vector<uint32_t>> values;
  for (const auto& [id, bytes] : specialization.values) {
    std::vector<uint32_t> pattern((bytes.size() + 3) / 4, 0);
    for (size_t i = 0; i < bytes.size(); ++i) pattern[i / 4] |= uint32_t(bytes[i]) << (8 * (i % 4));
    values[id] = std::move(pattern);
  }
  spvtools::Optimizer optimizer(SPV_ENV_UNIVERSAL_1_6);
  optimizer.SetMessageConsumer([&](spv_message_level_t level, const char*, const spv_position_t&, const char* message) {
    if (level <= SPV_MSG_ERROR) error += std::string(error.empty() ? "" : "; ") + message;
  });
  optimizer.RegisterPass(spvtools::CreateSetSpecConstantDefaultValuePass(values))
      .RegisterPass(spvtools::CreateFreezeSpecConstantValuePass())
      .RegisterPass(spvtools::CreateFoldSpecConstantOpAndCompositePass());
  std::vector<uint32_t> frozen;
  spvtools::OptimizerOptions options;
  options.set_run_validator(false);  // the input was validated already
  if (!optimizer.Run(words.data(), words.size(), &frozen, options)) {
    if (error.empty()) error = "SPIRV-Tools could not freeze the specialization";
    return {};
  }
  return frozen;
}

}  // namespace coopmat::virt
