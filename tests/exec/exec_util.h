// Shared pieces of the execution tests: element types, host-side matrices,
// the Vulkan environment, shader lookup and one helper per shader family that
// runs a variant and returns what the GPU wrote.
#pragma once

#include "compute.h"
#include "profile.h"
#include "vk_context.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace coopmat {
struct IeeeFormat;
}

namespace exec {

using cmtest::Bytes;

// ---------------------------------------------------------------------------
// Element types. Host values are doubles holding the exact element value
// (every f16/f32/8-bit/32-bit value the tests use is exact in a double).
// BF16, E4M3 and E5M2 (bfloat16, fp8) are moved and converted only (the virtual device's
// GFX12 profiles list them); their values convert by passes/ieee_float.h.
enum class T { F16, F32, U8, S8, U32, S32, BF16, E4M3, E5M2 };
const char* Name(T t);  // "f16", "f32", "u8", "s8", "u32", "s32", "bf16", "e4m3", "e5m2"
size_t Size(T t);
bool IsFloat(T t);
// The format of BF16, E4M3 and E5M2; null for the other types.
const coopmat::IeeeFormat* EncodedFormat(T t);
// The test type of a VkComponentTypeKHR, if the tests have one.
std::optional<T> TestType(uint32_t vkComponentType);
uint32_t VkComponentType(T t);
// The value a conversion of v into t produces: floats round to nearest even,
// float -> int truncates toward zero, integers wrap modulo 2^width (two's complement).
double Wrap(T t, double v);
// Wrap under SPV_EXT_float8's SaturatedToLargestFloat8NormalConversionEXT: fp8 overflow and
// infinities give the largest finite value with their sign; the same as Wrap for other types.
double WrapSaturated(T t, double v);
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

// "" when equal (type, shape and every value, a zero's sign included); otherwise the number of
// mismatches and the first few "(r,c) got X want Y".
std::string Compare(const Matrix& got, const Matrix& want);

struct Dims {
  uint32_t rows = 0, cols = 0;
  bool operator==(const Dims&) const = default;
};

// ---------------------------------------------------------------------------
// An instance with our layer and a device with maintenance1 enabled (plus NV
// flexible dimensions when flex), or, with layer=false, the bare driver with
// VK_KHR_cooperative_matrix only (and NV coopmat2 when flex).
//
// With COOPMAT_VIRTUAL_PROFILE set (tests/virtual's exec lane), the virtual device
// VK_LAYER_COOPMAT_TEST_virtual_device sits below the layer and the driver looks and
// computes like that profile: its subgroup size, its matrix configurations and
// layouts, no NV flexible dimensions.
struct EnvOptions {
  bool flex = false;
  bool layer = true;
  cmtest::Validation validation = cmtest::Validation::Off;
  bool inlineStage = false;   // also VK_KHR_maintenance5 (SPIR-V chained into the stage)
  bool shaderObject = false;  // also VK_EXT_shader_object
  // The self-test (selftest/): the device of this index in vkEnumeratePhysicalDevices order
  // (-1: lavapipe, or the first whose name contains $COOPMAT_TEST_DEVICE).
  int deviceIndex = -1;
  // The self-test's device model, for any driver: any subgroup size, shapes from the
  // device's list (not lavapipe's "every type at 8x8"), replicas from the layer's layout
  // lines, no virtual device of the suite's own.
  bool listedDevice = false;
  // Pipelines at this required subgroup size (0: the device's default).
  uint32_t subgroupSize = 0;
  // The self-test's native pass: the layer is there with force_enable off and must step
  // aside, so the driver's own implementation of the extension runs (Problem() says so
  // where the layer emulates it instead).
  bool driverImplementation = false;
  // Settings for the product layer (VkLayerSettingsCreateInfoEXT strings): lowering,
  // builtin_layouts, layout_probe, force_enable.
  std::vector<std::pair<std::string, std::string>> layerSettings;
  // The layer's layout lines from another Env on this device, for a listed device whose own
  // layer reports none (lowering=portable probes nothing): how many replicas an element has
  // is the device's, whatever the route.
  std::vector<std::string> knownLayoutLines;
  // The least a dispatch's fence wait may take (0: the job's own, 30 s). Lavapipe compiles a
  // pipeline inside the wait; a loaded machine running a 32-lane virtual device's
  // pipelines needs longer, and a hang still shows.
  uint64_t fenceTimeoutNs = 0;
};

// The virtual device: whether COOPMAT_VIRTUAL_PROFILE names a profile (the suite then
// runs on it), the profile as tests/virtual/profile.h reads it, or why it cannot be read.
struct VirtualDevice {
  bool on = false;
  coopmat::virt::ProfileResult profile;
};
const VirtualDevice& TheVirtualDevice();
// Its log (COOPMAT_VIRTUAL_LOG): one line per compute pipeline it rewrote or refused.
std::vector<std::string> VirtualLog();
// Whether a log line says it rewrote a pipeline under its profile.
bool IsRewrittenLine(const std::string& line);
// Why options cannot run here ("" when they can): flexible dimensions on a virtual
// device whose profile has none, or without the layer (lavapipe's own NV operations).
std::string Unavailable(const EnvOptions& options);
// How Dispatch's result begins when the device cannot run the job at all (a literal
// local size for another subgroup size, a shape the virtual device's profile lacks):
// CheckAll warns and goes on.
inline constexpr const char* kNotRun = "not run: ";

class Env {
 public:
  explicit Env(const EnvOptions& options = {});
  // "" when usable; otherwise why not (also checks the subgroup size: 8, which the
  // lavapipe coopmat implementation needs, or the virtual device's profile's).
  std::string Problem() const;
  const cmtest::Device& device() const { return *device_; }
  const cmtest::Instance& instance() const { return *instance_; }
  void ClearMessages() const { instance_->clearMessages(); }
  uint32_t subgroupSize() const { return subgroupSize_; }
  bool onVirtualDevice() const { return virtual_; }

  // The shape the tests give a matrix of `use` and component type `t` where they do
  // not test shapes themselves: 8x8 on lavapipe (it runs every type at 8x8, listed or
  // not; none for bfloat16 and fp8, which it lacks); on the virtual device the first
  // configuration the device lists with that type in that use (16x16 on RADV, 16x32
  // for 8-bit A on NVIDIA), none if none does.
  std::optional<Dims> Shape(Use use, T t) const;
  // M, N, K of the first configuration with A and B of `a` and C of `c` (8, 8, 8 on lavapipe,
  // none there for bfloat16 and fp8).
  std::optional<std::array<uint32_t, 3>> MulAddShape(T a, T c) const;
  // How many invocations hold each element of a rows x cols (use, t) matrix: 1 on
  // lavapipe; on the virtual device what its profile's layout says (RDNA3 keeps A
  // and B in both halves of a wave32); on a listed device what the layer's layout line
  // for it says, 0 where it has none (unknown).
  uint32_t Replicas(Use use, T t, uint32_t rows, uint32_t cols) const;
  // Whether pipelines name their subgroup size (EnvOptions::subgroupSize).
  bool requiresSubgroupSize() const { return requireSize_; }
  uint64_t fenceTimeoutNs() const { return fenceTimeoutNs_; }
  // EnvOptions::listedDevice.
  bool listedDevice() const { return listed_; }
  // Whether the layer lowers portably only (lowering=portable, by setting or variable).
  bool portable() const { return portable_; }
  // The layout the layer's line gives (use, t, rows, cols) at this Env's subgroup size, if any.
  std::optional<coopmat::LinearLayout> LayerLayout(Use use, T t, uint32_t rows, uint32_t cols) const;
  // The layer's info lines about this device: "layout: ..." and "no layout: ..." (what its
  // probe found, or the table it used), in the order it logged them.
  const std::vector<std::string>& layoutLines() const { return layoutLines_; }
  // The layouts those "layout: " lines give, every subgroup size's.
  const std::vector<coopmat::LinearLayout>& layerLayouts() const { return layerLayouts_; }
  // Whether the layer said the driver implements the extension itself (it steps aside there
  // unless force_enable).
  bool driverHasExtension() const { return driverHasExtension_; }
  // The configurations the device lists (subgroup scope), as it reports them.
  const std::vector<VkCooperativeMatrixPropertiesKHR>& matrices() const { return matrices_; }

 private:
  std::unique_ptr<cmtest::Instance> instance_;
  std::unique_ptr<cmtest::Device> device_;
  std::vector<VkCooperativeMatrixPropertiesKHR> matrices_;
  uint32_t subgroupSize_ = 0;
  bool flexMissing_ = false;
  bool virtual_ = false;          // the suite's virtual device (COOPMAT_VIRTUAL_PROFILE), not a listed device
  bool listed_ = false;           // EnvOptions::listedDevice
  bool requireSize_ = false;      // EnvOptions::subgroupSize named one
  bool portable_ = false;
  uint64_t fenceTimeoutNs_ = 0;
  std::vector<std::string> layoutLines_;
  std::vector<coopmat::LinearLayout> layerLayouts_;  // parsed from layoutLines_ once
  bool expectRegisters_ = false;  // through the layer with lowering=auto
  bool native_ = false;           // the native lane: the driver's own extension, no layer
  bool throughLayer_ = false;
  bool layerServes_ = false;      // the layer's "emulating ..." line for this device
  std::string overriddenSettings_;  // EnvOptions::layerSettings the layer does not have
  bool driverImplementation_ = false;  // EnvOptions::driverImplementation
  bool driverHasExtension_ = false;    // the layer's "the driver implements ... itself" line
  size_t probedLayouts_ = 0;      // the layer's "layout: ...  # probed" lines for this device
};

// Creates an Env and REQUIREs it to be usable; SKIPs the rest of the test case where
// its options cannot run (Unavailable).
#define EXEC_ENV(name, ...)                                                                 \
  const ::exec::EnvOptions name##Options{__VA_ARGS__};                                      \
  if (const std::string why = ::exec::Unavailable(name##Options); !why.empty()) {            \
    ::exec::CountNotRun("a test case: " + why);                                             \
    SKIP(why);                                                                              \
  }                                                                                         \
  ::exec::Env name{name##Options};                                                          \
  INFO("environment: " << name.Problem());                                                  \
  REQUIRE(name.Problem().empty())

// COOPMAT_EXEC_SAMPLE=<fraction>:<seed>[:cells] (the virtual device's lanes, which run the
// suite under many profiles, and the portable twin): of the runs one CheckAll would make,
// those whose name hashes with the seed below the fraction are drawn. The rest come after
// them, in the order of their hashes, as stand-ins: a stand-in runs only while its stratum
// has not executed a run (a run the device cannot make does not count), so every stratum
// the device can run executes once whatever the draw. A stratum is the whole group, or with
// `cells` each run's cell (operation, use, types, shape class, combine op: Cell in cases.h),
// so that only repetitions are sampled. Unset: every run drawn.
struct SampledRun {
  size_t index;    // into the group's runs
  bool drawn;      // run it; otherwise only while `stratum` has executed nothing
  size_t stratum;  // an index, the same for runs of one stratum
};
std::vector<SampledRun> Sample(const std::vector<std::string>& names, const std::vector<std::string>& cells);

// Target environments every shader is compiled for (and run in; COOPMAT_EXEC_TARGET_ENVS
// may name a subset: a comma-separated list).
const std::vector<std::string>& TargetEnvs();
// $COOPMAT_SHADER_DIR/exec/<name>.<env>.spv, or the ShaderSource's; empty if missing.
std::vector<uint32_t> LoadShader(const std::string& name, const std::string& env);
// Where LoadShader finds modules instead of files (the self-test's embedded ones); an empty
// function restores the files. Set before any test runs.
void SetShaderSource(std::function<std::vector<uint32_t>(const std::string& name, const std::string& env)> source);

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

// How a variant is dispatched: `subgroupsPerGroup` subgroups of the device's size
// per workgroup (spec constant 0 = local_size_x unless the shader has a literal size,
// which is written for subgroups of 8), `groups` workgroups; one matrix per subgroup.
struct Grid {
  uint32_t subgroupsPerGroup = 1;
  uint32_t groups = 2;
  bool literalLocalSize = false;
  bool requireSubgroupSize = false;  // VkPipelineShaderStageRequiredSubgroupSizeCreateInfo: the device's size
  // VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT; only SPIR-V 1.6
  // modules may leave it off (VUID-RuntimeSpirv-OpTypeCooperativeMatrixKHR-10770).
  bool fullSubgroups = true;
  uint32_t matrices() const { return subgroupsPerGroup * groups; }
};

// Runs job (spec constant 0 set from grid) and returns "" or a failure description.
// On the virtual device a pipeline it did not rewrite is a failure.
std::string Dispatch(const Env& env, cmtest::ComputeJob job, const Grid& grid, std::vector<Bytes>& buffers);

// What the suite ran: every Dispatch that executed, and every run or case the device could
// not run, by reason. The virtual lanes check both against a floor and an allow-list of
// reasons (tests/virtual/exec_lane.py), so that a lane cannot pass having run little.
void CountNotRun(const std::string& reason);
// A run of `cell` executed (ran) or was drawn and found one the device cannot make; the
// tally prints every cell a group offered, with the runs it executed (0: none could run).
void CountCell(const std::string& cell, bool ran);
// "exec tally: ran N", then "exec tally: not run K: <reason>" per reason, then
// "exec tally: cell <cell> ran N" per cell (stdout).
void PrintRunTally();
// The tally's totals so far: the suite's main (main.cpp) takes them before and after each test
// case, to tell a case that dispatched nothing.
struct TallyTotals {
  size_t ran = 0;     // dispatches that executed
  size_t notRun = 0;  // runs and cases not run, every reason
};
TallyTotals CurrentTallyTotals();

}  // namespace exec
