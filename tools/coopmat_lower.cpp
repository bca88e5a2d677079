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
// the layer does at pipeline creation (VALUE as the constant's type reads it: an integer
// that fits, a float's bits for a float constant, a decimal with a '.', true or false;
// SpecIds not given keep their defaults). --pending lowers a module whose
// shapes are specialization constants the way the layer does at module creation.
// --glsl writes the lowered module as Vulkan GLSL (SPIRV-Cross); --explain prints
// each lowered operation, its path (and why portable), scratch and rewrite time.
// --batch runs every line of LIST (arguments as above, separated by spaces; no
// quoting) as one command, in this one process, and prints "exit STATUS: LINE" for
// each: where starting a process is dear (Wine runs one in 60-150 ms), many
// lowerings cost one start; '#' starts a comment line. It exits 0 when every line did.
// Exit status: 0 done, 1 a module or file failed (no output written), 2 bad arguments
// (among them an output that is standard output beside --explain, --stats or --batch,
// which write their text there).
#include <charconv>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
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

constexpr const char* kUsage =
    "usage: coopmat-lower in.spv [-o out.spv] [--glsl out.glsl] [--explain] [--validate] [--stats]\n"
    "                     [--min-subgroup-size N] [--max-shared-memory BYTES]\n"
    "                     [--matrix-properties MxNxK:A,B,C,R]... [--flexible-dimensions [MAX]]\n"
    "                     [--layouts FILE]... [--builtin-layouts FAMILY:SUBGROUP]...\n"
    "                     [--subgroup-sizes N[,N...]] [--specialize ID=VALUE]... [--pending]\n"
    "       coopmat-lower --batch LIST\n"
    "Lowers SPV_EXT_cooperative_matrix_maintenance1 operations to SPV_KHR_cooperative_matrix (README.md,\n"
    "\"coopmat-lower\", has every option). Exit status: 0 done, 1 the module or a file failed, 2 bad arguments.\n";

// A mistake on the command line: what is wrong, then the usage (exit 2).
int Usage(const std::string& problem) {
  std::cerr << "coopmat-lower: " << problem << "\n" << kUsage;
  return 2;
}

int Error(const std::string& message) {
  std::cerr << "coopmat-lower: " << message << "\n";
  return 1;
}

// A whole file, or the reason it cannot be read (a folder opens on POSIX and then fails to read).
bool ReadWhole(const std::string& path, std::string& contents, std::string& problem) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    problem = "cannot read " + path + ": it is a folder";
    return false;
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    problem = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) {
    problem = "cannot read " + path;
    return false;
  }
  contents = std::move(text).str();
  return true;
}

// Writes every (path, contents) whole or none: each to a file beside its path first, renamed
// over the path only once all are written, so a failed write (a full disk, a missing
// folder) leaves every old file as it was, not truncated or half replaced.
// A file descriptor named as a file (/dev/stdout, /dev/fd/N, /proc/self/fd/N) is written in
// place whatever it is open on: renaming over its name would replace /dev/stdout itself
// (as root) or fail. Through any other symbolic link, the file it leads to is replaced and
// the link kept.
bool NamesFileDescriptor(const std::string& path) {
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"})
    if (path.rfind(prefix, 0) == 0) return true;
  return path == "/dev/stdout" || path == "/dev/stderr";
}

bool WriteAllOrNone(const std::vector<std::pair<std::string, std::string>>& files, std::string& problem) {
  // Per file, the temporary file written beside the file it replaces, and that file; the
  // temporary is empty for a device, pipe or descriptor, which is written as it is.
  std::vector<std::filesystem::path> temporaries(files.size()), replaced(files.size());
  auto fail = [&](std::string why) {
    problem = std::move(why);
    std::error_code ignored;
    for (const std::filesystem::path& temporary : temporaries)
      if (!temporary.empty()) std::filesystem::remove(temporary, ignored);
    return false;
  };
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& [path, data] = files[i];
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(status)) return fail("cannot write " + path + ": it is a folder");
    const bool direct =
        NamesFileDescriptor(path) || (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status));
    replaced[i] = path;
    if (!direct && std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec))) {
      replaced[i] = std::filesystem::weakly_canonical(path, ec);
      if (ec) return fail("cannot write " + path + ": the link leads nowhere (" + ec.message() + ")");
    }
    std::filesystem::path target = replaced[i];
    if (!direct) target += ".coopmat-lower-partial";
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    if (!out) return fail("cannot write " + path + ": " + std::strerror(errno));
    if (!direct) temporaries[i] = target;
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.close();
    if (!out) return fail("cannot write " + path + " (" + std::to_string(data.size()) + " bytes)");
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (temporaries[i].empty()) continue;
    const std::filesystem::path& target = replaced[i];
    std::error_code ec;
    std::filesystem::rename(temporaries[i], target, ec);
#ifdef _WIN32
    if (ec) {  // a runtime whose rename does not replace an existing file
      std::error_code again;
      std::filesystem::remove(target, again);
      std::filesystem::rename(temporaries[i], target, ec);
    }
#endif
    if (ec) return fail("cannot write " + files[i].first + ": " + ec.message());
    temporaries[i].clear();  // in place: nothing left to remove
  }
  return true;
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

// Vulkan's subgroup sizes: powers of two from 1 to 128.
bool SubgroupSize(uint32_t size) { return size >= 1 && size <= 128 && (size & (size - 1)) == 0; }

// A layout source's layouts into `into`: an exact repeat is dropped, a second, different
// layout for a key is an error naming both sources (the lowering would take the first).
bool AddLayouts(const std::vector<coopmat::LinearLayout>& layouts, const std::string& source,
                std::vector<coopmat::LinearLayout>& into, std::vector<std::string>& sources, std::string& problem) {
  for (const coopmat::LinearLayout& layout : layouts) {
    if (const std::optional<size_t> first = coopmat::AddDistinctLayout(into, layout)) {
      problem = source + ": a second, different layout for " + coopmat::ToString(layout.key) + " (the first from " +
                sources[*first] + ")";
      return false;
    }
    sources.resize(into.size(), source);
  }
  return true;
}

// The bytes a VkSpecializationInfo would give for `text` for a constant of `type`: an
// integer that fits the constant's width (for a float constant, its bits, as the layer's
// .specialization.txt writes them), a decimal with a '.' for a 32- or 64-bit float,
// true or false (or 0, 1) for a bool. Empty after setting `problem`.
std::vector<uint8_t> SpecializationBytes(const std::string& text, const coopmat::SpecConstantType& type, std::string& problem) {
  using Kind = coopmat::SpecConstantType::Kind;
  const char* end = text.data() + text.size();
  auto bytesOf = [](uint64_t bits, size_t size) {
    std::vector<uint8_t> bytes(size);
    std::memcpy(bytes.data(), &bits, size);  // little-endian hosts, as the layer
    return bytes;
  };
  if (type.kind == Kind::Bool) {
    if (text == "true" || text == "1") return bytesOf(1, 4);
    if (text == "false" || text == "0") return bytesOf(0, 4);
    problem = "is a bool: give true or false";
    return {};
  }
  if (text.find('.') != std::string::npos) {
    if (type.kind != Kind::Float) {
      problem = "is an integer: a value with a '.' is a float";
      return {};
    }
    double value = 0;
    if (auto [ptr, ec] = std::from_chars(text.data(), end, value); ec != std::errc() || ptr != end) {
      problem = "bad value " + text;
      return {};
    }
    if (type.width == 64) {
      uint64_t bits = 0;
      std::memcpy(&bits, &value, 8);
      return bytesOf(bits, 8);
    }
    if (type.width == 32) {
      const float narrow = static_cast<float>(value);
      if (std::isinf(narrow) && !std::isinf(value)) {
        problem = text + " is beyond a 32-bit float";
        return {};
      }
      uint32_t bits = 0;
      std::memcpy(&bits, &narrow, 4);
      return bytesOf(bits, 4);
    }
    problem = "is a " + std::to_string(type.width) + "-bit float: give its bits as an integer";
    return {};
  }
  const size_t size = type.width / 8;
  if (size == 0 || size > 8) {
    problem = "has a " + std::to_string(type.width) + "-bit type";
    return {};
  }
  uint64_t bits = 0;
  if (!text.empty() && text[0] == '-') {
    int64_t value = 0;
    const int64_t lowest = type.width == 64 ? INT64_MIN : -(int64_t{1} << (type.width - 1));
    if (auto [ptr, ec] = std::from_chars(text.data(), end, value); ec != std::errc() || ptr != end) {
      problem = "bad value " + text;
      return {};
    }
    if (type.kind != Kind::Int || !type.isSigned || value < lowest) {
      problem = text + " does not fit its " + std::to_string(type.width) + "-bit " +
                (type.kind == Kind::Float ? "float's bits" : type.isSigned ? "signed integer" : "unsigned integer");
      return {};
    }
    bits = static_cast<uint64_t>(value);
  } else {
    if (auto [ptr, ec] = std::from_chars(text.data(), end, bits); ec != std::errc() || ptr != end) {
      problem = "bad value " + text;
      return {};
    }
    // A signed constant also takes its bits as an unsigned number (.specialization.txt).
    if (type.width < 64 && bits >> type.width) {
      problem = text + " does not fit its " + std::to_string(type.width) + "-bit " +
                (type.kind == Kind::Float ? "float's bits" : "integer");
      return {};
    }
  }
  return bytesOf(bits, size);
}

// Whether writing `path` writes this process's standard output (a name for it, or the
// file or pipe it is redirected to), which --explain, --stats and --batch's lines also
// write: the module would come out mixed with text. /dev/null takes any mix.
bool IsStandardOutput(const std::string& path) {
  if (path == "/dev/stdout" || path == "/dev/fd/1" || path == "/proc/self/fd/1") return true;
#ifndef _WIN32
  std::error_code ec, nullEc;
  return std::filesystem::equivalent(path, "/dev/stdout", ec) && !std::filesystem::equivalent(path, "/dev/null", nullEc);
#else
  return false;
#endif
}

// One command's arguments (without the program name): the exit status it has. In a
// --batch line (`inBatch`), standard output carries the lines' statuses.
int LowerCommand(const std::vector<std::string>& argv, bool inBatch) {
  const size_t argc = argv.size();
  std::string input, output, glsl;
  bool stats = false, explain = false;
  coopmat::LowerOptions options;
  std::vector<std::string> layoutSources;                   // per options.layouts entry: where it came from
  std::vector<std::pair<uint32_t, std::string>> specialize;  // --specialize ID=VALUE, typed once the module is read
  for (size_t i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc || argv[i + 1].empty()) return false;
      out = argv[++i];
      return true;
    };
    std::string text, problem;
    if (arg == "-o") {
      if (!output.empty()) return Usage("-o given twice");
      if (!value(output)) return Usage("-o needs a file");
    } else if (arg == "--glsl") {
      if (!glsl.empty()) return Usage("--glsl given twice");
      if (!value(glsl)) return Usage("--glsl needs a file");
    } else if (arg == "--explain") {
      explain = true;
    } else if (arg == "--validate") {
      options.validate = true;
    } else if (arg == "--stats") {
      stats = true;
    } else if (arg == "--min-subgroup-size") {
      if (!value(text) || !ParseUint(text, options.minSubgroupSize) || !SubgroupSize(options.minSubgroupSize))
        return Usage("--min-subgroup-size needs a subgroup size (a power of two from 1 to 128)");
    } else if (arg == "--max-shared-memory") {
      if (!value(text) || !ParseUint(text, options.maxSharedMemoryBytes)) return Usage("--max-shared-memory needs an integer");
    } else if (arg == "--matrix-properties") {
      if (!value(text) || !ParseProperties(text, options))
        return Usage("--matrix-properties needs MxNxK:A,B,C,R with component types f16 f32 f64 s8 s16 s32 s64 u8 u16 u32 u64 bf16 e4m3 e5m2");
    } else if (arg == "--flexible-dimensions") {
      options.flexibleDimensions = true;
      // The optional maximum only where the next argument is a number as a whole (an input
      // file may start with a digit).
      uint32_t max = 0;
      if (i + 1 < argc && ParseUint(argv[i + 1], max)) {
        options.flexibleMaxDimension = max;
        ++i;
      }
    } else if (arg == "--layouts") {
      if (!value(text)) return Usage("--layouts needs a file");
      const coopmat::ParseResult parsed = coopmat::ReadLayouts(text);
      if (!parsed.ok) return Error(text + ": " + parsed.error);
      if (!AddLayouts(parsed.layouts, text, options.layouts, layoutSources, problem)) return Error(problem);
    } else if (arg == "--builtin-layouts") {
      uint32_t size = 0;
      const size_t colon = value(text) ? text.find(':') : std::string::npos;
      const auto family = colon == std::string::npos ? std::nullopt : coopmat::DriverFamilyByName(text.substr(0, colon));
      if (!family || !ParseUint(text.substr(colon + 1), size))
        return Usage("--builtin-layouts needs FAMILY:SUBGROUP with FAMILY one of " + coopmat::DriverFamilyNames());
      const auto builtin = coopmat::BuiltinLayouts(*family, size);
      if (builtin.empty()) {
        std::string sizes;
        for (uint32_t s = 1; s <= 128; s *= 2)
          if (!coopmat::BuiltinLayouts(*family, s).empty()) sizes += (sizes.empty() ? "" : ", ") + std::to_string(s);
        return Usage("--builtin-layouts " + text + ": the " + text.substr(0, colon) + " table has no layouts at subgroup size " +
                     std::to_string(size) + " (it has " + sizes + ")");
      }
      if (!AddLayouts(builtin, "--builtin-layouts " + text, options.layouts, layoutSources, problem)) return Error(problem);
      coopmat::ApplyMeasuredCosts(*family, options);  // lower as the layer would for that family
    } else if (arg == "--subgroup-sizes") {
      if (!value(text)) return Usage("--subgroup-sizes needs N[,N...]");
      for (size_t begin = 0; begin <= text.size();) {
        const size_t end = std::min(text.find(',', begin), text.size());
        uint32_t size = 0;
        if (!ParseUint(text.substr(begin, end - begin), size) || !SubgroupSize(size))
          return Usage("--subgroup-sizes needs N[,N...], each a power of two from 1 to 128");
        options.subgroupSizes.push_back(size);
        begin = end + 1;
      }
    } else if (arg == "--specialize") {
      const size_t equals = value(text) ? text.find('=') : std::string::npos;
      uint32_t id = 0;
      if (equals == std::string::npos || !ParseUint(text.substr(0, equals), id) || equals + 1 == text.size())
        return Usage("--specialize needs ID=VALUE");
      for (const auto& [earlier, v] : specialize)
        if (earlier == id && v != text.substr(equals + 1)) return Usage("--specialize " + std::to_string(id) + " given two values");
      specialize.emplace_back(id, text.substr(equals + 1));
    } else if (arg == "--pending") {
      options.specializationPending = true;
    } else if (arg == "--batch") {
      return Usage(argc == 1 ? "--batch needs a LIST" : "--batch LIST stands alone");
    } else if (arg == "-h" || arg == "--help") {
      if (inBatch) return Usage(arg + " in a --batch line lowers nothing");
      std::cout << kUsage;
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage("unknown option " + arg);
    } else if (input.empty()) {
      input = arg;
    } else {
      return Usage("a second input " + arg + " (one module a command; --batch lowers many)");
    }
  }
  if (input.empty()) return Usage("no input module");
  if (output.empty() && glsl.empty() && !explain) return Usage("nothing to write: give -o FILE, --glsl FILE or --explain");
  if (!output.empty() && output == glsl) return Usage("-o and --glsl name the same file " + output);
  if (const char* text = inBatch ? "--batch writes each line's status" : explain ? "--explain writes" : stats ? "--stats writes" : nullptr)
    for (const std::string& file : {output, glsl})
      if (!file.empty() && IsStandardOutput(file))
        return Usage(file + " is standard output, where " + text + ": the output would be mixed with that text");

  std::string bytes, problem;
  if (!ReadWhole(input, bytes, problem)) return Error(problem);
  if (bytes.size() % 4 != 0) return Error(input + ": size " + std::to_string(bytes.size()) + " is not a multiple of 4 bytes");
  std::vector<uint32_t> words(bytes.size() / 4);
  if (!bytes.empty()) std::memcpy(words.data(), bytes.data(), bytes.size());  // no null pointer to memcpy

  if (!specialize.empty()) {
    // Each value as the constant's own type reads it (Vulkan reads as many bytes as it is wide).
    const coopmat::ScanResult scanned = coopmat::ScanModule(words);
    if (!scanned.ok) return Error(input + ": " + scanned.error);
    const std::map<uint32_t, coopmat::SpecConstantType> types = coopmat::SpecConstantTypes(words);
    options.specialization.emplace();
    for (const auto& [id, text] : specialize) {
      const auto type = types.find(id);
      if (type == types.end()) {
        // Vulkan lets a stage's specialization name SpecIds its module lacks (the layer's
        // .specialization.txt lists all the app gave); a typo should not pass unsaid.
        if (scanned.specIdsComplete)
          std::cerr << "coopmat-lower: " << input << ": no specialization constant has SpecId " << id << "; --specialize "
                    << id << " changes nothing\n";
        continue;
      }
      std::vector<uint8_t> value = SpecializationBytes(text, type->second, problem);
      if (value.empty()) return Usage("--specialize " + std::to_string(id) + "=" + text + ": SpecId " + std::to_string(id) + " " + problem);
      options.specialization->values[id] = std::move(value);
    }
  }

  const coopmat::LowerResult result = coopmat::LowerModule(words, options);
  if (explain) std::fputs(coopmat::ExplainLowering(result, input).c_str(), stdout);
  if (!result.ok) return Error(input + ": " + result.error);
  // Every output made before any is written: a failure leaves every file as it was.
  std::string glslText;
  if (!glsl.empty()) {
    const coopmat::TextResult text = coopmat::ToVulkanGlsl(result.words);
    if (!text.ok)
      return Error(input + ": SPIRV-Cross cannot write GLSL for the lowered module: " + text.error +
                   (result.dependsOnSpecialization ? " (its shapes are still specialization constants: --specialize "
                                                     "freezes them)"
                                                   : ""));
    glslText = text.text;
  }
  std::vector<std::pair<std::string, std::string>> files;
  if (!output.empty())
    files.emplace_back(output, std::string(reinterpret_cast<const char*>(result.words.data()), result.words.size() * 4));
  if (!glsl.empty()) files.emplace_back(glsl, std::move(glslText));
  if (!WriteAllOrNone(files, problem)) return Error(problem);
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

// LowerCommand, with anything thrown (a library's failure) a failed command, not an abort
// that would end a --batch run too.
int Lower(const std::vector<std::string>& argv, bool inBatch) {
  try {
    return LowerCommand(argv, inBatch);
  } catch (const std::exception& error) {
    return Error(std::string("internal error: ") + error.what());
  }
}

int LowerBatch(const std::string& list) {
  std::string contents, problem;
  if (!ReadWhole(list, contents, problem)) return Error(problem);
  std::istringstream file(contents);
  int status = 0;
  size_t commands = 0;
  for (std::string line; std::getline(file, line);) {
    if (const size_t first = line.find_first_not_of(" \t\r"); first != std::string::npos && line[first] == '#') continue;
    std::istringstream words(line);
    const std::vector<std::string> args{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    if (args.empty()) continue;
    const int lineStatus = Lower(args, true);
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
  if (argc == 2 && std::strcmp(argv[1], "--batch") == 0) return Usage("--batch needs a LIST");
  return Lower(std::vector<std::string>(argv + 1, argv + argc), false);
}
