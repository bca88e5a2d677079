// libFuzzer target: the IR parser and emitter. Property: a parsed module emits
// back to exactly the words it came from (the layer relies on untouched modules
// reaching the driver word for word), and a refusal says why.
#include <cstdlib>

#include "fuzz_common.h"
#include "ir.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto words = fuzz::Words(data, size);
  coopmat::ir::Module module;
  const std::string error = coopmat::ir::Parse(words, module);
  if (!error.empty()) return 0;
  if (coopmat::ir::Emit(module) != words) std::abort();
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned seed) {
  if (seed % 3 != 0)
    if (size_t n = fuzz::MutateInstructions(data, size, maxSize, seed)) return n;
  return LLVMFuzzerMutate(data, size, maxSize);
}
