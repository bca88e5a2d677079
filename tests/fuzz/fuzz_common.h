// Shared pieces of the libFuzzer targets: bytes to words, the option sets the
// layer really passes to LowerModule (fuzz_options.cpp), and an instruction-level
// mutator that keeps the word-count framing intact so mutations reach past the
// parser (fuzz_mutator.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "coopmat/lower.h"

namespace fuzz {

inline std::vector<uint32_t> Words(const uint8_t* data, size_t size) {
  std::vector<uint32_t> words(size / 4);
  if (!words.empty()) std::memcpy(words.data(), data, words.size() * 4);
  return words;
}

// How the lower target lowers one input: the option set, and what kind of run it is
// (for the counts it prints at exit and the smoke run checks).
enum class LayoutKind { None, Builtin, Random };
struct LowerCase {
  coopmat::LowerOptions options;
  LayoutKind layouts = LayoutKind::None;
  bool pipelineTime = false;  // options.specialization is set (one subgroup size)
};

// The lower target's first input word (the magic number there means selector 1):
//   bit 0       shared-memory limit 64 KiB, else 32 KiB
//   bits 1-2    minimum subgroup size 4, 8, 32 or 64
//   bits 3-4    what is known of the driver: 0 nothing (the scratch path everywhere);
//               1 lavapipe's built-in layouts and 16x16 types; 2 RADV's built-in layouts
//               (bit 6: GFX12, else GFX11; bit 5: wave32 and wave64 in one module with the
//               measured costs, as the layer lowers at module time); 3 NV flexible
//               dimensions (bit 5: with a maximum)
//   bits 8-27   the variation: seeds the random layouts and specialization values below
//   bit 28      random layouts: every matrix type of the module with power-of-two sizes
//               gets a random valid GF(2)-linear layout (testsupport::RandomLayout) at one
//               or two subgroup sizes drawn from 4..64, instead of a built-in table
//   bit 29      pipeline time: a specialization with a value (or none, the default) for
//               every SpecId of the module, frozen before lowering, and a single subgroup
//               size, as the layer lowers each pipeline stage
// Inputs found before bits 28 and 29 existed keep their option sets.
LowerCase LayerCase(uint32_t selector, std::span<const uint32_t> words);

// Instruction-level mutation of a SPIR-V module (words after the header are
// framed by their word counts). Returns the new size in bytes, or 0 when the
// input is not framed (the caller then falls back to byte mutation).
size_t MutateInstructions(uint8_t* data, size_t size, size_t maxSize, unsigned seed);

}  // namespace fuzz
