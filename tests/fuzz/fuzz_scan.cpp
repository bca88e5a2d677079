// libFuzzer target: the preamble scan the layer runs on every module.
#include <cstdlib>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto words = fuzz::Words(data, size);
  const coopmat::ScanResult scan = coopmat::ScanModule(words);
  if (!scan.ok && scan.error.empty()) std::abort();  // a refusal always says why
  return 0;
}
