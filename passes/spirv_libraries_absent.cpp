// A build without SPIRV-Tools and SPIRV-Cross (COOPMAT_SPIRV_LIBRARIES=OFF: the
// Windows cross build, docs/windows.md): lowering works; spirv-val, the disassembly
// and the GLSL view answer that this build cannot give them.
#include "coopmat/inspect.h"
#include "coopmat/lower.h"

namespace coopmat {

std::string ValidateModule(std::span<const uint32_t>, int) {
  return "this build has no spirv-val (built without SPIRV-Tools)";
}

std::string LoweredModuleProblem(std::span<const uint32_t>, std::span<const uint32_t> lowered, int vulkanMinor) {
  return "the lowered module does not validate: " + ValidateModule(lowered, vulkanMinor);
}

TextResult ToVulkanGlsl(std::span<const uint32_t>) {
  return {.ok = false, .text = {}, .error = "this build has no GLSL view (built without SPIRV-Cross)"};
}

TextResult Disassemble(std::span<const uint32_t>) {
  return {.ok = false, .text = {}, .error = "this build has no disassembler (built without SPIRV-Tools)"};
}

}  // namespace coopmat
