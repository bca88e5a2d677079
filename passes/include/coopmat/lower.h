// Public interface of the rewrite library: everything the layer and the tools
// need to turn a SPIR-V module that uses SPV_EXT_cooperative_matrix_maintenance1
// into one that needs only SPV_KHR_cooperative_matrix. No Vulkan calls, no
// global state: every function is safe to call from many threads at once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coopmat/layout.h"

namespace coopmat {

// What a module declares, found by a cheap scan that stops at the first OpFunction.
struct ExtUsage {
  bool extExtension = false;   // OpExtension "SPV_EXT_cooperative_matrix_maintenance1"
  bool nvExtension = false;    // OpExtension "SPV_NV_cooperative_matrix2"
  bool conversions = false;    // OpCapability CooperativeMatrixConversionsEXT (5429)
  bool reductions = false;     // OpCapability CooperativeMatrixReductionsEXT/NV (5430)
  bool perElement = false;     // OpCapability CooperativeMatrixPerElementOperationsEXT/NV (5432)
  bool getCoordinate = false;  // OpCapability CooperativeMatrixGetCoordinateEXT (5438)

  // True when the module needs the rewrite: it uses an EXT-only capability, or
  // declares the EXT extension (then 5430/5432 are EXT operations too). A pure
  // NV coopmat2 module is left to the driver.
  bool NeedsLowering() const {
    return conversions || getCoordinate || (extExtension && (reductions || perElement));
  }
};

// A scalar specialization constant's type: what a value given for its SpecId must fit.
struct SpecConstantType {
  enum class Kind { Bool, Int, Float } kind = Kind::Int;
  uint32_t width = 32;   // bits
  bool isSigned = false;  // Int only
};

struct ScanResult {
  bool ok = false;        // false: not a SPIR-V module we can read (error says why)
  std::string error;
  ExtUsage usage;
  // The SpecIds the module decorates (OpDecorate ... SpecId); complete only when
  // specIdsComplete (no decoration group, which could carry more).
  std::vector<uint32_t> specIds;
  bool specIdsComplete = true;
};

// Reads the header and the sections before the first function. Bounds-checked.
ScanResult ScanModule(std::span<const uint32_t> words);

// The type of each SpecId's scalar constant (OpSpecConstant, OpSpecConstantTrue/False), read
// as ScanModule reads (none where it cannot): what a value given for the SpecId must fit.
// Apart from ScanModule, which the layer runs on every module, as only tools need it.
std::map<uint32_t, SpecConstantType> SpecConstantTypes(std::span<const uint32_t> words);

// One subgroup-scope cooperative matrix type the driver accepts.
struct SupportedMatrixType {
  uint32_t componentType = 0;  // VkComponentTypeKHR value (FLOAT16 = 0, FLOAT32 = 1, SINT8 = 3, UINT32 = 9, ...)
  uint32_t use = 0;            // 0 MatrixA, 1 MatrixB, 2 MatrixAccumulator (the SPIR-V Use values)
  uint32_t rows = 0;           // exact size, or the row granularity under flexibleDimensions
  uint32_t cols = 0;           // exact size, or the column granularity under flexibleDimensions
};

// A pipeline stage's specialization (VkSpecializationInfo): the bytes the app gave
// for each SpecId. A value is read as the constant's own width (1, 2, 4 or 8 bytes;
// VkBool32 for booleans), as Vulkan specifies.
struct Specialization {
  std::map<uint32_t, std::vector<uint8_t>> values;
};

struct LowerOptions {
  // Smallest subgroup size the pipeline can run with. The portable path slices its
  // Workgroup scratch per subgroup, so this bounds the number of slices (the smallest
  // of `subgroupSizes` counts instead when those are given).
  uint32_t minSubgroupSize = 8;
  // maxComputeSharedMemorySize of the device; 0 disables the check.
  uint32_t maxSharedMemoryBytes = 0;
  // maxTaskSharedMemorySize / maxMeshSharedMemorySize (VK_EXT_mesh_shader) for task
  // and mesh entry points; 0: maxSharedMemoryBytes applies to them too.
  uint32_t maxTaskSharedMemoryBytes = 0;
  uint32_t maxMeshSharedMemoryBytes = 0;
  // maxTaskPayloadAndSharedMemorySize / maxMeshPayloadAndSharedMemorySize: the task
  // payload and the shared memory of a task or mesh entry point together; 0: no such limit.
  uint32_t maxTaskPayloadAndSharedMemoryBytes = 0;
  uint32_t maxMeshPayloadAndSharedMemoryBytes = 0;
  // Run spirv-val on the result and fail if it does not validate.
  bool validate = false;

  // The cooperative matrix types the driver supports at subgroup scope. The lowering
  // declares a matrix type the module does not already use (the intermediate of a
  // conversion that changes both component type and Use) only when it is listed here;
  // otherwise it converts through the Workgroup scratch, which needs no new matrix
  // type. Empty (the default): nothing is known, the scratch path is always taken.
  std::vector<SupportedMatrixType> supportedMatrixTypes;
  // True when the device was created with VK_NV_cooperative_matrix2's
  // cooperativeMatrixFlexibleDimensions: the rows/cols of every entry are then
  // granularities, and any positive multiple of them (each dimension at most
  // flexibleMaxDimension, when that is non-zero) is supported.
  bool flexibleDimensions = false;
  uint32_t flexibleMaxDimension = 0;

  // Register layouts of the driver, each for one subgroup size (LayoutKey::subgroupSize).
  // An operation whose matrix types all have a layout here, at every size in
  // subgroupSizes, is lowered in registers (arithmetic coordinates, subgroup shuffles)
  // instead of through the Workgroup scratch. Empty: the portable path for everything.
  //
  // The register code is only correct when every subgroup that runs it is full and
  // has one of those sizes (the lowering cannot check this in the shader), and it
  // uses OpGroupNonUniformShuffle/ShuffleXor (GroupNonUniformShuffle; the device must
  // support subgroup shuffles in the stage). A type matches a layout only with the
  // exact component type, Use and constant rows/cols; specialization-constant
  // dimensions, layouts of more than 256 elements per invocation, and moves that
  // would need more than one shuffle per
  // element keep the portable path. 8- and 16-bit values cross lanes widened to
  // 32 bits, which needs the module's Int8/Int16/Float16 capability (else portable).
  std::vector<LinearLayout> layouts;
  // Why `layouts` is empty, for the per-operation report (the layer says: its
  // lowering=portable setting, layout_probe=false, or a probe that found nothing).
  std::string withoutLayoutsBecause;
  // The subgroup sizes a pipeline of the module may run with. An operation takes the
  // register path only when every one of them has the layouts it needs; with several
  // sizes its register code is emitted once per size and selected by the SubgroupSize
  // built-in (a constant in every driver's compiler, so only one version survives).
  // Empty: the sizes LowerOptions::layouts lists.
  std::vector<uint32_t> subgroupSizes;

  // Conversions and transposes whose register layouts differ move elements with
  // subgroup shuffles; false takes the Workgroup round trip for those instead (moves
  // between identical layouts stay plain register copies). Which is cheaper is a
  // property of the driver's compiler, measured per family: ApplyMeasuredCosts.
  bool registerMovesWithShuffles = true;
  // Lane bits across which a constant XOR shuffle folds into the instruction that
  // consumes it (AMD: DPP within rows of 16 lanes, bits 0-3). A register move's
  // exchange across one sends both elements of each pair, each received value
  // feeding one select, instead of first choosing which to send (register.h,
  // ExchangePlan). Measured per family: ApplyMeasuredCosts.
  uint32_t foldedShuffleLaneBits = 0;
  // What the Workgroup round trip of one matrix costs per subgroup size, in the units
  // of a register move's exchange plan (ExchangePlan::cost, about instructions per
  // lane). With registerMovesWithShuffles off, a move whose exchanges cost more takes
  // the round trip; a size not listed takes the exchanges. Measured: ApplyMeasuredCosts.
  std::map<uint32_t, uint32_t> roundTripCost;
  // The scratch's subgroup barriers are OpControlBarriers of Subgroup scope; false: their
  // memory part only (OpMemoryBarrier). For lavapipe, which runs a subgroup's invocations
  // in step yet makes every execution barrier a workgroup one (lp_bld_nir.c), so that in a
  // workgroup whose subgroups take different paths a subgroup's barrier would wait for, or
  // release, subgroups it has nothing to do with.
  bool subgroupExecutionBarriers = true;
  // Shared memory the hardware divides among the workgroups resident on one
  // processor (RDNA: a WGP's 128 KiB); 0: unknown. With registerMovesWithShuffles
  // off, a module that has shared memory of its own and whose scratch would cost it a
  // resident workgroup is lowered with register moves instead (docs/design.md, "Route
  // choice within the shared-memory budget"), as is one whose scratch would not fit
  // maxSharedMemoryBytes at all.
  uint32_t sharedMemoryPool = 0;
  // The hardware allocates a workgroup's shared memory in blocks of this many bytes
  // (RDNA2 and later: 1024), so residency counts the module's bytes rounded up to it;
  // 0: exact bytes.
  uint32_t sharedMemoryGranule = 0;
  // The device was created with shaderSubgroupExtendedTypes: 16-bit values cross
  // lanes as themselves. Otherwise they travel packed in 32-bit words (exact bit moves).
  bool subgroupExtendedTypes = false;

  // Pipeline time: apply these specialization-constant values, then freeze every
  // specialization constant into a plain constant (folding OpSpecConstantOp where it
  // can) before lowering, so shapes are constants and the register path applies.
  std::optional<Specialization> specialization;
  // Module time, for a module the layer lowers again with each pipeline's
  // specialization: accept relations between specialization-constant shapes or Uses
  // that only the specialization can settle (a conversion between TM x TN and TM x TK
  // assumes TN == TK). The pipeline-time lowering checks them and refuses a mismatch.
  bool specializationPending = false;

  // Adds the types of one VkCooperativeMatrixPropertiesKHR (subgroup scope only;
  // from VkCooperativeMatrixFlexibleDimensionsPropertiesNV pass the granularities as
  // M, N, K): A is M x K, B is K x N, C and Result are M x N Accumulators.
  void AddMatrixProperties(uint32_t M, uint32_t N, uint32_t K, uint32_t aType, uint32_t bType, uint32_t cType,
                           uint32_t resultType) {
    supportedMatrixTypes.push_back({aType, 0, M, K});
    supportedMatrixTypes.push_back({bType, 1, K, N});
    supportedMatrixTypes.push_back({cType, 2, M, N});
    if (resultType != cType) supportedMatrixTypes.push_back({resultType, 2, M, N});
  }
};

struct LowerStats {
  uint32_t getCoordinate = 0;
  uint32_t convertUse = 0;   // OpCooperativeMatrixConvertUseEXT
  uint32_t convert = 0;      // Op*Convert that change Use (relaxed rules)
  uint32_t transpose = 0;    // conversions carrying CooperativeMatrixTransposeEXT
  uint32_t perElement = 0;
  uint32_t reduce = 0;
  // Of those, the ones lowered in registers with LowerOptions::layouts (no scratch).
  uint32_t registerPath = 0;
  size_t wordsIn = 0;
  size_t wordsOut = 0;
  // Scratch the lowering added, per subgroup slice, when the sizes are constant
  // (0 when none or when it depends on specialization constants).
  uint32_t scratchBytesPerSubgroup = 0;
  // Shared memory of the workgroup when its sizes are constant: the module's own
  // Workgroup variables and the scratch the lowering added (all slices).
  uint64_t moduleSharedBytes = 0;
  uint64_t scratchBytes = 0;
  double microseconds = 0;

  uint32_t OpsLowered() const { return getCoordinate + convertUse + convert + perElement + reduce; }
};

// One lowered operation, for users who ask what the rewrite did (coopmat/inspect.h
// turns a list of these into text).
struct OperationReport {
  std::string operation;       // "OpCooperativeMatrixReduceEXT", "OpFConvert", ...
  uint32_t resultId = 0;
  std::string resultName;      // the result's OpName, when the module has one
  uint32_t functionId = 0;
  std::string functionName;    // the function's OpName, when the module has one
  bool registerPath = false;   // false: the portable path (Workgroup scratch or learned tables)
  std::string portableReason;  // why not in registers (empty on the register path)
  std::string registerNote;    // on the register path, what decided it where costs did (a conversion's exchanges)
  uint32_t scratchBytes = 0;   // scratch this operation needs per subgroup (constant sizes)
  bool scratchSpecialized = false;  // its scratch size depends on specialization constants
  double microseconds = 0;     // time spent rewriting this operation
};

struct LowerResult {
  bool ok = false;
  // Some lowered operation uses a matrix type whose rows, columns or Use are
  // specialization constants: lowering with the pipeline's specialization can check
  // its shapes and may take the register path.
  bool dependsOnSpecialization = false;
  // With specializationPending: the Workgroup scratch fits the limit only at some of
  // `subgroupSizes` (fewer, larger subgroups need fewer slices); lowering for the
  // pipeline's own subgroup size decides.
  bool dependsOnSubgroupSize = false;
  std::vector<uint32_t> words;  // the rewritten module when ok
  std::string error;            // what failed and where, when !ok
  LowerStats stats;
  std::vector<OperationReport> operations;  // in module order (those done before a failure)
  // Why conversions took register moves where the measured costs prefer the
  // Workgroup round trip (the shared-memory budget); empty when they did not.
  std::string routeNote;
};

// Sets the choices between register and scratch forms that the AMD compile lane and
// the lavapipe benchmarks measured for a driver family (passes/costs.cpp holds the
// figures). Families not listed keep the defaults.
void ApplyMeasuredCosts(DriverFamily family, LowerOptions& options);

// Applies `specialization` and freezes every specialization constant (what a driver
// does when it creates the pipeline). Fails only on input it cannot parse.
LowerResult SpecializeModule(std::span<const uint32_t> words, const Specialization& specialization);

// Rewrites every EXT operation into core KHR SPIR-V. Never throws, never crashes on
// malformed input: such input yields ok == false with a message.
LowerResult LowerModule(std::span<const uint32_t> words, const LowerOptions& options);

// Runs spirv-val in the Vulkan 1.<vulkanMinor> environment, raised to the oldest
// one that accepts the module's SPIR-V version (a negative value: that oldest one).
// Returns an empty string when the module is valid, otherwise the validator's message.
std::string ValidateModule(std::span<const uint32_t> words, int vulkanMinor = -1);

// ValidateModule of a lowering's output, as a message that says whose problem it is: empty
// when `lowered` is valid; where `input` does not validate either, the input's messages
// (the lowering did not cause them), else "the lowered module does not validate: ...".
std::string LoweredModuleProblem(std::span<const uint32_t> input, std::span<const uint32_t> lowered, int vulkanMinor = -1);

}  // namespace coopmat
