// Shader interception: every path by which SPIR-V reaches the driver. A module
// that does not declare the EXT capabilities goes down untouched (no copy).
//
// Two moments of lowering (docs/design.md, "When the rewrite happens"):
// - module time (vkCreateShaderModule): the module is lowered once, for every
//   subgroup size the device may run it at. When its matrix shapes or Uses are
//   specialization constants, that lowering only makes the module handle valid
//   (identifiers, names), and the original is kept;
// - pipeline time (pipelines, shader objects, inline module code): such a module,
//   and inline code, is lowered with the stage's specialization frozen and the
//   subgroup sizes the stage can run at, once per key (lowering_cache.h), and the
//   driver gets a module made from that code for this call.
#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <spirv/unified1/spirv.hpp11>

#include "coopmat/lower.h"
#include "dump.h"
#include "entry_points.h"
#include "messages.h"
#include "pnext_chain.h"
#include "state.h"

namespace coopmat::layer {
namespace {

std::string DumpNote(const std::string& path) { return path.empty() ? "" : " (input written to " + path + ")"; }

// Warns when a module uses an operation whose feature the app did not enable
// (the layer still lowers it: the result is defined either way). Once per device
// and feature: an app that forgot the feature struct compiles many modules.
void CheckEnabledFeatures(const DeviceData& device, const ExtUsage& usage, const char* where) {
  const auto& f = device.enabledFeatures;
  auto warn = [&](uint32_t bit, const char* feature) {
    if (device.warnedFeatures.fetch_or(bit) & bit) return;
    Log(device.instance, LogLevel::Warning,
        std::string(where) + ": module uses an operation whose feature " + feature +
            " was not enabled (said once per device)");
  };
  if (usage.conversions && !f.cooperativeMatrixConversions) warn(1u << 0, "cooperativeMatrixConversions");
  if (usage.getCoordinate && !f.cooperativeMatrixGetCoordinate) warn(1u << 1, "cooperativeMatrixGetCoordinate");
  if (usage.reductions && !f.cooperativeMatrixReductions) warn(1u << 2, "cooperativeMatrixReductions");
  if (usage.perElement && !f.cooperativeMatrixPerElementOperations) warn(1u << 3, "cooperativeMatrixPerElementOperations");
}

// Whether a blob the scan could not read might still declare one of the EXT
// capabilities: any `OpCapability <EXT capability>` word pair anywhere in it.
bool MayDeclareExtCapability(std::span<const uint32_t> words) {
  constexpr uint32_t kCapabilityWord = (2u << 16) | static_cast<uint32_t>(spv::Op::OpCapability);
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] != kCapabilityWord) continue;
    switch (static_cast<spv::Capability>(words[i + 1])) {
      case spv::Capability::CooperativeMatrixConversionsEXT:
      case spv::Capability::CooperativeMatrixReductionsEXT:
      case spv::Capability::CooperativeMatrixPerElementOperationsEXT:
      case spv::Capability::CooperativeMatrixGetCoordinateEXT: return true;
      default: break;
    }
  }
  return false;
}

// Checks that a blob is a SPIR-V module the layer must lower. result != VK_SUCCESS:
// do not call down; needsLowering false: hand the app's code down as it is.
struct Scanned {
  VkResult result = VK_SUCCESS;
  bool needsLowering = false;
  std::span<const uint32_t> words;
};

Scanned Scan(const DeviceData& device, const void* code, size_t codeSize, const char* where) {
  Scanned scanned;
  if (!device.emulating) return scanned;
  const InstanceData* instance = device.instance;
  // Not SPIR-V in this byte order (VK_NV_glsl_shader source, a size that is not whole
  // words, a wrong magic number): it cannot use the extension, so the driver decides
  // about it as it would without the layer (design.md: untouched modules go down as
  // the very same buffer).
  uint32_t magic = 0;
  if (!code || codeSize < 4 || codeSize % 4 != 0) return scanned;
  std::memcpy(&magic, code, 4);
  if (magic != spv::MagicNumber) return scanned;
  scanned.words = std::span(static_cast<const uint32_t*>(code), codeSize / 4);
  const ScanResult scan = ScanModule(scanned.words);
  if (!scan.ok) {
    // Malformed SPIR-V: refused only when it may declare the extension, which the
    // driver would not understand; anything else is the driver's to judge.
    if (!scan.usage.NeedsLowering() && !MayDeclareExtCapability(scanned.words)) return scanned;
    const std::string dumped = DumpLowering(device, scanned.words, nullptr, where);
    Log(instance, LogLevel::Error, std::string(where) + ": malformed SPIR-V that declares a maintenance1 capability (" +
                                       scan.error + "); not passed to the driver" + DumpNote(dumped));
    scanned.result = VK_ERROR_UNKNOWN;
    return scanned;
  }
  scanned.needsLowering = scan.usage.NeedsLowering();
  if (scanned.needsLowering) CheckEnabledFeatures(device, scan.usage, where);
  return scanned;
}

// Lowers with `options`, validating when the setting asks; logs and dumps failures
// (under `variant`: see DumpLowering).
LowerResult LowerChecked(const DeviceData& device, std::span<const uint32_t> words, const LowerOptions& options,
                         const std::string& where, const std::string& variant = "") {
  const InstanceData* instance = device.instance;
  const Specialization* specialization = options.specialization ? &*options.specialization : nullptr;
  LowerResult lowered = LowerModule(words, options);
  if (!lowered.ok) {
    const std::string dumped = DumpLowering(device, words, &lowered, where.c_str(), variant, specialization);
    Log(instance, LogLevel::Error, where + ": cannot lower the maintenance1 module: " + lowered.error + DumpNote(dumped));
    return lowered;
  }
  if (instance->settings.validate) {
    const std::string problem = LoweredModuleProblem(words, lowered.words, static_cast<int>(device.vulkanMinor));
    if (!problem.empty()) {
      const std::string dumped = DumpLowering(device, words, &lowered, where.c_str(), variant, specialization);
      Log(instance, LogLevel::Error, where + ": " + problem + DumpNote(dumped));
      lowered.ok = false;
      lowered.error = problem;
      lowered.words.clear();
    }
  }
  return lowered;
}

// ---- Module time ------------------------------------------------------------

struct PreparedModule {
  VkResult result = VK_SUCCESS;     // an error: do not call down
  bool replaced = false;            // true: use `words` instead of the app's code
  std::vector<uint32_t> words;
  bool dependsOnSpecialization = false;
};

PreparedModule PrepareModule(const DeviceData& device, const void* code, size_t codeSize, const char* where) {
  PreparedModule prepared;
  const Scanned scanned = Scan(device, code, codeSize, where);
  prepared.result = scanned.result;
  if (scanned.result != VK_SUCCESS || !scanned.needsLowering) return prepared;
  LowerOptions options = device.lowerOptions;
  options.specializationPending = true;
  LowerResult lowered = LowerChecked(device, scanned.words, options, where);
  if (!lowered.ok) {
    prepared.result = VK_ERROR_UNKNOWN;
    return prepared;
  }
  DumpLowering(device, scanned.words, &lowered, where);
  Log(device.instance, LogLevel::Debug,
      std::string(where) + ": lowered " + std::to_string(lowered.stats.OpsLowered()) + " operations (" +
          std::to_string(lowered.stats.registerPath) + " in registers), " + std::to_string(lowered.stats.wordsIn) +
          " -> " + std::to_string(lowered.stats.wordsOut) + " words in " +
          std::to_string(static_cast<long long>(lowered.stats.microseconds)) + " us" +
          (lowered.dependsOnSpecialization ? "; shapes depend on specialization: lowered again per pipeline" : "") +
          (lowered.dependsOnSubgroupSize ? "; the scratch fits only at larger subgroup sizes: lowered again per pipeline"
                                         : ""));
  prepared.replaced = true;
  prepared.words = std::move(lowered.words);
  // Either way the pipeline's facts decide: the module is kept and lowered per stage.
  prepared.dependsOnSpecialization = lowered.dependsOnSpecialization || lowered.dependsOnSubgroupSize;
  return prepared;
}

// ---- Pipeline time ----------------------------------------------------------

// What a stage says about how it runs.
struct StageFacts {
  const VkSpecializationInfo* specialization = nullptr;
  uint32_t requiredSubgroupSize = 0;  // VkPipelineShaderStageRequiredSubgroupSizeCreateInfo
  bool allowVaryingSubgroupSize = false;
};

StageFacts FactsOf(const VkPipelineShaderStageCreateInfo& stage) {
  StageFacts facts;
  facts.specialization = stage.pSpecializationInfo;
  if (const auto* required = reinterpret_cast<const VkPipelineShaderStageRequiredSubgroupSizeCreateInfo*>(
          FindInChain(stage.pNext, VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO)))
    facts.requiredSubgroupSize = required->requiredSubgroupSize;
  facts.allowVaryingSubgroupSize = (stage.flags & VK_PIPELINE_SHADER_STAGE_CREATE_ALLOW_VARYING_SUBGROUP_SIZE_BIT) != 0;
  return facts;
}

StageFacts FactsOf(const VkShaderCreateInfoEXT& shader) {
  StageFacts facts;
  facts.specialization = shader.pSpecializationInfo;
  if (const auto* required = reinterpret_cast<const VkShaderRequiredSubgroupSizeCreateInfoEXT*>(
          FindInChain(shader.pNext, VK_STRUCTURE_TYPE_SHADER_REQUIRED_SUBGROUP_SIZE_CREATE_INFO_EXT)))
    facts.requiredSubgroupSize = required->requiredSubgroupSize;
  facts.allowVaryingSubgroupSize = (shader.flags & VK_SHADER_CREATE_ALLOW_VARYING_SUBGROUP_SIZE_BIT_EXT) != 0;
  return facts;
}

// The subgroup sizes a stage may run with (Vulkan, "Subgroup size"): the required
// size; else any supported size when it may vary (the flag, or a SPIR-V 1.6
// module); else the device's default size.
std::vector<uint32_t> StageSubgroupSizes(const DeviceData& device, const StageFacts& facts,
                                         std::span<const uint32_t> words) {
  if (facts.requiredSubgroupSize) return {facts.requiredSubgroupSize};
  const uint32_t spirvMinor = words.size() > 1 ? (words[1] >> 8) & 0xff : 0;
  if (facts.allowVaryingSubgroupSize || spirvMinor >= 6) return device.lowerOptions.subgroupSizes;
  return {device.physicalDevice.subgroupSize};
}

// The app's specialization as bytes per SpecId; entries outside pData are ignored
// with a warning (they are invalid usage; reading them would overrun the app's data).
Specialization SpecializationOf(const DeviceData& device, const VkSpecializationInfo* info, const char* where) {
  Specialization specialization;
  if (!info || !info->pMapEntries || !info->pData) return specialization;
  const auto* data = static_cast<const uint8_t*>(info->pData);
  for (uint32_t i = 0; i < info->mapEntryCount; ++i) {
    const VkSpecializationMapEntry& entry = info->pMapEntries[i];
    if (entry.size == 0 || entry.size > 8 || entry.offset > info->dataSize || entry.size > info->dataSize - entry.offset) {
      Log(device.instance, LogLevel::Warning,
          std::string(where) + ": specialization map entry " + std::to_string(i) + " (constantID " +
              std::to_string(entry.constantID) + ") lies outside pData or has an invalid size; ignored");
      continue;
    }
    specialization.values[entry.constantID].assign(data + entry.offset, data + entry.offset + entry.size);
  }
  return specialization;
}

struct StageLowering {
  VkResult result = VK_SUCCESS;
  std::shared_ptr<const CachedLowering> code;
};

// Lowers `original` for one stage, through the cache. onlyCached: the pipeline has
// VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT: a lowering that is not
// cached yet is VK_PIPELINE_COMPILE_REQUIRED, not done on the app's thread.
StageLowering LowerForStage(DeviceData& device, std::span<const uint32_t> original, const Hash128& originalHash,
                            const StageFacts& facts, const char* where, bool onlyCached = false) {
  StageLowering out;
  Specialization specialization = SpecializationOf(device, facts.specialization, where);
  // Only the constants the module declares enter the key: engines share one
  // VkSpecializationInfo across stages, and a value this module never reads must not
  // make a new entry (review 2, finding 14). A decoration group could declare more.
  if (const ScanResult scan = ScanModule(original); scan.ok && scan.specIdsComplete)
    std::erase_if(specialization.values, [&](const auto& entry) {
      return std::find(scan.specIds.begin(), scan.specIds.end(), entry.first) == scan.specIds.end();
    });
  const std::vector<uint32_t> sizes = StageSubgroupSizes(device, facts, original);
  Hasher hasher;
  hasher.Add(originalHash.low).Add(originalHash.high).Add(device.optionsFingerprint);
  hasher.Add(specialization.values.size());
  for (const auto& [id, bytes] : specialization.values) hasher.Add(id).Add(std::span(bytes));
  hasher.Add(std::span(sizes));
  const Hash128 key = hasher.Finish();
  const std::string variant = ".pipeline-" + key.Hex().substr(0, 8);
  CacheSource source = CacheSource::Lowered;
  double microseconds = 0;
  std::string rejected;
  // A disk entry is checked as fresh output is: no maintenance1 instruction left, and
  // spirv-val under validate=true.
  const LoweringCache::DiskCheck check = [&](std::span<const uint32_t> words) -> std::string {
    const ScanResult scanned = ScanModule(words);
    if (!scanned.ok) return "not a module: " + scanned.error;
    if (scanned.usage.NeedsLowering()) return "it still uses the extension";
    if (device.instance->settings.validate)
      if (std::string problem = ValidateModule(words, static_cast<int>(device.vulkanMinor)); !problem.empty())
        return "it does not validate: " + problem;
    return "";
  };
  if (onlyCached) {
    out.code = device.loweringCache->Peek(key, source, check);
    if (!out.code) {
      Log(device.instance, LogLevel::Debug,
          std::string(where) + ": pipeline-time lowering not cached and the pipeline may not compile: VK_PIPELINE_COMPILE_REQUIRED");
      out.result = VK_PIPELINE_COMPILE_REQUIRED;
      return out;
    }
  } else {
    out.code = device.loweringCache->Get(
        key,
        [&] {
          LowerOptions options = device.lowerOptions;
          options.specialization = specialization;
          options.subgroupSizes = sizes;
          LowerResult lowered = LowerChecked(device, original, options, where, variant);
          if (lowered.ok) DumpLowering(device, original, &lowered, where, variant, &specialization);
          CachedLowering entry;
          entry.ok = lowered.ok;
          entry.error = lowered.error;
          entry.words = std::move(lowered.words);
          entry.opsLowered = lowered.stats.OpsLowered();
          entry.opsInRegisters = lowered.stats.registerPath;
          microseconds = lowered.stats.microseconds;
          return entry;
        },
        source, check, &rejected);
  }
  if (!rejected.empty())
    Log(device.instance, LogLevel::Warning,
        std::string(where) + ": a disk cache entry was not used (" + rejected + "); lowered again");
  // A user debugging a cached lowering finds it in dump_dir too (review finding 20).
  const std::string dumped =
      source == CacheSource::Lowered
          ? ""
          : DumpCachedLowering(device, original, *out.code, where, variant, specialization,
                               source == CacheSource::Memory ? "the memory cache"
                                                             : "the disk cache entry " + device.loweringCache->EntryPath(key).string());
  const std::string dumpNote = dumped.empty() ? "" : " (dump: " + dumped + ")";
  device.stageLowerings[static_cast<int>(source)].fetch_add(1, std::memory_order_relaxed);
  device.stageLoweringMicroseconds.fetch_add(static_cast<uint64_t>(microseconds), std::memory_order_relaxed);
  if (!out.code->ok) {
    // The lowering logged the reason the first time; a cached failure says it again.
    if (source != CacheSource::Lowered)
      Log(device.instance, LogLevel::Error,
          std::string(where) + ": cannot lower the maintenance1 module: " + out.code->error + dumpNote);
    out.result = VK_ERROR_UNKNOWN;
    return out;
  }
  std::string sizeList;
  for (uint32_t size : sizes) sizeList += (sizeList.empty() ? "" : ",") + std::to_string(size);
  Log(device.instance, LogLevel::Debug,
      std::string(where) + ": pipeline-time lowering (" + std::to_string(specialization.values.size()) +
          " specialization constants, subgroup size " + sizeList + "): " + std::to_string(out.code->opsLowered) +
          " operations, " + std::to_string(out.code->opsInRegisters) + " in registers, " +
          (source == CacheSource::Lowered ? "lowered in " + std::to_string(static_cast<long long>(microseconds)) + " us"
                                          : std::string("from the ") + ToString(source) + dumpNote));
  return out;
}

// The driver failed on code the layer gave it in place of the app's: the app sees only
// the driver's error, so the layer says the code was its own (test audit 3.4). Runs
// after the driver call, when other objects of the call may exist: it must not throw,
// or the Guard would turn their handles into NULL and they would leak (review dbb465e #7).
VkResult ReportDriverFailure(const DeviceData& device, VkResult result, const char* where, const char* what) noexcept {
  if (result >= VK_SUCCESS) return result;
  try {
    Log(device.instance, LogLevel::Warning,
        std::string(where) + ": the driver failed (" + ResultName(result) + ") on " + what + " that the layer lowered");
  } catch (...) {
    // Out of memory for the message (or a messenger that threw): the driver's result matters more.
  }
  return result;
}

// "compute", "vertex and fragment": the stages in `stages`, for messages.
std::string StageNames(VkShaderStageFlags stages) {
  static const std::pair<VkShaderStageFlagBits, const char*> kNames[] = {
      {VK_SHADER_STAGE_VERTEX_BIT, "vertex"},
      {VK_SHADER_STAGE_TESSELLATION_CONTROL_BIT, "tessellation control"},
      {VK_SHADER_STAGE_TESSELLATION_EVALUATION_BIT, "tessellation evaluation"},
      {VK_SHADER_STAGE_GEOMETRY_BIT, "geometry"},
      {VK_SHADER_STAGE_FRAGMENT_BIT, "fragment"},
      {VK_SHADER_STAGE_COMPUTE_BIT, "compute"},
      {VK_SHADER_STAGE_TASK_BIT_EXT, "task"},
      {VK_SHADER_STAGE_MESH_BIT_EXT, "mesh"},
      {VK_SHADER_STAGE_RAYGEN_BIT_KHR, "ray generation"},
      {VK_SHADER_STAGE_ANY_HIT_BIT_KHR, "any-hit"},
      {VK_SHADER_STAGE_CLOSEST_HIT_BIT_KHR, "closest-hit"},
      {VK_SHADER_STAGE_MISS_BIT_KHR, "miss"},
      {VK_SHADER_STAGE_INTERSECTION_BIT_KHR, "intersection"},
      {VK_SHADER_STAGE_CALLABLE_BIT_KHR, "callable"},
  };
  std::vector<const char*> names;
  for (const auto& [bit, name] : kNames)
    if (stages & bit) names.push_back(name);
  if (names.empty()) return "shader";
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += std::string(i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

// The driver failed object `index` of a call, whose `stages` the layer lowered (review
// dbb465e #8: the warning names what the layer changed, not every object of the batch).
// After the driver call: never throws, as ReportDriverFailure.
void ReportFailedObject(const DeviceData& device, VkResult result, const char* where, const char* object, uint32_t index,
                        VkShaderStageFlags stages) noexcept {
  try {
    const std::string what = std::string(object) + " " + std::to_string(index) + "'s " + StageNames(stages) +
                             (std::popcount(stages) > 1 ? " stages" : " stage");
    ReportDriverFailure(device, result, where, what.c_str());
  } catch (...) {
    // As in ReportDriverFailure: the driver's result matters more than the message.
  }
}

template <typename Info> VkPipelineCreateFlags2KHR EffectiveFlags(const Info& info);

// Rewrites pipeline stages: a module registered as pending gets a module made from
// its pipeline-time lowering (destroyed after the call), inline code is replaced.
class StageRewriter {
 public:
  explicit StageRewriter(DeviceData& device) : device_(device) {}
  ~StageRewriter() {
    for (VkShaderModule module : temporaryModules_) device_.dispatch.DestroyShaderModule(device_.device, module, nullptr);
  }
  StageRewriter(const StageRewriter&) = delete;
  StageRewriter& operator=(const StageRewriter&) = delete;

  // Returns a stage to use instead of `stage` (itself when unchanged), or null on error.
  const VkPipelineShaderStageCreateInfo* Rewrite(const VkPipelineShaderStageCreateInfo& stage, const char* where) {
    if (stage.module != VK_NULL_HANDLE) return RewriteModule(stage, where);
    const auto* moduleInfo = reinterpret_cast<const VkShaderModuleCreateInfo*>(
        FindInChain(stage.pNext, VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO));
    if (!moduleInfo) return &stage;  // a module identifier, or nothing: the driver decides
    const Scanned scanned = Scan(device_, moduleInfo->pCode, moduleInfo->codeSize, where);
    if (scanned.result != VK_SUCCESS) return Failed(scanned.result);
    if (!scanned.needsLowering) return &stage;
    const StageLowering lowered =
        LowerForStage(device_, scanned.words, Hasher().Add(scanned.words).Finish(), FactsOf(stage), where, onlyCached_);
    if (lowered.result != VK_SUCCESS) return Failed(lowered.result);
    code_.push_back(lowered.code);
    loweredStages_[info_] |= stage.stage;
    auto* replacement = chains_.Own(*moduleInfo);
    replacement->pCode = lowered.code->words.data();
    replacement->codeSize = lowered.code->words.size() * 4;
    VkPipelineShaderStageCreateInfo* copy = chains_.Own(stage);
    VkStructureType unknown = VK_STRUCTURE_TYPE_MAX_ENUM;
    if (!chains_.Copy(stage.pNext, VK_STRUCTURE_TYPE_MAX_ENUM, &copy->pNext,
                      reinterpret_cast<const VkBaseInStructure*>(replacement), &unknown)) {
      // The lowered code must replace the chained VkShaderModuleCreateInfo, which
      // means copying every node before it; one of unknown size cannot be copied, and
      // the app's chain is never written.
      Log(device_.instance, LogLevel::Error,
          std::string(where) + ": structure sType " + std::to_string(static_cast<int64_t>(unknown)) +
              " is chained before VkShaderModuleCreateInfo and unknown to the layer (built with Vulkan headers " +
              std::to_string(VK_HEADER_VERSION) + "), so the module cannot be replaced by its lowered code; "
              "chain VkShaderModuleCreateInfo first or use a VkShaderModule");
      return Failed(VK_ERROR_UNKNOWN);
    }
    return copy;
  }

  // Rewrites an array of stages; returns the array to use, or null on error.
  const VkPipelineShaderStageCreateInfo* RewriteStages(const VkPipelineShaderStageCreateInfo* stages, uint32_t count,
                                                       const char* where) {
    if (!stages) return stages;
    std::vector<VkPipelineShaderStageCreateInfo> out;
    bool changed = false;
    for (uint32_t i = 0; i < count; ++i) {
      const VkPipelineShaderStageCreateInfo* stage = Rewrite(stages[i], where);
      if (!stage) return nullptr;
      changed |= stage != &stages[i];
      out.push_back(*stage);
    }
    if (!changed) return stages;
    return stageArrays_.emplace_back(std::move(out)).data();
  }

  // The stages of VK_NV_device_generated_commands' shader groups, chained into a
  // graphics pipeline: returns the chain to use (itself when unchanged), or null on error.
  const void* RewriteShaderGroupsNV(const void* chain, const char* where) {
    const auto* groups = reinterpret_cast<const VkGraphicsPipelineShaderGroupsCreateInfoNV*>(
        FindInChain(chain, VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_SHADER_GROUPS_CREATE_INFO_NV));
    if (!groups || !groups->pGroups) return chain;
    std::vector<VkGraphicsShaderGroupCreateInfoNV> copies(groups->pGroups, groups->pGroups + groups->groupCount);
    bool changed = false;
    for (VkGraphicsShaderGroupCreateInfoNV& group : copies) {
      const VkPipelineShaderStageCreateInfo* stages = RewriteStages(group.pStages, group.stageCount, where);
      if (!stages) return nullptr;
      changed |= stages != group.pStages;
      group.pStages = stages;
    }
    if (!changed) return chain;
    auto* replacement = chains_.Own(*groups);
    replacement->pGroups = groupArrays_.emplace_back(std::move(copies)).data();
    return ReplaceInChain(chain, replacement, "VkGraphicsPipelineShaderGroupsCreateInfoNV", where);
  }

  // VK_ARM_data_graph names a module in a chained struct, with its specialization:
  // returns the chain to use (itself when unchanged), or null on error.
  const void* RewriteDataGraphModuleARM(const void* chain, const char* where) {
    const auto* info = reinterpret_cast<const VkDataGraphPipelineShaderModuleCreateInfoARM*>(
        FindInChain(chain, VK_STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SHADER_MODULE_CREATE_INFO_ARM));
    if (!info || info->module == VK_NULL_HANDLE) return chain;
    VkPipelineShaderStageCreateInfo stage{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    stage.module = info->module;
    stage.pName = info->pName;
    stage.pSpecializationInfo = info->pSpecializationInfo;
    const VkPipelineShaderStageCreateInfo* rewritten = Rewrite(stage, where);
    if (!rewritten) return nullptr;
    if (rewritten == &stage) return chain;
    auto* replacement = chains_.Own(*info);
    replacement->module = rewritten->module;
    return ReplaceInChain(chain, replacement, "VkDataGraphPipelineShaderModuleCreateInfoARM", where);
  }

  VkResult result() const { return result_; }

  // The stages that follow belong to create info `index` of the call, which may ask not
  // to compile (see LowerForStage).
  void StartInfo(uint32_t index, bool onlyCached) {
    info_ = index;
    onlyCached_ = onlyCached;
  }

  // After the driver's call for `count` infos: warns for each pipeline the driver left
  // VK_NULL_HANDLE whose stages the layer lowered; none after one that returned early
  // (VK_PIPELINE_CREATE_EARLY_RETURN_ON_FAILURE_BIT: those were never attempted), none
  // for one the layer failed itself.
  template <typename Info>
  void ReportDriverFailures(VkResult result, const Info* infos, const VkPipeline* pipelines, uint32_t count,
                            const char* where) const noexcept {
    if (result >= VK_SUCCESS || !pipelines) return;
    for (uint32_t i = 0; i < count; ++i) {
      if (pipelines[i] != VK_NULL_HANDLE) continue;
      const auto lowered = loweredStages_.find(i);
      if (lowered != loweredStages_.end() && !layerFailed_.contains(i))
        ReportFailedObject(device_, result, where, "pipeline", i, lowered->second);
      if (EffectiveFlags(infos[i]) & VK_PIPELINE_CREATE_2_EARLY_RETURN_ON_FAILURE_BIT_KHR) return;
    }
  }

  // After a driver call for one pipeline's stages (binaries, keys): warns when it failed
  // and the layer lowered any of them.
  void ReportPipelineFailure(VkResult result, const char* where) const noexcept {
    if (const auto lowered = loweredStages_.find(0); lowered != loweredStages_.end() && result < VK_SUCCESS)
      ReportFailedObject(device_, result, where, "pipeline", 0, lowered->second);
  }

 private:
  // An error outranks VK_PIPELINE_COMPILE_REQUIRED (a success code) for the call's result.
  const VkPipelineShaderStageCreateInfo* Failed(VkResult result) {
    if (result_ == VK_SUCCESS || result < VK_SUCCESS) result_ = result;
    layerFailed_.insert(info_);
    return nullptr;
  }

  // A copy of `chain` with `replacement` in place of the node of its sType, or null
  // (and an error) when a node before it cannot be copied.
  template <typename Struct>
  const void* ReplaceInChain(const void* chain, const Struct* replacement, const char* name, const char* where) {
    const void* out = nullptr;
    VkStructureType unknown = VK_STRUCTURE_TYPE_MAX_ENUM;
    if (chains_.Copy(chain, VK_STRUCTURE_TYPE_MAX_ENUM, &out, reinterpret_cast<const VkBaseInStructure*>(replacement),
                     &unknown))
      return out;
    Log(device_.instance, LogLevel::Error,
        std::string(where) + ": structure sType " + std::to_string(static_cast<int64_t>(unknown)) + " is chained before " +
            name + " and unknown to the layer, so its stages cannot be replaced by their lowered code");
    Failed(VK_ERROR_UNKNOWN);
    return nullptr;
  }

  const VkPipelineShaderStageCreateInfo* RewriteModule(const VkPipelineShaderStageCreateInfo& stage, const char* where) {
    const std::shared_ptr<const PendingModule> pending = device_.FindPendingModule(stage.module);
    if (!pending) return &stage;  // lowered completely when it was created
    const StageLowering lowered = LowerForStage(device_, pending->original, pending->hash, FactsOf(stage), where, onlyCached_);
    if (lowered.result != VK_SUCCESS) return Failed(lowered.result);
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = lowered.code->words.size() * 4;
    info.pCode = lowered.code->words.data();
    VkShaderModule module = VK_NULL_HANDLE;
    temporaryModules_.reserve(temporaryModules_.size() + 1);  // no allocation once the module exists
    if (const VkResult result = device_.dispatch.CreateShaderModule(device_.device, &info, nullptr, &module);
        result != VK_SUCCESS)
      return Failed(ReportDriverFailure(device_, result, where, ("the " + StageNames(stage.stage) + " stage's module").c_str()));
    temporaryModules_.push_back(module);
    loweredStages_[info_] |= stage.stage;
    VkPipelineShaderStageCreateInfo* copy = chains_.Own(stage);
    copy->module = module;
    return copy;
  }

  DeviceData& device_;
  VkResult result_ = VK_SUCCESS;
  uint32_t info_ = 0;  // the create info being rewritten
  bool onlyCached_ = false;
  std::map<uint32_t, VkShaderStageFlags> loweredStages_;  // by create info: the stages lowered
  std::set<uint32_t> layerFailed_;                        // create infos the layer failed itself
  ChainCopy chains_;
  std::vector<std::shared_ptr<const CachedLowering>> code_;
  std::vector<std::vector<VkPipelineShaderStageCreateInfo>> stageArrays_;
  std::vector<std::vector<VkGraphicsShaderGroupCreateInfoNV>> groupArrays_;
  std::vector<VkShaderModule> temporaryModules_;
};

const VkPipelineCreateFlags2CreateInfoKHR* Flags2Of(const void* chain) {
  return reinterpret_cast<const VkPipelineCreateFlags2CreateInfoKHR*>(
      FindInChain(chain, VK_STRUCTURE_TYPE_PIPELINE_CREATE_FLAGS_2_CREATE_INFO_KHR));
}

// A pipeline create info's flags: its VkPipelineCreateFlags2CreateInfoKHR's when one is
// chained ("flags from that structure are used instead"), else its own (the bits of
// both are the same below 2^32).
template <typename Info> VkPipelineCreateFlags2KHR EffectiveFlags(const Info& info) {
  if (const auto* flags2 = Flags2Of(info.pNext)) return flags2->flags;
  return info.flags;
}

// Whether a pipeline create info asks to fail rather than compile.
template <typename Info> bool FailsOnCompileRequired(const Info& info) {
  return (EffectiveFlags(info) & VK_PIPELINE_CREATE_2_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT_KHR) != 0;
}

// Clears the derivative hint of a pipeline whose base is gone, in its flags and in a
// chained VkPipelineCreateFlags2CreateInfoKHR (edited in a copy of the chain, owned
// by `chains`; review 130c39d finding 4).
template <typename Info> void DropDerivative(Info& info, ChainCopy& chains) {
  info.flags &= ~VK_PIPELINE_CREATE_DERIVATIVE_BIT;
  const auto* flags2 = Flags2Of(info.pNext);
  if (!flags2 || !(flags2->flags & VK_PIPELINE_CREATE_2_DERIVATIVE_BIT_KHR)) return;
  VkPipelineCreateFlags2CreateInfoKHR edited = *flags2;
  edited.flags &= ~VK_PIPELINE_CREATE_2_DERIVATIVE_BIT_KHR;
  const void* chain = nullptr;
  if (chains.Copy(info.pNext, VK_STRUCTURE_TYPE_MAX_ENUM, &chain, reinterpret_cast<const VkBaseInStructure*>(&edited)))
    info.pNext = chain;
}

// Vulkan ("Multiple Pipeline Creation"): every pipeline of a call is attempted and
// only those that failed get VK_NULL_HANDLE, unless a failed one has
// VK_PIPELINE_CREATE_EARLY_RETURN_ON_FAILURE_BIT (then none after it is created).
// ok[i]: whether info i's stages were lowered. Calls `create` with the others, in
// order (base pipeline indices renumbered; a derivative whose base failed loses the
// derivative hint), places their handles, and returns the driver's error or ours.
template <typename Info, typename Create>
VkResult CreateLoweredOnes(std::vector<Info>& infos, const std::vector<bool>& ok, VkResult failure, VkPipeline* pipelines,
                           const Create& create) {
  const uint32_t count = static_cast<uint32_t>(infos.size());
  if (std::all_of(ok.begin(), ok.end(), [](bool b) { return b; })) return create(count, infos.data(), pipelines);
  uint32_t end = count;
  for (uint32_t i = 0; i < count && end == count; ++i)
    if (!ok[i] && (EffectiveFlags(infos[i]) & VK_PIPELINE_CREATE_2_EARLY_RETURN_ON_FAILURE_BIT_KHR)) end = i;
  std::vector<Info> subset;
  std::vector<uint32_t> position;
  std::vector<int32_t> renumbered(count, -1);
  for (uint32_t i = 0; i < end; ++i)
    if (ok[i]) {
      renumbered[i] = static_cast<int32_t>(subset.size());
      position.push_back(i);
      subset.push_back(infos[i]);
    }
  ChainCopy chains;
  if constexpr (requires(Info info) { info.basePipelineIndex; }) {
    for (Info& info : subset) {
      if (info.basePipelineIndex < 0) continue;
      const auto base = static_cast<uint32_t>(info.basePipelineIndex);
      info.basePipelineIndex = base < count ? renumbered[base] : -1;
      if (info.basePipelineIndex < 0 && info.basePipelineHandle == VK_NULL_HANDLE) DropDerivative(info, chains);
    }
  }
  for (uint32_t i = 0; i < count; ++i) pipelines[i] = VK_NULL_HANDLE;
  std::vector<VkPipeline> created(subset.size(), VK_NULL_HANDLE);
  const VkResult result = subset.empty() ? VK_SUCCESS : create(static_cast<uint32_t>(subset.size()), subset.data(), created.data());
  for (size_t k = 0; k < subset.size(); ++k) pipelines[position[k]] = created[k];
  return result < VK_SUCCESS ? result : failure;
}

// Rewrites the stages of any pipeline create info that has pStages/stageCount
// (graphics, ray tracing) in place in `info`; false on error.
template <typename Info> bool RewriteStagesOf(StageRewriter& rewriter, Info& info, const char* where) {
  if (!info.pStages) return true;
  info.pStages = rewriter.RewriteStages(info.pStages, info.stageCount, where);
  return info.pStages != nullptr;
}

// A call whose create infos carry nothing to rewrite but their stage lists (ray
// tracing NV, execution graphs): each info's stages rewritten, the others created.
template <typename Info, typename CallDown>
VkResult CreateFromStageLists(DeviceData& device, uint32_t count, const Info* pCreateInfos, VkPipeline* pPipelines,
                              const char* where, const CallDown& callDown) {
  StageRewriter rewriter(device);
  std::vector<Info> infos(pCreateInfos, pCreateInfos + count);
  std::vector<bool> ok(count, true);
  for (uint32_t i = 0; i < count; ++i) {
    rewriter.StartInfo(i, FailsOnCompileRequired(infos[i]));
    ok[i] = RewriteStagesOf(rewriter, infos[i], where);
  }
  const VkResult result = CreateLoweredOnes(infos, ok, rewriter.result(), pPipelines, callDown);
  rewriter.ReportDriverFailures(result, infos.data(), pPipelines, count, where);
  return result;
}

// The copy of a VkPipelineCreateInfoKHR (pipeline binaries, keys) whose chained
// compute/graphics/ray-tracing create info has its stages rewritten.
class PipelineCreateInfoRewriter {
 public:
  explicit PipelineCreateInfoRewriter(DeviceData& device) : rewriter_(device) {}
  const VkPipelineCreateInfoKHR* Rewrite(const VkPipelineCreateInfoKHR* info, const char* where) {
    if (!info || !info->pNext) return info;
    const auto* next = static_cast<const VkBaseInStructure*>(info->pNext);
    copy_ = *info;
    switch (next->sType) {
      case VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO: {
        compute_ = *reinterpret_cast<const VkComputePipelineCreateInfo*>(next);
        const VkPipelineShaderStageCreateInfo* stage = rewriter_.Rewrite(compute_.stage, where);
        if (!stage) return nullptr;
        compute_.stage = *stage;
        copy_.pNext = &compute_;
        break;
      }
      case VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO:
        graphics_ = *reinterpret_cast<const VkGraphicsPipelineCreateInfo*>(next);
        if (!RewriteStagesOf(rewriter_, graphics_, where)) return nullptr;
        copy_.pNext = &graphics_;
        break;
      case VK_STRUCTURE_TYPE_RAY_TRACING_PIPELINE_CREATE_INFO_KHR:
        rayTracing_ = *reinterpret_cast<const VkRayTracingPipelineCreateInfoKHR*>(next);
        if (!RewriteStagesOf(rewriter_, rayTracing_, where)) return nullptr;
        copy_.pNext = &rayTracing_;
        break;
      default: return info;
    }
    return &copy_;
  }
  VkResult result() const { return rewriter_.result(); }
  void ReportDriverFailure(VkResult result, const char* where) const noexcept { rewriter_.ReportPipelineFailure(result, where); }

 private:
  StageRewriter rewriter_;
  VkPipelineCreateInfoKHR copy_{};
  VkComputePipelineCreateInfo compute_{};
  VkGraphicsPipelineCreateInfo graphics_{};
  VkRayTracingPipelineCreateInfoKHR rayTracing_{};
};

}  // namespace

VKAPI_ATTR VkResult VKAPI_CALL CreateShaderModule(VkDevice device, const VkShaderModuleCreateInfo* pCreateInfo,
                                                  const VkAllocationCallbacks* pAllocator,
                                                  VkShaderModule* pShaderModule) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  PreparedModule prepared = PrepareModule(*data, pCreateInfo->pCode, pCreateInfo->codeSize, "vkCreateShaderModule");
  if (prepared.result != VK_SUCCESS) return prepared.result;
  if (!prepared.replaced) return data->dispatch.CreateShaderModule(device, pCreateInfo, pAllocator, pShaderModule);
  VkShaderModuleCreateInfo info = *pCreateInfo;
  info.pCode = prepared.words.data();
  info.codeSize = prepared.words.size() * 4;
  // The pending record (a copy of the app's code) is made before the driver's module,
  // so that running out of memory for it leaves nothing behind.
  std::shared_ptr<PendingModule> pending;
  if (prepared.dependsOnSpecialization) {
    pending = std::make_shared<PendingModule>();
    const auto* words = static_cast<const uint32_t*>(pCreateInfo->pCode);
    pending->original.assign(words, words + pCreateInfo->codeSize / 4);
    pending->hash = Hasher().Add(pending->original).Finish();
  }
  const VkResult result = ReportDriverFailure(*data, data->dispatch.CreateShaderModule(device, &info, pAllocator, pShaderModule),
                                              "vkCreateShaderModule", "a module");
  if (result != VK_SUCCESS || !pending) return result;
  try {
    std::unique_lock lock(data->pendingModulesMutex);
    DeviceData::PendingHandle& handle = data->pendingModules[*pShaderModule];
    if (!handle.module) handle.module = std::move(pending);  // a shared handle: the same code
    ++handle.references;
  } catch (...) {
    // The map's node could not be made: the app gets NULL, so the module must go.
    data->dispatch.DestroyShaderModule(device, *pShaderModule, pAllocator);
    throw;
  }
  return result;
}

VKAPI_ATTR void VKAPI_CALL DestroyShaderModule(VkDevice device, VkShaderModule shaderModule,
                                               const VkAllocationCallbacks* pAllocator) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return;
  if (shaderModule != VK_NULL_HANDLE) {
    // Before the driver frees the handle, which it may then hand out again.
    std::unique_lock lock(data->pendingModulesMutex);
    if (auto it = data->pendingModules.find(shaderModule); it != data->pendingModules.end() && --it->second.references == 0)
      data->pendingModules.erase(it);
  }
  data->dispatch.DestroyShaderModule(device, shaderModule, pAllocator);
}

VKAPI_ATTR VkResult VKAPI_CALL CreateComputePipelines(VkDevice device, VkPipelineCache cache, uint32_t count,
                                                      const VkComputePipelineCreateInfo* pCreateInfos,
                                                      const VkAllocationCallbacks* pAllocator, VkPipeline* pPipelines) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  if (!data->emulating)
    return data->dispatch.CreateComputePipelines(device, cache, count, pCreateInfos, pAllocator, pPipelines);
  StageRewriter rewriter(*data);
  std::vector<VkComputePipelineCreateInfo> infos(pCreateInfos, pCreateInfos + count);
  std::vector<bool> ok(count, true);
  for (uint32_t i = 0; i < count; ++i) {
    rewriter.StartInfo(i, FailsOnCompileRequired(infos[i]));
    const VkPipelineShaderStageCreateInfo* stage = rewriter.Rewrite(infos[i].stage, "vkCreateComputePipelines");
    if (stage) infos[i].stage = *stage;
    else ok[i] = false;
  }
  const VkResult result =
      CreateLoweredOnes(infos, ok, rewriter.result(), pPipelines, [&](uint32_t n, const VkComputePipelineCreateInfo* p, VkPipeline* out) {
        return data->dispatch.CreateComputePipelines(device, cache, n, p, pAllocator, out);
      });
  rewriter.ReportDriverFailures(result, infos.data(), pPipelines, count, "vkCreateComputePipelines");
  return result;
}

VKAPI_ATTR VkResult VKAPI_CALL CreateGraphicsPipelines(VkDevice device, VkPipelineCache cache, uint32_t count,
                                                       const VkGraphicsPipelineCreateInfo* pCreateInfos,
                                                       const VkAllocationCallbacks* pAllocator,
                                                       VkPipeline* pPipelines) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  if (!data->emulating)
    return data->dispatch.CreateGraphicsPipelines(device, cache, count, pCreateInfos, pAllocator, pPipelines);
  StageRewriter rewriter(*data);
  std::vector<VkGraphicsPipelineCreateInfo> infos(pCreateInfos, pCreateInfos + count);
  std::vector<bool> ok(count, true);
  for (uint32_t i = 0; i < count; ++i) {
    VkGraphicsPipelineCreateInfo& info = infos[i];
    rewriter.StartInfo(i, FailsOnCompileRequired(info));
    const bool stages = RewriteStagesOf(rewriter, info, "vkCreateGraphicsPipelines");
    const void* next = stages ? rewriter.RewriteShaderGroupsNV(info.pNext, "vkCreateGraphicsPipelines") : nullptr;
    ok[i] = stages && (next || !info.pNext);  // null for a non-null chain: a group stage failed
    if (ok[i]) info.pNext = next;
  }
  const VkResult result =
      CreateLoweredOnes(infos, ok, rewriter.result(), pPipelines, [&](uint32_t n, const VkGraphicsPipelineCreateInfo* p, VkPipeline* out) {
        return data->dispatch.CreateGraphicsPipelines(device, cache, n, p, pAllocator, out);
      });
  rewriter.ReportDriverFailures(result, infos.data(), pPipelines, count, "vkCreateGraphicsPipelines");
  return result;
}

VKAPI_ATTR VkResult VKAPI_CALL CreateRayTracingPipelinesKHR(VkDevice device, VkDeferredOperationKHR deferred,
                                                            VkPipelineCache cache, uint32_t count,
                                                            const VkRayTracingPipelineCreateInfoKHR* pCreateInfos,
                                                            const VkAllocationCallbacks* pAllocator,
                                                            VkPipeline* pPipelines) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  if (!data->emulating)
    return data->dispatch.CreateRayTracingPipelinesKHR(device, deferred, cache, count, pCreateInfos, pAllocator, pPipelines);
  StageRewriter rewriter(*data);
  std::vector<VkRayTracingPipelineCreateInfoKHR> infos(pCreateInfos, pCreateInfos + count);
  std::vector<bool> ok(count, true);
  bool rewritten = false;
  for (uint32_t i = 0; i < count; ++i) {
    rewriter.StartInfo(i, FailsOnCompileRequired(infos[i]));
    ok[i] = RewriteStagesOf(rewriter, infos[i], "vkCreateRayTracingPipelinesKHR");
    rewritten |= infos[i].pStages != pCreateInfos[i].pStages;
  }
  const bool allOk = std::all_of(ok.begin(), ok.end(), [](bool b) { return b; });
  if (allOk && (!rewritten || deferred == VK_NULL_HANDLE)) {
    // Unchanged, the app's own infos: a deferred operation may read them until it completes.
    const VkResult result = data->dispatch.CreateRayTracingPipelinesKHR(device, deferred, cache, count,
                                                                        rewritten ? infos.data() : pCreateInfos, pAllocator,
                                                                        pPipelines);
    rewriter.ReportDriverFailures(result, infos.data(), pPipelines, count, "vkCreateRayTracingPipelinesKHR");
    return result;
  }
  // A deferred operation could read the rewritten stages after this call has freed
  // them: complete it now, as a driver may, and say so.
  const VkResult result = CreateLoweredOnes(infos, ok, rewriter.result(), pPipelines,
                                            [&](uint32_t n, const VkRayTracingPipelineCreateInfoKHR* p, VkPipeline* out) {
                                              return data->dispatch.CreateRayTracingPipelinesKHR(device, VK_NULL_HANDLE, cache, n, p,
                                                                                                 pAllocator, out);
                                            });
  rewriter.ReportDriverFailures(result, infos.data(), pPipelines, count, "vkCreateRayTracingPipelinesKHR");
  return result == VK_SUCCESS && deferred != VK_NULL_HANDLE ? VK_OPERATION_NOT_DEFERRED_KHR : result;
}

VKAPI_ATTR VkResult VKAPI_CALL CreateRayTracingPipelinesNV(VkDevice device, VkPipelineCache cache, uint32_t count,
                                                           const VkRayTracingPipelineCreateInfoNV* pCreateInfos,
                                                           const VkAllocationCallbacks* pAllocator, VkPipeline* pPipelines) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  if (!data->emulating)
    return data->dispatch.CreateRayTracingPipelinesNV(device, cache, count, pCreateInfos, pAllocator, pPipelines);
  return CreateFromStageLists(*data, count, pCreateInfos, pPipelines, "vkCreateRayTracingPipelinesNV",
                              [&](uint32_t n, const VkRayTracingPipelineCreateInfoNV* p, VkPipeline* out) {
                                return data->dispatch.CreateRayTracingPipelinesNV(device, cache, n, p, pAllocator, out);
                              });
}

// VK_AMDX_shader_enqueue (RADV has it, beta): stages as in the other pipeline kinds.
VKAPI_ATTR VkResult VKAPI_CALL CreateExecutionGraphPipelinesAMDX(VkDevice device, VkPipelineCache cache, uint32_t count,
                                                                 const VkExecutionGraphPipelineCreateInfoAMDX* pCreateInfos,
                                                                 const VkAllocationCallbacks* pAllocator, VkPipeline* pPipelines) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  if (!data->emulating)
    return data->dispatch.CreateExecutionGraphPipelinesAMDX(device, cache, count, pCreateInfos, pAllocator, pPipelines);
  return CreateFromStageLists(*data, count, pCreateInfos, pPipelines, "vkCreateExecutionGraphPipelinesAMDX",
                              [&](uint32_t n, const VkExecutionGraphPipelineCreateInfoAMDX* p, VkPipeline* out) {
                                return data->dispatch.CreateExecutionGraphPipelinesAMDX(device, cache, n, p, pAllocator, out);
                              });
}

// VK_ARM_data_graph: the module and its specialization are chained into each info.
VKAPI_ATTR VkResult VKAPI_CALL CreateDataGraphPipelinesARM(VkDevice device, VkDeferredOperationKHR deferred,
                                                           VkPipelineCache cache, uint32_t count,
                                                           const VkDataGraphPipelineCreateInfoARM* pCreateInfos,
                                                           const VkAllocationCallbacks* pAllocator, VkPipeline* pPipelines) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  if (!data->emulating)
    return data->dispatch.CreateDataGraphPipelinesARM(device, deferred, cache, count, pCreateInfos, pAllocator, pPipelines);
  StageRewriter rewriter(*data);
  std::vector<VkDataGraphPipelineCreateInfoARM> infos(pCreateInfos, pCreateInfos + count);
  std::vector<bool> ok(count, true);
  bool rewritten = false;
  for (uint32_t i = 0; i < count; ++i) {
    rewriter.StartInfo(i, (infos[i].flags & VK_PIPELINE_CREATE_2_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT_KHR) != 0);
    const void* next = rewriter.RewriteDataGraphModuleARM(infos[i].pNext, "vkCreateDataGraphPipelinesARM");
    ok[i] = next || !infos[i].pNext;
    if (ok[i]) infos[i].pNext = next;
    rewritten |= infos[i].pNext != pCreateInfos[i].pNext;
  }
  const bool allOk = std::all_of(ok.begin(), ok.end(), [](bool b) { return b; });
  if (allOk && (!rewritten || deferred == VK_NULL_HANDLE)) {
    // Unchanged, the app's own infos (as for ray tracing).
    const VkResult result = data->dispatch.CreateDataGraphPipelinesARM(device, deferred, cache, count,
                                                                       rewritten ? infos.data() : pCreateInfos, pAllocator,
                                                                       pPipelines);
    rewriter.ReportDriverFailures(result, infos.data(), pPipelines, count, "vkCreateDataGraphPipelinesARM");
    return result;
  }
  // As for ray tracing: a deferred operation must not outlive the rewritten chains.
  const VkResult result = CreateLoweredOnes(infos, ok, rewriter.result(), pPipelines,
                                            [&](uint32_t n, const VkDataGraphPipelineCreateInfoARM* p, VkPipeline* out) {
                                              return data->dispatch.CreateDataGraphPipelinesARM(device, VK_NULL_HANDLE, cache, n, p,
                                                                                                pAllocator, out);
                                            });
  rewriter.ReportDriverFailures(result, infos.data(), pPipelines, count, "vkCreateDataGraphPipelinesARM");
  return result == VK_SUCCESS && deferred != VK_NULL_HANDLE ? VK_OPERATION_NOT_DEFERRED_KHR : result;
}

VKAPI_ATTR VkResult VKAPI_CALL CreatePipelineBinariesKHR(VkDevice device, const VkPipelineBinaryCreateInfoKHR* pCreateInfo,
                                                         const VkAllocationCallbacks* pAllocator,
                                                         VkPipelineBinaryHandlesInfoKHR* pBinaries) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  if (!data->emulating || !pCreateInfo->pPipelineCreateInfo)
    return data->dispatch.CreatePipelineBinariesKHR(device, pCreateInfo, pAllocator, pBinaries);
  PipelineCreateInfoRewriter rewriter(*data);
  VkPipelineBinaryCreateInfoKHR info = *pCreateInfo;
  info.pPipelineCreateInfo = rewriter.Rewrite(pCreateInfo->pPipelineCreateInfo, "vkCreatePipelineBinariesKHR");
  if (!info.pPipelineCreateInfo) return rewriter.result();
  const VkResult result = data->dispatch.CreatePipelineBinariesKHR(device, &info, pAllocator, pBinaries);
  rewriter.ReportDriverFailure(result, "vkCreatePipelineBinariesKHR");
  return result;
}

VKAPI_ATTR VkResult VKAPI_CALL GetPipelineKeyKHR(VkDevice device, const VkPipelineCreateInfoKHR* pPipelineCreateInfo,
                                                 VkPipelineBinaryKeyKHR* pPipelineKey) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  if (!data->emulating || !pPipelineCreateInfo)
    return data->dispatch.GetPipelineKeyKHR(device, pPipelineCreateInfo, pPipelineKey);
  PipelineCreateInfoRewriter rewriter(*data);
  const VkPipelineCreateInfoKHR* info = rewriter.Rewrite(pPipelineCreateInfo, "vkGetPipelineKeyKHR");
  if (!info) return rewriter.result();
  return data->dispatch.GetPipelineKeyKHR(device, info, pPipelineKey);
}

VKAPI_ATTR void VKAPI_CALL GetShaderModuleCreateInfoIdentifierEXT(VkDevice device,
                                                                  const VkShaderModuleCreateInfo* pCreateInfo,
                                                                  VkShaderModuleIdentifierEXT* pIdentifier) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return;
  // The identifier of the code the driver would hold for a module created from this
  // info, so it equals vkGetShaderModuleIdentifierEXT's for that module.
  PreparedModule prepared =
      PrepareModule(*data, pCreateInfo->pCode, pCreateInfo->codeSize, "vkGetShaderModuleCreateInfoIdentifierEXT");
  if (!prepared.replaced) return data->dispatch.GetShaderModuleCreateInfoIdentifierEXT(device, pCreateInfo, pIdentifier);
  VkShaderModuleCreateInfo info = *pCreateInfo;
  info.pCode = prepared.words.data();
  info.codeSize = prepared.words.size() * 4;
  data->dispatch.GetShaderModuleCreateInfoIdentifierEXT(device, &info, pIdentifier);
}

namespace {

// Vulkan (vkCreateShadersEXT): an app finds the shader that failed by "locating the first
// VK_NULL_HANDLE", so the ones the layer refuses get VK_NULL_HANDLE and the others are
// created (review 130c39d finding 5; before, one refusal nulled all). Shaders created with
// VK_SHADER_CREATE_LINK_STAGE_BIT_EXT are linked together, so they fail together.
// ok[i]: whether info i was lowered. Calls `create` with the others, in order, places
// their handles, and returns the driver's error or ours.
template <typename Create>
VkResult CreateLoweredShaders(std::vector<VkShaderCreateInfoEXT>& infos, std::vector<bool> ok, VkResult failure,
                              VkShaderEXT* shaders, const Create& create) {
  const uint32_t count = static_cast<uint32_t>(infos.size());
  if (std::all_of(ok.begin(), ok.end(), [](bool b) { return b; })) return create(count, infos.data(), shaders);
  auto linked = [&](uint32_t i) { return (infos[i].flags & VK_SHADER_CREATE_LINK_STAGE_BIT_EXT) != 0; };
  bool linkFailed = false;
  for (uint32_t i = 0; i < count; ++i) linkFailed |= !ok[i] && linked(i);
  std::vector<VkShaderCreateInfoEXT> subset;
  std::vector<uint32_t> position;
  for (uint32_t i = 0; i < count; ++i)
    if (ok[i] && !(linkFailed && linked(i))) {
      position.push_back(i);
      subset.push_back(infos[i]);
    }
  for (uint32_t i = 0; i < count; ++i) shaders[i] = VK_NULL_HANDLE;
  std::vector<VkShaderEXT> created(subset.size(), VK_NULL_HANDLE);
  const VkResult result = subset.empty() ? VK_SUCCESS : create(static_cast<uint32_t>(subset.size()), subset.data(), created.data());
  for (size_t k = 0; k < subset.size(); ++k) shaders[position[k]] = created[k];
  return result < VK_SUCCESS ? result : failure;
}

}  // namespace

VKAPI_ATTR VkResult VKAPI_CALL CreateShadersEXT(VkDevice device, uint32_t count,
                                                const VkShaderCreateInfoEXT* pCreateInfos,
                                                const VkAllocationCallbacks* pAllocator, VkShaderEXT* pShaders) {
  DeviceData* data = GetDeviceData(device);
  if (!data) return VK_ERROR_DEVICE_LOST;
  if (!data->emulating) return data->dispatch.CreateShadersEXT(device, count, pCreateInfos, pAllocator, pShaders);
  std::vector<VkShaderCreateInfoEXT> infos(pCreateInfos, pCreateInfos + count);
  std::vector<std::shared_ptr<const CachedLowering>> code(count);
  std::vector<bool> ok(count, true);
  VkResult failure = VK_SUCCESS;
  for (uint32_t i = 0; i < count; ++i) {
    if (infos[i].codeType != VK_SHADER_CODE_TYPE_SPIRV_EXT) continue;  // binaries were lowered before
    // A shader object is a pipeline stage: its specialization and subgroup size are known now.
    const Scanned scanned = Scan(*data, infos[i].pCode, infos[i].codeSize, "vkCreateShadersEXT");
    VkResult result = scanned.result;
    if (result == VK_SUCCESS && scanned.needsLowering) {
      const StageLowering lowered = LowerForStage(*data, scanned.words, Hasher().Add(scanned.words).Finish(),
                                                  FactsOf(infos[i]), "vkCreateShadersEXT");
      result = lowered.result;
      if (result == VK_SUCCESS) {
        code[i] = lowered.code;
        infos[i].pCode = code[i]->words.data();
        infos[i].codeSize = code[i]->words.size() * 4;
      }
    }
    if (result != VK_SUCCESS) {
      ok[i] = false;
      if (failure == VK_SUCCESS) failure = result;
    }
  }
  const VkResult result = CreateLoweredShaders(infos, ok, failure, pShaders, [&](uint32_t n, const VkShaderCreateInfoEXT* p, VkShaderEXT* out) {
    return data->dispatch.CreateShadersEXT(device, n, p, pAllocator, out);
  });
  // Shaders the driver left VK_NULL_HANDLE whose code the layer lowered (not those it
  // refused itself: ok[i] false, no code).
  if (result < VK_SUCCESS)
    for (uint32_t i = 0; i < count; ++i)
      if (code[i] && ok[i] && pShaders[i] == VK_NULL_HANDLE)
        ReportFailedObject(*data, result, "vkCreateShadersEXT", "shader", i, infos[i].stage);
  return result;
}

}  // namespace coopmat::layer
