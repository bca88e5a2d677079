// libFuzzer target: the whole lowering with the option sets the layer uses.
// Properties: every input is lowered or refused with a message; a refusal leaves
// no words; a lowered module parses; a spirv-val-valid input gives a
// spirv-val-valid output. The first input word selects the options (it is
// otherwise the magic number, which the seeds keep), so the corpus entries carry
// their option set: the input is the module with word 0 restored.
#include <cstdio>
#include <cstdlib>

#include "fuzz_common.h"
#include "ir.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

namespace {

[[noreturn]] void Violation(const char* what, const std::string& detail) {
  std::fprintf(stderr, "property violated: %s\n%s\n", what, detail.c_str());
  std::abort();
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
  const coopmat::LowerOptions options = fuzz::LayerOptions(selector);
  const coopmat::LowerResult result = coopmat::LowerModule(words, options);
  if (!result.ok) {
    if (result.error.empty()) Violation("a refusal without a message", "");
    if (!result.words.empty()) Violation("a refusal with words", result.error);
    return 0;
  }
  coopmat::ir::Module module;
  // With the input's allowance for the id bound: an output may be smaller than its
  // input (the extension's instructions dropped) and keeps the input's bound.
  if (std::string error = coopmat::ir::Parse(result.words, module, words.size()); !error.empty())
    Violation("the output does not parse", error);
  if (result.stats.OpsLowered() == 0) return 0;
  // spirv-val bounds the speed: the output first (a valid output satisfies the
  // property whatever the input), the input only to judge an invalid output.
  const std::string outputError = coopmat::ValidateModule(result.words);
  if (outputError.empty()) return 0;
  if (!coopmat::ValidateModule(words).empty()) return 0;  // invalid in: any output is fine
  Violation("valid in, invalid out", outputError);
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned seed) {
  if (size >= 4 && seed % 16 == 0) {  // move to another option set
    const uint32_t selector = seed >> 4;
    std::memcpy(data, &selector, 4);
    return size;
  }
  if (seed % 3 != 0)
    if (size_t n = fuzz::MutateInstructions(data, size, maxSize, seed)) return n;
  return LLVMFuzzerMutate(data, size, maxSize);
}
