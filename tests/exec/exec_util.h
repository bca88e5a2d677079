// Shared pieces of the execution tests: element types, host-side matrices,
// the Vulkan environment, shader lookup and one helper per shader family that
// runs a variant and returns what the GPU wrote.
#pragma once

#include "compute.h"
#include "vk_context.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace exec {

using cmtest::Bytes;

// ---------------------------------------------------------------------------
// Element types. Host values are doubles holding the exact element value
// (every f16/f32/8-bit/32-bit value the tests use is exact in a double).
enum class T { F16, F32, U8, S8, U32, S32 };
const char* Name(T t);  // "f16", "f32", "u8", "s8", "u32", "s32"
size_t Size(T t);
bool IsFloat(T t);
// The value a conversion of v into t produces: floats round to nearest even,
// float -> int truncates toward zero, integers wrap modulo 2^width (two's complement).
double Wrap(T t, double v);
void Store(T t, double v, std::byte* out);
double Load(T t, const std::byte* in);
// Element bits zero- (unsigned, float) or sign- (signed) extended to 32 bits.
uint32_t Bits(T t, double v);

enum class Use { A, B, Acc };
const char* Name(Use u);  // "a", "b", "acc"

// ---------------------------------------------------------------------------
struct Matrix {
  T type = T::F32;
  uint32_t rows = 0, cols = 0;
  std::vector<double> v;  // row-major

  Matrix() = default;
  Matrix(T t, uint32_t r, uint32_t c) : type(t), rows(r), cols(c), v(size_t(r) * c, 0.0) {}
  double& at(uint32_t r, uint32_t c) { return v[size_t(r) * cols + c]; }
  double at(uint32_t r, uint32_t c) const { return v[size_t(r) * cols + c]; }
};

// Deterministic test data: values lo..hi (integers, or multiples of `step` for
// float types), already representable in m.type.
Matrix RandomMatrix(T t, uint32_t rows, uint32_t cols, uint32_t seed, double lo, double hi, double step = 1.0);

// Matrices back to back, each row-major (or column-major: element (r,c) at c*rows+r).
Bytes Pack(const std::vector<Matrix>& ms, bool columnMajor = false);
std::vector<Matrix> Unpack(const Bytes& bytes, T t, uint32_t rows, uint32_t cols, size_t count);

// "" when equal (type, shape and every value); otherwise the number of
// mismatches and the first few "(r,c) got X want Y".
std::string Compare(const Matrix& got, const Matrix& want);

// ---------------------------------------------------------------------------
// An instance with our layer and a device with maintenance1 enabled (plus NV
// flexible dimensions when flex), or, with layer=false, the bare driver with
// VK_KHR_cooperative_matrix only (and NV coopmat2 when flex).
struct EnvOptions {
  bool flex = false;
  bool layer = true;
  cmtest::Validation validation = cmtest::Validation::Off;
  bool allPaths = false;  // also VK_KHR_maintenance5 (inline stage code) and VK_EXT_shader_object
};

class Env {
 public:
  explicit Env(const EnvOptions& options = {});
  // "" when usable; otherwise why not (also checks subgroup size 8, which the
  // lavapipe coopmat implementation needs).
  std::string Problem() const;
  const cmtest::Device& device() const { return *device_; }
  const cmtest::Instance& instance() const { return *instance_; }
  void ClearMessages() const { instance_->clearMessages(); }

 private:
  std::unique_ptr<cmtest::Instance> instance_;
  std::unique_ptr<cmtest::Device> device_;
  uint32_t subgroupSize_ = 0;
  bool flexMissing_ = false;
  bool expectRegisters_ = false;  // through the layer with lowering=auto
  bool native_ = false;           // the native lane: the driver's own extension, no layer
  bool throughLayer_ = false;
  bool layerServes_ = false;      // the layer's "emulating ..." line for this device
  size_t probedLayouts_ = 0;      // the layer's "layout: ...  # probed" lines for this device
};

// Creates an Env and REQUIREs it to be usable.
#define EXEC_ENV(name, ...)                      \
  ::exec::Env name{::exec::EnvOptions{__VA_ARGS__}}; \
  INFO("environment: " << name.Problem());       \
  REQUIRE(name.Problem().empty())

// Target environments every shader is compiled for.
const std::vector<std::string>& TargetEnvs();
// $COOPMAT_SHADER_DIR/exec/<name>.<env>.spv; empty if missing.
std::vector<uint32_t> LoadShader(const std::string& name, const std::string& env);

// For one scope, LoadShader returns transform(words) instead (e.g. a module lowered
// offline, run on the bare driver). Not thread-safe: one per test at a time.
class ShaderTransform {
 public:
  explicit ShaderTransform(std::function<std::vector<uint32_t>(const std::vector<uint32_t>&)> transform);
  ~ShaderTransform();
  ShaderTransform(const ShaderTransform&) = delete;
  ShaderTransform& operator=(const ShaderTransform&) = delete;
};
std::string ShaderPath(const std::string& name, const std::string& env);

// How a variant is dispatched: `subgroupsPerGroup` subgroups of 8 per workgroup
// (spec constant 0 = local_size_x unless the shader has a literal size), `groups`
// workgroups; one matrix per subgroup.
struct Grid {
  uint32_t subgroupsPerGroup = 1;
  uint32_t groups = 2;
  bool literalLocalSize = false;
  uint32_t requiredSubgroupSize = 0;
  // VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT; only SPIR-V 1.6
  // modules may leave it off (VUID-RuntimeSpirv-OpTypeCooperativeMatrixKHR-10770).
  bool fullSubgroups = true;
  uint32_t matrices() const { return subgroupsPerGroup * groups; }
};

// Runs job (spec constant 0 set from grid) and returns "" or a failure description.
std::string Dispatch(const Env& env, cmtest::ComputeJob job, const Grid& grid, std::vector<Bytes>& buffers);

}  // namespace exec
