// Internal interface shared by the lowerings: the per-module context, the
// per-function state, an instruction builder with a cursor, the Workgroup
// scratch, and one entry point per lowered operation.
#pragma once

#include <functional>
#include <map>
#include <set>

#include "coopmat/lower.h"
#include "ir.h"
#include "type_manager.h"

namespace coopmat {

class Builder;
struct FunctionState;

// The one Workgroup `uint[numSlices * wordsPerSlice]` array every lowering shares,
// sliced per subgroup by SubgroupId. Its size is only known once every op has
// been lowered, so its ids are reserved up front and defined by Finalize().
class Scratch {
 public:
  explicit Scratch(struct Context& context) : context_(context) {}

  // Records that a use stores `type` whole into a slice and needs `extraBytesPerElement`
  // more bytes per element of it (room for wider elements converted in place).
  void Require(const CoopMatType& type, uint32_t extraBytesPerElement = 0);
  // Records that a use needs `wordsId` words of the slice (a uint constant or
  // specialization-constant expression, e.g. from TypeManager::SpecOp).
  void RequireWords(uint32_t wordsId);
  bool Used() const { return variable_ != 0; }
  // The subgroup size the slices are counted at (the pipeline's smallest): a
  // workgroup running at a smaller size has more subgroups than slices.
  uint32_t SlicedSubgroupSize() const;
  uint32_t Variable();
  uint32_t WordsPerSlice();  // id of a uint constant (possibly a specialization constant op)

  // Subgroup-scope barrier that orders the slice's Workgroup accesses.
  void Barrier(Builder& b);
  // Starts a use of the slice: the barrier that orders it after earlier uses, left
  // out when there can be none (the first use in an entry point's entry block,
  // before any function call, in a function nothing calls).
  void BeginUse(Builder& b, FunctionState& fs);
  uint32_t WordPointer(Builder& b, const FunctionState& fs, uint32_t wordOffset);
  uint32_t LoadWord(Builder& b, const FunctionState& fs, uint32_t wordOffset);
  void StoreWord(Builder& b, const FunctionState& fs, uint32_t wordOffset, uint32_t value);
  // Row-major stride of `type` in uint words: cols * componentBytes / 4.
  uint32_t StrideWords(Builder& b, const CoopMatType& type);
  // The same for `colsId` columns of `bytes`-byte elements; fails when not whole words.
  uint32_t StrideWords(Builder& b, uint32_t colsId, uint32_t bytes, uint32_t typeForMessage);
  // BeginUse; store `value` into the slice (from word `offsetWords`, an id; 0 means the
  // start), row-major or column-major; barrier. Returns the stride it stored with
  // (StrideWords of its columns or rows), which a load takes.
  uint32_t StoreMatrix(Builder& b, FunctionState& fs, uint32_t value, const CoopMatType& type, bool columnMajor = false,
                       uint32_t offsetWords = 0);
  // Loads the slice (from word `offsetWords`, an id; 0 means the start) as `type`;
  // columnMajor reads it transposed. `stride` in words.
  uint32_t LoadMatrix(Builder& b, const FunctionState& fs, const CoopMatType& type, bool columnMajor,
                      uint32_t stride, uint32_t resultId = 0, uint32_t offsetWords = 0);
  // The 4 / componentBytes elements of `type` packed in the uint `word`, lowest address first.
  std::vector<uint32_t> Unpack(Builder& b, const CoopMatType& type, uint32_t word);
  // The inverse: 4 / componentBytes values of the component type packed into a uint.
  uint32_t Pack(Builder& b, const CoopMatType& type, const std::vector<uint32_t>& elements);

  // What the slices are sized for so far, to try a lowering and undo its requirements
  // (LowerAtUnlistedSize): Grew says whether anything was required beyond `before`.
  struct Requirements {
    uint32_t maxConstantWords = 0;
    std::vector<uint32_t> specWords;
    std::set<std::pair<uint32_t, uint32_t>> types;
    uint32_t requestedBytes = 0;
    bool requestedSpecialized = false;
  };
  Requirements Save() const;
  void Restore(const Requirements& saved);
  bool Grew(const Requirements& before) const;

  // Declares the array and variable, adds them to the entry points, checks the limit.
  void Finalize();

  // The largest constant slice size (bytes) required since StartRequestCount, and
  // whether a requirement depended on specialization constants: one operation's
  // scratch, for LowerResult::operations.
  void StartRequestCount() {
    requestedBytes = 0;
    requestedSpecialized = false;
  }
  uint32_t requestedBytes = 0;
  bool requestedSpecialized = false;

 private:
  uint32_t MemoryOperandsMask() const;
  struct SharedMemoryBudget {
    uint64_t limit = 0;  // 0: none
    std::string note;    // where the limit is not the stage's shared memory alone, why
  };
  SharedMemoryBudget SharedMemoryLimit(uint64_t payload) const;
  struct Context& context_;
  uint32_t variable_ = 0;
  uint32_t wordsPerSlice_ = 0;
  uint32_t maxConstantWords_ = 0;
  std::vector<uint32_t> specWords_;  // ids of specialization-constant word counts
  std::set<std::pair<uint32_t, uint32_t>> requiredTypes_;  // (type, extra bytes per element)
};

// Two 16-bit or four 8-bit values (lowest address first) as the bits of a uint:
// OpCompositeConstruct of a vector, OpBitcast. For integers only where
// ArithmeticAllowed (a storage-only 8/16-bit type admits width conversions alone).
uint32_t PackVector(Builder& b, uint32_t componentType, const std::vector<uint32_t>& elements);

// Whether the module may do arithmetic (conversions, subgroup operations, bitcasts)
// on this scalar type: always for 32-bit types and for bfloat16 and fp8 (whose type
// capabilities allow their conversions and bitcasts), else with its width's capability.
bool ArithmeticAllowed(const Context& c, uint32_t scalarType);

// Learned element->coordinate tables for one matrix type in one function.
struct CoordinateTables {
  // A single table of row-major element indices (row = k / cols, col = k % cols) when
  // the shape is constant and every index is exact in the component type; else row
  // and column tables.
  uint32_t indexVar = 0;
  uint32_t rowVar = 0, colVar = 0;            // variables of the matrix type
  uint32_t rowHighVar = 0, colHighVar = 0;    // set when a coordinate is split in low/high parts
  uint32_t splitBase = 0;                     // the part base (e.g. 256 for 8-bit types)
  // Function: learned in the function's own entry block (entry points). Private:
  // learned by every entry point that reaches the function, at its start, so a
  // function called from non-uniform control flow (GetCoordinate is not tangled)
  // never runs the tangled learning itself.
  spv::StorageClass storage = spv::StorageClass::Function;
};

struct Context {
  ir::Module& module;
  TypeManager& types;
  const LowerOptions& options;
  LowerStats& stats;
  bool vulkanMemoryModel = false;
  std::set<uint32_t> transposed;  // results decorated CooperativeMatrixTransposeEXT
  std::map<uint32_t, uint32_t> functionTypes;  // OpFunction id -> OpTypeFunction id
  std::map<spv::BuiltIn, uint32_t> builtins;   // builtin -> Input variable
  std::map<spv::BuiltIn, uint32_t> builtinTypes;  // builtin -> its variable's 32-bit int type
  std::set<uint32_t> entryFunctions;           // functions named by an OpEntryPoint
  // Private coordinate tables shared by the non-entry functions, by matrix type, and
  // the entry points that must learn them.
  std::map<uint32_t, CoordinateTables> privateTables;
  std::map<uint32_t, std::vector<CoopMatType>> entryLearns;  // entry function -> types
  Scratch scratch;
  // Register path (register.cpp): the decision per lowered instruction (by result
  // id), and whether any subgroup shuffle was emitted (needs GroupNonUniformShuffle).
  std::map<uint32_t, bool> registerPath;
  bool usesShuffle = false;
  // The subgroup sizes pipelines may run with that the register path must cover
  // (LowerOptions::subgroupSizes, else the layouts' sizes), and the one whose code is
  // being emitted (0: none chosen; RegisterLayout then answers only for a single size).
  std::vector<uint32_t> subgroupSizes;
  uint32_t activeSubgroupSize = 0;
  bool atUnlistedSubgroupSize = false;  // emitting the per-size switch's default: no size is known
  // A lowered operation touched a matrix type with specialization-constant shape or Use.
  bool dependsOnSpecialization = false;
  bool dependsOnSubgroupSize = false;  // LowerResult::dependsOnSubgroupSize
  std::vector<OperationReport> reports;  // one per lowered operation, in order
  // OpVariables made by Builder::Variable for the function being lowered; LowerFunction
  // puts them into its entry block once, instead of one insertion each.
  std::vector<ir::Instruction> newVariables;

  Context(ir::Module& m, TypeManager& t, const LowerOptions& o, LowerStats& s)
      : module(m), types(t), options(o), stats(s), scratch(*this) {}

  // The Input variable for a uint builtin, reusing the module's own when present.
  uint32_t BuiltinVariable(spv::BuiltIn builtin);
  // Memory semantics for the subgroup barriers (adds MakeAvailable|MakeVisible under the Vulkan model).
  uint32_t BarrierSemantics() const;
  // Parameter types of the function `functionId` (empty when it is not a function).
  std::vector<uint32_t> ParameterTypes(uint32_t functionId) const;
  uint32_t ReturnType(uint32_t functionId) const;
  // Whether the driver is known to support a subgroup-scope matrix of this component
  // type, constant dimensions and Use (LowerOptions::supportedMatrixTypes).
  bool IsSupportedMatrix(uint32_t componentType, uint32_t rowsId, uint32_t colsId, MatrixUse use) const;
};

struct FunctionState {
  ir::Function& function;
  uint32_t sliceBase = 0;      // SubgroupId * wordsPerSlice (only when an op of the function uses the scratch)
  uint32_t lane = 0;           // SubgroupLocalInvocationId
  uint32_t subgroupSize = 0;   // SubgroupSize
  bool scratchUsed = false;    // a use of the slice has been emitted (Scratch::BeginUse)
  std::map<uint32_t, CoordinateTables> coordinates;  // by matrix type id
};

// The labels a block terminator branches to (none for a return or a non-terminator).
std::vector<uint32_t> Successors(const ir::Instruction& terminator);

// Inserts instructions at a cursor inside one function and builds structured loops.
// Renames the predecessor `from` to `to` in the OpPhis of the blocks `terminator`
// branches to (the terminator of a block that is now labelled `to`).
void RetargetPhis(ir::Function& function, const ir::Instruction& terminator, uint32_t from, uint32_t to);

class Builder {
 public:
  Builder(Context& context, ir::Function& function, size_t block, size_t index)
      : context_(context), function_(function), block_(block), index_(index) {}

  Context& context() { return context_; }
  TypeManager& types() { return context_.types; }
  size_t block() const { return block_; }
  size_t index() const { return index_; }

  // Emits an instruction with a result; returns its id (resultId when non-zero).
  uint32_t Emit(spv::Op op, uint32_t type, std::vector<uint32_t> operands, uint32_t resultId = 0);
  void EmitVoid(spv::Op op, std::vector<uint32_t> operands);
  // A Function-storage variable of `type`; it joins the entry block's variables when
  // the function is done (Context::newVariables).
  uint32_t Variable(uint32_t type);

  // switch (selector) { case values[k]: body(k); default: otherwise() } as a
  // structured selection; each body ends where it leaves the cursor, and the cursor
  // continues in the merge block.
  void Switch(uint32_t selector, const std::vector<uint32_t>& values, const std::function<void(size_t)>& body,
              const std::function<void()>& otherwise);
  // for (i = begin; i < end; i += step) body(i), as a structured loop.
  void Loop(uint32_t begin, uint32_t end, uint32_t step, const std::function<void(uint32_t)>& body);
  // while (condition()) body(), as a structured loop: `condition` emits the test (a bool
  // id) at the top of every iteration, so it may read what the body changed.
  void While(const std::function<uint32_t()>& condition, const std::function<void()>& body);

  // uint arithmetic, folded when both operands are plain constants.
  uint32_t Add(uint32_t a, uint32_t b);
  uint32_t Mul(uint32_t a, uint32_t b);
  uint32_t Div(uint32_t a, uint32_t b);
  uint32_t Mod(uint32_t a, uint32_t b);
  uint32_t ShiftLeft(uint32_t a, uint32_t b);
  uint32_t ShiftRight(uint32_t a, uint32_t b);
  uint32_t And(uint32_t a, uint32_t b);
  uint32_t Or(uint32_t a, uint32_t b);
  uint32_t Xor(uint32_t a, uint32_t b);
  uint32_t U(uint32_t value) { return context_.types.UintConstant(value); }

  // Element `index` of the matrix held in Function variable `var` of `matrixType`.
  uint32_t ElementPointer(uint32_t var, uint32_t componentType, uint32_t index,
                          spv::StorageClass storage = spv::StorageClass::Function);
  // Converts a 32-bit int value to `type` (another 32-bit int type) by bitcast when needed.
  uint32_t AsIntType(uint32_t value, uint32_t type);

 private:
  uint32_t Fold(spv::Op op, uint32_t a, uint32_t b);
  uint32_t SplitBlock();  // moves [cursor, end) of the current block into a new block; returns its label
  uint32_t CurrentLabel() const { return function_.blocks[block_].Label(); }

  Context& context_;
  ir::Function& function_;
  size_t block_;
  size_t index_;
};

// Per-operation lowerings; each replaces the instruction (already removed) at the
// builder's cursor and gives its final value the original result id.
void PrepareCoordinates(Builder& entry, FunctionState& fs, const CoopMatType& type);
// Declares the Private tables of `type` (once) in context.privateTables.
const CoordinateTables& PrivateCoordinates(Context& context, const CoopMatType& type);
// Learns `type`'s Private tables at the builder's cursor (an entry point's entry block).
void LearnPrivateCoordinates(Builder& entry, FunctionState& fs, const CoopMatType& type);
uint32_t ReadCoordinate(Builder& b, FunctionState& fs, const CoopMatType& type, uint32_t index, bool column);
void LowerGetCoordinate(Builder& b, FunctionState& fs, const ir::Instruction& inst);
void LowerConversion(Builder& b, FunctionState& fs, const ir::Instruction& inst);
void LowerPerElement(Builder& b, FunctionState& fs, const ir::Instruction& inst);
void LowerReduce(Builder& b, FunctionState& fs, const ir::Instruction& inst);

// Register path (register.cpp, lower_reduce_register.cpp, the register parts of
// lower_convert_use.cpp): whether `inst` (an operation NeedsLowering accepted) is
// lowered with the driver's register layout instead of the scratch. Cached.
bool TakesRegisterPath(Context& context, const ir::Instruction& inst);
bool CanLowerReduceInRegisters(Context& context, const ir::Instruction& inst);
void LowerReduceInRegisters(Builder& b, FunctionState& fs, const ir::Instruction& inst);
bool ConversionUsesScratch(Context& context, const ir::Instruction& inst);
// A conversion that takes registers at some of the pipeline's subgroup sizes and the
// scratch at others: lowered per size (each case of the switch has its own form).
bool ConversionInRegistersAtSomeSize(Context& context, const ir::Instruction& inst);
// The fp8 saturation decoration (SaturatedToLargestFloat8NormalConversionEXT): a
// lowered conversion passes it on to the instructions that now convert (copied to
// each per-subgroup-size version first); afterwards it is dropped from every id
// that no longer names a conversion (a load or gather result).
void CopySaturation(Context& context, uint32_t from, uint32_t to);
void DropMisplacedSaturation(Context& context);

// Applies a pipeline's specialization and freezes every specialization constant (specialize.cpp).
void FreezeSpecialization(ir::Module& module, const Specialization& specialization);

// Gives every loop header of `function` holding an instruction `needsLowering`
// accepts a block of its own for that code (loop_header.cpp), so the lowerings can split it.
void SplitLoopHeadersWith(Context& c, ir::Function& function, const std::function<bool(const ir::Instruction&)>& needsLowering);

// Whether an execution model has workgroups (compute, task, mesh): the only ones the
// Workgroup scratch and the builtins are wired into.
bool IsComputeLikeModel(uint32_t model);
// Refuses a module whose non-compute entry point reaches an operation to lower
// (stages.cpp), naming both.
void CheckLoweredStages(Context& c, const std::function<bool(const ir::Instruction&)>& needsLowering);

// Loads a 32-bit builtin as uint (a module's own `int` variable is bitcast).
uint32_t LoadBuiltin(Builder& b, spv::BuiltIn builtin);

// "OpFoo %12" for error messages.
std::string Describe(const ir::Instruction& inst);
// The matrix type of value `id`, or a LowerError naming `inst` and `what`.
CoopMatType MatrixOf(Context& context, const ir::Instruction& inst, uint32_t id, const char* what);

}  // namespace coopmat
