// coopmat-lower in.spv [-o out.spv] [--glsl out.glsl] [--explain] [--validate] [--stats]
//               [--min-subgroup-size N] [--max-shared-memory BYTES]
//               [--matrix-properties MxNxK:A,B,C,R]... [--flexible-dimensions [MAX]]
//               [--layouts FILE]... [--builtin-layouts FAMILY:SUBGROUP]...
//               [--subgroup-sizes N[,N...]] [--specialize ID=VALUE]... [--pending]
// coopmat-lower --batch LIST
// Lowers SPV_EXT_cooperative_matrix_maintenance1 to SPV_KHR_cooperative_matrix.
// --matrix-properties describes one VkCooperativeMatrixPropertiesKHR of the target
// driver (component types f16 f32 f64 s8 s16 s32 s64 u8 u16 u32 u64 bf16 e4m3 e5m2, e.g.
// 8x8x8:u8,u8,u32,u32); without any, conversions never add a matrix type of their own.
// --layouts reads register layouts in the text form of coopmat/layout.h (what
// coopmat-info --layouts writes); --builtin-layouts adds a driver family's
// built-in ones (lavapipe, radv-gfx11, radv-gfx12, cdna-mfma, nvidia-mma) at a subgroup size.
// With layouts, operations on those exact types are lowered in registers.
// --subgroup-sizes lists the sizes pipelines may run with (register code for each,
// selected by SubgroupSize). --specialize freezes specialization constants first, as
// the layer does at pipeline creation (VALUE: an integer, a float with a '.', true or
// false; SpecIds not given keep their defaults). --pending lowers a module whose
// shapes are specialization constants the way the layer does at module creation.
// --glsl writes the lowered module as Vulkan GLSL (SPIRV-Cross); --explain prints
// each lowered operation, its path (and why portable), scratch and rewrite time.
// --batch runs every line of LIST (arguments as above, separated by spaces; no
// quoting) as one command, in this one process, and prints "exit STATUS: LINE" for
// each: where starting a process is dear (Wine runs one in 60-150 ms), many
// lowerings cost one start. It exits 0 when every line did.
#include <charconv>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "coopmat/inspect.h"
#include "coopmat/layout.h"
#include "coopmat/lower.h"

namespace {

int Usage() {
  std::cerr << "usage: coopmat-lower in.spv [-o out.spv] [--glsl out.glsl] [--explain] [--validate] [--stats]\n"
               "                     [--min-subgroup-size N] [--max-shared-memory BYTES]\n"
               "                     [--matrix-properties MxNxK:A,B,C,R]... [--flexible-dimensions [MAX]]\n"
               "                     [--layouts FILE]... [--builtin-layouts FAMILY:SUBGROUP]...\n"
               "                     [--subgroup-sizes N[,N...]] [--specialize ID=VALUE]... [--pending]\n"
               "       coopmat-lower --batch LIST\n";
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

// "f16" -> VK_COMPONENT_TYPE_FLOAT16_KHR, ... "bf16", "e4m3", "e5m2": the layout text's names.
bool ParseComponent(const std::string& text, uint32_t& out) {
  const std::optional<uint32_t> type = coopmat::ComponentTypeByName(text);
  if (type) out = *type;
  return type.has_value();
}

// "MxNxK:A,B,C,R"
bool ParseProperties(const std::string& text, coopmat::LowerOptions& options) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  std::vector<std::string> dims, types;
  auto split = [](const std::string& s, char sep, std::vector<std::string>& out) {
    size_t begin = 0;
    for (size_t end; (end = s.find(sep, begin)) != std::string::npos; begin = end + 1) out.push_back(s.substr(begin, end - begin));
    out.push_back(s.substr(begin));
  };
  split(text.substr(0, colon), 'x', dims);
  split(text.substr(colon + 1), ',', types);
  if (dims.size() != 3 || types.size() != 4) return false;
  uint32_t d[3], t[4];
  for (int i = 0; i < 3; ++i)
    if (!ParseUint(dims[i], d[i]) || d[i] == 0) return false;
  for (int i = 0; i < 4; ++i)
    if (!ParseComponent(types[i], t[i])) return false;
  options.AddMatrixProperties(d[0], d[1], d[2], t[0], t[1], t[2], t[3]);
  return true;
}

bool WriteFile(const std::string& path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  return static_cast<bool>(out);
}

// One command's arguments (without the program name): the exit status it has.
int Lower(const std::vector<std::string>& argv) {
  const size_t argc = argv.size();
  std::string input, output, glsl;
  bool stats = false, explain = false;
  coopmat::LowerOptions options;
  for (size_t i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string text;
    if (arg == "-o") {
      if (!value(output)) return Usage();
    } else if (arg == "--glsl") {
      if (!value(glsl)) return Error("--glsl needs a file");
    } else if (arg == "--explain") {
      explain = true;
    } else if (arg == "--validate") {
      options.validate = true;
    } else if (arg == "--stats") {
      stats = true;
    } else if (arg == "--min-subgroup-size") {
      if (!value(text) || !ParseUint(text, options.minSubgroupSize) || options.minSubgroupSize == 0)
        return Error("--min-subgroup-size needs a positive integer");
    } else if (arg == "--max-shared-memory") {
      if (!value(text) || !ParseUint(text, options.maxSharedMemoryBytes)) return Error("--max-shared-memory needs an integer");
    } else if (arg == "--matrix-properties") {
      if (!value(text) || !ParseProperties(text, options))
        return Error("--matrix-properties needs MxNxK:A,B,C,R with component types f16 f32 f64 s8 s16 s32 s64 u8 u16 u32 u64 bf16 e4m3 e5m2");
    } else if (arg == "--flexible-dimensions") {
      options.flexibleDimensions = true;
      if (i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9' &&
          !ParseUint(argv[++i], options.flexibleMaxDimension))
        return Error("--flexible-dimensions takes an optional integer maximum dimension");
    } else if (arg == "--layouts") {
      if (!value(text)) return Error("--layouts needs a file");
      std::ifstream file(text, std::ios::binary);
      if (!file) return Error("cannot open " + text);
      const std::string contents((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
      coopmat::ParseResult parsed = coopmat::ParseLayouts(contents);
      if (!parsed.ok) return Error(text + ": " + parsed.error);
      options.layouts.insert(options.layouts.end(), parsed.layouts.begin(), parsed.layouts.end());
    } else if (arg == "--builtin-layouts") {
      uint32_t size = 0;
      const size_t colon = value(text) ? text.find(':') : std::string::npos;
      bool found = false;
      if (colon != std::string::npos && ParseUint(text.substr(colon + 1), size))
        if (const auto family = coopmat::DriverFamilyByName(text.substr(0, colon))) {
          const auto builtin = coopmat::BuiltinLayouts(*family, size);
          options.layouts.insert(options.layouts.end(), builtin.begin(), builtin.end());
          coopmat::ApplyMeasuredCosts(*family, options);  // lower as the layer would for that family
          found = true;
        }
      if (!found) return Error("--builtin-layouts needs FAMILY:SUBGROUP with FAMILY one of " + coopmat::DriverFamilyNames());
    } else if (arg == "--subgroup-sizes") {
      if (!value(text)) return Error("--subgroup-sizes needs N[,N...]");
      for (size_t begin = 0; begin <= text.size();) {
        const size_t end = std::min(text.find(',', begin), text.size());
        uint32_t size = 0;
        if (!ParseUint(text.substr(begin, end - begin), size) || size == 0) return Error("--subgroup-sizes needs N[,N...]");
        options.subgroupSizes.push_back(size);
        begin = end + 1;
      }
    } else if (arg == "--specialize") {
      const size_t equals = value(text) ? text.find('=') : std::string::npos;
      uint32_t id = 0;
      if (equals == std::string::npos || !ParseUint(text.substr(0, equals), id))
        return Error("--specialize needs ID=VALUE");
      const std::string v = text.substr(equals + 1);
      // Integers take 8 bytes, of which a constant reads as many as its type is wide, so
      // 64-bit values (and a double's bits, as dump_dir's .specialization.txt writes
      // them) arrive whole; a float with a '.' is a 32-bit float.
      uint64_t bits = 0;
      size_t size = 8;
      const char* end = v.data() + v.size();
      if (v == "true" || v == "false") {
        bits = v == "true";
      } else if (v.find('.') != std::string::npos) {
        float f = 0;
        if (auto [ptr, ec] = std::from_chars(v.data(), end, f); ec != std::errc() || ptr != end)
          return Error("--specialize: bad value " + v);
        uint32_t floatBits = 0;
        std::memcpy(&floatBits, &f, 4);
        bits = floatBits;
        size = 4;
      } else if (!v.empty() && v[0] == '-') {
        int64_t signedValue = 0;
        if (auto [ptr, ec] = std::from_chars(v.data(), end, signedValue); ec != std::errc() || ptr != end)
          return Error("--specialize: bad value " + v);
        bits = static_cast<uint64_t>(signedValue);
      } else if (auto [ptr, ec] = std::from_chars(v.data(), end, bits); ec != std::errc() || ptr != end) {
        return Error("--specialize: bad value " + v);
      }
      if (!options.specialization) options.specialization.emplace();
      std::vector<uint8_t>& bytes = options.specialization->values[id];
      bytes.resize(size);
      std::memcpy(bytes.data(), &bits, size);  // little-endian hosts, as the layer
    } else if (arg == "--pending") {
      options.specializationPending = true;
    } else if (arg == "--batch") {
      return Error("--batch LIST stands alone");
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
  if (input.empty() || (output.empty() && glsl.empty() && !explain)) return Usage();

  std::ifstream in(input, std::ios::binary);
  if (!in) return Error("cannot open " + input);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() % 4 != 0) return Error(input + ": size " + std::to_string(bytes.size()) + " is not a multiple of 4 bytes");
  std::vector<uint32_t> words(bytes.size() / 4);
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(words.data()));

  const coopmat::LowerResult result = coopmat::LowerModule(words, options);
  if (explain) std::fputs(coopmat::ExplainLowering(result, input).c_str(), stdout);
  if (!result.ok) return Error(input + ": " + result.error);
  if (!output.empty() && !WriteFile(output, result.words.data(), result.words.size() * 4)) return Error("cannot write " + output);
  if (!glsl.empty()) {
    const coopmat::TextResult text = coopmat::ToVulkanGlsl(result.words);
    if (!text.ok) return Error("SPIRV-Cross cannot write GLSL for the lowered module: " + text.error);
    if (!WriteFile(glsl, text.text.data(), text.text.size())) return Error("cannot write " + glsl);
  }
  if (stats) {
    const auto& s = result.stats;
    std::printf("ops lowered %u (getCoordinate %u, convertUse %u, convert %u, transpose %u, perElement %u, reduce %u; in registers %u), "
                "words in %zu, words out %zu, %.1f us, scratch %u bytes per subgroup%s\n",
                s.OpsLowered(), s.getCoordinate, s.convertUse, s.convert, s.transpose, s.perElement, s.reduce, s.registerPath, s.wordsIn,
                s.wordsOut, s.microseconds, s.scratchBytesPerSubgroup,
                result.dependsOnSpecialization ? ", depends on specialization" : "");
  }
  return 0;
}

int LowerBatch(const std::string& list) {
  std::ifstream file(list);
  if (!file) return Error("cannot open " + list);
  int status = 0;
  size_t commands = 0;
  for (std::string line; std::getline(file, line);) {
    std::istringstream words(line);
    const std::vector<std::string> args{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    if (args.empty()) continue;
    const int lineStatus = Lower(args);
    std::cout << "exit " << lineStatus << ": " << line << std::endl;  // flushed: a crash later keeps what came before
    status = std::max(status, lineStatus);
    ++commands;
  }
  if (commands == 0) return Error(list + " has no commands");
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--batch") == 0) return LowerBatch(argv[2]);
  return Lower(std::vector<std::string>(argv + 1, argv + argc));
}
