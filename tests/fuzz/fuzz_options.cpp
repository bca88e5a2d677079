// The lower target's option sets: the built-in ones the layer passes on the drivers
// it knows, random register layouts for the ones it does not, and the pipeline-time
// specialization (fuzz_common.h describes the selector).
#include <algorithm>
#include <bit>
#include <map>
#include <random>

#include "fuzz_common.h"
#include "ir.h"
#include "random_layout.h"
#include "type_manager.h"

namespace fuzz {
namespace {

// A family's table at one subgroup size, built once: BuiltinLayouts enumerates and
// fits every slot of every shape (RADV's flexible shapes run to 64x64), which at every
// input cost the campaign nine tenths of its rate. The target runs on one thread.
const std::vector<coopmat::LinearLayout>& Table(coopmat::DriverFamily family, uint32_t subgroupSize) {
  static std::map<std::pair<coopmat::DriverFamily, uint32_t>, std::vector<coopmat::LinearLayout>> tables;
  auto [it, added] = tables.try_emplace({family, subgroupSize});
  if (added) it->second = coopmat::BuiltinLayouts(family, subgroupSize);
  return it->second;
}

// The option sets of a served device (selector bits 0-6): the shared-memory limit
// always, the minimum subgroup sizes of lavapipe (8), Intel-like (4... 8) and RADV
// wave32 (32), the built-in lavapipe and RADV register layouts (RADV also with
// wave32 and wave64 in one module and the measured costs, as at module time in the
// layer), NV flexible dimensions.
coopmat::LowerOptions BuiltinOptions(uint32_t selector, LayoutKind& kind) {
  coopmat::LowerOptions options;
  options.maxSharedMemoryBytes = (selector & 1) ? 65536 : 32768;
  static const uint32_t kMinSubgroups[] = {4, 8, 32, 64};
  options.minSubgroupSize = kMinSubgroups[(selector >> 1) & 3];
  const uint32_t types[][4] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 0, 1, 1}, {3, 3, 5, 5}, {7, 7, 9, 9}};
  kind = LayoutKind::None;
  switch ((selector >> 3) & 3) {
    case 0: break;  // nothing known: the scratch path everywhere
    case 1:         // lavapipe: 8-lane layouts, 8x8/16x16 types
      kind = LayoutKind::Builtin;
      options.minSubgroupSize = 8;
      options.layouts = Table(coopmat::DriverFamily::Lavapipe, 8);
      for (const auto& t : types) options.AddMatrixProperties(16, 16, 16, t[0], t[1], t[2], t[3]);
      break;
    case 2: {  // RADV: GFX11 wave32, or as the layer lowers at module time there (GFX11 or
               // GFX12, wave32 and wave64 in one module, the measured costs, shapes pending)
      kind = LayoutKind::Builtin;
      const bool gfx12 = (selector & 64) != 0;
      const auto family = gfx12 ? coopmat::DriverFamily::RadvGfx12 : coopmat::DriverFamily::RadvGfx11;
      options.minSubgroupSize = 32;
      options.layouts = Table(family, 32);
      if (selector & 32) {
        for (const auto& l : Table(family, 64)) options.layouts.push_back(l);
        options.subgroupSizes = {32, 64};
        options.specializationPending = true;
        coopmat::ApplyMeasuredCosts(family, options);
      }
      options.AddMatrixProperties(16, 16, 16, 0, 0, 1, 1);
      options.AddMatrixProperties(16, 16, 16, 0, 0, 0, 0);
      break;
    }
    default:  // NV flexible dimensions: granularities
      options.flexibleDimensions = true;
      options.flexibleMaxDimension = (selector & 32) ? 256 : 0;
      for (const auto& t : types) options.AddMatrixProperties(16, 16, 16, t[0], t[1], t[2], t[3]);
      break;
  }
  return options;
}

// A value for most SpecIds the module decorates (decoration groups included), none
// (the default) for the others: mostly sizes a shape may take, some raw bytes, in 1
// to 8 bytes as a VkSpecializationMapEntry may give them.
coopmat::Specialization RandomSpecialization(const coopmat::ir::Module& module, std::mt19937& random) {
  static constexpr uint64_t kValues[] = {0, 1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 0xffffffffu};
  coopmat::Specialization specialization;
  for (const coopmat::ir::AppliedDecoration& d : coopmat::ir::FindDecorations(module, spv::Decoration::SpecId)) {
    if (d.literals.empty()) continue;
    const uint32_t draw = random() % 4;
    if (draw == 0) continue;
    const uint64_t value = draw == 3 ? uint64_t{random()} << 32 | random() : kValues[random() % std::size(kValues)];
    std::vector<uint8_t> bytes(random() % 4 == 0 ? 1 + random() % 8 : 4);
    std::memcpy(bytes.data(), &value, bytes.size());  // little-endian hosts
    specialization.values[d.literals[0]] = std::move(bytes);
  }
  return specialization;
}

// A random valid layout at each of `sizes` for the matrix types of the module whose
// component type, sizes and Use are constants a driver could report (rows and cols
// powers of two), as a driver nobody surveyed may lay them out; some types get none,
// so their operations take the portable path beside register ones. Their types are
// added to the supported ones, as the driver would list them.
void AddRandomLayouts(std::span<const uint32_t> words, const std::vector<uint32_t>& sizes, std::mt19937& random,
                      coopmat::LowerOptions& options) {
  coopmat::ir::Module module;
  if (!coopmat::ir::Parse(words, module).empty()) return;
  try {
    const coopmat::TypeManager types(module);
    for (const coopmat::ir::Instruction& inst : module.globals) {
      const auto info = types.CoopMatInfo(inst.resultId);
      if (!info) continue;
      const auto component = types.VkComponentType(info->componentType);
      const auto rows = types.ConstantValue(info->rowsId), cols = types.ConstantValue(info->colsId);
      const auto use = types.ConstantValue(info->useId);
      if (!component || !rows || !cols || !use || *use > coopmat::kUseAccumulator) continue;
      if (!std::has_single_bit(*rows) || !std::has_single_bit(*cols) || random() % 8 == 0) continue;
      const uint32_t bits = static_cast<uint32_t>(std::countr_zero(*rows) + std::countr_zero(*cols));
      for (uint32_t size : sizes) {
        const coopmat::LayoutKey key{*component, *use, *rows, *cols, size};
        if (std::any_of(options.layouts.begin(), options.layouts.end(), [&](const auto& l) { return l.key == key; }))
          continue;
        // Replicated lanes (as RADV's A and B) where the matrix has fewer elements than
        // the subgroup has lanes, sometimes more; at most 1024 elements per lane (the
        // register path takes up to 256).
        const uint32_t laneBits = static_cast<uint32_t>(std::countr_zero(size));
        const uint32_t fewest = bits >= laneBits ? 0 : laneBits - bits;
        const uint32_t replicas = random() % 3 ? fewest : fewest + static_cast<uint32_t>(random() % (laneBits - fewest + 1));
        if (bits + replicas - laneBits > 10) continue;
        options.layouts.push_back(testsupport::RandomLayout(random, key, replicas, random() % 4 != 0));
      }
      options.supportedMatrixTypes.push_back({*component, *use, *rows, *cols});
    }
  } catch (...) {  // a TypeManager refusal of a malformed module: no layouts
  }
}

}  // namespace

LowerCase LayerCase(uint32_t selector, std::span<const uint32_t> words) {
  LowerCase c;
  c.options = BuiltinOptions(selector, c.layouts);
  std::mt19937 random((selector >> 8) & 0xfffff);
  c.pipelineTime = (selector >> 29) & 1;
  if (c.pipelineTime) {
    coopmat::ir::Module module;
    c.options.specialization =
        coopmat::ir::Parse(words, module).empty() ? RandomSpecialization(module, random) : coopmat::Specialization{};
    // A pipeline stage runs with one subgroup size; its shapes are settled.
    std::vector<uint32_t>& sizes = c.options.subgroupSizes;
    if (sizes.empty()) sizes = {c.options.layouts.empty() ? c.options.minSubgroupSize : c.options.layouts[0].key.subgroupSize};
    sizes = {sizes[random() % sizes.size()]};
    c.options.specializationPending = false;
  }
  if ((selector >> 28) & 1) {
    static constexpr uint32_t kSizes[] = {4, 8, 16, 32, 64};
    std::vector<uint32_t> sizes = {kSizes[random() % 5]};
    // At module time a device may run two sizes (RADV wave32 and wave64).
    if (!c.pipelineTime && random() % 3 == 0) sizes.push_back(kSizes[random() % 5]);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    c.layouts = LayoutKind::Random;
    c.options.layouts.clear();
    // Pipeline time: the layouts of the types the frozen module has.
    const std::vector<uint32_t> frozen =
        c.pipelineTime ? coopmat::SpecializeModule(words, *c.options.specialization).words : std::vector<uint32_t>{};
    AddRandomLayouts(c.pipelineTime ? std::span<const uint32_t>(frozen) : words, sizes, random, c.options);
    c.options.subgroupSizes = sizes;
    c.options.minSubgroupSize = sizes.front();
    c.options.specializationPending = !c.pipelineTime;  // as the layer lowers at module time
    c.options.registerMovesWithShuffles = random() % 2;
    // The exchange planner's AMD form (both halves across lane bits 0-3) and a round trip
    // that wins some moves, so both routes of each move are reached.
    c.options.foldedShuffleLaneBits = random() % 2 ? 0xF : 0;
    if (random() % 2)
      for (uint32_t size : sizes) c.options.roundTripCost[size] = static_cast<uint32_t>(random() % 32);
    c.options.subgroupExtendedTypes = random() % 2;
    c.options.sharedMemoryPool = random() % 2 ? 131072 : 0;
    c.options.sharedMemoryGranule = random() % 2 ? 1024 : 0;
  }
  return c;
}

}  // namespace fuzz
