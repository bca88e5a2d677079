// coopmat-lower in.spv -o out.spv [--validate] [--stats] [--min-subgroup-size N] [--max-shared-memory BYTES]
// Lowers SPV_EXT_cooperative_matrix_maintenance1 to SPV_KHR_cooperative_matrix.
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "coopmat/lower.h"

namespace {

int Usage() {
  std::cerr << "usage: coopmat-lower in.spv -o out.spv [--validate] [--stats] [--min-subgroup-size N] [--max-shared-memory BYTES]\n";
  return 2;
}

int Error(const std::string& message) {
  std::cerr << "coopmat-lower: " << message << "\n";
  return 1;
}

bool ParseUint(const std::string& text, uint32_t& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

}  // namespace

int main(int argc, char** argv) {
  std::string input, output;
  bool stats = false;
  coopmat::LowerOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string text;
    if (arg == "-o") {
      if (!value(output)) return Usage();
    } else if (arg == "--validate") {
      options.validate = true;
    } else if (arg == "--stats") {
      stats = true;
    } else if (arg == "--min-subgroup-size") {
      if (!value(text) || !ParseUint(text, options.minSubgroupSize) || options.minSubgroupSize == 0)
        return Error("--min-subgroup-size needs a positive integer");
    } else if (arg == "--max-shared-memory") {
      if (!value(text) || !ParseUint(text, options.maxSharedMemoryBytes)) return Error("--max-shared-memory needs an integer");
    } else if (arg == "-h" || arg == "--help") {
      Usage();
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return Error("unknown option " + arg);
    } else if (input.empty()) {
      input = arg;
    } else {
      return Usage();
    }
  }
  if (input.empty() || output.empty()) return Usage();

  std::ifstream in(input, std::ios::binary);
  if (!in) return Error("cannot open " + input);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() % 4 != 0) return Error(input + ": size " + std::to_string(bytes.size()) + " is not a multiple of 4 bytes");
  std::vector<uint32_t> words(bytes.size() / 4);
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(words.data()));

  const coopmat::LowerResult result = coopmat::LowerModule(words, options);
  if (!result.ok) return Error(input + ": " + result.error);
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(result.words.data()), static_cast<std::streamsize>(result.words.size() * 4));
  if (!out) return Error("cannot write " + output);
  if (stats) {
    const auto& s = result.stats;
    std::printf("ops lowered %u (getCoordinate %u, convertUse %u, convert %u, transpose %u, perElement %u, reduce %u), "
                "words in %zu, words out %zu, %.1f us, scratch %u bytes per subgroup\n",
                s.OpsLowered(), s.getCoordinate, s.convertUse, s.convert, s.transpose, s.perElement, s.reduce, s.wordsIn,
                s.wordsOut, s.microseconds, s.scratchBytesPerSubgroup);
  }
  return 0;
}
