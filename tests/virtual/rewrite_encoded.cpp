// bfloat16 and fp8 (E4M3, E5M2) on lavapipe, which has neither: until Finish, the
// rewrite treats a value of one of these types as the unsigned integer of its width
// (OpUConvert to and from a uint word, OpCopyObject for a bitcast that Finish turns
// into a no-op), and Finish then declares each such type as that integer. The
// conversions are integer code through binary32, rounding to nearest even, with
// subnormals and NaNs kept (SPV_KHR_bfloat16, SPV_EXT_float8).
#include <algorithm>

#include "ieee_float.h"
#include "rewrite_internal.h"

namespace coopmat::virt::detail {
namespace {

using spv::Op;

bool IsConversion(Op op) {
  return op == Op::OpFConvert || op == Op::OpConvertSToF || op == Op::OpConvertUToF || op == Op::OpConvertFToS ||
         op == Op::OpConvertFToU;
}

// Instructions that move values without looking at them (they work on the integers unchanged).
bool MovesValues(Op op) {
  switch (op) {
    case Op::OpLoad: case Op::OpStore: case Op::OpCopyObject: case Op::OpCopyMemory: case Op::OpCopyLogical:
    case Op::OpCompositeConstruct: case Op::OpCompositeExtract: case Op::OpCompositeInsert: case Op::OpVectorShuffle:
    case Op::OpVectorExtractDynamic: case Op::OpVectorInsertDynamic: case Op::OpSelect: case Op::OpPhi:
    case Op::OpReturnValue: case Op::OpFunctionCall: case Op::OpVariable: case Op::OpAccessChain:
    case Op::OpInBoundsAccessChain: case Op::OpPtrAccessChain: case Op::OpUndef: case Op::OpLifetimeStart:
    case Op::OpLifetimeStop: case Op::OpLine: case Op::OpNoLine: case Op::OpBitcast:
    // Lanes exchange values as they are (bfloat16 and fp8 become integers of their width).
    case Op::OpGroupNonUniformShuffle: case Op::OpGroupNonUniformShuffleXor: case Op::OpGroupNonUniformShuffleUp:
    case Op::OpGroupNonUniformShuffleDown: case Op::OpGroupNonUniformBroadcast: case Op::OpGroupNonUniformBroadcastFirst:
    case Op::OpGroupNonUniformQuadBroadcast: case Op::OpGroupNonUniformQuadSwap:
      return true;
    default: return false;
  }
}

// Instructions with literal operands (case values, merge and loop controls, branch weights),
// which must not be read as ids, and none of which computes on a value.
bool IsControlFlow(Op op) {
  switch (op) {
    case Op::OpSwitch: case Op::OpBranch: case Op::OpBranchConditional: case Op::OpSelectionMerge: case Op::OpLoopMerge:
    case Op::OpLabel: case Op::OpReturn: case Op::OpUnreachable: case Op::OpKill: case Op::OpTerminateInvocation:
    case Op::OpControlBarrier: case Op::OpMemoryBarrier:
      return true;
    default: return false;
  }
}

uint64_t Ones(uint32_t bits) { return (uint64_t{1} << bits) - 1; }

}  // namespace

const IeeeFormat* EncodedFloats::Format(uint32_t scalarType) const {
  const ir::Instruction* def = c_.T().GlobalDef(scalarType);
  if (!def || def->opcode != Op::OpTypeFloat || def->operands.size() < 2) return nullptr;
  switch (static_cast<spv::FPEncoding>(def->Operand(1))) {
    case spv::FPEncoding::BFloat16KHR: return &kBfloat16;
    case spv::FPEncoding::Float8E4M3EXT: return &kFloat8E4M3;
    case spv::FPEncoding::Float8E5M2EXT: return &kFloat8E5M2;
    default: Fail("OpTypeFloat %" + std::to_string(scalarType) + " has an FP encoding the virtual device does not know");
  }
}

uint32_t EncodedFloats::Scalar(uint32_t type) const {
  const ir::Instruction* def = c_.T().GlobalDef(type);
  return def && def->opcode == Op::OpTypeVector ? def->Operand(0) : type;
}

bool EncodedFloats::Involves(uint32_t type) const { return type && Format(Scalar(type)); }

uint32_t EncodedFloats::Select(Builder& b, uint32_t condition, uint32_t yes, uint32_t no) {
  return b.Emit(Op::OpSelect, c_.T().Uint(), {condition, yes, no});
}

// value = ((bits >> shift) rounded to nearest, ties to even) for a shift of 1..31.
uint32_t EncodedFloats::RoundShift(Builder& b, uint32_t bits, uint32_t shift) {
  const uint32_t one = b.U(1);
  const uint32_t halfMinusOne = b.Emit(Op::OpISub, c_.T().Uint(), {b.ShiftLeft(one, b.Emit(Op::OpISub, c_.T().Uint(), {shift, one})), one});
  const uint32_t odd = b.And(b.ShiftRight(bits, shift), one);
  return b.ShiftRight(b.Add(b.Add(bits, halfMinusOne), odd), shift);
}

uint32_t EncodedFloats::Decode(Builder& b, uint32_t word, const IeeeFormat& format) {
  TypeManager& t = c_.T();
  const uint32_t E = format.exponentBits, M = format.mantissaBits, width = format.Width();
  const uint32_t bias = (1u << (E - 1)) - 1;
  if (E == 8)  // bfloat16: binary32 with the low 16 fraction bits zero
    return b.Emit(Op::OpBitcast, t.Float(32), {b.ShiftLeft(word, b.U(16))});
  const uint32_t sign = b.ShiftLeft(b.And(word, b.U(1u << (width - 1))), b.U(32 - width));
  const uint32_t exponent = b.And(b.ShiftRight(word, b.U(M)), b.U(static_cast<uint32_t>(Ones(E))));
  const uint32_t fraction = b.And(word, b.U(static_cast<uint32_t>(Ones(M))));
  const uint32_t magnitude = b.And(word, b.U(static_cast<uint32_t>(Ones(width - 1))));
  const uint32_t wideFraction = b.ShiftLeft(fraction, b.U(23 - M));
  const uint32_t special = format.finiteOnly ? b.Emit(Op::OpIEqual, t.Bool(), {magnitude, b.U(static_cast<uint32_t>(Ones(width - 1)))})
                                             : b.Emit(Op::OpIEqual, t.Bool(), {exponent, b.U(static_cast<uint32_t>(Ones(E)))});
  // An infinity, or a NaN made quiet as every conversion does (ieee_float.h).
  const uint32_t quiet = Select(b, b.Emit(Op::OpINotEqual, t.Bool(), {fraction, b.U(0)}), b.U(1u << 22), b.U(0));
  const uint32_t specialBits = b.Or(b.Or(b.U(0x7f800000u), wideFraction), quiet);
  const uint32_t normalBits = b.Or(b.ShiftLeft(b.Add(exponent, b.U(127 - bias)), b.U(23)), wideFraction);
  // A subnormal is fraction * 2^(1 - bias - M): a normal binary32, exact as a float product.
  const uint32_t scale = t.Constant(t.Float(32), (127u + 1u - bias - M) << 23);
  const uint32_t subnormal = b.Emit(Op::OpFMul, t.Float(32), {b.Emit(Op::OpConvertUToF, t.Float(32), {fraction}), scale});
  const uint32_t subnormalBits = b.Emit(Op::OpBitcast, t.Uint(), {subnormal});
  const uint32_t isZeroExponent = b.Emit(Op::OpIEqual, t.Bool(), {exponent, b.U(0)});
  const uint32_t bits = Select(b, special, specialBits, Select(b, isZeroExponent, subnormalBits, normalBits));
  return b.Emit(Op::OpBitcast, t.Float(32), {b.Or(sign, bits)});
}

uint32_t EncodedFloats::Encode(Builder& b, uint32_t f32, const IeeeFormat& format, bool saturate) {
  TypeManager& t = c_.T();
  const uint32_t E = format.exponentBits, M = format.mantissaBits, width = format.Width();
  const uint32_t bias = (1u << (E - 1)) - 1, shift = 23 - M;
  const uint32_t x = b.Emit(Op::OpBitcast, t.Uint(), {f32});
  const uint32_t sign = b.ShiftRight(b.And(x, b.U(0x80000000u)), b.U(32 - width));
  const uint32_t a = b.And(x, b.U(0x7fffffffu));
  const uint32_t exponentOnes = static_cast<uint32_t>(Ones(E)) << M;
  const uint32_t nanOnly = static_cast<uint32_t>(Ones(width - 1));
  const uint32_t largest = format.finiteOnly ? nanOnly - 1 : exponentOnes - (1u << M) + static_cast<uint32_t>(Ones(M));
  const uint32_t overflowed = saturate ? largest : format.finiteOnly ? nanOnly : exponentOnes;
  // In range of the target's normals: rebias and round the dropped fraction bits
  // (a carry moves into the exponent, as it should).
  const uint32_t rebiased = b.Emit(Op::OpISub, t.Uint(), {a, b.U((127u - bias) << 23)});
  const uint32_t normal = RoundShift(b, rebiased, b.U(shift));
  uint32_t rounded = normal;
  if (bias != 127) {
    // Below the target's smallest normal: the significand shifted by more (at most 31).
    const uint32_t exponent = b.ShiftRight(a, b.U(23));
    const uint32_t significand = b.Or(b.And(a, b.U(0x7fffff)),
                                      Select(b, b.Emit(Op::OpINotEqual, t.Bool(), {exponent, b.U(0)}), b.U(0x800000), b.U(0)));
    const uint32_t smallestNormal = b.U(127 - bias + 1);  // binary32's biased exponent of the target's smallest normal
    const uint32_t isNormal = b.Emit(Op::OpUGreaterThanEqual, t.Bool(), {exponent, smallestNormal});
    const uint32_t deficit = b.Emit(Op::OpISub, t.Uint(), {smallestNormal, b.Emit(Op::OpExtInst, t.Uint(), {c_.GlslImport(), 41 /* UMax */, exponent, b.U(1)})});
    const uint32_t subShift = b.Emit(Op::OpExtInst, t.Uint(), {c_.GlslImport(), 38 /* UMin */, b.Add(deficit, b.U(shift)), b.U(31)});
    rounded = Select(b, isNormal, normal, RoundShift(b, significand, subShift));
  }
  const uint32_t isNan = b.Emit(Op::OpUGreaterThan, t.Bool(), {a, b.U(0x7f800000u)});
  const uint32_t nan = format.finiteOnly ? b.U(nanOnly)
                                         : b.Or(b.U(exponentOnes | (1u << (M - 1))), b.ShiftRight(b.And(a, b.U(0x7fffff)), b.U(shift)));
  // An infinity rounds above the largest finite value too.
  const uint32_t isOverflow = b.Emit(Op::OpUGreaterThan, t.Bool(), {rounded, b.U(largest)});
  return b.Or(sign, Select(b, isNan, nan, Select(b, isOverflow, b.U(overflowed), rounded)));
}

uint32_t EncodedFloats::ConvertScalar(Builder& b, Op op, uint32_t value, uint32_t to, bool saturate) {
  TypeManager& t = c_.T();
  const uint32_t from = t.TypeOf(value), f32 = t.Float(32);
  const IeeeFormat* in = Format(from);
  const IeeeFormat* out = Format(to);
  // Through binary32: exact from every encoded type, and one rounding into one (an
  // integer beyond 2^24 overflows fp8 anyway; bfloat16 converts through binary32 by definition).
  uint32_t wide = 0;
  if (in) {
    if (op != Op::OpFConvert && op != Op::OpConvertFToS && op != Op::OpConvertFToU)
      Fail(std::string(spv::OpToString(op)) + " from a bfloat16 or fp8 value");
    wide = Decode(b, b.Emit(Op::OpUConvert, t.Uint(), {value}), *in);
  } else if (op == Op::OpFConvert) {
    if (t.ScalarWidth(from) == 64) Fail("OpFConvert from a 64-bit float into bfloat16 or fp8 is not emulated (it would round twice)");
    // NoContraction: lavapipe would otherwise fold the shader's f32 -> f16 and this f16 -> f32 into nothing.
    wide = from == f32 ? value : b.Emit(Op::OpFConvert, f32, {value});
    if (wide != value) c_.m.annotations.emplace_back(Op::OpDecorate, 0, 0, std::vector<uint32_t>{wide, static_cast<uint32_t>(spv::Decoration::NoContraction)});
  } else if (op == Op::OpConvertSToF || op == Op::OpConvertUToF) {
    wide = b.Emit(op, f32, {value});
  } else {
    Fail(std::string(spv::OpToString(op)) + " into a bfloat16 or fp8 value");
  }
  if (out) return b.Emit(Op::OpUConvert, to, {Encode(b, wide, *out, saturate)});
  if (to == f32 && op == Op::OpFConvert) return wide;
  return b.Emit(op, to, {wide});
}

uint32_t EncodedFloats::Convert(Builder& b, Op op, uint32_t value, uint32_t to, bool saturate) {
  TypeManager& t = c_.T();
  const ir::Instruction* def = t.GlobalDef(to);
  if (!def || def->opcode != Op::OpTypeVector) return ConvertScalar(b, op, value, to, saturate);
  const uint32_t fromComponent = Scalar(t.TypeOf(value));
  std::vector<uint32_t> parts;
  for (uint32_t i = 0; i < def->Operand(1); ++i)
    parts.push_back(ConvertScalar(b, op, b.Emit(Op::OpCompositeExtract, fromComponent, {value, i}), def->Operand(0), saturate));
  return b.Emit(Op::OpCompositeConstruct, to, parts);
}

bool EncodedFloats::ConversionSaturates(const ir::Instruction& inst) {
  bool saturate = false;
  std::erase_if(c_.m.annotations, [&](const ir::Instruction& a) {
    if (a.opcode != Op::OpDecorate || a.Operand(0) != inst.resultId) return false;
    const auto decoration = static_cast<spv::Decoration>(a.Operand(1));
    if (decoration == spv::Decoration::SaturatedToLargestFloat8NormalConversionEXT) saturate = true;
    if (decoration == spv::Decoration::FPRoundingMode && a.Operand(2) != static_cast<uint32_t>(spv::FPRoundingMode::RTE))
      Fail(Describe(inst) + ": conversions of bfloat16 and fp8 round to nearest even only");
    return true;  // the integer code the conversion becomes takes no float decorations
  });
  return saturate;
}

bool EncodedFloats::Handles(const ir::Instruction& inst) const {
  TypeManager& t = c_.T();
  if (IsConversion(inst.opcode)) return Involves(inst.typeId) || Involves(t.TypeOf(inst.Operand(0)));
  if (inst.opcode == Op::OpBitcast) return c_.SameStorage(inst.typeId, t.TypeOf(inst.Operand(0)));
  if (MovesValues(inst.opcode) || IsControlFlow(inst.opcode)) return false;
  if (Involves(inst.typeId)) return true;
  for (uint32_t operand : inst.operands)
    if (Involves(t.TypeOf(operand))) return true;
  return false;
}

void EncodedFloats::Rewrite(Builder& b, const ir::Instruction& inst) {
  if (inst.opcode == Op::OpBitcast) {
    b.Emit(Op::OpCopyObject, inst.typeId, {inst.Operand(0)}, inst.resultId);
    return;
  }
  if (!IsConversion(inst.opcode))
    Fail(Describe(inst) + " on bfloat16 or fp8 values is not emulated by the virtual device");
  ++c_.result.matrixOps;
  const uint32_t value = Convert(b, inst.opcode, inst.Operand(0), inst.typeId, ConversionSaturates(inst));
  b.Emit(Op::OpCopyObject, inst.typeId, {value}, inst.resultId);
}

// Each encoded OpTypeFloat becomes the unsigned integer of its width under the same
// id; a type declaration that then repeats an earlier one goes, its id replaced by
// the earlier one's wherever a type id can stand.
void EncodedFloats::Finish() {
  ir::Module& m = c_.m;
  bool any16 = false, any8 = false;
  for (ir::Instruction& inst : m.globals)
    if (inst.opcode == Op::OpTypeFloat && inst.operands.size() > 1) {
      (inst.Operand(0) == 16 ? any16 : any8) = true;
      inst = ir::Instruction(Op::OpTypeInt, 0, inst.resultId, {inst.Operand(0), 0});
    }
  if (!any16 && !any8) return;
  std::map<uint32_t, uint32_t> replaced;
  auto rename = [&](uint32_t& id) {
    if (auto it = replaced.find(id); it != replaced.end()) id = it->second;
  };
  std::map<std::pair<Op, std::vector<uint32_t>>, uint32_t> declared;
  for (auto it = m.globals.begin(); it != m.globals.end();) {
    ir::Instruction& inst = *it;
    rename(inst.typeId);
    switch (inst.opcode) {
      case Op::OpTypeVector: case Op::OpTypeMatrix: case Op::OpTypeArray: case Op::OpTypeRuntimeArray:
      case Op::OpTypeStruct: case Op::OpTypeFunction: case Op::OpTypeCooperativeMatrixKHR:
        for (uint32_t& id : inst.operands) rename(id);
        break;
      case Op::OpTypePointer: rename(inst.operands[1]); break;
      default: break;
    }
    const bool unique = inst.opcode == Op::OpTypeInt || inst.opcode == Op::OpTypeFloat || inst.opcode == Op::OpTypeVector ||
                        inst.opcode == Op::OpTypeMatrix || inst.opcode == Op::OpTypeFunction;
    if (unique) {
      auto [at, fresh] = declared.try_emplace({inst.opcode, inst.operands}, inst.resultId);
      if (!fresh) {
        replaced[inst.resultId] = at->second;
        it = m.globals.erase(it);
        continue;
      }
    }
    ++it;
  }
  for (ir::Function& f : m.functions) {
    rename(f.definition.typeId);
    rename(f.definition.operands[1]);
    for (ir::Instruction& p : f.parameters) rename(p.typeId);
    for (ir::Block& block : f.blocks)
      for (ir::Instruction& inst : block.instructions) rename(inst.typeId);
  }
  // Names and decorations of the types that went go with them.
  auto gone = [&](const ir::Instruction& inst) { return !inst.operands.empty() && replaced.count(inst.operands[0]); };
  std::erase_if(m.annotations, gone);
  std::erase_if(m.debug, [&](const ir::Instruction& inst) {
    return (inst.opcode == Op::OpName || inst.opcode == Op::OpMemberName) && gone(inst);
  });
  auto declares = [&](spv::Capability capability) {
    return std::any_of(m.capabilities.begin(), m.capabilities.end(),
                       [&](const ir::Instruction& inst) { return inst.Operand(0) == static_cast<uint32_t>(capability); });
  };
  std::erase_if(m.capabilities, [](const ir::Instruction& inst) {
    switch (static_cast<spv::Capability>(inst.Operand(0))) {
      case spv::Capability::BFloat16TypeKHR: case spv::Capability::BFloat16CooperativeMatrixKHR:
      case spv::Capability::Float8EXT: case spv::Capability::Float8CooperativeMatrixEXT:
        return true;
      default: return false;
    }
  });
  if (any16 && !declares(spv::Capability::Int16))
    m.capabilities.emplace_back(Op::OpCapability, 0, 0, std::vector<uint32_t>{static_cast<uint32_t>(spv::Capability::Int16)});
  if (any8 && !declares(spv::Capability::Int8))
    m.capabilities.emplace_back(Op::OpCapability, 0, 0, std::vector<uint32_t>{static_cast<uint32_t>(spv::Capability::Int8)});
  std::erase_if(m.extensions, [](const ir::Instruction& inst) {
    const std::string name = ir::DecodeString(inst.operands);
    return name == "SPV_KHR_bfloat16" || name == "SPV_EXT_float8";
  });
}

}  // namespace coopmat::virt::detail
