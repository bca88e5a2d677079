#include "dump.h"

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

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
    std::error_code ec;
    std::filesystem::create_directories(base_.parent_path(), ec);
  }

  void Write(const char* suffix, std::span<const char> bytes) const {
    const std::filesystem::path path = base_.string() + suffix;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) Warn("dump_dir: cannot write " + path.string());
  }
  void Write(const char* suffix, std::span<const uint32_t> words) const {
    Write(suffix, std::span<const char>(reinterpret_cast<const char*>(words.data()), words.size_bytes()));
  }
  void Write(const char* suffix, const std::string& text) const { Write(suffix, std::span<const char>(text)); }
  void Warn(const std::string& message) const { Log(device_.instance, LogLevel::Warning, message); }
  std::string Name() const { return base_.filename().string(); }
  std::string Path(const char* suffix) const { return base_.string() + suffix; }

 private:
  const DeviceData& device_;
  std::filesystem::path base_;
};

}  // namespace

std::string DumpLowering(const DeviceData& device, std::span<const uint32_t> original, const LowerResult* lowered,
                         const char* where, const std::string& variant) {
  if (device.instance->settings.dumpDir.empty()) return "";
  const DumpWriter out(device, original);
  const std::string originalPath = out.Path(".original.spv");
  out.Write(".original.spv", original);
  if (const TextResult text = Disassemble(original); text.ok) out.Write(".original.spvasm", text.text);
  else out.Warn(std::string("dump_dir: cannot disassemble ") + out.Name() + ".original.spv: " + text.error);
  if (!lowered) return originalPath;
  out.Write((variant + ".txt").c_str(), ExplainLowering(*lowered, where));
  if (lowered->words.empty()) return originalPath;
  out.Write((variant + ".lowered.spv").c_str(), lowered->words);
  if (const TextResult glsl = ToVulkanGlsl(lowered->words); glsl.ok) out.Write((variant + ".lowered.glsl").c_str(), glsl.text);
  else
    out.Warn(std::string("dump_dir: SPIRV-Cross cannot write GLSL for ") + out.Name() + variant + ".lowered.spv: " + glsl.error);
  return originalPath;
}

}  // namespace coopmat::layer
