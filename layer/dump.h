// dump_dir: what the layer did to a module, as files a user can read.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "coopmat/lower.h"
#include "state.h"

namespace coopmat::layer {

// With dump_dir set, writes into it, named by a hash of the original module:
//   <hash>.original.spv / .original.spvasm     the app's module and its disassembly
//   <hash><variant>.lowered.spv / .lowered.glsl the rewrite and its Vulkan GLSL (SPIRV-Cross)
//   <hash><variant>.txt                        each lowered operation: where, which path and why,
//                                              scratch, rewrite time (or why the lowering failed)
//   <hash><variant>.specialization.txt         the stage's specialization, as coopmat-lower arguments
// `variant` is "" for the module-time lowering and ".pipeline-<key>" for each
// pipeline-time one (one per specialization and subgroup sizes), which also passes
// its `specialization`. `lowered` may be null (nothing was lowered) or failed. Each
// file is written whole and renamed into place, so lowerings of one module on
// several threads never leave a file half-written. Never fails: a file that cannot
// be written or a GLSL that SPIRV-Cross cannot produce is a warning. Returns the
// path of the original module's copy ("" when dump_dir is not set).
std::string DumpLowering(const DeviceData& device, std::span<const uint32_t> original, const LowerResult* lowered,
                         const char* where, const std::string& variant = "",
                         const Specialization* specialization = nullptr);

// A pipeline-time lowering served from a cache (`from`: "the memory cache", "the disk
// cache entry <path>"): when its variant has no explain file in dump_dir yet (an
// earlier run lowered it, or dump_dir was set since), dumps the cached code with an
// explain file that says where it came from; an existing dump of the lowering itself
// is left alone. Returns the variant's explain file ("" when dump_dir is not set).
std::string DumpCachedLowering(const DeviceData& device, std::span<const uint32_t> original,
                               const CachedLowering& cached, const char* where, const std::string& variant,
                               const Specialization& specialization, const std::string& from);

}  // namespace coopmat::layer
