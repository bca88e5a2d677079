// Readable views of a lowering, for users asking "what did the layer do to my
// shader?": Vulkan GLSL of the lowered module (SPIRV-Cross), the disassembly of
// the original (SPIRV-Tools) and a per-operation explanation. Library
// coopmat_inspect; nothing here is needed to lower a module.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "coopmat/lower.h"

namespace coopmat {

struct TextResult {
  bool ok = false;
  std::string text;   // when ok
  std::string error;  // when !ok: what the producer said
};

// Vulkan GLSL (spirv-cross --vulkan-semantics) of a module. SPIRV-Cross cannot
// express the EXT operations: give it lowered modules.
TextResult ToVulkanGlsl(std::span<const uint32_t> words);

// spirv-dis text with friendly names.
TextResult Disassemble(std::span<const uint32_t> words);

// One line per lowered operation: where it was (function, OpName or id), its path
// (register, or portable and why), the scratch it needs and the rewrite time;
// after a heading naming `where` and a summary of the module.
std::string ExplainLowering(const LowerResult& result, const std::string& where);

}  // namespace coopmat
