#include "type_manager.h"

#include "coopmat/layout.h"
#include "lowering.h"

namespace coopmat {

void Fail(std::string message) { throw LowerError{std::move(message)}; }

TypeManager::TypeManager(ir::Module& module) : module_(module) {
  typeOf_.assign(module.bound, 0);
  decorated_.assign(module.bound, false);
  for (const ir::Instruction& inst : module.annotations) {
    const uint32_t target = inst.Operand(0);
    if (target < decorated_.size()) decorated_[target] = true;
  }
  for (size_t i = 0; i < module.globals.size(); ++i) Index(module.globals[i], i);
  for (const ir::Function& function : module.functions) {
    SetTypeOf(function.definition.resultId, function.definition.typeId);
    for (const ir::Instruction& param : function.parameters) SetTypeOf(param.resultId, param.typeId);
    for (const ir::Block& block : function.blocks)
      for (const ir::Instruction& inst : block.instructions) SetTypeOf(inst.resultId, inst.typeId);
  }
}

void TypeManager::Index(const ir::Instruction& inst, size_t position) {
  if (!inst.resultId) return;
  globalIndex_[inst.resultId] = position;
  SetTypeOf(inst.resultId, inst.typeId);
  const spv::Op op = inst.opcode;
  const bool isType = op >= spv::Op::OpTypeVoid && op <= spv::Op::OpTypeForwardPointer;
  const bool dedupable = isType || op == spv::Op::OpTypeCooperativeMatrixKHR || op == spv::Op::OpConstant ||
                         op == spv::Op::OpConstantTrue || op == spv::Op::OpConstantFalse;
  // Structs are nominal (decorations, names); never fold our requests onto them.
  if (!dedupable || op == spv::Op::OpTypeStruct || op == spv::Op::OpTypeOpaque) return;
  std::vector<uint32_t> key{static_cast<uint32_t>(op), inst.typeId};
  key.insert(key.end(), inst.operands.begin(), inst.operands.end());
  dedup_.emplace(std::move(key), inst.resultId);
}

const ir::Instruction* TypeManager::GlobalDef(uint32_t id) const {
  auto it = globalIndex_.find(id);
  return it == globalIndex_.end() ? nullptr : &module_.globals[it->second];
}

uint32_t TypeManager::TypeOf(uint32_t id) const { return id < typeOf_.size() ? typeOf_[id] : 0; }

void TypeManager::SetTypeOf(uint32_t id, uint32_t type) {
  if (!id) return;
  if (id >= typeOf_.size()) typeOf_.resize(static_cast<size_t>(id) + 1, 0);
  typeOf_[id] = type;
}

bool TypeManager::IsDecorated(uint32_t id) const { return id < decorated_.size() && decorated_[id]; }

void TypeManager::AddGlobal(ir::Instruction inst) {
  module_.globals.push_back(std::move(inst));
  Index(module_.globals.back(), module_.globals.size() - 1);
}

uint32_t TypeManager::FindOrAdd(spv::Op op, uint32_t type, std::vector<uint32_t> operands, bool requireUndecorated) {
  std::vector<uint32_t> key{static_cast<uint32_t>(op), type};
  key.insert(key.end(), operands.begin(), operands.end());
  if (auto it = dedup_.find(key); it != dedup_.end() && !(requireUndecorated && IsDecorated(it->second)))
    return it->second;
  const uint32_t id = module_.TakeId();
  module_.globals.emplace_back(op, type, id, std::move(operands));
  const size_t position = module_.globals.size() - 1;
  globalIndex_[id] = position;
  SetTypeOf(id, type);
  dedup_[std::move(key)] = id;  // newest wins: an undecorated one we made ourselves
  return id;
}

uint32_t TypeManager::Void() { return FindOrAdd(spv::Op::OpTypeVoid, 0, {}); }
uint32_t TypeManager::Bool() { return FindOrAdd(spv::Op::OpTypeBool, 0, {}); }
uint32_t TypeManager::Int(uint32_t width, bool isSigned) { return FindOrAdd(spv::Op::OpTypeInt, 0, {width, isSigned ? 1u : 0u}); }
uint32_t TypeManager::Float(uint32_t width) { return FindOrAdd(spv::Op::OpTypeFloat, 0, {width}); }
uint32_t TypeManager::Vector(uint32_t component, uint32_t count) { return FindOrAdd(spv::Op::OpTypeVector, 0, {component, count}); }
uint32_t TypeManager::Pointer(spv::StorageClass storage, uint32_t pointee) {
  return FindOrAdd(spv::Op::OpTypePointer, 0, {static_cast<uint32_t>(storage), pointee});
}
uint32_t TypeManager::FunctionType(uint32_t returnType, const std::vector<uint32_t>& params) {
  std::vector<uint32_t> operands{returnType};
  operands.insert(operands.end(), params.begin(), params.end());
  return FindOrAdd(spv::Op::OpTypeFunction, 0, std::move(operands));
}
uint32_t TypeManager::CoopMat(uint32_t component, uint32_t scopeId, uint32_t rowsId, uint32_t colsId, uint32_t useId) {
  return FindOrAdd(spv::Op::OpTypeCooperativeMatrixKHR, 0, {component, scopeId, rowsId, colsId, useId});
}
uint32_t TypeManager::UndecoratedArray(uint32_t element, uint32_t lengthId) {
  return FindOrAdd(spv::Op::OpTypeArray, 0, {element, lengthId}, /*requireUndecorated=*/true);
}
uint32_t TypeManager::UintConstant(uint32_t value) { return Constant(Uint(), value); }
uint32_t TypeManager::Constant(uint32_t type, uint32_t value) { return FindOrAdd(spv::Op::OpConstant, type, {value}); }

uint32_t TypeManager::SpecOp(uint32_t type, spv::Op op, const std::vector<uint32_t>& operands) {
  std::vector<uint32_t> values;
  for (uint32_t operand : operands) {
    auto value = ConstantValue(operand);
    if (!value) break;
    values.push_back(*value);
  }
  if (values.size() == operands.size() && values.size() == 2 && type == Uint()) {
    const uint32_t a = values[0], b = values[1];
    switch (op) {
      // Sizes folded here must not wrap: a wrapped size is a too-small array.
      case spv::Op::OpIAdd:
        if (uint64_t{a} + b > UINT32_MAX) Fail("a size computation overflows 32 bits (" + std::to_string(a) + " + " + std::to_string(b) + ")");
        return UintConstant(a + b);
      case spv::Op::OpIMul:
        if (uint64_t{a} * b > UINT32_MAX) Fail("a size computation overflows 32 bits (" + std::to_string(a) + " * " + std::to_string(b) + ")");
        return UintConstant(a * b);
      case spv::Op::OpUDiv: return UintConstant(b ? a / b : 0);
      default: break;
    }
  }
  std::vector<uint32_t> specOperands{static_cast<uint32_t>(op)};
  specOperands.insert(specOperands.end(), operands.begin(), operands.end());
  return FindOrAdd(spv::Op::OpSpecConstantOp, type, std::move(specOperands));
}

std::optional<uint32_t> TypeManager::ConstantValue(uint32_t id) const {
  const ir::Instruction* def = GlobalDef(id);
  if (!def || def->opcode != spv::Op::OpConstant || def->operands.size() != 1) return std::nullopt;
  const ir::Instruction* type = GlobalDef(def->typeId);
  if (!type || type->opcode != spv::Op::OpTypeInt || type->Operand(0) > 32) return std::nullopt;
  return def->operands[0];
}

std::optional<uint32_t> TypeManager::SpecConstantDefault(uint32_t id) const {
  const ir::Instruction* def = GlobalDef(id);
  if (def && def->opcode == spv::Op::OpSpecConstant && def->operands.size() == 1) return def->operands[0];
  if (!def || def->opcode != spv::Op::OpSpecConstantOp) return std::nullopt;
  // An expression (glslang's `gl_WorkGroupSize.x / 4u`): what the freezer makes of
  // the constants' section with no values given.
  if (!frozenDefaults_) {
    ir::Module defaults;
    defaults.annotations = module_.annotations;
    defaults.executionModes = module_.executionModes;
    defaults.globals = module_.globals;
    FreezeSpecialization(defaults, Specialization{});
    frozenDefaults_.emplace();
    for (size_t i = 0; i < defaults.globals.size(); ++i) {
      const ir::Instruction& frozen = defaults.globals[i];
      if (module_.globals[i].opcode == spv::Op::OpSpecConstantOp && frozen.opcode == spv::Op::OpConstant &&
          frozen.operands.size() == 1)
        (*frozenDefaults_)[frozen.resultId] = frozen.operands[0];
    }
  }
  auto it = frozenDefaults_->find(id);
  return it == frozenDefaults_->end() ? std::nullopt : std::optional<uint32_t>(it->second);
}

bool TypeManager::IsSpecConstant(uint32_t id) const {
  const ir::Instruction* def = GlobalDef(id);
  if (!def) return false;
  switch (def->opcode) {
    case spv::Op::OpSpecConstant:
    case spv::Op::OpSpecConstantOp:
    case spv::Op::OpSpecConstantTrue:
    case spv::Op::OpSpecConstantFalse:
    case spv::Op::OpSpecConstantComposite: return true;
    default: return false;
  }
}

uint32_t TypeManager::ScalarWidth(uint32_t typeId) const {
  const ir::Instruction* def = GlobalDef(typeId);
  if (!def || (def->opcode != spv::Op::OpTypeInt && def->opcode != spv::Op::OpTypeFloat)) return 0;
  return def->Operand(0);
}
bool TypeManager::IsIntType(uint32_t typeId) const {
  const ir::Instruction* def = GlobalDef(typeId);
  return def && def->opcode == spv::Op::OpTypeInt;
}
bool TypeManager::IsSignedInt(uint32_t typeId) const {
  const ir::Instruction* def = GlobalDef(typeId);
  return def && def->opcode == spv::Op::OpTypeInt && def->Operand(1) == 1;
}
bool TypeManager::IsFloatType(uint32_t typeId) const {
  const ir::Instruction* def = GlobalDef(typeId);
  return def && def->opcode == spv::Op::OpTypeFloat;
}

bool TypeManager::IsEncodedFloat(uint32_t typeId) const {
  const ir::Instruction* def = GlobalDef(typeId);
  return def && def->opcode == spv::Op::OpTypeFloat && def->operands.size() > 1;
}

std::optional<uint32_t> TypeManager::VkComponentType(uint32_t typeId) const {
  const ir::Instruction* def = GlobalDef(typeId);
  if (!def || def->operands.empty()) return std::nullopt;
  const uint32_t width = def->Operand(0);
  const uint32_t log = width == 8 ? 0 : width == 16 ? 1 : width == 32 ? 2 : width == 64 ? 3 : 4;
  if (log > 3) return std::nullopt;
  if (def->opcode == spv::Op::OpTypeInt) return (def->Operand(1) ? kTypeS8 : kTypeU8) + log;
  if (def->opcode != spv::Op::OpTypeFloat) return std::nullopt;
  if (def->operands.size() == 1) return log == 0 ? std::nullopt : std::optional<uint32_t>(kTypeF16 + log - 1);
  switch (static_cast<spv::FPEncoding>(def->Operand(1))) {
    case spv::FPEncoding::BFloat16KHR: return width == 16 ? std::optional<uint32_t>(kTypeBF16) : std::nullopt;
    case spv::FPEncoding::Float8E4M3EXT: return width == 8 ? std::optional<uint32_t>(kTypeE4M3) : std::nullopt;
    case spv::FPEncoding::Float8E5M2EXT: return width == 8 ? std::optional<uint32_t>(kTypeE5M2) : std::nullopt;
    default: return std::nullopt;
  }
}

uint32_t TypeManager::ExactIntegerLimit(uint32_t typeId) const {
  switch (VkComponentType(typeId).value_or(~0u)) {
    case kTypeF16: return 1u << 11;
    case kTypeF32: return 1u << 24;
    case kTypeF64: return 0xffffffffu;  // 2^53, beyond any uint coordinate
    case kTypeBF16: return 1u << 8;
    case kTypeE4M3: return 1u << 4;
    case kTypeE5M2: return 1u << 3;
    default: return 0;
  }
}

bool TypeManager::IsCoopMat(uint32_t typeId) const {
  const ir::Instruction* def = GlobalDef(typeId);
  return def && def->opcode == spv::Op::OpTypeCooperativeMatrixKHR;
}

std::optional<CoopMatType> TypeManager::CoopMatInfo(uint32_t typeId) const {
  const ir::Instruction* def = GlobalDef(typeId);
  if (!def || def->opcode != spv::Op::OpTypeCooperativeMatrixKHR || def->operands.size() != 5) return std::nullopt;
  CoopMatType info;
  info.id = typeId;
  info.componentType = def->operands[0];
  info.scopeId = def->operands[1];
  info.rowsId = def->operands[2];
  info.colsId = def->operands[3];
  info.useId = def->operands[4];
  const ir::Instruction* component = GlobalDef(info.componentType);
  if (!component) return std::nullopt;
  info.componentFloat = component->opcode == spv::Op::OpTypeFloat;
  info.componentSigned = component->opcode == spv::Op::OpTypeInt && component->Operand(1) == 1;
  info.componentBytes = component->Operand(0) / 8;
  // Encodings the lowerings know (bfloat16, fp8); any other is refused by MatrixOf.
  info.componentEncoded = info.componentFloat && component->operands.size() > 1;
  if (info.componentEncoded && !VkComponentType(info.componentType)) info.componentBytes = 0;
  if (auto use = ConstantValue(info.useId)) info.use = static_cast<MatrixUse>(*use);
  return info;
}

}  // namespace coopmat
