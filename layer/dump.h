// dump_dir: what the layer did to a module, as files a user can read.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "coopmat/lower.h"
#include "state.h"

namespace coopmat::layer {

// With dump_dir set, writes into it, named by a hash of the original module:
//   <hash>.original.spv / .original.spvasm   the app's module and its disassembly
//   <hash>.lowered.spv / .lowered.glsl       the rewrite and its Vulkan GLSL (SPIRV-Cross)
//   <hash>.txt                               each lowered operation: where, which path and why,
//                                            scratch, rewrite time (or why the lowering failed)
// `lowered` may be null (nothing was lowered) or failed. `variant` goes between the
// hash and the suffix of the lowering's files (a pipeline-time lowering of the module,
// one per specialization). Never fails: a file that cannot be written or a GLSL that
// SPIRV-Cross cannot produce is a warning. Returns the path of the original module's
// copy ("" when dump_dir is not set).
std::string DumpLowering(const DeviceData& device, std::span<const uint32_t> original, const LowerResult* lowered,
                         const char* where, const std::string& variant = "");

}  // namespace coopmat::layer
