// Shared pieces of the libFuzzer targets: bytes to words, the option sets the
// layer really passes to LowerModule, and an instruction-level mutator that keeps
// the word-count framing intact so mutations reach past the parser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "coopmat/layout.h"
#include "coopmat/lower.h"

namespace fuzz {

inline std::vector<uint32_t> Words(const uint8_t* data, size_t size) {
  std::vector<uint32_t> words(size / 4);
  if (!words.empty()) std::memcpy(words.data(), data, words.size() * 4);
  return words;
}

// The option sets of a served device: the shared-memory limit always, the minimum
// subgroup sizes of lavapipe (8), Intel-like (4... 8) and RADV wave32 (32), the
// built-in lavapipe and RADV register layouts (RADV also with wave32 and wave64 in
// one module and the measured costs, as at module time in the layer), NV flexible
// dimensions.
inline coopmat::LowerOptions LayerOptions(uint32_t selector) {
  coopmat::LowerOptions options;
  options.maxSharedMemoryBytes = (selector & 1) ? 65536 : 32768;
  static const uint32_t kMinSubgroups[] = {4, 8, 32, 64};
  options.minSubgroupSize = kMinSubgroups[(selector >> 1) & 3];
  const uint32_t types[][4] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 0, 1, 1}, {3, 3, 5, 5}, {7, 7, 9, 9}};
  switch ((selector >> 3) & 3) {
    case 0: break;  // nothing known: the scratch path everywhere
    case 1:         // lavapipe: 8-lane layouts, 8x8/16x16 types
      options.minSubgroupSize = 8;
      options.layouts = coopmat::BuiltinLayouts(coopmat::DriverFamily::Lavapipe, 8);
      for (const auto& t : types) options.AddMatrixProperties(16, 16, 16, t[0], t[1], t[2], t[3]);
      break;
    case 2: {  // RADV: GFX11 wave32, or as the layer lowers at module time there (GFX11 or
               // GFX12, wave32 and wave64 in one module, the measured costs, shapes pending)
      const bool gfx12 = (selector & 64) != 0;
      const auto family = gfx12 ? coopmat::DriverFamily::RadvGfx12 : coopmat::DriverFamily::RadvGfx11;
      options.minSubgroupSize = 32;
      options.layouts = coopmat::BuiltinLayouts(family, 32);
      if (selector & 32) {
        for (const auto& l : coopmat::BuiltinLayouts(family, 64)) options.layouts.push_back(l);
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

// Instruction-level mutation of a SPIR-V module (words after the header are
// framed by their word counts). Returns the new size in bytes, or 0 when the
// input is not framed (the caller then falls back to byte mutation).
size_t MutateInstructions(uint8_t* data, size_t size, size_t maxSize, unsigned seed);

}  // namespace fuzz
