// libFuzzer target: the whole lowering with the option sets the layer uses, random
// register layouts, and pipeline-time specializations (fuzz_common.h: LayerCase).
// Properties: every input is lowered or refused with a message; a refusal leaves no
// words; a spirv-val-valid input is never refused with an "internal error"; a
// lowered module parses and needs no further rewrite (ScanModule); a
// spirv-val-valid input gives a spirv-val-valid output. At
// pipeline time the input is the module as the specialization freezes it, and a
// valid module frozen with its default values must stay valid unless SPIRV-Tools' own
// freezing makes it invalid too (the defaults then make the input invalid: a module
// may be valid only for the values an app gives). The first input word
// selects the options (it is otherwise the magic number), so the corpus entries carry
// their option set: the input is the module with word 0 restored.
//
// At exit it prints how many runs each kind of option set had, how many of them
// lowered operations and how many lowered some in registers (the smoke run checks
// that the register path and the pipeline-time freezing were reached).
#include <array>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <random>

#include <spirv-tools/optimizer.hpp>

#include "fuzz_common.h"
#include "ir.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

namespace {

[[noreturn]] void Violation(const char* what, const std::string& detail) {
  std::fprintf(stderr, "property violated: %s\n%s\n", what, detail.c_str());
  std::abort();
}

struct KindCount {
  uint64_t runs = 0;
  uint64_t lowered = 0;    // lowered at least one operation
  uint64_t registers = 0;  // lowered at least one operation in registers
  uint64_t specialized = 0;  // pipeline time: the specialization gave a value to a SpecId
};

// Printed when libFuzzer exits normally (-runs or -max_total_time reached), and as
// "fuzz_lower kind (after N runs)" at every power of two from 2^14 runs on: an
// interrupted run (libFuzzer then skips the exit handlers) keeps its last figures.
struct Counts {
  std::array<std::array<KindCount, 3>, 2> kinds{};  // [pipelineTime][LayoutKind]
  uint64_t runs = 0;
  void Print(const char* label) const {
    static const char* const kLayouts[] = {"no layouts", "built-in layouts", "random layouts"};
    for (int time = 0; time < 2; ++time)
      for (int layouts = 0; layouts < 3; ++layouts) {
        const KindCount& k = kinds[time][layouts];
        std::fprintf(stderr, "%s: %s, %s: runs=%llu lowered=%llu register=%llu specialized=%llu\n", label,
                     time ? "pipeline time" : "module time", kLayouts[layouts], static_cast<unsigned long long>(k.runs),
                     static_cast<unsigned long long>(k.lowered), static_cast<unsigned long long>(k.registers),
                     static_cast<unsigned long long>(k.specialized));
      }
  }
  ~Counts() { Print("fuzz_lower kind"); }
};
Counts counts;

bool Valid(std::span<const uint32_t> words) { return coopmat::ValidateModule(words).empty(); }

// The module frozen with its default values by SPIRV-Tools (spirv-opt --freeze-spec-const
// --fold-spec-const-op-composite), the reference for SpecializeModule with no values.
// False where it cannot freeze the module: the property then holds the lowering to it.
bool InvalidFrozenBySpirvTools(std::span<const uint32_t> words) {
  spvtools::Optimizer optimizer(SPV_ENV_VULKAN_1_3);
  optimizer.SetMessageConsumer([](spv_message_level_t, const char*, const spv_position_t&, const char*) {});
  optimizer.RegisterPass(spvtools::CreateFreezeSpecConstantValuePass())
      .RegisterPass(spvtools::CreateFoldSpecConstantOpAndCompositePass());
  std::vector<uint32_t> frozen;
  return optimizer.Run(words.data(), words.size(), &frozen) && !Valid(frozen);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t selector = 0;
  std::memcpy(&selector, data, 4);
  selector = selector == 0x07230203u ? 1 : selector;  // a plain module: the default layer options
  // Word 0 holds the option set; the module sees the magic number there.
  std::vector<uint32_t> words = fuzz::Words(data, size);
  words[0] = 0x07230203u;
  if (counts.runs >= (1u << 14) && std::has_single_bit(counts.runs))
    counts.Print(("fuzz_lower kind (after " + std::to_string(counts.runs) + " runs)").c_str());
  ++counts.runs;
  const fuzz::LowerCase c = fuzz::LayerCase(selector, words);
  KindCount& count = counts.kinds[c.pipelineTime][static_cast<int>(c.layouts)];
  ++count.runs;
  count.specialized += c.options.specialization && !c.options.specialization->values.empty();
  const coopmat::LowerResult result = coopmat::LowerModule(words, c.options);
  // The module the lowering works on: at pipeline time, frozen (only computed when a
  // property needs to know whether it is valid; spirv-val bounds the speed).
  auto input = [&] {
    return c.options.specialization ? coopmat::SpecializeModule(words, *c.options.specialization).words : words;
  };
  if (!result.ok) {
    if (result.error.empty()) Violation("a refusal without a message", "");
    if (!result.words.empty()) Violation("a refusal with words", result.error);
    if (result.error.rfind("internal error", 0) == 0 && Valid(input()))
      Violation("a valid input refused with an internal error", result.error);
    return 0;
  }
  coopmat::ir::Module module;
  // With the input's allowance for the id bound: an output may be smaller than its
  // input (the extension's instructions dropped) and keeps the input's bound.
  if (std::string error = coopmat::ir::Parse(result.words, module, words.size()); !error.empty())
    Violation("the output does not parse", error);
  // The layer hands the output to a driver without the extension.
  if (const coopmat::ScanResult scan = coopmat::ScanModule(result.words); !scan.ok || scan.usage.NeedsLowering())
    Violation("the output still needs the rewrite", scan.error);
  if (c.options.specialization && !c.options.specialization->values.empty()) {
    // Freezing with the defaults is what a driver does without VkSpecializationInfo:
    // a valid module stays valid, unless the defaults themselves make it invalid
    // (e.g. a conversion between matrices whose rows are different spec constants).
    // Checked where the lowering succeeded, where inputs are mostly valid.
    const coopmat::LowerResult defaults = coopmat::SpecializeModule(words, {});
    if (defaults.ok && !Valid(defaults.words) && Valid(words) && !InvalidFrozenBySpirvTools(words))
      Violation("a valid module frozen with its default values does not validate", coopmat::ValidateModule(defaults.words));
  }
  if (result.stats.OpsLowered() == 0) return 0;
  ++count.lowered;
  count.registers += result.stats.registerPath > 0;
  // The output first (a valid output satisfies the property whatever the input), the
  // input only to judge an invalid output.
  const std::string outputError = coopmat::ValidateModule(result.words);
  if (outputError.empty()) return 0;
  if (!Valid(input())) return 0;  // invalid in: any output is fine
  Violation("valid in, invalid out", outputError);
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned seed) {
  if (size >= 4 && seed % 16 == 0) {  // move to another option set
    std::mt19937 random(seed);
    uint32_t selector = 0;
    std::memcpy(&selector, data, 4);
    switch (random() % 3) {
      case 0: selector = random(); break;                                          // any
      case 1: selector = (selector & 0xf00000ffu) | (random() & 0x0fffff00u); break;  // another variation
      default: selector ^= 1u << (28 + random() % 2); break;  // random layouts, pipeline time on or off
    }
    std::memcpy(data, &selector, 4);
    return size;
  }
  if (seed % 3 != 0)
    if (size_t n = fuzz::MutateInstructions(data, size, maxSize, seed)) return n;
  return LLVMFuzzerMutate(data, size, maxSize);
}
