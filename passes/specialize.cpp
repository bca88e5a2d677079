// Pipeline-time specialization: what a driver does with VkSpecializationInfo, done
// before the lowering so that matrix shapes and Uses become plain constants.
// Specialization constants take the app's values (or keep their defaults) and are
// frozen into OpConstant*; OpSpecConstantOp is folded for the integer and boolean
// operations a shader may use, for CompositeExtract / CompositeInsert /
// VectorShuffle over composites whose parts are constants (glslang's
// `gl_WorkGroupSize.x` in a constant expression), and for FConvert / QuantizeToF16
// where the result is the one the driver must produce. One it cannot fold stays an
// OpSpecConstantOp, which the driver still evaluates; an OpSpecConstantComposite
// with such a part stays one too (OpConstantComposite may hold only constants).
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <unordered_map>

#include "ieee_float.h"
#include "lowering.h"

namespace coopmat {
namespace {

struct ScalarType {
  uint32_t width = 0;  // 0: not an integer or boolean scalar type
  bool isSigned = false;
  bool isBool = false;
};

// What an OpSpecConstantOp becomes: its new opcode and operands (type and id stay).
struct Folded {
  spv::Op opcode = spv::Op::OpNop;
  std::vector<uint32_t> operands;
};

// The float-controls execution modes that decide what a conversion must produce.
struct FloatModes {
  std::unordered_map<uint32_t, uint32_t> roundingOf;  // result id -> FPRoundingMode
  std::set<uint32_t> nearestEven, towardZero, flushToZero;  // widths named by RoundingModeRTE/RTZ, DenormFlushToZero
};

uint64_t Truncate(uint64_t v, uint32_t width) { return width >= 64 ? v : v & ((uint64_t{1} << width) - 1); }
int64_t Signed(uint64_t v, uint32_t width) {
  if (width >= 64) return static_cast<int64_t>(v);
  const uint64_t sign = uint64_t{1} << (width - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

// The frozen operands of an integer or boolean OpSpecConstantOp: values zero-extended
// to 64 bits, their types, and the width the operation works at (its first operand's).
struct ScalarOperands {
  std::vector<uint64_t> v;
  std::vector<ScalarType> types;
  uint32_t width = 0;
  size_t size() const { return v.size(); }
  int64_t s(size_t i) const { return Signed(v[i], types[i].width); }
};

// Each family below folds its own opcodes (nullopt for others, or where the result
// is undefined: a division by zero, an overflowing signed division, a shift by the
// width or more); the value is truncated to the result's width by the caller.
std::optional<uint64_t> FoldConversion(spv::Op op, const ScalarOperands& x) {
  if (x.size() != 1) return std::nullopt;
  if (op == spv::Op::OpSConvert) return static_cast<uint64_t>(x.s(0));
  if (op == spv::Op::OpUConvert) return x.v[0];
  return std::nullopt;
}

std::optional<uint64_t> FoldUnsignedArithmetic(spv::Op op, const ScalarOperands& x) {
  const std::vector<uint64_t>& v = x.v;
  if (op == spv::Op::OpSNegate && x.size() == 1) return 0 - v[0];
  if (x.size() != 2) return std::nullopt;
  switch (op) {
    case spv::Op::OpIAdd: return v[0] + v[1];
    case spv::Op::OpISub: return v[0] - v[1];
    case spv::Op::OpIMul: return v[0] * v[1];
    case spv::Op::OpUDiv: return v[1] ? std::optional<uint64_t>(v[0] / v[1]) : std::nullopt;
    case spv::Op::OpUMod: return v[1] ? std::optional<uint64_t>(v[0] % v[1]) : std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<uint64_t> FoldSignedDivision(spv::Op op, const ScalarOperands& x) {
  if (x.size() != 2 || !x.s(1)) return std::nullopt;
  switch (op) {
    case spv::Op::OpSDiv:
      if (x.s(1) == -1 && x.s(0) == Signed(uint64_t{1} << (x.width - 1), x.width)) return std::nullopt;
      return static_cast<uint64_t>(x.s(0) / x.s(1));
    case spv::Op::OpSRem:
      if (x.s(1) == -1) return std::nullopt;
      return static_cast<uint64_t>(x.s(0) % x.s(1));
    case spv::Op::OpSMod: {
      if (x.s(1) == -1) return std::nullopt;
      int64_t r = x.s(0) % x.s(1);
      if (r != 0 && ((r < 0) != (x.s(1) < 0))) r += x.s(1);
      return static_cast<uint64_t>(r);
    }
    default: return std::nullopt;
  }
}

std::optional<uint64_t> FoldShift(spv::Op op, const ScalarOperands& x) {
  if (x.size() != 2 || x.v[1] >= x.width) return std::nullopt;
  switch (op) {
    case spv::Op::OpShiftLeftLogical: return x.v[0] << x.v[1];
    case spv::Op::OpShiftRightLogical: return x.v[0] >> x.v[1];
    case spv::Op::OpShiftRightArithmetic: return static_cast<uint64_t>(x.s(0) >> x.v[1]);
    default: return std::nullopt;
  }
}

std::optional<uint64_t> FoldBitwise(spv::Op op, const ScalarOperands& x) {
  const std::vector<uint64_t>& v = x.v;
  if (op == spv::Op::OpNot && x.size() == 1) return ~v[0];
  if (x.size() != 2) return std::nullopt;
  switch (op) {
    case spv::Op::OpBitwiseOr: return v[0] | v[1];
    case spv::Op::OpBitwiseXor: return v[0] ^ v[1];
    case spv::Op::OpBitwiseAnd: return v[0] & v[1];
    default: return std::nullopt;
  }
}

std::optional<uint64_t> FoldLogical(spv::Op op, const ScalarOperands& x) {
  const std::vector<uint64_t>& v = x.v;
  if (op == spv::Op::OpLogicalNot && x.size() == 1) return !v[0];
  if (op == spv::Op::OpSelect && x.size() == 3) return v[0] ? v[1] : v[2];
  if (x.size() != 2) return std::nullopt;
  switch (op) {
    case spv::Op::OpLogicalOr: return v[0] || v[1];
    case spv::Op::OpLogicalAnd: return v[0] && v[1];
    default: return std::nullopt;
  }
}

std::optional<uint64_t> FoldComparison(spv::Op op, const ScalarOperands& x) {
  if (x.size() != 2) return std::nullopt;
  const std::vector<uint64_t>& v = x.v;
  switch (op) {
    case spv::Op::OpLogicalEqual:
    case spv::Op::OpIEqual: return v[0] == v[1];
    case spv::Op::OpLogicalNotEqual:
    case spv::Op::OpINotEqual: return v[0] != v[1];
    case spv::Op::OpULessThan: return v[0] < v[1];
    case spv::Op::OpUGreaterThan: return v[0] > v[1];
    case spv::Op::OpULessThanEqual: return v[0] <= v[1];
    case spv::Op::OpUGreaterThanEqual: return v[0] >= v[1];
    case spv::Op::OpSLessThan: return x.s(0) < x.s(1);
    case spv::Op::OpSGreaterThan: return x.s(0) > x.s(1);
    case spv::Op::OpSLessThanEqual: return x.s(0) <= x.s(1);
    case spv::Op::OpSGreaterThanEqual: return x.s(0) >= x.s(1);
    default: return std::nullopt;
  }
}

std::optional<uint64_t> FoldScalarOperation(spv::Op op, const ScalarOperands& x) {
  for (auto fold : {FoldConversion, FoldUnsignedArithmetic, FoldSignedDivision, FoldShift, FoldBitwise, FoldLogical,
                    FoldComparison})
    if (std::optional<uint64_t> value = fold(op, x)) return value;
  return std::nullopt;
}

// A folded integer or boolean value as the constant of the result type.
Folded ScalarConstant(uint64_t value, const ScalarType& result) {
  value = Truncate(value, result.width);
  if (result.isBool) return Folded{value ? spv::Op::OpConstantTrue : spv::Op::OpConstantFalse, {}};
  uint64_t literal = value;
  if (result.isSigned && result.width < 32) literal = static_cast<uint64_t>(Signed(value, result.width)) & 0xffffffffu;
  Folded folded{spv::Op::OpConstant, {static_cast<uint32_t>(literal)}};
  if (result.width > 32) folded.operands.push_back(static_cast<uint32_t>(value >> 32));
  return folded;
}

class Freezer {
 public:
  explicit Freezer(ir::Module& module) : module_(module) {
    for (size_t i = 0; i < module_.globals.size(); ++i)
      if (module_.globals[i].resultId) index_[module_.globals[i].resultId] = i;
    for (const ir::AppliedDecoration& d : ir::FindDecorations(module_, spv::Decoration::FPRoundingMode))
      if (!d.literals.empty()) modes_.roundingOf[d.target] = d.literals[0];
    for (const ir::Instruction& mode : module_.executionModes) {
      if (mode.opcode != spv::Op::OpExecutionMode || mode.operands.size() < 3) continue;
      switch (static_cast<spv::ExecutionMode>(mode.operands[1])) {
        case spv::ExecutionMode::RoundingModeRTE: modes_.nearestEven.insert(mode.operands[2]); break;
        case spv::ExecutionMode::RoundingModeRTZ: modes_.towardZero.insert(mode.operands[2]); break;
        case spv::ExecutionMode::DenormFlushToZero: modes_.flushToZero.insert(mode.operands[2]); break;
        default: break;
      }
    }
  }

  void Apply(const Specialization& specialization) {
    std::unordered_map<uint32_t, uint32_t> specIdOf;  // result id -> SpecId, decoration groups included
    for (const ir::AppliedDecoration& d : ir::FindDecorations(module_, spv::Decoration::SpecId))
      if (!d.literals.empty()) specIdOf[d.target] = d.literals[0];
    for (ir::Instruction& inst : module_.globals) Freeze(inst, AppValue(specIdOf, specialization, inst.resultId));
    // Frozen constants carry no SpecId any more (only scalar spec constants had one).
    std::erase_if(module_.annotations, [](const ir::Instruction& a) {
      return a.opcode == spv::Op::OpDecorate && a.Operand(1) == static_cast<uint32_t>(spv::Decoration::SpecId);
    });
  }

 private:
  // The app's bytes for the specialization constant `id`, or null (no SpecId, no entry).
  static const std::vector<uint8_t>* AppValue(const std::unordered_map<uint32_t, uint32_t>& specIdOf,
                                              const Specialization& specialization, uint32_t id) {
    const auto specId = specIdOf.find(id);
    if (specId == specIdOf.end()) return nullptr;
    const auto value = specialization.values.find(specId->second);
    // An entry without bytes (size 0 is invalid in Vulkan; the layer drops such
    // entries) gives no value: the default stands, and ReadBytes never copies from an
    // empty vector's null data() (undefined behaviour for memcpy).
    return value != specialization.values.end() && !value->second.empty() ? &value->second : nullptr;
  }

  // One global, in module order (an operation's operands come before it): a
  // specialization constant becomes a constant of the app's value or its default.
  void Freeze(ir::Instruction& inst, const std::vector<uint8_t>* bytes) const {
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
      case spv::Op::OpSpecConstantComposite:
        // OpConstantComposite may hold only constants: with a part still a
        // specialization operation it stays a specialization composite.
        if (AllFrozen(inst.operands)) inst.opcode = spv::Op::OpConstantComposite;
        break;
      case spv::Op::OpSpecConstantOp:
        if (std::optional<Folded> folded = Fold(inst)) {
          inst.opcode = folded->opcode;
          inst.operands = std::move(folded->operands);
        }
        break;
      default: break;
    }
  }

  const ir::Instruction* Def(uint32_t id) const {
    auto it = index_.find(id);
    return it == index_.end() ? nullptr : &module_.globals[it->second];
  }

  // A non-specialization constant (or OpUndef): what OpConstantComposite may hold.
  bool IsFrozen(uint32_t id) const {
    const ir::Instruction* def = Def(id);
    if (!def) return false;
    switch (def->opcode) {
      case spv::Op::OpConstant:
      case spv::Op::OpConstantTrue:
      case spv::Op::OpConstantFalse:
      case spv::Op::OpConstantComposite:
      case spv::Op::OpConstantNull:
      case spv::Op::OpUndef: return true;
      default: return false;
    }
  }
  bool AllFrozen(const std::vector<uint32_t>& ids) const {
    return std::all_of(ids.begin(), ids.end(), [&](uint32_t id) { return IsFrozen(id); });
  }

  // The parts of a composite constant, frozen or not (null when `id` is none).
  const std::vector<uint32_t>* Constituents(uint32_t id) const {
    const ir::Instruction* def = Def(id);
    if (!def || (def->opcode != spv::Op::OpConstantComposite && def->opcode != spv::Op::OpSpecConstantComposite))
      return nullptr;
    return &def->operands;
  }
  uint32_t TypeOf(uint32_t id) const {
    const ir::Instruction* def = Def(id);
    return def ? def->typeId : 0;
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

  // The IEEE binary format of an OpTypeFloat of width 16, 32 or 64 without an
  // FPEncoding (bfloat16 and fp8 are not folded).
  std::optional<IeeeFormat> FloatFormat(uint32_t typeId) const {
    const ir::Instruction* def = Def(typeId);
    if (!def || def->opcode != spv::Op::OpTypeFloat || def->operands.size() != 1) return std::nullopt;
    return IeeeBinary(def->operands[0]);
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

  // The bits of a frozen float constant of an IEEE binary format.
  std::optional<uint64_t> FloatBits(uint32_t id, IeeeFormat format) const {
    const ir::Instruction* def = Def(id);
    if (!def || def->opcode != spv::Op::OpConstant || def->operands.size() != (format.Width() > 32 ? 2u : 1u))
      return std::nullopt;
    const uint64_t bits = def->operands[0] | (format.Width() > 32 ? uint64_t{def->operands[1]} << 32 : 0);
    return Truncate(bits, format.Width());
  }
  static Folded FloatConstant(uint64_t bits, IeeeFormat format) {
    Folded out{spv::Op::OpConstant, {static_cast<uint32_t>(bits)}};
    if (format.Width() > 32) out.operands.push_back(static_cast<uint32_t>(bits >> 32));
    return out;
  }

  std::optional<Folded> Fold(const ir::Instruction& inst) const {
    if (inst.operands.empty()) return std::nullopt;
    switch (static_cast<spv::Op>(inst.operands[0])) {
      case spv::Op::OpCompositeExtract: return FoldExtract(inst);
      case spv::Op::OpCompositeInsert: return FoldInsert(inst);
      case spv::Op::OpVectorShuffle: return FoldShuffle(inst);
      case spv::Op::OpFConvert: return FoldFConvert(inst);
      case spv::Op::OpQuantizeToF16: return FoldQuantizeToF16(inst);
      default: return FoldScalar(inst);
    }
  }

  // CompositeExtract Composite Indexes...: the part it names, when that is a
  // constant (a part of an OpConstantNull is the null of the result type).
  std::optional<Folded> FoldExtract(const ir::Instruction& inst) const {
    if (inst.operands.size() < 3) return std::nullopt;
    uint32_t id = inst.operands[1];
    for (size_t i = 2; i < inst.operands.size(); ++i) {
      if (const ir::Instruction* def = Def(id); def && def->opcode == spv::Op::OpConstantNull)
        return Folded{spv::Op::OpConstantNull, {}};
      const std::vector<uint32_t>* parts = Constituents(id);
      if (!parts || inst.operands[i] >= parts->size()) return std::nullopt;
      id = (*parts)[inst.operands[i]];
    }
    const ir::Instruction* part = Def(id);
    if (!part || !IsFrozen(id) || part->typeId != inst.typeId) return std::nullopt;
    return Folded{part->opcode, part->operands};
  }

  // CompositeInsert Object Composite Index: one level deep only (a deeper insert
  // would need new constants for the inner composites; shapes never take that route).
  std::optional<Folded> FoldInsert(const ir::Instruction& inst) const {
    if (inst.operands.size() != 4) return std::nullopt;
    const uint32_t object = inst.operands[1], composite = inst.operands[2], index = inst.operands[3];
    const std::vector<uint32_t>* parts = Constituents(composite);
    if (!parts || index >= parts->size() || TypeOf(composite) != inst.typeId || TypeOf(object) != TypeOf((*parts)[index]))
      return std::nullopt;
    std::vector<uint32_t> result = *parts;
    result[index] = object;
    if (!AllFrozen(result)) return std::nullopt;
    return Folded{spv::Op::OpConstantComposite, std::move(result)};
  }

  // VectorShuffle Vector1 Vector2 Components...: the named parts (an undefined
  // component, 0xFFFFFFFF, is left to the driver).
  std::optional<Folded> FoldShuffle(const ir::Instruction& inst) const {
    if (inst.operands.size() < 4) return std::nullopt;
    const std::vector<uint32_t>* first = Constituents(inst.operands[1]);
    const std::vector<uint32_t>* second = Constituents(inst.operands[2]);
    const ir::Instruction* type = Def(inst.typeId);
    if (!first || !second || !type || type->opcode != spv::Op::OpTypeVector || type->Operand(1) != inst.operands.size() - 3)
      return std::nullopt;
    std::vector<uint32_t> result;
    for (size_t i = 3; i < inst.operands.size(); ++i) {
      const uint64_t c = inst.operands[i];
      if (c < first->size()) result.push_back((*first)[c]);
      else if (c - first->size() < second->size()) result.push_back((*second)[c - first->size()]);
      else return std::nullopt;
    }
    if (!AllFrozen(result)) return std::nullopt;
    return Folded{spv::Op::OpConstantComposite, std::move(result)};
  }

  // The rounding a conversion to `width` bits must use when it rounds: the result's
  // FPRoundingMode, else the module's RoundingModeRTE/RTZ for the width, else round
  // to nearest even (which Vulkan allows then). Nullopt: directed rounding (RTP,
  // RTN) or modes that disagree, left to the driver.
  std::optional<FloatRounding> RoundingFor(uint32_t resultId, uint32_t width) const {
    if (auto it = modes_.roundingOf.find(resultId); it != modes_.roundingOf.end()) {
      if (it->second == static_cast<uint32_t>(spv::FPRoundingMode::RTE)) return FloatRounding::NearestEven;
      if (it->second == static_cast<uint32_t>(spv::FPRoundingMode::RTZ)) return FloatRounding::TowardZero;
      return std::nullopt;
    }
    const bool nearest = modes_.nearestEven.count(width), towardZero = modes_.towardZero.count(width);
    if (nearest && towardZero) return std::nullopt;
    return towardZero ? FloatRounding::TowardZero : FloatRounding::NearestEven;
  }

  // Converts with the rounding the result must use; nullopt when it rounds and
  // that rounding is not fixed.
  std::optional<ConvertedFloat> Convert(uint64_t bits, IeeeFormat from, IeeeFormat to, uint32_t resultId) const {
    ConvertedFloat nearest = ConvertFloat(bits, from, to, FloatRounding::NearestEven);
    if (!nearest.inexact) return nearest;
    const std::optional<FloatRounding> rounding = RoundingFor(resultId, to.Width());
    if (!rounding) return std::nullopt;
    return ConvertFloat(bits, from, to, *rounding);
  }

  // FConvert Value between binary16/32/64. A subnormal operand or result is left to
  // the driver where the module flushes that width (DenormFlushToZero); elsewhere
  // Vulkan allows keeping it, which is what IEEE gives.
  std::optional<Folded> FoldFConvert(const ir::Instruction& inst) const {
    if (inst.operands.size() != 2) return std::nullopt;
    const std::optional<IeeeFormat> from = FloatFormat(TypeOf(inst.operands[1])), to = FloatFormat(inst.typeId);
    if (!from || !to) return std::nullopt;
    const std::optional<uint64_t> bits = FloatBits(inst.operands[1], *from);
    if (!bits) return std::nullopt;
    const std::optional<ConvertedFloat> converted = Convert(*bits, *from, *to, inst.resultId);
    if (!converted || (converted->subnormalIn && modes_.flushToZero.count(from->Width())) ||
        (converted->belowNormalOut && modes_.flushToZero.count(to->Width())))
      return std::nullopt;
    return FloatConstant(converted->bits, *to);
  }

  // QuantizeToF16 Value (32-bit float): SPIR-V fixes an infinity, a NaN (a NaN), a
  // magnitude too large for binary16 (the signed infinity) and one too small for a
  // normal binary16 (a zero; the sign is kept). Whether a value is too large or too
  // small is judged after rounding to binary16 precision; where that differs from
  // the value itself (it rounds across 65504 or 2^-14) the result is left to the driver.
  std::optional<Folded> FoldQuantizeToF16(const ir::Instruction& inst) const {
    const std::optional<IeeeFormat> format = FloatFormat(inst.typeId);
    if (inst.operands.size() != 2 || !format || format->Width() != 32 || TypeOf(inst.operands[1]) != inst.typeId)
      return std::nullopt;
    const std::optional<uint64_t> bits = FloatBits(inst.operands[1], kBinary32);
    if (!bits) return std::nullopt;
    const auto value = std::bit_cast<float>(static_cast<uint32_t>(*bits));
    if (std::isnan(value) || std::isinf(value) || value == 0.0f) return FloatConstant(*bits, kBinary32);
    // binary16's precision with binary32's exponent range: rounded, never flushed or overflowed.
    constexpr IeeeFormat kHalfPrecision{kBinary32.exponentBits, kBinary16.mantissaBits};
    const std::optional<ConvertedFloat> rounded = Convert(*bits, kBinary32, kHalfPrecision, inst.resultId);
    if (!rounded) return std::nullopt;
    const auto quantized = std::bit_cast<float>(static_cast<uint32_t>(
        ConvertFloat(rounded->bits, kHalfPrecision, kBinary32, FloatRounding::NearestEven).bits));
    constexpr float kLargest = 65504.0f, kSmallestNormal = 0x1p-14f;
    const bool tooLarge = std::fabs(quantized) > kLargest, tooSmall = std::fabs(quantized) < kSmallestNormal;
    if (tooLarge != (std::fabs(value) > kLargest) || tooSmall != (std::fabs(value) < kSmallestNormal)) return std::nullopt;
    const uint32_t sign = static_cast<uint32_t>(*bits) & 0x80000000u;
    if (tooLarge) return FloatConstant(sign | 0x7f800000u, kBinary32);
    if (tooSmall) return FloatConstant(sign, kBinary32);
    return FloatConstant(std::bit_cast<uint32_t>(quantized), kBinary32);
  }

  // The integer and boolean operations, over frozen scalars of those types.
  std::optional<Folded> FoldScalar(const ir::Instruction& inst) const {
    const ScalarType result = TypeInfo(inst.typeId);
    if (!result.width) return std::nullopt;
    ScalarOperands operands;
    for (size_t i = 1; i < inst.operands.size(); ++i) {
      const std::optional<uint64_t> value = Value(inst.operands[i]);
      if (!value) return std::nullopt;
      operands.v.push_back(*value);
      operands.types.push_back(TypeInfo(TypeOf(inst.operands[i])));
    }
    operands.width = operands.types.empty() ? result.width : operands.types[0].width;
    const std::optional<uint64_t> value = FoldScalarOperation(static_cast<spv::Op>(inst.operands[0]), operands);
    if (!value) return std::nullopt;
    return ScalarConstant(*value, result);
  }

  ir::Module& module_;
  std::unordered_map<uint32_t, size_t> index_;
  FloatModes modes_;
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
