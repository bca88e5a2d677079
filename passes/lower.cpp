// The driver: parse, find the maintenance1 operations per function, prepare each
// function (builtins, scratch slice, learned coordinate tables), lower every
// operation, then clean the preamble and declare the scratch.
#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>

#include "register.h"
#include "report.h"

namespace coopmat {
namespace {

constexpr uint32_t kTransposeDecoration = static_cast<uint32_t>(spv::Decoration::CooperativeMatrixTransposeEXT);
constexpr const char* kExtExtension = "SPV_EXT_cooperative_matrix_maintenance1";

bool IsConversionOpcode(spv::Op op) {
  switch (op) {
    case spv::Op::OpFConvert:
    case spv::Op::OpSConvert:
    case spv::Op::OpUConvert:
    case spv::Op::OpConvertFToU:
    case spv::Op::OpConvertFToS:
    case spv::Op::OpConvertSToF:
    case spv::Op::OpConvertUToF: return true;
    default: return false;
  }
}

bool IsExtOpcode(spv::Op op) {
  return op == spv::Op::OpCooperativeMatrixConvertUseEXT || op == spv::Op::OpCooperativeMatrixGetCoordinateEXT ||
         op == spv::Op::OpCooperativeMatrixReduceEXT || op == spv::Op::OpCooperativeMatrixPerElementOpEXT;
}

// Whether `inst` is an operation this pass rewrites.
bool NeedsLowering(Context& c, const ir::Instruction& inst) {
  if (IsExtOpcode(inst.opcode)) return true;
  if (!IsConversionOpcode(inst.opcode) || inst.operands.empty()) return false;
  auto to = c.types.CoopMatInfo(inst.typeId);
  auto from = c.types.CoopMatInfo(c.types.TypeOf(inst.operands[0]));
  if (!to || !from) return false;
  if (c.transposed.count(inst.resultId)) return true;
  if (to->useId == from->useId) return false;
  // Two constants of the same value are the same Use: a plain KHR conversion.
  const auto toUse = c.types.ConstantValue(to->useId), fromUse = c.types.ConstantValue(from->useId);
  return !toUse || !fromUse || *toUse != *fromUse;
}

// The results decorated CooperativeMatrixTransposeEXT, directly or through a
// decoration group (OpGroupDecorate applies the group's decorations to its targets).
void CollectTransposed(const ir::Module& m, std::set<uint32_t>& transposed) {
  for (const ir::AppliedDecoration& d : ir::FindDecorations(m, static_cast<spv::Decoration>(kTransposeDecoration)))
    transposed.insert(d.target);
}

// The matrix types whose coordinate tables a function needs (Reduce needs none: its
// portable lowering writes the result row-major and loads it).
void CollectCoordinateTypes(Context& c, const ir::Instruction& inst, std::vector<CoopMatType>& out) {
  uint32_t type = 0;
  if (inst.opcode == spv::Op::OpCooperativeMatrixGetCoordinateEXT) type = c.types.TypeOf(inst.Operand(0));
  if (inst.opcode == spv::Op::OpCooperativeMatrixPerElementOpEXT) type = inst.typeId;
  if (!type) return;
  const CoopMatType info = MatrixOf(c, inst, inst.opcode == spv::Op::OpCooperativeMatrixGetCoordinateEXT ? inst.Operand(0) : inst.resultId,
                                    "the matrix");
  if (HasRegisterLayouts(c, info)) return;  // coordinates are bit arithmetic, nothing to learn
  for (const CoopMatType& seen : out)
    if (seen.id == info.id) return;
  out.push_back(info);
}

// Which entry points must learn Private coordinate tables for the non-entry
// functions they reach (directly, or through Func/CombineFunc, or deeper).
void PlanPrivateTables(Context& c) {
  std::map<uint32_t, std::vector<uint32_t>> callees;
  std::map<uint32_t, std::vector<CoopMatType>> needs;
  for (const ir::Function& f : c.module.functions) {
    const uint32_t id = f.definition.resultId;
    for (const ir::Block& block : f.blocks)
      for (const ir::Instruction& inst : block.instructions) {
        if (inst.opcode == spv::Op::OpFunctionCall) callees[id].push_back(inst.Operand(0));
        if (inst.opcode == spv::Op::OpCooperativeMatrixPerElementOpEXT) callees[id].push_back(inst.Operand(1));
        if (inst.opcode == spv::Op::OpCooperativeMatrixReduceEXT) callees[id].push_back(inst.Operand(2));
        if (!c.entryFunctions.count(id) && NeedsLowering(c, inst)) CollectCoordinateTypes(c, inst, needs[id]);
      }
  }
  for (uint32_t entry : c.entryFunctions) {
    std::set<uint32_t> seen{entry};
    std::vector<uint32_t> stack{entry};
    std::vector<CoopMatType>& learns = c.entryLearns[entry];
    while (!stack.empty()) {
      const uint32_t f = stack.back();
      stack.pop_back();
      for (const CoopMatType& type : needs[f])
        if (std::none_of(learns.begin(), learns.end(), [&](const CoopMatType& t) { return t.id == type.id; })) learns.push_back(type);
      for (uint32_t callee : callees[f])
        if (seen.insert(callee).second) stack.push_back(callee);
    }
    if (learns.empty()) c.entryLearns.erase(entry);
  }
}

// Where the lowering's entry-block code goes: after the last OpVariable, and after
// the line and non-semantic instructions that follow the variables. The code may
// hold loops, which split the block, and a DebugFunctionDefinition there must stay
// in the entry block (glslang -gVS puts it right after the variables).
size_t PreambleStart(const ir::Module& m, const std::vector<ir::Instruction>& entry) {
  std::set<uint32_t> nonSemantic;
  for (const ir::Instruction& import : m.extInstImports)
    if (ir::DecodeString(import.operands).rfind("NonSemantic.", 0) == 0) nonSemantic.insert(import.resultId);
  size_t start = 1;
  for (size_t i = 1; i < entry.size(); ++i)
    if (entry[i].opcode == spv::Op::OpVariable) start = i + 1;
  while (start < entry.size() &&
         (entry[start].opcode == spv::Op::OpLine || entry[start].opcode == spv::Op::OpNoLine ||
          (entry[start].opcode == spv::Op::OpExtInst && nonSemantic.count(entry[start].Operand(0)))))
    ++start;
  return start;
}

// A value of `type` (a matrix, a coordinate vector) with every bit set: a NaN in
// every float component type the lowering takes, -1 or the maximum in integers, and
// a coordinate past any matrix. The recognisable result of an operation at a
// SubgroupSize nobody expected (LowerAtUnlistedSize).
uint32_t AllBitsSet(Builder& b, uint32_t type, uint32_t resultId = 0) {
  TypeManager& t = b.types();
  uint32_t scalar = type;
  size_t count = 1;  // constituents: a matrix takes one for all its elements
  if (const auto matrix = t.CoopMatInfo(type)) {
    scalar = matrix->componentType;
  } else if (const ir::Instruction* def = t.GlobalDef(type); def && def->opcode == spv::Op::OpTypeVector) {
    scalar = def->Operand(0);
    count = def->Operand(1);
  }
  const uint32_t width = t.ScalarWidth(scalar);
  if (!width || width > 32) Fail("internal error: no all-bits-set value of type %" + std::to_string(type));
  // SPIR-V literals of narrow signed integers are sign-extended; others zero-extended.
  const uint32_t literal = width == 32 || t.IsSignedInt(scalar) ? ~0u : (1u << width) - 1;
  return b.Emit(spv::Op::OpCompositeConstruct, type, std::vector<uint32_t>(count, t.Constant(scalar, literal)), resultId);
}

using PortableForm = std::function<void(Builder&, FunctionState&, const ir::Instruction&)>;

// Whether `portable` lowers `inst` within the scratch the slices are sized for
// already (by the listed sizes' code and the operations before it). It is tried on a
// throwaway function, and what the try required of the scratch or declared is undone.
bool FitsReservedScratch(Context& c, const FunctionState& fs, const ir::Instruction& inst, const PortableForm& portable) {
  ir::Function trial;
  trial.definition = fs.function.definition;
  trial.blocks.emplace_back();
  trial.blocks.back().instructions.emplace_back(spv::Op::OpLabel, 0, c.module.TakeId(), std::vector<uint32_t>{});
  FunctionState trialState{trial, fs.sliceBase, fs.lane, fs.subgroupSize, fs.scratchUsed, fs.coordinates};
  const Scratch::Requirements before = c.scratch.Save();
  const size_t variables = c.newVariables.size();
  const LowerStats stats = c.stats;
  const bool usesShuffle = c.usesShuffle, dependsOnSpecialization = c.dependsOnSpecialization;
  Builder builder(c, trial, 0, 1);
  portable(builder, trialState, NewVersion(c, inst));
  const bool fits = !c.scratch.Grew(before);
  c.scratch.Restore(before);
  c.newVariables.resize(variables);
  c.stats = stats;
  c.usesShuffle = usesShuffle;
  c.dependsOnSpecialization = dependsOnSpecialization;
  return fits;
}

// The OpSwitch default of a per-size lowering: a SubgroupSize outside the pipeline's
// list, which a driver runs only outside its own subgroup-size properties (review
// 4b565b7 finding 19; before, the largest size's code ran there, with the wrong
// layout). No layout is known at such a size, so a conversion or reduction takes its
// layout-independent form: without scratch when it needs none, else through the
// function's scratch slice when it has one and the form fits the slice as the rest of
// the module sizes it (review 130c39d finding 1: code no conforming driver runs must
// not cost every pipeline shared memory), and then only at sizes the slices are
// counted for (Scratch::SlicedSubgroupSize and up). Everywhere else, and always for
// GetCoordinate and PerElementOp (their layout-independent form reads coordinate
// tables learned at the function's entry, which the register path does not learn),
// the result has every bit set.
void LowerAtUnlistedSize(Builder& b, FunctionState& fs, const ir::Instruction& inst) {
  Context& c = b.context();
  TypeManager& t = c.types;
  PortableForm portable;
  switch (inst.opcode) {
    case spv::Op::OpCooperativeMatrixGetCoordinateEXT:
    case spv::Op::OpCooperativeMatrixPerElementOpEXT: break;
    case spv::Op::OpCooperativeMatrixReduceEXT:
      portable = [](Builder& at, FunctionState& state, const ir::Instruction& version) { LowerReduce(at, state, version); };
      break;
    default:
      if (!ConversionUsesScratch(c, inst)) {
        LowerConversion(b, fs, inst);
        return;
      }
      portable = [](Builder& at, FunctionState& state, const ir::Instruction& version) { LowerConversion(at, state, version); };
      break;
  }
  if (!portable || !fs.sliceBase || !FitsReservedScratch(c, fs, inst, portable)) {
    AllBitsSet(b, inst.typeId, inst.resultId);
    return;
  }
  const uint32_t result = b.Variable(inst.typeId);
  const uint32_t sliced = b.U(c.scratch.SlicedSubgroupSize());
  const uint32_t enoughSlices = b.Emit(spv::Op::OpSelect, t.Uint(),
                                       {b.Emit(spv::Op::OpUGreaterThanEqual, t.Bool(), {fs.subgroupSize, sliced}), b.U(1), b.U(0)});
  b.Switch(
      enoughSlices, {1},
      [&](size_t) {
        const ir::Instruction version = NewVersion(c, inst);
        portable(b, fs, version);
        b.EmitVoid(spv::Op::OpStore, {result, version.resultId});
      },
      [&] { b.EmitVoid(spv::Op::OpStore, {result, AllBitsSet(b, inst.typeId)}); });
  b.Emit(spv::Op::OpLoad, inst.typeId, {result}, inst.resultId);
}

// One operation at the cursor `at`, by the lowering of its own file in passes/.
void LowerOperation(Context& c, FunctionState& fs, const ir::Function& function, Builder& at, const ir::Instruction& inst) {
  OperationReport report = ReportOperation(c, function, inst);
  c.scratch.StartRequestCount();
  const auto begin = std::chrono::steady_clock::now();
  const bool registers = TakesRegisterPath(c, inst);
  auto lower = [&](Builder& cursor, const ir::Instruction& op) {
    switch (op.opcode) {
      case spv::Op::OpCooperativeMatrixGetCoordinateEXT: LowerGetCoordinate(cursor, fs, op); break;
      case spv::Op::OpCooperativeMatrixPerElementOpEXT: LowerPerElement(cursor, fs, op); break;
      case spv::Op::OpCooperativeMatrixReduceEXT:
        if (registers) LowerReduceInRegisters(cursor, fs, op);
        else LowerReduce(cursor, fs, op);
        break;
      default: LowerConversion(cursor, fs, op); break;
    }
  };
  auto unlisted = [&](Builder& cursor, const ir::Instruction& op) { LowerAtUnlistedSize(cursor, fs, op); };
  if (registers || ConversionInRegistersAtSomeSize(c, inst)) LowerForEachSubgroupSize(at, inst, lower, unlisted);
  else lower(at, inst);
  report.microseconds = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin).count();
  report.scratchBytes = c.scratch.requestedBytes;
  report.scratchSpecialized = c.scratch.requestedSpecialized;
  c.reports.push_back(std::move(report));
}

void LowerFunction(Context& c, ir::Function& function) {
  std::vector<CoopMatType> coordinateTypes;
  bool any = false, portable = false;
  for (const ir::Block& block : function.blocks)
    for (const ir::Instruction& inst : block.instructions)
      if (NeedsLowering(c, inst)) {
        any = true;
        CollectCoordinateTypes(c, inst, coordinateTypes);
        portable |= !TakesRegisterPath(c, inst);
      }
  const auto learns = c.entryLearns.find(function.definition.resultId);
  if (!any && learns == c.entryLearns.end()) return;
  // The scratch slice only when some operation here (or a table it learns) uses it.
  const bool scratch = portable || !coordinateTypes.empty() || learns != c.entryLearns.end();
  if (function.blocks.empty()) Fail("function %" + std::to_string(function.definition.resultId) + " has no blocks");
  SplitLoopHeadersWith(c, function, [&](const ir::Instruction& inst) { return NeedsLowering(c, inst); });

  // Entry block, after the variables: builtins, the slice base, learned tables.
  const size_t start = PreambleStart(c.module, function.blocks.front().instructions);
  Builder b(c, function, 0, start);
  TypeManager& t = c.types;
  FunctionState fs{function};
  const uint32_t uintType = t.Uint();
  if (scratch) {
    const uint32_t subgroupId = LoadBuiltin(b, spv::BuiltIn::SubgroupId);
    fs.sliceBase = b.Emit(spv::Op::OpIMul, uintType, {subgroupId, c.scratch.WordsPerSlice()});
  }
  fs.lane = LoadBuiltin(b, spv::BuiltIn::SubgroupLocalInvocationId);
  if (scratch) fs.subgroupSize = LoadBuiltin(b, spv::BuiltIn::SubgroupSize);
  for (const CoopMatType& type : coordinateTypes) PrepareCoordinates(b, fs, type);
  if (learns != c.entryLearns.end())
    for (const CoopMatType& type : learns->second) LearnPrivateCoordinates(b, fs, type);

  // Lower in order. A block with something to lower is rebuilt: its instructions
  // from the cursor on are taken out and appended again one by one, each operation
  // lowered at the end of the block being built, so that no code is inserted into
  // the middle of a long block (which made lowering quadratic in the block size).
  size_t blockIndex = b.block(), index = b.index();
  while (blockIndex < function.blocks.size()) {
    std::vector<ir::Instruction>& list = function.blocks[blockIndex].instructions;
    if (std::none_of(list.begin() + static_cast<ptrdiff_t>(std::min(index, list.size())), list.end(),
                     [&](const ir::Instruction& inst) { return NeedsLowering(c, inst); })) {
      ++blockIndex;
      index = 0;
      continue;
    }
    const uint32_t label = function.blocks[blockIndex].Label();
    std::vector<ir::Instruction> rest(std::make_move_iterator(list.begin() + static_cast<ptrdiff_t>(index)),
                                      std::make_move_iterator(list.end()));
    list.erase(list.begin() + static_cast<ptrdiff_t>(index), list.end());
    size_t cursor = blockIndex;  // the block being built: the last one an operation's code left open
    for (ir::Instruction& inst : rest) {
      if (!NeedsLowering(c, inst)) {
        function.blocks[cursor].instructions.push_back(std::move(inst));
        continue;
      }
      Builder at(c, function, cursor, function.blocks[cursor].instructions.size());
      LowerOperation(c, fs, function, at, inst);
      cursor = at.block();
      if (at.index() != function.blocks[cursor].instructions.size()) Fail("internal error: lowering left the cursor mid-block");
    }
    // The block's terminator now ends the last block built: its successors' OpPhis
    // name that block instead.
    if (cursor != blockIndex && !function.blocks[cursor].instructions.empty())
      RetargetPhis(function, function.blocks[cursor].instructions.back(), label, function.blocks[cursor].Label());
    blockIndex = cursor + 1;
    index = 0;
  }
  // The Function variables the lowerings made, with the entry block's own.
  std::vector<ir::Instruction>& entry = function.blocks.front().instructions;
  size_t position = 1;
  for (size_t i = 1; i < entry.size(); ++i) {
    if (entry[i].opcode == spv::Op::OpVariable) position = i + 1;
    else if (entry[i].opcode != spv::Op::OpLine && entry[i].opcode != spv::Op::OpNoLine) break;
  }
  entry.insert(entry.begin() + static_cast<ptrdiff_t>(position), std::make_move_iterator(c.newVariables.begin()),
               std::make_move_iterator(c.newVariables.end()));
  c.newVariables.clear();
}

template <typename Pred>
void EraseIf(std::vector<ir::Instruction>& list, Pred pred) {
  list.erase(std::remove_if(list.begin(), list.end(), pred), list.end());
}

void CleanPreamble(Context& c) {
  ir::Module& m = c.module;
  EraseIf(m.annotations, [](const ir::Instruction& a) {
    return a.opcode == spv::Op::OpDecorate && a.Operand(1) == kTransposeDecoration;
  });
  EraseIf(m.capabilities, [](const ir::Instruction& cap) {
    switch (static_cast<spv::Capability>(cap.Operand(0))) {
      case spv::Capability::CooperativeMatrixConversionsEXT:
      case spv::Capability::CooperativeMatrixGetCoordinateEXT:
      case spv::Capability::CooperativeMatrixReductionsEXT:
      case spv::Capability::CooperativeMatrixPerElementOperationsEXT: return true;
      default: return false;
    }
  });
  EraseIf(m.extensions, [](const ir::Instruction& e) { return ir::DecodeString(e.operands) == kExtExtension; });
  if (!c.builtins.empty()) m.RequireCapability(spv::Capability::GroupNonUniform);
  if (c.usesShuffle) m.RequireCapability(spv::Capability::GroupNonUniformShuffle);
}

// From SPIR-V 1.4 an entry point lists every global variable its call tree uses:
// the Private tables go into the interface of each entry point that learns them.
void ListPrivateTables(Context& c) {
  if (c.module.SpirvMinor() < 4) return;
  for (ir::Instruction& entry : c.module.entryPoints) {
    auto learns = c.entryLearns.find(entry.Operand(1));
    if (learns == c.entryLearns.end()) continue;
    for (const CoopMatType& type : learns->second) {
      const CoordinateTables& tables = c.privateTables.at(type.id);
      for (uint32_t variable : {tables.indexVar, tables.rowVar, tables.colVar, tables.rowHighVar, tables.colHighVar})
        if (variable) entry.operands.push_back(variable);
    }
  }
}

// Defensive: nothing of the extension may survive.
void CheckNoLeftovers(const ir::Module& m) {
  for (const ir::Function& f : m.functions)
    for (const ir::Block& block : f.blocks)
      for (const ir::Instruction& inst : block.instructions)
        if (IsExtOpcode(inst.opcode)) Fail("internal error: " + Describe(inst) + " survived the lowering");
}

// An operation of the extension outside every function (invalid input) would pass
// through the lowering untouched, after its capability was removed.
void CheckNoGlobalExtOps(const ir::Module& m) {
  for (const auto* section : {&m.globals, &m.trailing})
    for (const ir::Instruction& inst : *section)
      if (IsExtOpcode(inst.opcode)) Fail(Describe(inst) + " is outside a function");
}

// Entry-point interfaces grow by the builtins, the scratch and the Private tables; an
// instruction's word count is 16 bits.
void CheckWordCounts(const ir::Module& m) {
  for (const ir::Instruction& entry : m.entryPoints)
    if (entry.WordCount() > 0xffff)
      Fail("OpEntryPoint %" + std::to_string(entry.Operand(1)) + " would need " + std::to_string(entry.WordCount()) +
           " words with the lowering's interface variables (an instruction has at most 65535)");
}

LowerResult Run(std::span<const uint32_t> words, const LowerOptions& options) {
  LowerResult result;
  result.stats.wordsIn = words.size();
  ir::Module module;
  if (std::string error = ir::Parse(words, module); !error.empty()) {
    result.error = "cannot parse the module: " + error;
    return result;
  }
  if (options.specialization) FreezeSpecialization(module, *options.specialization);
  TypeManager types(module);
  Context c(module, types, options, result.stats);
  c.subgroupSizes = options.subgroupSizes;
  if (c.subgroupSizes.empty())
    for (const LinearLayout& layout : options.layouts) c.subgroupSizes.push_back(layout.key.subgroupSize);
  std::sort(c.subgroupSizes.begin(), c.subgroupSizes.end());
  c.subgroupSizes.erase(std::unique(c.subgroupSizes.begin(), c.subgroupSizes.end()), c.subgroupSizes.end());
  c.vulkanMemoryModel = !module.memoryModel.empty() &&
                        module.memoryModel[0].Operand(1) == static_cast<uint32_t>(spv::MemoryModel::Vulkan);
  CollectTransposed(module, c.transposed);
  for (const ir::Function& f : module.functions) c.functionTypes[f.definition.resultId] = f.definition.Operand(1);
  for (const ir::Instruction& entry : module.entryPoints) c.entryFunctions.insert(entry.Operand(1));

  CheckNoGlobalExtOps(module);
  bool anyWork = false;
  for (const ir::Function& f : module.functions)
    for (const ir::Block& block : f.blocks)
      for (const ir::Instruction& inst : block.instructions) anyWork |= NeedsLowering(c, inst);
  if (anyWork && module.SpirvMinor() < 3) Fail("SPV_EXT_cooperative_matrix_maintenance1 needs SPIR-V 1.3 or newer");

  CheckLoweredStages(c, [&](const ir::Instruction& inst) { return NeedsLowering(c, inst); });
  PlanPrivateTables(c);
  for (ir::Function& f : module.functions) LowerFunction(c, f);
  DropMisplacedSaturation(c);
  CleanPreamble(c);
  ListPrivateTables(c);
  c.scratch.Finalize();
  CheckNoLeftovers(module);
  CheckWordCounts(module);
  result.dependsOnSpecialization = c.dependsOnSpecialization;
  result.dependsOnSubgroupSize = c.dependsOnSubgroupSize;
  result.operations = std::move(c.reports);
  result.words = ir::Emit(module);
  result.stats.wordsOut = result.words.size();
  if (options.validate) {
    if (std::string error = LoweredModuleProblem(words, result.words); !error.empty()) {
      result.error = error;
      result.words.clear();
      return result;
    }
  }
  result.ok = true;
  return result;
}

LowerResult RunCaught(std::span<const uint32_t> words, const LowerOptions& options, bool* sharedMemory) {
  LowerResult result;
  try {
    result = Run(words, options);
  } catch (const LowerError& error) {
    result = LowerResult{};
    result.error = error.message;
    if (sharedMemory) *sharedMemory = error.sharedMemory;
  } catch (const std::exception& error) {
    result = LowerResult{};
    result.error = std::string("internal error: ") + error.what();
  } catch (...) {
    result = LowerResult{};
    result.error = "internal error";
  }
  return result;
}

// Workgroups of `bytes` of shared memory that fit one processor's pool at once, each
// taking whole allocation blocks of `granule` bytes (0: exact).
uint64_t Resident(uint64_t pool, uint64_t granule, uint64_t bytes) {
  if (granule) bytes = (bytes + granule - 1) / granule * granule;
  return bytes ? pool / bytes : std::numeric_limits<uint64_t>::max();
}

// Shared memory limits residency only when few workgroups fit: beyond this many,
// a cooperative-matrix kernel runs out of registers or wave slots first (a 16x16 f32
// accumulator alone is 8 VGPRs per lane at wave32), so scratch costs no occupancy.
constexpr uint64_t kSharedMemoryBoundWorkgroups = 8;

// The route choice within the shared-memory budget: the measured costs may prefer
// the Workgroup round trip for conversions, but shared memory is also the kernel's
// own, and its occupancy. When that scratch does not fit the device's limit next to
// the module's own shared memory, or would cost the kernel a resident workgroup,
// the conversions that have a register form take it instead.
LowerResult LowerWithinBudget(std::span<const uint32_t> words, const LowerOptions& options) {
  bool overLimit = false;
  LowerResult result = RunCaught(words, options, &overLimit);
  if (options.registerMovesWithShuffles) return result;
  const LowerStats& s = result.stats;
  const uint64_t pool = options.sharedMemoryPool;
  auto resident = [&](uint64_t bytes) { return Resident(pool, options.sharedMemoryGranule, bytes); };
  const bool costsOccupancy = result.ok && pool && s.moduleSharedBytes && s.scratchBytes &&
                              resident(s.moduleSharedBytes) <= kSharedMemoryBoundWorkgroups &&
                              resident(s.moduleSharedBytes + s.scratchBytes) < resident(s.moduleSharedBytes);
  if (!overLimit && !costsOccupancy) return result;
  LowerOptions registers = options;
  registers.registerMovesWithShuffles = true;
  LowerResult retry = RunCaught(words, registers, nullptr);
  if (!retry.ok) return result;
  const uint64_t own = s.moduleSharedBytes;  // the same module: counted only where a scratch was planned
  const uint64_t before = resident(own + s.scratchBytes), after = resident(own + retry.stats.scratchBytes);
  if (costsOccupancy && after <= before) return result;  // register moves would not win the workgroup back
  retry.routeNote =
      overLimit ? "conversions move in registers, not through the round trip the measured costs prefer: its scratch did not "
                  "fit the device's shared-memory limit next to the module's own shared memory (" + result.error + ")"
                : "conversions move in registers, not through the round trip the measured costs prefer: its " +
                      std::to_string(s.scratchBytes) + " bytes of scratch next to the module's own " +
                      std::to_string(own) + " would leave room for " + std::to_string(before) +
                      " resident workgroups instead of " + std::to_string(after) + " in the " + std::to_string(pool) +
                      " bytes one processor shares" +
                      (options.sharedMemoryGranule
                           ? " (allocated in blocks of " + std::to_string(options.sharedMemoryGranule) + " bytes)"
                           : std::string());
  return retry;
}

}  // namespace

LowerResult LowerModule(std::span<const uint32_t> words, const LowerOptions& options) {
  const auto begin = std::chrono::steady_clock::now();
  LowerResult result = LowerWithinBudget(words, options);
  result.stats.wordsIn = words.size();
  result.stats.microseconds =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin).count();
  if (!result.ok) result.words.clear();
  return result;
}

}  // namespace coopmat
