#include "exec_util.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

namespace exec {

const char* Name(T t) {
  switch (t) {
    case T::F16: return "f16";
    case T::F32: return "f32";
    case T::U8: return "u8";
    case T::S8: return "s8";
    case T::U32: return "u32";
    case T::S32: return "s32";
  }
  return "?";
}

size_t Size(T t) {
  switch (t) {
    case T::F16: return 2;
    case T::U8:
    case T::S8: return 1;
    default: return 4;
  }
}

bool IsFloat(T t) { return t == T::F16 || t == T::F32; }

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

void Store(T t, double v, std::byte* out) {
  switch (t) {
    case T::F16: { _Float16 x = static_cast<_Float16>(v); std::memcpy(out, &x, 2); break; }
    case T::F32: { float x = static_cast<float>(v); std::memcpy(out, &x, 4); break; }
    case T::U8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(out, &x, 1); break; }
    case T::S8: { int8_t x = static_cast<int8_t>(v); std::memcpy(out, &x, 1); break; }
    case T::U32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(out, &x, 4); break; }
    case T::S32: { int32_t x = static_cast<int32_t>(v); std::memcpy(out, &x, 4); break; }
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
  }
  return 0;
}

uint32_t Bits(T t, double v) {
  std::byte raw[4] = {};
  Store(t, v, raw);
  switch (t) {
    case T::F16: { uint16_t x; std::memcpy(&x, raw, 2); return x; }
    case T::U8: return static_cast<uint8_t>(raw[0]);
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
      if (g == w || (std::isnan(g) && std::isnan(w))) continue;
      if (bad++ < 6) s << " (" << r << "," << c << ") got " << g << " want " << w << ";";
    }
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(want.v.size()) + " elements wrong:" + s.str();
}

// ---------------------------------------------------------------------------
Env::Env(const EnvOptions& options) {
  // The native lane (COOPMAT_EXEC_NATIVE=1, tests/exec/native_lane.sh): the same cases
  // against a driver's own implementation of the extension, without the layer.
  const char* nativeLane = std::getenv("COOPMAT_EXEC_NATIVE");
  native_ = options.layer && nativeLane && std::string(nativeLane) == "1";
  cmtest::InstanceOptions io;
  io.withLayer = throughLayer_ = options.layer && !native_;
  io.validation = options.validation;
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
  expectRegisters_ = io.withLayer && !(lowering && std::string(lowering) == "portable");
  static const char* kInfo = "info";
  if (io.withLayer)
    io.settings.push_back({"VK_LAYER_coopmat_maintenance1", "log_level", VK_LAYER_SETTING_TYPE_STRING_EXT, 1, &kInfo});
  instance_ = std::make_unique<cmtest::Instance>(io);
  cmtest::DeviceOptions dopt;
  dopt.enableMaintenance1 = options.layer;
  dopt.chainMaintenance1Features = options.layer;
  dopt.enableNvCoopmat2 = options.flex;
  dopt.enableMaintenance5 = dopt.enableShaderObject = options.allPaths;
  device_ = std::make_unique<cmtest::Device>(*instance_, dopt);
  if (instance_->ok()) {
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &subgroup};
    vkGetPhysicalDeviceProperties2(instance_->physicalDevice(), &props);
    subgroupSize_ = subgroup.subgroupSize;
  }
  if (options.flex && device_->ok() && !device_->nvCoopmat2()) flexMissing_ = true;
  for (const cmtest::Message& m : instance_->messages()) {
    probedLayouts_ += m.text.rfind("layout: ", 0) == 0 && m.text.find("# probed") != std::string::npos;
    layerServes_ |= m.text == "emulating VK_EXT_cooperative_matrix_maintenance1 on this device";
  }
}

std::string Env::Problem() const {
  if (!instance_->ok()) return "vkCreateInstance -> " + std::to_string(instance_->createResult());
  if (!device_->ok()) return "vkCreateDevice -> " + std::to_string(device_->createResult());
  if (flexMissing_) return "VK_NV_cooperative_matrix2 (flexible dimensions) not available";
  if (subgroupSize_ != 8) return "subgroup size " + std::to_string(subgroupSize_) + ", the tests need 8";
  // Through the layer means the layer: not the driver's own extension (force_enable).
  if (throughLayer_ && !layerServes_)
    return "the layer does not serve VK_EXT_cooperative_matrix_maintenance1 on this device";
  if (expectRegisters_ && probedLayouts_ == 0)
    return "the layer's probe found no register layout on this device: the register half would run the portable path";
  return "";
}

const std::vector<std::string>& TargetEnvs() {
  static const std::vector<std::string> envs = {"spirv1.3", "spirv1.6"};
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

std::vector<uint32_t> LoadShader(const std::string& name, const std::string& env) {
  std::vector<uint32_t> words = cmtest::ReadSpirv(ShaderPath(name, env));
  if (gShaderTransform && !words.empty()) return gShaderTransform(words);
  return words;
}

std::string Dispatch(const Env& env, cmtest::ComputeJob job, const Grid& grid, std::vector<Bytes>& buffers) {
  if (job.spirv.empty()) return "shader missing or empty";
  if (!grid.literalLocalSize) job.specialization.push_back({0, 8 * grid.subgroupsPerGroup});
  job.groupCountX = grid.groups;
  job.requiredSubgroupSize = grid.requiredSubgroupSize;
  job.requireFullSubgroups = grid.fullSubgroups;
  const size_t before = env.instance().messages().size();
  const cmtest::ComputeResult r = cmtest::RunCompute(env.device(), job, buffers);
  if (r) return "";
  // What the layer or the driver said about the failure (debug-utils warnings and errors).
  std::string out = r.Describe();
  const std::vector<cmtest::Message> messages = env.instance().messages();
  for (size_t i = before; i < messages.size(); ++i)
    if (messages[i].severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) out += " | " + messages[i].text;
  return out;
}

}  // namespace exec
