// Pipeline-time specialization: what a driver does with VkSpecializationInfo, done
// before the lowering so that matrix shapes and Uses become plain constants.
// Specialization constants take the app's values (or keep their defaults) and are
// frozen into OpConstant*; OpSpecConstantOp is folded for the integer and boolean
// operations a shader may use. One it cannot fold stays an OpSpecConstantOp of
// plain constants, which the driver still evaluates correctly.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <unordered_map>

#include "lowering.h"

namespace coopmat {
namespace {

struct ScalarType {
  uint32_t width = 0;  // 0: not an integer or boolean scalar type
  bool isSigned = false;
  bool isBool = false;
};

class Freezer {
 public:
  explicit Freezer(ir::Module& module) : module_(module) {
    for (size_t i = 0; i < module_.globals.size(); ++i)
      if (module_.globals[i].resultId) index_[module_.globals[i].resultId] = i;
  }

  void Apply(const Specialization& specialization) {
    std::unordered_map<uint32_t, uint32_t> specIdOf;  // result id -> SpecId, decoration groups included
    for (const ir::AppliedDecoration& d : ir::FindDecorations(module_, spv::Decoration::SpecId))
      if (!d.literals.empty()) specIdOf[d.target] = d.literals[0];
    for (ir::Instruction& inst : module_.globals) {
      const auto specId = specIdOf.find(inst.resultId);
      const std::vector<uint8_t>* bytes = nullptr;
      if (specId != specIdOf.end()) {
        auto value = specialization.values.find(specId->second);
        if (value != specialization.values.end()) bytes = &value->second;
      }
      switch (inst.opcode) {
        case spv::Op::OpSpecConstantTrue:
        case spv::Op::OpSpecConstantFalse: {
          bool value = inst.opcode == spv::Op::OpSpecConstantTrue;
          if (bytes) value = ReadBytes(*bytes, 4) != 0;  // a VkBool32
          inst.opcode = value ? spv::Op::OpConstantTrue : spv::Op::OpConstantFalse;
          break;
        }
        case spv::Op::OpSpecConstant:
          if (bytes) SetLiteral(inst, *bytes);
          inst.opcode = spv::Op::OpConstant;
          break;
        case spv::Op::OpSpecConstantComposite: inst.opcode = spv::Op::OpConstantComposite; break;
        case spv::Op::OpSpecConstantOp: Fold(inst); break;
        default: break;
      }
    }
    // Frozen constants carry no SpecId any more (only scalar spec constants had one).
    std::erase_if(module_.annotations, [](const ir::Instruction& a) {
      return a.opcode == spv::Op::OpDecorate && a.Operand(1) == static_cast<uint32_t>(spv::Decoration::SpecId);
    });
  }

 private:
  const ir::Instruction* Def(uint32_t id) const {
    auto it = index_.find(id);
    return it == index_.end() ? nullptr : &module_.globals[it->second];
  }

  ScalarType TypeInfo(uint32_t typeId) const {
    const ir::Instruction* def = Def(typeId);
    if (!def) return {};
    if (def->opcode == spv::Op::OpTypeBool) return {1, false, true};
    // Width 0 (malformed) is no integer: nothing of it is folded (review 2, finding 15).
    if (def->opcode == spv::Op::OpTypeInt && def->Operand(0) >= 1 && def->Operand(0) <= 64)
      return {def->Operand(0), def->Operand(1) == 1, false};
    return {};
  }

  static uint64_t ReadBytes(const std::vector<uint8_t>& bytes, size_t size) {
    uint64_t value = 0;
    std::memcpy(&value, bytes.data(), std::min(bytes.size(), std::min<size_t>(size, 8)));  // little-endian hosts
    return value;
  }

  // Writes the app's value as the literal of an OpSpecConstant of the instruction's type.
  void SetLiteral(ir::Instruction& inst, const std::vector<uint8_t>& bytes) const {
    const ir::Instruction* type = Def(inst.typeId);
    if (!type || (type->opcode != spv::Op::OpTypeInt && type->opcode != spv::Op::OpTypeFloat)) return;
    const uint32_t width = type->Operand(0);
    if (width == 0 || width > 64) return;  // malformed: left as it is
    uint64_t value = ReadBytes(bytes, (width + 7) / 8);
    if (width < 64) value &= (uint64_t{1} << width) - 1;
    // Narrow signed integers are sign-extended into their word (SPIR-V literal rule).
    if (type->opcode == spv::Op::OpTypeInt && type->Operand(1) == 1 && width < 32 && (value >> (width - 1) & 1))
      value |= ~uint64_t{0} << width & 0xffffffffu;
    inst.operands = {static_cast<uint32_t>(value)};
    if (width > 32) inst.operands.push_back(static_cast<uint32_t>(value >> 32));
  }

  // The value of a frozen scalar integer or boolean constant, zero-extended to 64 bits.
  std::optional<uint64_t> Value(uint32_t id) const {
    const ir::Instruction* def = Def(id);
    if (!def) return std::nullopt;
    // A boolean constant only of a boolean type (malformed input may say otherwise).
    if (def->opcode == spv::Op::OpConstantTrue || def->opcode == spv::Op::OpConstantFalse) {
      if (!TypeInfo(def->typeId).isBool) return std::nullopt;
      return def->opcode == spv::Op::OpConstantTrue ? 1 : 0;
    }
    if (def->opcode != spv::Op::OpConstant || def->operands.empty()) return std::nullopt;
    const ScalarType type = TypeInfo(def->typeId);
    if (!type.width) return std::nullopt;
    uint64_t value = def->operands[0];
    if (type.width > 32) value |= uint64_t{def->Operand(1)} << 32;
    return Truncate(value, type.width);
  }

  static uint64_t Truncate(uint64_t v, uint32_t width) { return width >= 64 ? v : v & ((uint64_t{1} << width) - 1); }
  static int64_t Signed(uint64_t v, uint32_t width) {
    if (width >= 64) return static_cast<int64_t>(v);
    const uint64_t sign = uint64_t{1} << (width - 1);
    return static_cast<int64_t>((v ^ sign) - sign);
  }

  // Folds an OpSpecConstantOp whose operands are frozen scalars; leaves it alone otherwise.
  void Fold(ir::Instruction& inst) {
    if (inst.operands.empty()) return;
    const auto op = static_cast<spv::Op>(inst.operands[0]);
    const ScalarType result = TypeInfo(inst.typeId);
    if (!result.width) return;
    std::vector<uint64_t> v;
    std::vector<ScalarType> types;
    for (size_t i = 1; i < inst.operands.size(); ++i) {
      auto value = Value(inst.operands[i]);
      if (!value) return;
      v.push_back(*value);
      types.push_back(TypeInfo(Def(inst.operands[i])->typeId));
    }
    const uint32_t w = types.empty() ? result.width : types[0].width;
    auto s = [&](size_t i) { return Signed(v[i], types[i].width); };
    std::optional<uint64_t> out;
    const size_t n = v.size();
    switch (op) {
      case spv::Op::OpSConvert: if (n == 1) out = static_cast<uint64_t>(s(0)); break;
      case spv::Op::OpUConvert: if (n == 1) out = v[0]; break;
      case spv::Op::OpSNegate: if (n == 1) out = 0 - v[0]; break;
      case spv::Op::OpNot: if (n == 1) out = ~v[0]; break;
      case spv::Op::OpIAdd: if (n == 2) out = v[0] + v[1]; break;
      case spv::Op::OpISub: if (n == 2) out = v[0] - v[1]; break;
      case spv::Op::OpIMul: if (n == 2) out = v[0] * v[1]; break;
      case spv::Op::OpUDiv: if (n == 2 && v[1]) out = v[0] / v[1]; break;
      case spv::Op::OpUMod: if (n == 2 && v[1]) out = v[0] % v[1]; break;
      case spv::Op::OpSDiv:
        if (n == 2 && s(1) && !(s(1) == -1 && s(0) == Signed(uint64_t{1} << (w - 1), w)))
          out = static_cast<uint64_t>(s(0) / s(1));
        break;
      case spv::Op::OpSRem:
        if (n == 2 && s(1) && s(1) != -1) out = static_cast<uint64_t>(s(0) % s(1));
        break;
      case spv::Op::OpSMod:
        if (n == 2 && s(1) && s(1) != -1) {
          int64_t r = s(0) % s(1);
          if (r != 0 && ((r < 0) != (s(1) < 0))) r += s(1);
          out = static_cast<uint64_t>(r);
        }
        break;
      case spv::Op::OpShiftLeftLogical: if (n == 2 && v[1] < w) out = v[0] << v[1]; break;
      case spv::Op::OpShiftRightLogical: if (n == 2 && v[1] < w) out = v[0] >> v[1]; break;
      case spv::Op::OpShiftRightArithmetic: if (n == 2 && v[1] < w) out = static_cast<uint64_t>(s(0) >> v[1]); break;
      case spv::Op::OpBitwiseOr: if (n == 2) out = v[0] | v[1]; break;
      case spv::Op::OpBitwiseXor: if (n == 2) out = v[0] ^ v[1]; break;
      case spv::Op::OpBitwiseAnd: if (n == 2) out = v[0] & v[1]; break;
      case spv::Op::OpLogicalOr: if (n == 2) out = (v[0] || v[1]); break;
      case spv::Op::OpLogicalAnd: if (n == 2) out = (v[0] && v[1]); break;
      case spv::Op::OpLogicalNot: if (n == 1) out = !v[0]; break;
      case spv::Op::OpLogicalEqual: case spv::Op::OpIEqual: if (n == 2) out = v[0] == v[1]; break;
      case spv::Op::OpLogicalNotEqual: case spv::Op::OpINotEqual: if (n == 2) out = v[0] != v[1]; break;
      case spv::Op::OpULessThan: if (n == 2) out = v[0] < v[1]; break;
      case spv::Op::OpUGreaterThan: if (n == 2) out = v[0] > v[1]; break;
      case spv::Op::OpULessThanEqual: if (n == 2) out = v[0] <= v[1]; break;
      case spv::Op::OpUGreaterThanEqual: if (n == 2) out = v[0] >= v[1]; break;
      case spv::Op::OpSLessThan: if (n == 2) out = s(0) < s(1); break;
      case spv::Op::OpSGreaterThan: if (n == 2) out = s(0) > s(1); break;
      case spv::Op::OpSLessThanEqual: if (n == 2) out = s(0) <= s(1); break;
      case spv::Op::OpSGreaterThanEqual: if (n == 2) out = s(0) >= s(1); break;
      case spv::Op::OpSelect: if (n == 3) out = v[0] ? v[1] : v[2]; break;
      default: break;
    }
    if (!out) return;
    const uint64_t value = Truncate(*out, result.width);
    if (result.isBool) {
      inst.opcode = value ? spv::Op::OpConstantTrue : spv::Op::OpConstantFalse;
      inst.operands.clear();
      return;
    }
    uint64_t literal = value;
    if (result.isSigned && result.width < 32) literal = static_cast<uint64_t>(Signed(value, result.width)) & 0xffffffffu;
    inst.opcode = spv::Op::OpConstant;
    inst.operands = {static_cast<uint32_t>(literal)};
    if (result.width > 32) inst.operands.push_back(static_cast<uint32_t>(value >> 32));
  }

  ir::Module& module_;
  std::unordered_map<uint32_t, size_t> index_;
};

}  // namespace

void FreezeSpecialization(ir::Module& module, const Specialization& specialization) {
  Freezer(module).Apply(specialization);
}

LowerResult SpecializeModule(std::span<const uint32_t> words, const Specialization& specialization) {
  const auto begin = std::chrono::steady_clock::now();
  LowerResult result;
  result.stats.wordsIn = words.size();
  ir::Module module;
  if (std::string error = ir::Parse(words, module); !error.empty()) {
    result.error = "cannot parse the module: " + error;
    return result;
  }
  try {
    FreezeSpecialization(module, specialization);
  } catch (const std::exception& error) {
    result.error = std::string("internal error: ") + error.what();
    return result;
  }
  result.words = ir::Emit(module);
  result.stats.wordsOut = result.words.size();
  result.stats.microseconds = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin).count();
  result.ok = true;
  return result;
}

}  // namespace coopmat
