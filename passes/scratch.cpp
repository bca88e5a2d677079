// The shared Workgroup scratch: one uint array sliced per subgroup, the builtins
// that index it, the barriers around every use, and its final declaration.
#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "lowering.h"

namespace coopmat {
namespace {

constexpr uint32_t kMakeAvailable = 0x2000;
constexpr uint32_t kMakeVisible = 0x4000;
constexpr uint32_t kNonPrivatePointer = 0x20;

// Index of the first interface operand of an OpEntryPoint (after the name string).
size_t InterfaceStart(const ir::Instruction& entry) {
  size_t i = 2;
  while (i < entry.operands.size()) {
    const uint32_t word = entry.operands[i++];
    if ((word & 0xff000000u) == 0 || (word & 0x00ff0000u) == 0 || (word & 0x0000ff00u) == 0 || (word & 0xffu) == 0) break;
  }
  return i;
}

void AddToInterface(ir::Instruction& entry, uint32_t variable) {
  const size_t start = InterfaceStart(entry);
  for (size_t i = start; i < entry.operands.size(); ++i)
    if (entry.operands[i] == variable) return;
  entry.operands.push_back(variable);
}

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b; }
uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  return b && a > std::numeric_limits<uint64_t>::max() / b ? std::numeric_limits<uint64_t>::max() : a * b;
}

// Byte size of every type in declaration order (0 for the kinds that hold no sized
// data here: pointers, runtime arrays, opaque types). One forward pass, no
// recursion: a type that names itself or a later type (invalid SPIR-V the parser
// lets through) is refused instead of recursed into, and nesting depth costs nothing.
// specSized, when given, receives the types whose size a specialization constant sets
// (an array with a spec-constant length, and what holds one): they count 0 here.
std::unordered_map<uint32_t, uint64_t> TypeSizes(const ir::Module& m, const TypeManager& t,
                                                 std::unordered_set<uint32_t>* specSized = nullptr) {
  std::unordered_map<uint32_t, uint64_t> sizes;
  auto spec = [&](uint32_t id) { return specSized && specSized->count(id); };
  auto member = [&](const ir::Instruction& type, uint32_t id) {
    auto it = sizes.find(id);
    if (it == sizes.end())
      Fail(std::string(spv::OpToString(type.opcode)) + " %" + std::to_string(type.resultId) + ": operand %" + std::to_string(id) +
           " is not a type declared before it");
    return it->second;
  };
  for (const ir::Instruction& g : m.globals) {
    const bool isType = (g.opcode >= spv::Op::OpTypeVoid && g.opcode <= spv::Op::OpTypeForwardPointer) ||
                        g.opcode == spv::Op::OpTypeCooperativeMatrixKHR;
    if (!isType || !g.resultId) continue;
    uint64_t size = 0;
    switch (g.opcode) {
      case spv::Op::OpTypeInt:
      case spv::Op::OpTypeFloat: size = g.Operand(0) / 8; break;
      case spv::Op::OpTypeBool: size = 4; break;
      case spv::Op::OpTypeVector:
      case spv::Op::OpTypeMatrix:
        size = SaturatingMul(member(g, g.Operand(0)), g.Operand(1));
        if (spec(g.Operand(0))) specSized->insert(g.resultId);
        break;
      case spv::Op::OpTypeArray: {
        const uint64_t element = member(g, g.Operand(0));
        auto n = t.ConstantValue(g.Operand(1));
        size = n ? SaturatingMul(element, *n) : 0;
        if (specSized && (!n || spec(g.Operand(0)))) specSized->insert(g.resultId);
        break;
      }
      case spv::Op::OpTypeStruct:
        for (uint32_t id : g.operands) {
          size = SaturatingAdd(size, member(g, id));
          if (spec(id)) specSized->insert(g.resultId);
        }
        break;
      default: break;
    }
    sizes[g.resultId] = size;
  }
  return sizes;
}

// With WorkgroupMemoryExplicitLayoutKHR, Block-decorated Workgroup variables alias
// one another, and an entry point may not mix them with undecorated ones: the
// scratch can be neither (it would share memory with the module's data, or make the
// interface invalid), so such a module is refused where it needs the scratch.
void RefuseExplicitLayoutWorkgroup(const ir::Module& m, const TypeManager& t) {
  std::set<uint32_t> blocks;
  for (const ir::Instruction& a : m.annotations)
    if (a.opcode == spv::Op::OpDecorate && a.Operand(1) == static_cast<uint32_t>(spv::Decoration::Block)) blocks.insert(a.Operand(0));
  for (const ir::Instruction& g : m.globals) {
    if (g.opcode != spv::Op::OpVariable || g.Operand(0) != static_cast<uint32_t>(spv::StorageClass::Workgroup)) continue;
    const ir::Instruction* pointer = t.GlobalDef(g.typeId);
    if (pointer && blocks.count(pointer->Operand(1)))
      Fail("Workgroup variable %" + std::to_string(g.resultId) +
           " has an explicit layout (Block): the emulation's Workgroup scratch cannot be added to a module that uses "
           "WorkgroupMemoryExplicitLayoutKHR");
  }
}

// LocalSize x*y*z, refused when it does not fit 32 bits (it would wrap to a small or
// zero scratch and bypass the shared-memory limit).
uint32_t LocalSizeInvocations(const ir::Instruction& entry, const ir::Instruction& mode) {
  const uint64_t invocations = uint64_t{mode.Operand(2)} * mode.Operand(3) * mode.Operand(4);
  if (invocations == 0 || invocations > std::numeric_limits<uint32_t>::max())
    Fail("entry point %" + std::to_string(entry.Operand(1)) + ": LocalSize " + std::to_string(mode.Operand(2)) + " " +
         std::to_string(mode.Operand(3)) + " " + std::to_string(mode.Operand(4)) + " gives " + std::to_string(invocations) +
         " invocations (must be 1 to 2^32-1)");
  return static_cast<uint32_t>(invocations);
}

}  // namespace

// The shared-memory limit that holds for every entry point given the scratch: the
// compute limit, or the task/mesh one (VK_EXT_mesh_shader) where such an entry point is,
// and there the payload-and-shared one less the module's `payload` bytes of task payload.
Scratch::SharedMemoryBudget Scratch::SharedMemoryLimit(uint64_t payload) const {
  const LowerOptions& o = context_.options;
  SharedMemoryBudget budget{o.maxSharedMemoryBytes, ""};
  auto apply = [&](uint64_t stageLimit, const std::string& note) {
    if (stageLimit && (!budget.limit || stageLimit < budget.limit)) budget = {stageLimit, note};
  };
  auto applyWithPayload = [&](uint32_t together) {
    // A payload that alone fills the limit leaves one byte: every scratch is refused.
    if (together)
      apply(together > payload ? together - payload : 1,
            " (its " + std::to_string(together) + " bytes of task payload and shared memory together, less the module's " +
                std::to_string(payload) + " bytes of payload)");
  };
  for (const ir::Instruction& entry : context_.module.entryPoints)
    switch (static_cast<spv::ExecutionModel>(entry.Operand(0))) {
      case spv::ExecutionModel::TaskNV:
      case spv::ExecutionModel::TaskEXT:
        apply(o.maxTaskSharedMemoryBytes, "");
        applyWithPayload(o.maxTaskPayloadAndSharedMemoryBytes);
        break;
      case spv::ExecutionModel::MeshNV:
      case spv::ExecutionModel::MeshEXT:
        apply(o.maxMeshSharedMemoryBytes, "");
        applyWithPayload(o.maxMeshPayloadAndSharedMemoryBytes);
        break;
      default: break;
    }
  return budget;
}

bool IsComputeLikeModel(uint32_t model) {
  switch (static_cast<spv::ExecutionModel>(model)) {
    case spv::ExecutionModel::GLCompute:
    case spv::ExecutionModel::TaskNV:
    case spv::ExecutionModel::MeshNV:
    case spv::ExecutionModel::TaskEXT:
    case spv::ExecutionModel::MeshEXT: return true;
    default: return false;
  }
}

uint32_t Context::BarrierSemantics() const {
  uint32_t semantics = static_cast<uint32_t>(spv::MemorySemanticsMask::AcquireRelease) |
                       static_cast<uint32_t>(spv::MemorySemanticsMask::WorkgroupMemory);
  if (vulkanMemoryModel) semantics |= kMakeAvailable | kMakeVisible;
  return types.UintConstant(semantics);
}

bool Context::IsSupportedMatrix(uint32_t componentType, uint32_t rowsId, uint32_t colsId, MatrixUse use) const {
  // A type the module declares itself must already be supported (VUID-RuntimeSpirv-OpTypeCooperativeMatrixKHR-10163,
  // -cooperativeMatrixFlexibleDimensions-10165, -cooperativeMatrixProperties2-13382).
  auto sameValue = [&](uint32_t x, uint32_t y) {
    if (x == y) return true;
    auto a = types.ConstantValue(x), b = types.ConstantValue(y);
    return a && b && *a == *b;
  };
  for (const ir::Instruction& g : module.globals)
    if (g.opcode == spv::Op::OpTypeCooperativeMatrixKHR && g.operands.size() == 5 && g.operands[0] == componentType &&
        types.ConstantValue(g.operands[1]) == static_cast<uint32_t>(spv::Scope::Subgroup) && sameValue(g.operands[2], rowsId) &&
        sameValue(g.operands[3], colsId) && types.ConstantValue(g.operands[4]) == static_cast<uint32_t>(use))
      return true;
  if (options.supportedMatrixTypes.empty()) return false;
  const std::optional<uint32_t> vkType = types.VkComponentType(componentType);
  if (!vkType) return false;
  const auto rows = types.ConstantValue(rowsId), cols = types.ConstantValue(colsId);
  if (!rows || !cols || !*rows || !*cols) return false;  // specialization constants: unknown until pipeline creation
  for (const SupportedMatrixType& s : options.supportedMatrixTypes) {
    if (s.componentType != *vkType || s.use != static_cast<uint32_t>(use) || !s.rows || !s.cols) continue;
    if (!options.flexibleDimensions) {
      if (*rows == s.rows && *cols == s.cols) return true;
    } else if (*rows % s.rows == 0 && *cols % s.cols == 0 &&
               (!options.flexibleMaxDimension || (*rows <= options.flexibleMaxDimension && *cols <= options.flexibleMaxDimension))) {
      return true;
    }
  }
  return false;
}

uint32_t Context::BuiltinVariable(spv::BuiltIn builtin) {
  if (auto it = builtins.find(builtin); it != builtins.end()) return it->second;
  uint32_t variable = 0;
  for (const ir::Instruction& a : module.annotations) {
    if (a.opcode != spv::Op::OpDecorate || a.operands.size() < 3) continue;
    if (a.operands[1] != static_cast<uint32_t>(spv::Decoration::BuiltIn) || a.operands[2] != static_cast<uint32_t>(builtin)) continue;
    const ir::Instruction* def = types.GlobalDef(a.operands[0]);
    if (!def || def->opcode != spv::Op::OpVariable) continue;
    const ir::Instruction* pointer = types.GlobalDef(def->typeId);
    if (!pointer || pointer->Operand(0) != static_cast<uint32_t>(spv::StorageClass::Input)) continue;
    // The module's own variable, whatever its signedness: a second variable with the
    // same BuiltIn in one interface is invalid (VUID-StandaloneSpirv-OpEntryPoint-09658).
    const ir::Instruction* pointee = types.GlobalDef(pointer->Operand(1));
    if (!pointee || pointee->opcode != spv::Op::OpTypeInt || pointee->Operand(0) != 32)
      Fail("the module declares BuiltIn " + std::string(spv::BuiltInToString(builtin)) + " on %" + std::to_string(a.operands[0]) +
           " with a type other than a 32-bit integer");
    variable = a.operands[0];
    builtinTypes[builtin] = pointee->resultId;
    break;
  }
  if (!variable) {
    variable = module.TakeId();
    types.AddGlobal(ir::Instruction(spv::Op::OpVariable, types.Pointer(spv::StorageClass::Input, types.Uint()), variable,
                                    {static_cast<uint32_t>(spv::StorageClass::Input)}));
    module.annotations.emplace_back(spv::Op::OpDecorate, 0, 0,
                                    std::vector<uint32_t>{variable, static_cast<uint32_t>(spv::Decoration::BuiltIn),
                                                          static_cast<uint32_t>(builtin)});
    builtinTypes[builtin] = types.Uint();
  }
  builtins[builtin] = variable;
  return variable;
}

uint32_t LoadBuiltin(Builder& b, spv::BuiltIn builtin) {
  Context& c = b.context();
  const uint32_t variable = c.BuiltinVariable(builtin);
  const uint32_t type = c.builtinTypes.at(builtin);
  const uint32_t value = b.Emit(spv::Op::OpLoad, type, {variable});
  return type == c.types.Uint() ? value : b.Emit(spv::Op::OpBitcast, c.types.Uint(), {value});
}

std::vector<uint32_t> Context::ParameterTypes(uint32_t functionId) const {
  auto it = functionTypes.find(functionId);
  if (it == functionTypes.end()) return {};
  const ir::Instruction* type = types.GlobalDef(it->second);
  if (!type || type->opcode != spv::Op::OpTypeFunction || type->operands.empty()) return {};
  return std::vector<uint32_t>(type->operands.begin() + 1, type->operands.end());
}

uint32_t Context::ReturnType(uint32_t functionId) const {
  auto it = functionTypes.find(functionId);
  if (it == functionTypes.end()) return 0;
  const ir::Instruction* type = types.GlobalDef(it->second);
  return type && type->opcode == spv::Op::OpTypeFunction ? type->Operand(0) : 0;
}

uint32_t Scratch::Variable() {
  if (!variable_) variable_ = context_.module.TakeId();
  return variable_;
}

uint32_t Scratch::WordsPerSlice() {
  if (!wordsPerSlice_) wordsPerSlice_ = context_.module.TakeId();
  return wordsPerSlice_;
}

void Scratch::Require(const CoopMatType& type, uint32_t extraBytesPerElement) {
  Variable();
  const bool first = requiredTypes_.insert({type.id, extraBytesPerElement}).second;
  TypeManager& t = context_.types;
  const uint32_t elementBytes = type.componentBytes + extraBytesPerElement;
  auto rows = t.ConstantValue(type.rowsId), cols = t.ConstantValue(type.colsId);
  if (rows && cols) {
    const uint64_t bytes = uint64_t{*rows} * *cols * elementBytes;
    if (bytes > (uint64_t{1} << 30)) Fail("cooperative matrix type %" + std::to_string(type.id) + " is implausibly large");
    const uint32_t words = static_cast<uint32_t>((bytes + 3) / 4);
    requestedBytes = std::max(requestedBytes, words * 4);
    maxConstantWords_ = std::max(maxConstantWords_, words);
    return;
  }
  requestedSpecialized = true;
  if (!first) return;
  const uint32_t elements = t.SpecOp(t.Uint(), spv::Op::OpIMul, {type.rowsId, type.colsId});
  const uint32_t bytes = t.SpecOp(t.Uint(), spv::Op::OpIMul, {elements, t.UintConstant(elementBytes)});
  const uint32_t padded = t.SpecOp(t.Uint(), spv::Op::OpIAdd, {bytes, t.UintConstant(3)});
  specWords_.push_back(t.SpecOp(t.Uint(), spv::Op::OpUDiv, {padded, t.UintConstant(4)}));
}

Scratch::Requirements Scratch::Save() const {
  return {maxConstantWords_, specWords_, requiredTypes_, requestedBytes, requestedSpecialized};
}

void Scratch::Restore(const Requirements& saved) {
  maxConstantWords_ = saved.maxConstantWords;
  specWords_ = saved.specWords;
  requiredTypes_ = saved.types;
  requestedBytes = saved.requestedBytes;
  requestedSpecialized = saved.requestedSpecialized;
}

// A specialization-dependent requirement not recorded before counts as growth: its
// size is unknown until the pipeline is specialized.
bool Scratch::Grew(const Requirements& before) const {
  return maxConstantWords_ > before.maxConstantWords || specWords_.size() > before.specWords.size();
}

uint32_t Scratch::SlicedSubgroupSize() const {
  const std::vector<uint32_t>& sizes = context_.options.subgroupSizes;
  return std::max<uint32_t>(sizes.empty() ? context_.options.minSubgroupSize : *std::min_element(sizes.begin(), sizes.end()), 1);
}

void Scratch::RequireWords(uint32_t wordsId) {
  Variable();
  if (auto words = context_.types.ConstantValue(wordsId)) {
    requestedBytes = std::max(requestedBytes, *words * 4);
    maxConstantWords_ = std::max(maxConstantWords_, *words);
    return;
  }
  requestedSpecialized = true;
  specWords_.push_back(wordsId);
}

uint32_t Scratch::MemoryOperandsMask() const { return context_.vulkanMemoryModel ? kNonPrivatePointer : 0; }

void Scratch::Barrier(Builder& b) {
  const uint32_t subgroup = b.U(static_cast<uint32_t>(spv::Scope::Subgroup));
  if (context_.options.subgroupExecutionBarriers)
    b.EmitVoid(spv::Op::OpControlBarrier, {subgroup, subgroup, context_.BarrierSemantics()});
  else
    b.EmitVoid(spv::Op::OpMemoryBarrier, {subgroup, context_.BarrierSemantics()});
}

uint32_t Scratch::WordPointer(Builder& b, const FunctionState& fs, uint32_t wordOffset) {
  TypeManager& t = context_.types;
  return b.Emit(spv::Op::OpAccessChain, t.Pointer(spv::StorageClass::Workgroup, t.Uint()),
                {Variable(), b.Add(fs.sliceBase, wordOffset)});
}

uint32_t Scratch::LoadWord(Builder& b, const FunctionState& fs, uint32_t wordOffset) {
  const uint32_t pointer = WordPointer(b, fs, wordOffset);
  std::vector<uint32_t> operands{pointer};
  if (MemoryOperandsMask()) operands.push_back(MemoryOperandsMask());
  return b.Emit(spv::Op::OpLoad, context_.types.Uint(), std::move(operands));
}

void Scratch::StoreWord(Builder& b, const FunctionState& fs, uint32_t wordOffset, uint32_t value) {
  const uint32_t pointer = WordPointer(b, fs, wordOffset);
  std::vector<uint32_t> operands{pointer, value};
  if (MemoryOperandsMask()) operands.push_back(MemoryOperandsMask());
  b.EmitVoid(spv::Op::OpStore, std::move(operands));
}

uint32_t Scratch::StrideWords(Builder& b, const CoopMatType& type) {
  return StrideWords(b, type.colsId, type.componentBytes, type.id);
}

uint32_t Scratch::StrideWords(Builder& b, uint32_t colsId, uint32_t bytes, uint32_t typeForMessage) {
  if (auto cols = context_.types.ConstantValue(colsId); cols && (*cols * bytes) % 4 != 0)
    Fail("cooperative matrix type %" + std::to_string(typeForMessage) + " has rows of " + std::to_string(*cols * bytes) +
         " bytes, not a multiple of 4; the scratch round trip cannot address them");
  return b.Div(b.Mul(colsId, b.U(bytes)), b.U(4));
}

void Scratch::BeginUse(Builder& b, FunctionState& fs) {
  const bool first = !fs.scratchUsed;
  fs.scratchUsed = true;
  const uint32_t function = fs.function.definition.resultId;
  if (first && b.block() == 0 && context_.entryFunctions.count(function)) {
    // The entry block is never a branch target, so this runs once per invocation;
    // the slice belongs to this subgroup alone, so only an earlier use by this
    // invocation's own code (a call) could race with it.
    bool calls = false;
    const auto& entry = fs.function.blocks.front().instructions;
    for (size_t i = 0; i < b.index() && i < entry.size(); ++i) calls |= entry[i].opcode == spv::Op::OpFunctionCall;
    for (const ir::Function& f : context_.module.functions)
      for (const ir::Block& block : f.blocks)
        for (const ir::Instruction& inst : block.instructions)
          calls |= inst.opcode == spv::Op::OpFunctionCall && inst.Operand(0) == function;
    if (!calls) return;
  }
  Barrier(b);
}

uint32_t Scratch::StoreMatrix(Builder& b, FunctionState& fs, uint32_t value, const CoopMatType& type, bool columnMajor,
                              uint32_t offsetWords) {
  // An 8/16-bit type the module declares through the storage capabilities alone admits
  // no matrix store (spirv-val: "Invalid use of 8- or 16-bit result"): refused, where
  // writing one would hand the driver an invalid module.
  if (type.componentBytes < 4 && !ArithmeticAllowed(context_, type.componentType))
    Fail("a " + std::to_string(8 * type.componentBytes) + "-bit matrix would go through shared memory, but the module declares its " +
         "type for storage only (no " + (type.componentFloat ? "Float16" : type.componentBytes == 1 ? "Int8" : "Int16") +
         " capability), which admits no cooperative matrix store");
  Require(type);
  BeginUse(b, fs);
  const uint32_t pointer = WordPointer(b, fs, offsetWords ? offsetWords : b.U(0));
  const auto layout = columnMajor ? spv::CooperativeMatrixLayout::ColumnMajorKHR : spv::CooperativeMatrixLayout::RowMajorKHR;
  const uint32_t stride = columnMajor ? StrideWords(b, type.rowsId, type.componentBytes, type.id) : StrideWords(b, type);
  std::vector<uint32_t> operands{pointer, value, b.U(static_cast<uint32_t>(layout)), stride};
  if (MemoryOperandsMask()) operands.push_back(MemoryOperandsMask());
  b.EmitVoid(spv::Op::OpCooperativeMatrixStoreKHR, std::move(operands));
  Barrier(b);
  return stride;
}

uint32_t Scratch::LoadMatrix(Builder& b, const FunctionState& fs, const CoopMatType& type, bool columnMajor,
                             uint32_t stride, uint32_t resultId, uint32_t offsetWords) {
  Require(type);
  const uint32_t pointer = WordPointer(b, fs, offsetWords ? offsetWords : b.U(0));
  const auto layout = columnMajor ? spv::CooperativeMatrixLayout::ColumnMajorKHR : spv::CooperativeMatrixLayout::RowMajorKHR;
  std::vector<uint32_t> operands{pointer, b.U(static_cast<uint32_t>(layout)), stride};
  if (MemoryOperandsMask()) operands.push_back(MemoryOperandsMask());
  return b.Emit(spv::Op::OpCooperativeMatrixLoadKHR, type.id, std::move(operands), resultId);
}

std::vector<uint32_t> Scratch::Unpack(Builder& b, const CoopMatType& type, uint32_t word) {
  TypeManager& t = context_.types;
  const uint32_t component = type.componentType;
  if (type.componentBytes == 4) return {component == t.Uint() ? word : b.Emit(spv::Op::OpBitcast, component, {word})};
  if (type.componentFloat) {  // f16, bfloat16, fp8: the word is a vector of them
    const uint32_t perWord = 4 / type.componentBytes;
    const uint32_t vector = b.Emit(spv::Op::OpBitcast, t.Vector(component, perWord), {word});
    std::vector<uint32_t> elements;
    for (uint32_t j = 0; j < perWord; ++j) elements.push_back(b.Emit(spv::Op::OpCompositeExtract, component, {vector, j}));
    return elements;
  }
  std::vector<uint32_t> elements;
  for (uint32_t j = 0; j < 4 / type.componentBytes; ++j) {
    const uint32_t bits = b.ShiftRight(word, b.U(j * 8 * type.componentBytes));
    elements.push_back(b.Emit(type.componentSigned ? spv::Op::OpSConvert : spv::Op::OpUConvert, component, {bits}));
  }
  return elements;
}

uint32_t PackVector(Builder& b, uint32_t componentType, const std::vector<uint32_t>& elements) {
  TypeManager& t = b.types();
  const uint32_t vector = b.Emit(spv::Op::OpCompositeConstruct, t.Vector(componentType, static_cast<uint32_t>(elements.size())), elements);
  return b.Emit(spv::Op::OpBitcast, t.Uint(), {vector});
}

uint32_t Scratch::Pack(Builder& b, const CoopMatType& type, const std::vector<uint32_t>& elements) {
  TypeManager& t = context_.types;
  if (elements.size() * type.componentBytes != 4) Fail("internal error: Pack needs a whole word of elements");
  if (type.componentBytes == 4) return type.componentType == t.Uint() ? elements[0] : b.Emit(spv::Op::OpBitcast, t.Uint(), {elements[0]});
  if (type.componentFloat || ArithmeticAllowed(context_, type.componentType)) return PackVector(b, type.componentType, elements);
  uint32_t word = 0;
  for (size_t j = 0; j < elements.size(); ++j) {
    const uint32_t bits = b.Emit(spv::Op::OpUConvert, t.Uint(), {elements[j]});  // zero-extends signed ones too
    const uint32_t part = b.ShiftLeft(bits, b.U(static_cast<uint32_t>(j) * 8 * type.componentBytes));
    word = j ? b.Or(word, part) : part;
  }
  return word;
}

void Scratch::Finalize() {
  ir::Module& m = context_.module;
  TypeManager& t = context_.types;
  if (!variable_) {
    // A slice base computed for operations that ended up needing no scratch.
    if (wordsPerSlice_) t.AddGlobal(ir::Instruction(spv::Op::OpConstant, t.Uint(), wordsPerSlice_, {0}));
    // The register path still reads builtins: they go into the interfaces.
    for (ir::Instruction& entry : m.entryPoints)
      if (IsComputeLikeModel(entry.Operand(0)))
        for (const auto& [builtin, variable] : context_.builtins) AddToInterface(entry, variable);
    return;
  }

  RefuseExplicitLayoutWorkgroup(m, t);
  // Words per slice: the largest matrix any use stores.
  uint32_t words = t.UintConstant(std::max<uint32_t>(maxConstantWords_, 1));
  for (uint32_t spec : specWords_) {
    const uint32_t greater = t.SpecOp(t.Bool(), spv::Op::OpUGreaterThan, {spec, words});
    words = t.SpecOp(t.Uint(), spv::Op::OpSelect, {greater, spec, words});
  }
  // Invocations per workgroup: the largest over the compute entry points.
  uint32_t invocations = 0;
  auto mergeInvocations = [&](uint32_t id) {
    if (!invocations) { invocations = id; return; }
    const uint32_t greater = t.SpecOp(t.Bool(), spv::Op::OpUGreaterThan, {id, invocations});
    invocations = t.SpecOp(t.Uint(), spv::Op::OpSelect, {greater, id, invocations});
  };
  // A constant decorated BuiltIn WorkgroupSize overrides every entry point's LocalSize.
  uint32_t workgroupSizeConstant = 0;
  for (const ir::AppliedDecoration& d : ir::FindDecorations(m, spv::Decoration::BuiltIn))  // groups included
    if (!d.literals.empty() && d.literals[0] == static_cast<uint32_t>(spv::BuiltIn::WorkgroupSize)) {
      const ir::Instruction* def = t.GlobalDef(d.target);
      if (def && (def->opcode == spv::Op::OpConstantComposite || def->opcode == spv::Op::OpSpecConstantComposite))
        workgroupSizeConstant = d.target;
    }
  auto product = [&](uint32_t x, uint32_t y, uint32_t z) {
    return t.SpecOp(t.Uint(), spv::Op::OpIMul, {t.SpecOp(t.Uint(), spv::Op::OpIMul, {x, y}), z});
  };
  if (workgroupSizeConstant) {
    const ir::Instruction* def = t.GlobalDef(workgroupSizeConstant);
    if (def->operands.size() != 3) Fail("WorkgroupSize constant does not have three components");
    mergeInvocations(product(def->operands[0], def->operands[1], def->operands[2]));
  } else {
    for (const ir::Instruction& entry : m.entryPoints) {
      if (!IsComputeLikeModel(entry.Operand(0))) continue;
      bool found = false;
      for (const ir::Instruction& mode : m.executionModes) {
        if (mode.Operand(0) != entry.Operand(1) || mode.operands.size() != 5) continue;
        if (mode.opcode == spv::Op::OpExecutionMode && mode.operands[1] == static_cast<uint32_t>(spv::ExecutionMode::LocalSize)) {
          mergeInvocations(t.UintConstant(LocalSizeInvocations(entry, mode)));
          found = true;
        } else if (mode.opcode == spv::Op::OpExecutionModeId &&
                   mode.operands[1] == static_cast<uint32_t>(spv::ExecutionMode::LocalSizeId)) {
          mergeInvocations(product(mode.operands[2], mode.operands[3], mode.operands[4]));
          found = true;
        }
      }
      if (!found) Fail("entry point %" + std::to_string(entry.Operand(1)) + " has no workgroup size (LocalSize/LocalSizeId)");
    }
  }
  if (!invocations) Fail("the lowering needs Workgroup scratch but the module has no compute entry point");
  // One slice per subgroup the workgroup can have: at the pipeline's smallest size.
  const uint32_t minSubgroup = SlicedSubgroupSize();
  auto slicesAt = [&](uint32_t size) {
    return t.SpecOp(t.Uint(), spv::Op::OpUDiv,
                    {t.SpecOp(t.Uint(), spv::Op::OpIAdd, {invocations, t.UintConstant(size - 1)}), t.UintConstant(size)});
  };
  const uint32_t slices = slicesAt(minSubgroup);
  const uint32_t length = t.SpecOp(t.Uint(), spv::Op::OpIMul, {slices, words});
  if (auto constantLength = t.ConstantValue(length); constantLength && *constantLength == 0)
    Fail("the Workgroup scratch would have 0 words (a workgroup of 0 invocations?)");

  // The words-per-slice id the functions already reference.
  const ir::Instruction* wordsDef = t.GlobalDef(words);
  ir::Instruction alias = *wordsDef;
  alias.resultId = WordsPerSlice();
  if (alias.opcode == spv::Op::OpConstant) {
    t.AddGlobal(alias);
  } else {  // a specialization expression: alias it through an OpSpecConstantOp IAdd 0
    t.AddGlobal(ir::Instruction(spv::Op::OpSpecConstantOp, t.Uint(), WordsPerSlice(),
                                {static_cast<uint32_t>(spv::Op::OpIAdd), words, t.UintConstant(0)}));
  }
  const uint32_t arrayType = t.UndecoratedArray(t.Uint(), length);
  const uint32_t pointer = t.Pointer(spv::StorageClass::Workgroup, arrayType);
  t.AddGlobal(ir::Instruction(spv::Op::OpVariable, pointer, variable_, {static_cast<uint32_t>(spv::StorageClass::Workgroup)}));

  if (auto w = t.ConstantValue(words)) context_.stats.scratchBytesPerSubgroup = *w * 4;
  std::unordered_set<uint32_t> specSized;
  const std::unordered_map<uint32_t, uint64_t> sizesOfTypes = TypeSizes(m, t, &specSized);
  uint64_t own = 0, payload = 0;  // the module's own Workgroup and TaskPayloadWorkgroupEXT bytes
  bool ownSpecSized = false;
  for (const ir::Instruction& g : m.globals) {
    if (g.opcode != spv::Op::OpVariable || g.resultId == variable_) continue;
    const bool shared = g.Operand(0) == static_cast<uint32_t>(spv::StorageClass::Workgroup);
    if (!shared && g.Operand(0) != static_cast<uint32_t>(spv::StorageClass::TaskPayloadWorkgroupEXT)) continue;
    const ir::Instruction* p = t.GlobalDef(g.typeId);
    if (auto size = p ? sizesOfTypes.find(p->Operand(1)) : sizesOfTypes.end(); size != sizesOfTypes.end())
      (shared ? own : payload) = SaturatingAdd(shared ? own : payload, size->second);
    ownSpecSized |= p && specSized.count(p->Operand(1));
  }
  const SharedMemoryBudget budget = SharedMemoryLimit(payload);
  const uint64_t limit = budget.limit;
  // A scratch or an own shared array that specialization constants size (local_size_x_id,
  // spec-sized tiles: common in ML kernels) cannot be held to the limit here: the
  // lowering with the pipeline's values, where they are constants, checks it
  // (review 2, finding 4).
  if (limit && (!t.ConstantValue(length) || ownSpecSized)) context_.dependsOnSpecialization = true;
  if (auto total = t.ConstantValue(length)) {
    const uint64_t ours = uint64_t{*total} * 4;
    context_.stats.moduleSharedBytes = own;
    context_.stats.scratchBytes = ours;
    if (limit && SaturatingAdd(own, ours) > limit) {
      // At module time a pipeline may still run at a larger size, with fewer slices:
      // leave the check to the pipeline-time lowering, which knows its size.
      const std::vector<uint32_t>& sizes = context_.options.subgroupSizes;
      const uint32_t largest = sizes.empty() ? minSubgroup : *std::max_element(sizes.begin(), sizes.end());
      const auto fewest = t.ConstantValue(slicesAt(largest));
      if (context_.options.specializationPending && largest > minSubgroup && fewest &&
          SaturatingAdd(own, uint64_t{*fewest} * *t.ConstantValue(words) * 4) <= limit) {
        context_.dependsOnSubgroupSize = true;
      } else {
        // Says whether the module alone is already over the limit (then no lowering fits).
        const uint32_t sliceCount = *total / std::max<uint32_t>(*t.ConstantValue(words), 1);
        throw LowerError{"the lowering needs " + std::to_string(ours) + " bytes of Workgroup scratch (" +
                             std::to_string(sliceCount) + (sliceCount == 1 ? " subgroup slice of " : " subgroup slices of ") +
                             std::to_string(*t.ConstantValue(words) * 4) + " bytes, at subgroup size " +
                             std::to_string(minSubgroup) + ") on top of the module's own " + std::to_string(own) +
                             " bytes, more than the " + std::to_string(limit) + " bytes of shared memory the device allows" +
                             budget.note +
                             (own > limit                                     ? " (the module's own shared memory alone exceeds it)"
                              : context_.options.registerMovesWithShuffles ? " (the module alone fits; the operations that need the scratch have no register form here)"
                                                                           : " (the module alone fits)"),
                         true};
      }
    }
  }

  // Interfaces: Input builtins always, Workgroup variables from SPIR-V 1.4 on.
  for (ir::Instruction& entry : m.entryPoints) {
    if (!IsComputeLikeModel(entry.Operand(0))) continue;
    for (const auto& [builtin, variable] : context_.builtins) AddToInterface(entry, variable);
    if (m.SpirvMinor() >= 4) AddToInterface(entry, variable_);
  }
}

}  // namespace coopmat
