#include "exec_util.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>

#include "ieee_float.h"
#include "settings_line.h"
#include "coopmat/lower.h"
#include "ir.h"
#include "type_manager.h"

namespace exec {

const char* Name(T t) {
  switch (t) {
    case T::F16: return "f16";
    case T::F32: return "f32";
    case T::U8: return "u8";
    case T::S8: return "s8";
    case T::U32: return "u32";
    case T::S32: return "s32";
    case T::BF16: return "bf16";
    case T::E4M3: return "e4m3";
    case T::E5M2: return "e5m2";
  }
  return "?";
}

size_t Size(T t) {
  switch (t) {
    case T::F16:
    case T::BF16: return 2;
    case T::U8:
    case T::S8:
    case T::E4M3:
    case T::E5M2: return 1;
    default: return 4;
  }
}

bool IsFloat(T t) { return t == T::F16 || t == T::F32 || EncodedFormat(t); }

const coopmat::IeeeFormat* EncodedFormat(T t) {
  switch (t) {
    case T::BF16: return &coopmat::kBfloat16;
    case T::E4M3: return &coopmat::kFloat8E4M3;
    case T::E5M2: return &coopmat::kFloat8E5M2;
    default: return nullptr;
  }
}

namespace {
// The bits of v (rounded to binary32 first: the tests' values are exact there) in an encoded type.
uint32_t EncodedBits(const coopmat::IeeeFormat& format, double v, bool saturate = false) {
  const float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint32_t>(
      coopmat::ConvertFloat(bits, coopmat::kBinary32, format, coopmat::FloatRounding::NearestEven, saturate).bits);
}
double EncodedValue(const coopmat::IeeeFormat& format, uint32_t bits) {
  const uint64_t wide = coopmat::ConvertFloat(bits, format, coopmat::kBinary64, coopmat::FloatRounding::NearestEven).bits;
  double d;
  std::memcpy(&d, &wide, 8);
  return d;
}
}  // namespace

std::optional<T> TestType(uint32_t vkComponentType) {
  switch (vkComponentType) {
    case VK_COMPONENT_TYPE_FLOAT16_KHR: return T::F16;
    case VK_COMPONENT_TYPE_FLOAT32_KHR: return T::F32;
    case VK_COMPONENT_TYPE_UINT8_KHR: return T::U8;
    case VK_COMPONENT_TYPE_SINT8_KHR: return T::S8;
    case VK_COMPONENT_TYPE_UINT32_KHR: return T::U32;
    case VK_COMPONENT_TYPE_SINT32_KHR: return T::S32;
    case VK_COMPONENT_TYPE_BFLOAT16_KHR: return T::BF16;
    case VK_COMPONENT_TYPE_FLOAT8_E4M3_EXT: return T::E4M3;
    case VK_COMPONENT_TYPE_FLOAT8_E5M2_EXT: return T::E5M2;
    default: return std::nullopt;
  }
}

uint32_t VkComponentType(T t) {
  switch (t) {
    case T::F16: return VK_COMPONENT_TYPE_FLOAT16_KHR;
    case T::F32: return VK_COMPONENT_TYPE_FLOAT32_KHR;
    case T::U8: return VK_COMPONENT_TYPE_UINT8_KHR;
    case T::S8: return VK_COMPONENT_TYPE_SINT8_KHR;
    case T::U32: return VK_COMPONENT_TYPE_UINT32_KHR;
    case T::S32: return VK_COMPONENT_TYPE_SINT32_KHR;
    case T::BF16: return VK_COMPONENT_TYPE_BFLOAT16_KHR;
    case T::E4M3: return VK_COMPONENT_TYPE_FLOAT8_E4M3_EXT;
    case T::E5M2: return VK_COMPONENT_TYPE_FLOAT8_E5M2_EXT;
  }
  return 0;
}

const char* Name(Use u) {
  switch (u) {
    case Use::A: return "a";
    case Use::B: return "b";
    case Use::Acc: return "acc";
  }
  return "?";
}

double Wrap(T t, double v) {
  if (t == T::F16) return static_cast<double>(static_cast<_Float16>(v));
  if (t == T::F32) return static_cast<double>(static_cast<float>(v));
  if (const coopmat::IeeeFormat* format = EncodedFormat(t)) return EncodedValue(*format, EncodedBits(*format, v));
  // Truncate toward zero (float sources), then keep the low bits, two's complement.
  const uint64_t bits = static_cast<uint64_t>(static_cast<int64_t>(std::trunc(v)));
  switch (t) {
    case T::U8: return static_cast<double>(static_cast<uint8_t>(bits));
    case T::S8: return static_cast<double>(static_cast<int8_t>(static_cast<uint8_t>(bits)));
    case T::U32: return static_cast<double>(static_cast<uint32_t>(bits));
    case T::S32: return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(bits)));
    default: return v;
  }
}

double WrapSaturated(T t, double v) {
  const coopmat::IeeeFormat* format = EncodedFormat(t);
  return format ? EncodedValue(*format, EncodedBits(*format, v, true)) : Wrap(t, v);
}

void Store(T t, double v, std::byte* out) {
  switch (t) {
    case T::F16: { _Float16 x = static_cast<_Float16>(v); std::memcpy(out, &x, 2); break; }
    case T::F32: { float x = static_cast<float>(v); std::memcpy(out, &x, 4); break; }
    case T::U8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(out, &x, 1); break; }
    case T::S8: { int8_t x = static_cast<int8_t>(v); std::memcpy(out, &x, 1); break; }
    case T::U32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(out, &x, 4); break; }
    case T::S32: { int32_t x = static_cast<int32_t>(v); std::memcpy(out, &x, 4); break; }
    case T::BF16: { uint16_t x = static_cast<uint16_t>(EncodedBits(*EncodedFormat(t), v)); std::memcpy(out, &x, 2); break; }
    case T::E4M3:
    case T::E5M2: out[0] = static_cast<std::byte>(EncodedBits(*EncodedFormat(t), v)); break;
  }
}

double Load(T t, const std::byte* in) {
  switch (t) {
    case T::F16: { _Float16 x; std::memcpy(&x, in, 2); return static_cast<double>(x); }
    case T::F32: { float x; std::memcpy(&x, in, 4); return x; }
    case T::U8: { uint8_t x; std::memcpy(&x, in, 1); return x; }
    case T::S8: { int8_t x; std::memcpy(&x, in, 1); return x; }
    case T::U32: { uint32_t x; std::memcpy(&x, in, 4); return x; }
    case T::S32: { int32_t x; std::memcpy(&x, in, 4); return x; }
    case T::BF16: { uint16_t x; std::memcpy(&x, in, 2); return EncodedValue(*EncodedFormat(t), x); }
    case T::E4M3:
    case T::E5M2: return EncodedValue(*EncodedFormat(t), static_cast<uint32_t>(in[0]));
  }
  return 0;
}

uint32_t Bits(T t, double v) {
  std::byte raw[4] = {};
  Store(t, v, raw);
  switch (t) {
    case T::F16: case T::BF16: { uint16_t x; std::memcpy(&x, raw, 2); return x; }
    case T::U8: case T::E4M3: case T::E5M2: return static_cast<uint8_t>(raw[0]);
    case T::S8: return static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(raw[0])));
    default: { uint32_t x; std::memcpy(&x, raw, 4); return x; }
  }
}

Matrix RandomMatrix(T t, uint32_t rows, uint32_t cols, uint32_t seed, double lo, double hi, double step) {
  Matrix m(t, rows, cols);
  std::mt19937 rng(seed * 2654435761u + rows * 131u + cols);
  if (!IsFloat(t)) step = 1.0;
  const int64_t n = static_cast<int64_t>(std::floor((hi - lo) / step));
  std::uniform_int_distribution<int64_t> dist(0, n);
  for (double& x : m.v) x = Wrap(t, lo + step * static_cast<double>(dist(rng)));
  return m;
}

Bytes Pack(const std::vector<Matrix>& ms, bool columnMajor) {
  Bytes out;
  for (const Matrix& m : ms) {
    const size_t at = out.size(), es = Size(m.type);
    out.resize(at + m.v.size() * es);
    for (uint32_t r = 0; r < m.rows; ++r)
      for (uint32_t c = 0; c < m.cols; ++c) {
        const size_t index = columnMajor ? size_t(c) * m.rows + r : size_t(r) * m.cols + c;
        Store(m.type, m.at(r, c), out.data() + at + index * es);
      }
  }
  return out;
}

std::vector<Matrix> Unpack(const Bytes& bytes, T t, uint32_t rows, uint32_t cols, size_t count) {
  std::vector<Matrix> out;
  const size_t es = Size(t), n = size_t(rows) * cols;
  for (size_t k = 0; k < count && (k + 1) * n * es <= bytes.size(); ++k) {
    Matrix m(t, rows, cols);
    for (size_t i = 0; i < n; ++i) m.v[i] = Load(t, bytes.data() + (k * n + i) * es);
    out.push_back(std::move(m));
  }
  return out;
}

std::string Compare(const Matrix& got, const Matrix& want) {
  std::ostringstream s;
  if (got.type != want.type || got.rows != want.rows || got.cols != want.cols) {
    s << "shape/type mismatch: got " << Name(got.type) << " " << got.rows << "x" << got.cols << ", want "
      << Name(want.type) << " " << want.rows << "x" << want.cols;
    return s.str();
  }
  size_t bad = 0;
  for (uint32_t r = 0; r < want.rows; ++r)
    for (uint32_t c = 0; c < want.cols; ++c) {
      const double g = got.at(r, c), w = want.at(r, c);
      // A zero's sign counts (a conversion keeps it).
      if ((g == w && std::signbit(g) == std::signbit(w)) || (std::isnan(g) && std::isnan(w))) continue;
      if (bad++ < 6) s << " (" << r << "," << c << ") got " << g << " want " << w << ";";
    }
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(want.v.size()) + " elements wrong:" + s.str();
}

// ---------------------------------------------------------------------------
const VirtualDevice& TheVirtualDevice() {
  static const VirtualDevice device = [] {
    VirtualDevice d;
    const char* path = std::getenv("COOPMAT_VIRTUAL_PROFILE");
    d.on = path && *path;
    if (d.on) d.profile = coopmat::virt::ReadConfiguredProfile();
    return d;
  }();
  return device;
}

std::vector<std::string> VirtualLog() {
  const char* path = std::getenv("COOPMAT_VIRTUAL_LOG");
  std::ifstream log(path ? path : "");
  std::vector<std::string> lines;
  for (std::string line; std::getline(log, line);) lines.push_back(line);
  return lines;
}

bool IsRewrittenLine(const std::string& line) {
  return line.starts_with("pipeline profile=" + TheVirtualDevice().profile.profile.name + " ");
}

std::string Unavailable(const EnvOptions& options) {
  if (options.listedDevice) return "";
  if (options.shaderObject && TheVirtualDevice().on) return "the virtual device hides VK_EXT_shader_object";
  if (!options.flex || !TheVirtualDevice().on) return "";
  // Without the layer, flexible-dimension tests exercise lavapipe's own NV operations.
  if (!options.layer) return "the virtual device emulates none of VK_NV_cooperative_matrix2's operations";
  if (TheVirtualDevice().profile.profile.flexibleMaxDimension == 0)
    return "the virtual device's profile has no flexible dimensions (VK_NV_cooperative_matrix2)";
  return "";
}

namespace {

// Why the virtual device cannot run this (specialized) module: a matrix type its
// profile does not lay out at the size it runs; "" when it can.
std::string VirtualDeviceLacks(const cmtest::ComputeJob& job) {
  coopmat::Specialization specialization;
  for (const cmtest::SpecConstant& constant : job.specialization) {
    std::vector<uint8_t>& bytes = specialization.values[constant.id];
    bytes.resize(sizeof constant.value);
    std::memcpy(bytes.data(), &constant.value, sizeof constant.value);
  }
  const coopmat::LowerResult frozen = coopmat::SpecializeModule(job.spirv, specialization);
  coopmat::ir::Module module;
  if (!frozen.ok || !coopmat::ir::Parse(frozen.words, module).empty()) return "";  // the run says what is wrong
  const coopmat::TypeManager types(module);
  const coopmat::virt::Profile& profile = TheVirtualDevice().profile.profile;
  for (const coopmat::ir::Instruction& inst : module.globals) {
    if (inst.opcode != spv::Op::OpTypeCooperativeMatrixKHR) continue;
    const auto info = types.CoopMatInfo(inst.resultId);
    if (!info) continue;
    const auto rows = types.ConstantValue(info->rowsId), cols = types.ConstantValue(info->colsId);
    const auto component = types.VkComponentType(info->componentType);
    if (!rows || !cols || !component || !types.ConstantValue(info->useId)) continue;
    const coopmat::LayoutKey key{*component, static_cast<uint32_t>(info->use), *rows, *cols, profile.defaultSubgroupSize};
    if (!profile.FindLayout(key)) return "the profile has no layout for " + coopmat::ToString(key);
  }
  return "";
}

constexpr const char* kVirtualLayer = "VK_LAYER_COOPMAT_TEST_virtual_device";

// The settings Env asked for through VkLayerSettingsCreateInfoEXT that the layer does not
// have: the environment and vk_layer_settings.txt take precedence over the API, so a
// VK_COOPMAT_MAINTENANCE1_LOWERING=portable exported for an app would make the self-test's
// register pass portable without a word (review of 2026-12-07). force_enable has its own
// check (Problem: the layer must serve, or step aside for the native pass).
// `line`: the layer's settings line from its leading space on ("" where it logged none).
std::string OverriddenSettings(const std::vector<std::pair<std::string, std::string>>& asked, const std::string& line) {
  const bool checked = std::any_of(asked.begin(), asked.end(), [](const auto& a) { return a.first != "force_enable"; });
  if (checked && line.empty())
    return "the layer logged no settings line: its log_level is below info (VK_COOPMAT_MAINTENANCE1_LOG_LEVEL or "
           "vk_layer_settings.txt sets it: unset it to run this)";
  std::string problems;
  for (const auto& [name, value] : asked) {
    if (name == "force_enable") continue;
    const std::optional<std::string> logged = cmtest::LoggedSetting(line, name);
    if (logged && *logged == value) continue;
    std::string variable = "VK_COOPMAT_MAINTENANCE1_" + name;
    for (char& c : variable) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    problems += (problems.empty() ? "" : "; ") + std::string("the layer's ") + name + " is " +
                (logged ? "'" + *logged + "'" : std::string("not reported")) + ", not the '" + value + "' asked for";
    if (logged) problems += " (" + variable + " or vk_layer_settings.txt sets it: unset it to run this)";
  }
  return problems;
}

}  // namespace

Env::Env(const EnvOptions& options) {
  listed_ = options.listedDevice;
  driverImplementation_ = options.driverImplementation;
  fenceTimeoutNs_ = options.fenceTimeoutNs;
  virtual_ = !listed_ && TheVirtualDevice().on;
  // The native lane (COOPMAT_EXEC_NATIVE=1, tests/exec/native_lane.sh): the same cases
  // against a driver's own implementation of the extension, without the layer.
  const char* nativeLane = std::getenv("COOPMAT_EXEC_NATIVE");
  native_ = !listed_ && options.layer && nativeLane && std::string(nativeLane) == "1";
  cmtest::InstanceOptions io;
  io.withLayer = throughLayer_ = options.layer && !native_;
  io.validation = options.validation;
  io.physicalDeviceIndex = options.deviceIndex;
  if (onVirtualDevice()) io.layersBelow.push_back(kVirtualLayer);
  // The settings' values live as long as the instance's creation needs them.
  std::vector<const char*> settingValues;
  settingValues.reserve(options.layerSettings.size());
  for (const auto& [name, value] : options.layerSettings) {
    settingValues.push_back(value.c_str());
    io.settings.push_back({cmtest::kLayerName, name.c_str(), VK_LAYER_SETTING_TYPE_STRING_EXT, 1, &settingValues.back()});
  }
  // Report every occurrence: a test runs many shaders on one instance, and the
  // default limit (10 per message id) would hide findings in later shaders.
  static const VkBool32 kFalse = VK_FALSE;
  if (options.validation != cmtest::Validation::Off)
    io.settings.push_back({cmtest::kValidationLayerName, "enable_message_limit", VK_LAYER_SETTING_TYPE_BOOL32_EXT, 1,
                           &kFalse});
  // The default half runs registers: with lowering=auto the layer's probe must have
  // found lavapipe's layouts, else a slow or failed probe would quietly make it a second
  // portable run (test audit §0.9). Its info lines say what it found.
  const char* lowering = std::getenv("VK_COOPMAT_MAINTENANCE1_LOWERING");
  portable_ = lowering && std::string(lowering) == "portable";
  for (const auto& [name, value] : options.layerSettings) portable_ |= name == "lowering" && value == "portable";
  expectRegisters_ = io.withLayer && !portable_ && !driverImplementation_;
  static const char* kInfo = "info";
  if (io.withLayer)
    io.settings.push_back({"VK_LAYER_coopmat_maintenance1", "log_level", VK_LAYER_SETTING_TYPE_STRING_EXT, 1, &kInfo});
  instance_ = std::make_unique<cmtest::Instance>(io);
  cmtest::DeviceOptions dopt;
  dopt.enableMaintenance1 = options.layer;
  dopt.chainMaintenance1Features = options.layer;
  dopt.enableNvCoopmat2 = options.flex;
  dopt.enableMaintenance5 = options.inlineStage;
  dopt.enableShaderObject = options.shaderObject;
  device_ = std::make_unique<cmtest::Device>(*instance_, dopt);
  if (instance_->ok()) {
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &subgroup};
    vkGetPhysicalDeviceProperties2(instance_->physicalDevice(), &props);
    subgroupSize_ = subgroup.subgroupSize;
    if (options.subgroupSize) {
      subgroupSize_ = options.subgroupSize;
      requireSize_ = true;
    }
    auto get = instance_->proc<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
        "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    uint32_t count = 0;
    if (get && get(instance_->physicalDevice(), &count, nullptr) == VK_SUCCESS) {
      matrices_.assign(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
      if (get(instance_->physicalDevice(), &count, matrices_.data()) != VK_SUCCESS) count = 0;
      matrices_.resize(count);
    }
  }
  if (options.flex && device_->ok() && !device_->nvCoopmat2()) flexMissing_ = true;
  std::string settingsLine;  // the layer's "settings: ..." line, for OverriddenSettings
  for (const cmtest::Message& m : instance_->messages()) {
    if (m.id != cmtest::kLayerName) continue;  // a test layer below may log the same lines under its own name
    driverHasExtension_ |= m.text.rfind("the driver implements VK_EXT_cooperative_matrix_maintenance1 itself", 0) == 0;
    probedLayouts_ += m.text.rfind("layout: ", 0) == 0 && m.text.find("# probed") != std::string::npos;
    if (m.text.rfind("layout: ", 0) == 0 || m.text.rfind("no layout: ", 0) == 0) layoutLines_.push_back(m.text);
    layerServes_ |= m.text == "emulating VK_EXT_cooperative_matrix_maintenance1 on this device";
    if (m.text.rfind("settings: ", 0) == 0) settingsLine = m.text.substr(9);
  }
  if (throughLayer_ && instance_->ok()) overriddenSettings_ = OverriddenSettings(options.layerSettings, settingsLine);
  if (layoutLines_.empty()) layoutLines_ = options.knownLayoutLines;
  for (const std::string& line : layoutLines_)
    if (line.rfind("layout: ", 0) == 0)
      for (coopmat::LinearLayout& layout : coopmat::ParseLayouts(line.substr(8, line.find('#') - 8)).layouts)
        layerLayouts_.push_back(std::move(layout));
}

std::string Env::Problem() const {
  if (!instance_->ok()) return "vkCreateInstance -> " + std::to_string(instance_->createResult());
  if (onVirtualDevice() && !TheVirtualDevice().profile.ok) return "COOPMAT_VIRTUAL_PROFILE: " + TheVirtualDevice().profile.error;
  if (!device_->ok()) return "vkCreateDevice -> " + std::to_string(device_->createResult());
  if (flexMissing_) return "VK_NV_cooperative_matrix2 (flexible dimensions) not available";
  const uint32_t wanted = onVirtualDevice() ? TheVirtualDevice().profile.profile.defaultSubgroupSize : 8;
  if (!listed_ && subgroupSize_ != wanted)
    return "subgroup size " + std::to_string(subgroupSize_) + ", the tests need " + std::to_string(wanted);
  // Through the layer means the layer: not the driver's own extension (force_enable).
  if (driverImplementation_) {
    if (!driverHasExtension_) return "the driver does not implement VK_EXT_cooperative_matrix_maintenance1 itself";
    if (layerServes_)
      return "the layer emulated the extension where the driver's own was asked for: force_enable is set outside "
             "the application (VK_COOPMAT_MAINTENANCE1_FORCE_ENABLE or vk_layer_settings.txt)";
  } else if (throughLayer_ && !layerServes_) {
    return "the layer does not serve VK_EXT_cooperative_matrix_maintenance1 on this device";
  }
  if (!overriddenSettings_.empty()) return overriddenSettings_;
  if (expectRegisters_ && probedLayouts_ == 0 && !listed_)
    return "the layer's probe found no register layout on this device: the register half would run the portable path";
  return "";
}

std::optional<Dims> Env::Shape(Use use, T t) const {
  // Lavapipe runs every type it has at 8x8, listed or not; it has no bfloat16 or fp8.
  if (!onVirtualDevice() && !listed_) return EncodedFormat(t) ? std::nullopt : std::optional<Dims>(Dims{8, 8});
  for (const VkCooperativeMatrixPropertiesKHR& p : matrices_) {
    if (p.scope != VK_SCOPE_SUBGROUP_KHR) continue;
    if (use == Use::A && TestType(p.AType) == t) return Dims{p.MSize, p.KSize};
    if (use == Use::B && TestType(p.BType) == t) return Dims{p.KSize, p.NSize};
    if (use == Use::Acc && (TestType(p.CType) == t || TestType(p.ResultType) == t)) return Dims{p.MSize, p.NSize};
  }
  return std::nullopt;
}

std::optional<coopmat::LinearLayout> Env::LayerLayout(Use use, T t, uint32_t rows, uint32_t cols) const {
  const coopmat::LayoutKey key{VkComponentType(t), static_cast<uint32_t>(use), rows, cols, subgroupSize_};
  for (const coopmat::LinearLayout& layout : layerLayouts_)
    if (layout.key == key) return layout;
  return std::nullopt;
}

uint32_t Env::Replicas(Use use, T t, uint32_t rows, uint32_t cols) const {
  if (listed_) {
    const auto layout = LayerLayout(use, t, rows, cols);
    return layout ? layout->Replicas() : 0;
  }
  if (!onVirtualDevice()) return 1;
  const auto layout =
      TheVirtualDevice().profile.profile.FindLayout({VkComponentType(t), static_cast<uint32_t>(use), rows, cols, subgroupSize_});
  return layout ? layout->Replicas() : 1;
}

std::optional<std::array<uint32_t, 3>> Env::MulAddShape(T a, T c) const {
  if (!onVirtualDevice() && !listed_) return EncodedFormat(a) ? std::nullopt : std::optional(std::array<uint32_t, 3>{8, 8, 8});
  for (const VkCooperativeMatrixPropertiesKHR& p : matrices_)
    if (p.scope == VK_SCOPE_SUBGROUP_KHR && TestType(p.AType) == a && TestType(p.BType) == a && TestType(p.CType) == c &&
        TestType(p.ResultType) == c)
      return std::array<uint32_t, 3>{p.MSize, p.NSize, p.KSize};
  return std::nullopt;
}

std::vector<SampledRun> Sample(const std::vector<std::string>& names, const std::vector<std::string>& cells) {
  struct Drawn {
    bool on = false;
    double runs = 1.0;
    uint64_t seed = 0;
    bool byCell = false;
  };
  static const Drawn sample = [] {
    Drawn d;
    const char* text = std::getenv("COOPMAT_EXEC_SAMPLE");
    unsigned long long seed = 0;
    char strata[16] = "";
    const int read = text ? std::sscanf(text, "%lf:%llu:%15s", &d.runs, &seed, strata) : 0;
    if (read < 2) return Drawn{};
    d.on = true;
    d.seed = seed;
    d.byCell = std::string(strata) == "cells";
    return d;
  }();
  // The strata: one per distinct cell (with `cells`), else the whole group.
  std::vector<size_t> stratum(names.size(), 0);
  if (sample.byCell) {
    std::map<std::string, size_t> ids;
    for (size_t i = 0; i < names.size(); ++i) stratum[i] = ids.emplace(cells[i], ids.size()).first->second;
  }
  std::vector<SampledRun> order;
  if (!sample.on) {
    for (size_t i = 0; i < names.size(); ++i) order.push_back({i, true, stratum[i]});
    return order;
  }
  // FNV-1a of the seed and the name, as a number in [0, 1).
  auto draw = [&](const std::string& name) {
    uint64_t h = 1469598103934665603ull ^ sample.seed;
    for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return static_cast<double>(h >> 11) / 9007199254740992.0;
  };
  std::vector<std::pair<double, size_t>> standIns;
  for (size_t i = 0; i < names.size(); ++i) {
    const double d = draw(names[i]);
    if (d < sample.runs)
      order.push_back({i, true, stratum[i]});
    else
      standIns.push_back({d, i});
  }
  std::sort(standIns.begin(), standIns.end());
  for (const auto& [d, i] : standIns) order.push_back({i, false, stratum[i]});
  return order;
}

const std::vector<std::string>& TargetEnvs() {
  // COOPMAT_EXEC_TARGET_ENVS=<env>[,<env>]: only those (the GLSL round trip's CI half).
  static const std::vector<std::string> envs = [] {
    const std::vector<std::string> all = {"spirv1.3", "spirv1.6"};
    const char* only = std::getenv("COOPMAT_EXEC_TARGET_ENVS");
    if (!only) return all;
    std::vector<std::string> chosen;
    for (const std::string& env : all)
      if (("," + std::string(only) + ",").find("," + env + ",") != std::string::npos) chosen.push_back(env);
    return chosen.empty() ? all : chosen;
  }();
  return envs;
}

std::string ShaderPath(const std::string& name, const std::string& env) {
  // $COOPMAT_SHADER_DIR (set by ctest) or the build tree this binary was built in.
  const char* dir = std::getenv("COOPMAT_SHADER_DIR");
  return std::string(dir ? dir : COOPMAT_EXEC_DEFAULT_SHADER_DIR) + "/exec/" + name + "." + env + ".spv";
}

namespace {
std::function<std::vector<uint32_t>(const std::vector<uint32_t>&)> gShaderTransform;
}  // namespace

ShaderTransform::ShaderTransform(std::function<std::vector<uint32_t>(const std::vector<uint32_t>&)> transform) {
  gShaderTransform = std::move(transform);
}
ShaderTransform::~ShaderTransform() { gShaderTransform = nullptr; }

namespace {
std::function<std::vector<uint32_t>(const std::string&, const std::string&)> gShaderSource;
}  // namespace

void SetShaderSource(std::function<std::vector<uint32_t>(const std::string& name, const std::string& env)> source) {
  gShaderSource = std::move(source);
}

std::vector<uint32_t> LoadShader(const std::string& name, const std::string& env) {
  std::vector<uint32_t> words = gShaderSource ? gShaderSource(name, env) : cmtest::ReadSpirv(ShaderPath(name, env));
  if (gShaderTransform && !words.empty()) return gShaderTransform(words);
  return words;
}

namespace {
struct Tally {
  std::mutex mutex;
  size_t ran = 0;
  std::map<std::string, size_t> notRun;
  std::map<std::string, size_t> cells;  // runs executed per cell
};
Tally& TheTally() {
  static Tally tally;
  return tally;
}
}  // namespace

void CountCell(const std::string& cell, bool ran) {
  std::lock_guard lock(TheTally().mutex);
  TheTally().cells[cell] += ran ? 1 : 0;
}

void CountNotRun(const std::string& reason) {
  std::lock_guard lock(TheTally().mutex);
  ++TheTally().notRun[reason];
}

TallyTotals CurrentTallyTotals() {
  std::lock_guard lock(TheTally().mutex);
  TallyTotals totals{TheTally().ran, 0};
  for (const auto& [reason, count] : TheTally().notRun) totals.notRun += count;
  return totals;
}

void PrintRunTally() {
  std::lock_guard lock(TheTally().mutex);
  std::printf("exec tally: ran %zu\n", TheTally().ran);
  for (const auto& [reason, count] : TheTally().notRun) std::printf("exec tally: not run %zu: %s\n", count, reason.c_str());
  for (const auto& [cell, count] : TheTally().cells) std::printf("exec tally: cell %s ran %zu\n", cell.c_str(), count);
  std::fflush(stdout);
}

std::string Dispatch(const Env& env, cmtest::ComputeJob job, const Grid& grid, std::vector<Bytes>& buffers) {
  // The suite builds its shaders for the shapes of lavapipe, RADV, CDNA3 and NVIDIA and a
  // few of Intel's; a virtual device with other shapes does not run the rest.
  if (job.spirv.empty())
    return env.onVirtualDevice() ? std::string(kNotRun) + "no shader variant is built for the device's shape"
                                 : "shader missing or empty";
  if (grid.literalLocalSize && env.subgroupSize() != 8)
    return std::string(kNotRun) + "a literal local size is written for subgroups of 8, the device runs " +
           std::to_string(env.subgroupSize());
  if (!grid.literalLocalSize) job.specialization.push_back({0, env.subgroupSize() * grid.subgroupsPerGroup});
  // The flexible-dimension tests name shapes (lavapipe's 8x8) a profile's granularity rules out.
  if (env.onVirtualDevice())
    if (const std::string why = VirtualDeviceLacks(job); !why.empty()) return kNotRun + why;
  job.groupCountX = grid.groups;
  job.timeoutNs = std::max(job.timeoutNs, env.fenceTimeoutNs());
  job.requiredSubgroupSize = grid.requireSubgroupSize || env.requiresSubgroupSize() ? env.subgroupSize() : 0;
  job.requireFullSubgroups = grid.fullSubgroups;
  const size_t before = env.instance().messages().size();
  const size_t logBefore = env.onVirtualDevice() ? VirtualLog().size() : 0;
  const cmtest::ComputeResult r = cmtest::RunCompute(env.device(), job, buffers);
  if (r) {
    std::lock_guard lock(TheTally().mutex);
    ++TheTally().ran;
  }
  std::vector<std::string> logged;
  if (env.onVirtualDevice()) {
    logged = VirtualLog();
    logged.erase(logged.begin(), logged.begin() + static_cast<ptrdiff_t>(std::min(logBefore, logged.size())));
  }
  if (r && env.onVirtualDevice() && std::none_of(logged.begin(), logged.end(), IsRewrittenLine))
    return "the virtual device did not rewrite the pipeline (no line in COOPMAT_VIRTUAL_LOG)";
  if (r) return "";
  // What the layer, the virtual device or the driver said about the failure
  // (debug-utils warnings and errors, the virtual device's log).
  std::string out = r.Describe();
  for (const std::string& line : logged)
    if (!IsRewrittenLine(line)) out += " | virtual device: " + line;
  const std::vector<cmtest::Message> messages = env.instance().messages();
  for (size_t i = before; i < messages.size(); ++i)
    if (messages[i].severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) out += " | " + messages[i].text;
  return out;
}

}  // namespace exec
