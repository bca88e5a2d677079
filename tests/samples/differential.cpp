// The differential stage (test audit dbb465e §0.12): modules drawn by
// tests/fuzz/generate_modules.py --exec, each run through the layer once per lowering
// (portable: every operation through the Workgroup scratch; auto: the register path;
// registers: every move in registers), must leave the same buffers. The lowerings are
// implementations of the EXT semantics written apart, so they judge each other on
// programs nobody wrote by hand, with no CPU reference to share a misreading.
// The inputs are small integers, so f32 sums are exact in any order below 2^24: equal bits
// are required, except where the order of a reduction's sums may decide (OrderMayExplain).
//
//   coopmat_differential DIR     (the environment puts the layer on the path)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "half.h"
#include "settings_line.h"
#include "vulkan_app.h"

namespace {

// generate_modules.py --exec: the input tile at 0, the outputs at 1024 (2x2 reductions),
// 2048 (Use conversions), 4096 (transposes; both 256 elements apart per operation) and
// 8192 (the result); o[] holds coordinates, and the conversions and transposes whose A or
// B type is not the module's scalar (--operands) at o[1024...] and o[2560...].
constexpr uint32_t kDataElements = 8192 + 256;
constexpr uint32_t kOutWords = 4096;
const char* const kLowerings[] = {"portable", "auto", "registers"};

struct Output {
  std::vector<std::byte> data, out;
  std::string error;
};

// The scalar type from the module's name: exec-NNNNN.<scalar>.<env>.spv[.O].
std::string ScalarOf(const std::string& name) {
  const size_t a = name.find('.'), b = name.find('.', a + 1);
  return name.substr(a + 1, b - a - 1);
}

uint32_t ElementBytes(const std::string& scalar) { return scalar == "float16_t" ? 2 : 4; }

// `value` stored as the module's scalar type at `at`.
void StoreScalar(const std::string& scalar, float value, std::byte* at) {
  if (scalar == "float16_t") {
    const uint16_t h = sample::FloatToHalf(value);
    std::memcpy(at, &h, 2);
  } else if (scalar == "float") {
    std::memcpy(at, &value, 4);
  } else {
    const int32_t v = static_cast<int32_t>(value);
    std::memcpy(at, &v, 4);
  }
}

// The module's scalar at `at`, as a double.
double LoadScalar(const std::string& scalar, const std::byte* at) {
  if (scalar == "float16_t") {
    uint16_t h;
    std::memcpy(&h, at, 2);
    return sample::HalfToFloat(h);
  }
  if (scalar == "float") {
    float f;
    std::memcpy(&f, at, 4);
    return f;
  }
  uint32_t bits;
  std::memcpy(&bits, at, 4);
  return scalar == "uint" ? static_cast<double>(bits) : static_cast<double>(static_cast<int32_t>(bits));
}

// Element i of the input: a small integer in the module's scalar type.
void FillData(const std::string& scalar, std::byte* data) {
  for (uint32_t i = 0; i < kDataElements; ++i)
    StoreScalar(scalar, static_cast<float>(static_cast<int>((i * 7) % 9) - (scalar == "uint" ? 0 : 4)),
                data + ElementBytes(scalar) * i);
}

// Push constants {scalar s; uint n;}: s = 2, n = 2 (the loops run twice).
std::vector<std::byte> PushConstants(const std::string& scalar) {
  std::vector<std::byte> bytes(8);
  StoreScalar(scalar, 2.0f, bytes.data());
  const uint32_t n = 2;
  std::memcpy(bytes.data() + 4, &n, 4);
  return bytes;
}

Output Run(const sample::Context& context, const std::vector<uint32_t>& words, const std::string& scalar) {
  Output result;
  try {
    sample::Buffer data(context, kDataElements * ElementBytes(scalar)), out(context, kOutWords * 4);
    FillData(scalar, data.as<std::byte>());
    std::memset(out.data(), 0, kOutWords * 4);
    sample::KernelOptions options;
    options.bindings = 2;
    options.pushConstantBytes = 8;
    sample::Kernel kernel(context, words, options);
    const std::vector<std::byte> push = PushConstants(scalar);
    kernel.Record({&data, &out}, 1, 1, 1, push);
    kernel.Run();
    result.data.assign(data.as<std::byte>(), data.as<std::byte>() + data.size());
    result.out.assign(out.as<std::byte>(), out.as<std::byte>() + out.size());
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  return result;
}

// Whether summing in another order can explain two values of an element (the lowerings
// reduce in different orders): f16 within 1/128 of the value; f32 sums of integers round
// past 2^24 (within 2^-16 of the value: a reduction adds 256 terms at most), which drawn
// programs reach (three row and three whole-matrix reductions of a 16x16 tile multiply
// its values by 2^36). Drawn f16 programs reduce with max only (generate_modules.py), so
// their sums never overflow by order.
bool OrderMayExplain(const std::string& scalar, double x, double y) {
  const double larger = std::max(std::fabs(x), std::fabs(y));
  if (scalar == "float16_t") return std::fabs(x - y) <= larger / 128;
  if (scalar == "float")
    return std::isfinite(x) && std::isfinite(y) && std::min(std::fabs(x), std::fabs(y)) >= 16777216.0 &&
           std::fabs(x - y) <= larger / 65536;
  return false;
}

// The first element where two runs differ beyond what the order of sums explains, or "".
std::string FirstDifference(const std::string& scalar, const Output& a, const Output& b) {
  for (uint32_t i = 0; i < kOutWords; ++i)
    if (std::memcmp(&a.out[4 * i], &b.out[4 * i], 4) != 0) {
      uint32_t x, y;
      std::memcpy(&x, &a.out[4 * i], 4);
      std::memcpy(&y, &b.out[4 * i], 4);
      return "o[" + std::to_string(i) + "]: " + std::to_string(x) + " against " + std::to_string(y);
    }
  const uint32_t bytes = ElementBytes(scalar);
  for (uint32_t i = 0; i < kDataElements; ++i) {
    if (std::memcmp(&a.data[bytes * i], &b.data[bytes * i], bytes) == 0) continue;
    const double x = LoadScalar(scalar, &a.data[bytes * i]), y = LoadScalar(scalar, &b.data[bytes * i]);
    if (OrderMayExplain(scalar, x, y)) continue;
    char text[96];
    std::snprintf(text, sizeof text, "d[%u]: %g against %g", i, x, y);
    return text;
  }
  return "";
}

// Why a context does not run the lowering it asked for, or "": the environment and
// vk_layer_settings.txt override the app's setting (then the three lowerings would be one),
// and a device without register layouts leaves auto and registers portable.
std::string LoweringProblem(const sample::Context& context, const std::string& lowering) {
  const std::vector<std::string>& messages = context.layerMessages();
  const auto settings = std::find_if(messages.begin(), messages.end(),
                                     [](const std::string& m) { return m.rfind("settings: ", 0) == 0; });
  if (settings == messages.end())
    return "the layer logged no settings line: its log_level is set below info (VK_COOPMAT_MAINTENANCE1_LOG_LEVEL or "
           "vk_layer_settings.txt)";
  if (cmtest::LoggedSetting(settings->substr(9), "lowering") != lowering)
    return "the layer does not run lowering=" + lowering + " (" + *settings +
           "): VK_COOPMAT_MAINTENANCE1_LOWERING or vk_layer_settings.txt sets it";
  const bool layouts = std::any_of(messages.begin(), messages.end(), [](const std::string& m) { return m.rfind("layout: ", 0) == 0; });
  if (lowering != "portable" && !layouts) return "the layer took no register layout on this device: lowering=" + lowering + " would run portably";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: coopmat_differential DIR (modules from generate_modules.py --exec)\n");
    return 2;
  }
  std::vector<std::filesystem::path> modules;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1]))
    if (entry.path().filename().string().rfind("exec-", 0) == 0) modules.push_back(entry.path());
  std::sort(modules.begin(), modules.end());
  if (modules.empty()) {
    std::fprintf(stderr, "differential: no exec-* modules in %s\n", argv[1]);
    return 1;
  }
  std::map<std::string, std::unique_ptr<sample::Context>> contexts;
  for (const char* lowering : kLowerings) {
    sample::ContextOptions options;
    options.appName = "coopmat-differential";
    options.lowering = lowering;
    options.layerMessages = true;
    contexts[lowering] = std::make_unique<sample::Context>(options);
    if (!contexts[lowering]->maintenance1()) {
      std::fprintf(stderr, "differential: the device offers no VK_EXT_cooperative_matrix_maintenance1 (is the layer on?)\n");
      return 1;
    }
    if (const std::string problem = LoweringProblem(*contexts[lowering], lowering); !problem.empty()) {
      std::fprintf(stderr, "differential: %s\n", problem.c_str());
      return 1;
    }
  }
  int runs = 0, failures = 0;
  std::map<std::string, int> perScalar;
  for (const auto& path : modules) {
    const std::string name = path.filename().string(), scalar = ScalarOf(name);
    const std::vector<uint32_t> words = sample::ReadSpirv(path.string());
    std::map<std::string, Output> outputs;
    for (const char* lowering : kLowerings) {
      outputs[lowering] = Run(*contexts[lowering], words, scalar);
      ++runs;
      if (!outputs[lowering].error.empty()) {
        std::printf("FAILED %s (lowering=%s): %s\n", name.c_str(), lowering, outputs[lowering].error.c_str());
        ++failures;
      }
    }
    for (const char* lowering : kLowerings) {
      if (std::string(lowering) == "portable" || !outputs[lowering].error.empty() || !outputs["portable"].error.empty())
        continue;
      const std::string difference = FirstDifference(scalar, outputs["portable"], outputs[lowering]);
      if (!difference.empty()) {
        std::printf("FAILED %s: lowering=portable and lowering=%s differ at %s\n", name.c_str(), lowering,
                    difference.c_str());
        ++failures;
      }
    }
    ++perScalar[scalar];
  }
  std::printf("differential: %zu modules (", modules.size());
  for (const auto& [scalar, count] : perScalar) std::printf("%s %d, ", scalar.c_str(), count);
  std::printf("each under %zu lowerings): %d runs, %d failures\n", std::size(kLowerings), runs, failures);
  return failures ? 1 : 0;
}
