#include "dump.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "cache_files.h"
#include "coopmat/inspect.h"
#include "messages.h"

namespace coopmat::layer {
namespace {

uint64_t Fnv1a(std::span<const uint32_t> words) {
  uint64_t hash = 1469598103934665603ull;
  for (uint32_t w : words) {
    for (int b = 0; b < 4; ++b) {
      hash ^= (w >> (8 * b)) & 0xff;
      hash *= 1099511628211ull;
    }
  }
  return hash;
}

class DumpWriter {
 public:
  DumpWriter(const DeviceData& device, std::span<const uint32_t> original) : device_(device) {
    char name[32];
    std::snprintf(name, sizeof(name), "%016" PRIx64, Fnv1a(original));
    base_ = std::filesystem::path(device.instance->settings.dumpDir) / name;
  }

  // Whole or not at all: another thread may be dumping the same module.
  void Write(const std::string& suffix, std::string_view bytes) const {
    if (!WriteFileAtomically(Path(suffix), bytes)) Warn("dump_dir: cannot write " + Path(suffix));
  }
  void Write(const std::string& suffix, std::span<const uint32_t> words) const {
    Write(suffix, std::string_view(reinterpret_cast<const char*>(words.data()), words.size_bytes()));
  }
  void Warn(const std::string& message) const { Log(device_.instance, LogLevel::Warning, message); }
  std::string Name() const { return base_.filename().string(); }
  std::string Path(const std::string& suffix) const { return base_.string() + suffix; }

  // The original module and its disassembly.
  void WriteOriginal(std::span<const uint32_t> original) const {
    Write(".original.spv", original);
    if (const TextResult text = Disassemble(original); text.ok) Write(".original.spvasm", text.text);
    else Warn("dump_dir: cannot disassemble " + Name() + ".original.spv: " + text.error);
  }

  // A lowered module and its GLSL.
  void WriteLowered(const std::string& variant, std::span<const uint32_t> words) const {
    Write(variant + ".lowered.spv", words);
    if (const TextResult glsl = ToVulkanGlsl(words); glsl.ok) Write(variant + ".lowered.glsl", glsl.text);
    else Warn("dump_dir: SPIRV-Cross cannot write GLSL for " + Name() + variant + ".lowered.spv: " + glsl.error);
  }

  // A pipeline-time lowering depends on the stage's specialization too: coopmat-lower
  // arguments, one per line, that lower the original the same way.
  void WriteSpecialization(const std::string& variant, const Specialization& specialization) const {
    std::string text;
    for (const auto& [id, bytes] : specialization.values) {
      uint64_t value = 0;
      std::memcpy(&value, bytes.data(), std::min<size_t>(bytes.size(), 8));
      text += "--specialize " + std::to_string(id) + "=" + std::to_string(value) + "\n";
    }
    Write(variant + ".specialization.txt", text);
  }

 private:
  const DeviceData& device_;
  std::filesystem::path base_;
};

}  // namespace

std::string DumpLowering(const DeviceData& device, std::span<const uint32_t> original, const LowerResult* lowered,
                         const char* where, const std::string& variant, const Specialization* specialization) {
  if (device.instance->settings.dumpDir.empty()) return "";
  const DumpWriter out(device, original);
  out.WriteOriginal(original);
  if (specialization) out.WriteSpecialization(variant, *specialization);
  if (lowered) {
    out.Write(variant + ".txt", ExplainLowering(*lowered, where));
    if (!lowered->words.empty()) out.WriteLowered(variant, lowered->words);
  }
  return out.Path(".original.spv");
}

std::string DumpCachedLowering(const DeviceData& device, std::span<const uint32_t> original,
                               const CachedLowering& cached, const char* where, const std::string& variant,
                               const Specialization& specialization, const std::string& from) {
  if (device.instance->settings.dumpDir.empty()) return "";
  const DumpWriter out(device, original);
  const std::string explain = out.Path(variant + ".txt");
  std::error_code ec;
  if (std::filesystem::exists(explain, ec)) return explain;
  out.WriteOriginal(original);
  out.WriteSpecialization(variant, specialization);
  std::string text = std::string(where) + ": pipeline-time lowering served from " + from + "; ";
  if (cached.ok) {
    text += "it was lowered before this dump_dir saw it, so there is no per-operation report (lower it again with "
            "coopmat-lower and the arguments in " + out.Name() + variant + ".specialization.txt, or set shader_cache=false): " +
            std::to_string(cached.opsLowered) + " operations, " + std::to_string(cached.opsInRegisters) +
            " in registers\n";
    out.WriteLowered(variant, cached.words);
  } else {
    text += "the lowering was refused: " + cached.error + "\n";
  }
  out.Write(variant + ".txt", text);
  return explain;
}

}  // namespace coopmat::layer
