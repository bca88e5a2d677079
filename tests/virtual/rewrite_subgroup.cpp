// The virtual subgroups on lavapipe's (rewrite_internal.h, SubgroupModel): lavapipe's
// own at its size, segments of them below it, chunks (ChunkSync) above it.
#include <algorithm>
#include <set>
#include <string_view>

#include "rewrite_internal.h"

namespace coopmat::virt::detail {
namespace {

using spv::Op;

std::optional<Combiner> CombinerOf(Op op) {
  switch (op) {
    case Op::OpGroupNonUniformIAdd: return Combiner{Op::OpIAdd};
    case Op::OpGroupNonUniformFAdd: return Combiner{Op::OpFAdd};
    case Op::OpGroupNonUniformIMul: return Combiner{Op::OpIMul};
    case Op::OpGroupNonUniformFMul: return Combiner{Op::OpFMul};
    case Op::OpGroupNonUniformFMin: return Combiner{Op::OpExtInst, 37};
    case Op::OpGroupNonUniformUMin: return Combiner{Op::OpExtInst, 38};
    case Op::OpGroupNonUniformSMin: return Combiner{Op::OpExtInst, 39};
    case Op::OpGroupNonUniformFMax: return Combiner{Op::OpExtInst, 40};
    case Op::OpGroupNonUniformUMax: return Combiner{Op::OpExtInst, 41};
    case Op::OpGroupNonUniformSMax: return Combiner{Op::OpExtInst, 42};
    case Op::OpGroupNonUniformBitwiseAnd: return Combiner{Op::OpBitwiseAnd};
    case Op::OpGroupNonUniformBitwiseOr: return Combiner{Op::OpBitwiseOr};
    case Op::OpGroupNonUniformBitwiseXor: return Combiner{Op::OpBitwiseXor};
    case Op::OpGroupNonUniformLogicalAnd: return Combiner{Op::OpLogicalAnd};
    case Op::OpGroupNonUniformLogicalOr: return Combiner{Op::OpLogicalOr};
    case Op::OpGroupNonUniformLogicalXor: return Combiner{Op::OpLogicalNotEqual};
    default: return std::nullopt;
  }
}

bool IsSubgroupOperation(Op op) {
  const std::string_view name = spv::OpToString(op);
  return name.starts_with("OpGroup") || name.starts_with("OpSubgroup");
}

bool IsShuffle(Op op) {
  switch (op) {
    case Op::OpGroupNonUniformShuffle: case Op::OpGroupNonUniformShuffleXor: case Op::OpGroupNonUniformShuffleUp:
    case Op::OpGroupNonUniformShuffleDown: case Op::OpGroupNonUniformBroadcast:
      return true;
    default: return false;
  }
}

bool IsBallotValueOp(Op op) {
  return op == Op::OpGroupNonUniformInverseBallot || op == Op::OpGroupNonUniformBallotBitCount ||
         op == Op::OpGroupNonUniformBallotFindLSB || op == Op::OpGroupNonUniformBallotFindMSB;
}

constexpr uint32_t kGlslFindILsb = 73, kGlslFindUMsb = 75;

}  // namespace

// Segmented or chunked: the module's own subgroup built-in variables go; every OpLoad
// of one is replaced by the virtual value (lavapipe's own are read through new variables).
void SubgroupModel::TakeBuiltins() {
  if (!Confined()) return;
  std::set<uint32_t> taken;
  for (auto it = c_.m.annotations.begin(); it != c_.m.annotations.end();) {
    const bool builtin = it->opcode == Op::OpDecorate && it->operands.size() >= 3 &&
                         it->operands[1] == static_cast<uint32_t>(spv::Decoration::BuiltIn);
    const auto which = builtin ? static_cast<spv::BuiltIn>(it->operands[2]) : spv::BuiltIn::Max;
    switch (which) {
      case spv::BuiltIn::SubgroupSize: case spv::BuiltIn::SubgroupLocalInvocationId: case spv::BuiltIn::SubgroupId:
      case spv::BuiltIn::NumSubgroups: case spv::BuiltIn::SubgroupEqMask: case spv::BuiltIn::SubgroupGeMask:
      case spv::BuiltIn::SubgroupGtMask: case spv::BuiltIn::SubgroupLeMask: case spv::BuiltIn::SubgroupLtMask:
        builtinVars_[it->operands[0]] = which;
        taken.insert(it->operands[0]);
        it = c_.m.annotations.erase(it);
        continue;
      default: ++it;
    }
  }
  if (taken.empty()) return;
  std::erase_if(c_.m.annotations, [&](const ir::Instruction& inst) { return inst.opcode == Op::OpDecorate && taken.count(inst.Operand(0)); });
  std::erase_if(c_.m.globals, [&](const ir::Instruction& inst) { return inst.opcode == Op::OpVariable && taken.count(inst.resultId); });
  for (ir::Instruction& entry : c_.m.entryPoints) {
    // Operands: model, function, name words..., interface ids; the name ends with a 0 byte.
    size_t i = 2;
    while (i < entry.operands.size() && (entry.operands[i] >> 24) != 0) ++i;
    ++i;
    for (size_t k = entry.operands.size(); k > i; --k)
      if (taken.count(entry.operands[k - 1])) entry.operands.erase(entry.operands.begin() + static_cast<ptrdiff_t>(k - 1));
  }
  std::erase_if(c_.m.debug, [&](const ir::Instruction& inst) {
    return (inst.opcode == Op::OpName || inst.opcode == Op::OpMemberName) && taken.count(inst.Operand(0));
  });
}

// ---- What every mode shares ------------------------------------------------------

void SubgroupModel::CheckSubgroupScope(const ir::Instruction& inst) {
  if (T().ConstantValue(inst.Operand(0)) != kScopeSubgroup) Fail(Describe(inst) + ": only Subgroup scope is modelled");
}

uint32_t SubgroupModel::Poison(uint32_t type) {
  TypeManager& t = T();
  const ir::Instruction* def = t.GlobalDef(type);
  const uint32_t id = c_.m.TakeId();
  if (def && def->opcode == Op::OpTypeVector) {
    const uint32_t component = Poison(def->Operand(0));
    t.AddGlobal(ir::Instruction(Op::OpConstantComposite, type, id, std::vector<uint32_t>(def->Operand(1), component)));
    return id;
  }
  if (def && def->opcode == Op::OpTypeBool) {
    t.AddGlobal(ir::Instruction(Op::OpConstantTrue, type, id, {}));
    return id;
  }
  const uint32_t width = t.ScalarWidth(type);
  if (!def || (def->opcode != Op::OpTypeInt && def->opcode != Op::OpTypeFloat) || !width)
    Fail("a subgroup value of type %" + std::to_string(type) + " has no poison value");
  std::vector<uint32_t> bits = {width >= 32 ? ~0u : (1u << width) - 1};
  if (width == 64) bits.push_back(~0u);
  if (def->opcode == Op::OpTypeInt && def->Operand(1) && width < 32) bits[0] = ~0u;  // a signed literal is sign-extended
  t.AddGlobal(ir::Instruction(Op::OpConstant, type, id, bits));
  return id;
}

uint32_t SubgroupModel::Choose(Builder& b, uint32_t condition, uint32_t type, uint32_t yes, uint32_t no) {
  const ir::Instruction* def = T().GlobalDef(type);
  if (def && def->opcode == Op::OpTypeVector && c_.m.SpirvMinor() < 4)  // a scalar condition selects composites from 1.4 on
    condition = b.Emit(Op::OpCompositeConstruct, T().Vector(T().Bool(), def->Operand(1)),
                       std::vector<uint32_t>(def->Operand(1), condition));
  return b.Emit(Op::OpSelect, type, {condition, yes, no});
}

uint32_t SubgroupModel::Equal(Builder& b, uint32_t type, uint32_t x, uint32_t y) {
  TypeManager& t = T();
  const ir::Instruction* def = t.GlobalDef(type);
  const bool vector = def && def->opcode == Op::OpTypeVector;
  const uint32_t scalar = vector ? def->Operand(0) : type;
  const ir::Instruction* scalarDef = t.GlobalDef(scalar);
  const Op op = scalarDef && scalarDef->opcode == Op::OpTypeBool ? Op::OpLogicalEqual
                : c_.IsArithmeticFloat(scalar)                    ? Op::OpFOrdEqual
                                                                  : Op::OpIEqual;
  if (!vector) return b.Emit(op, t.Bool(), {x, y});
  return b.Emit(Op::OpAll, t.Bool(), {b.Emit(op, t.Vector(t.Bool(), def->Operand(1)), {x, y})});
}

// Eq, Ge, Gt, Le and Lt of the virtual lane, or every lane of the subgroup (BuiltIn::Max), as mask words.
std::vector<uint32_t> SubgroupModel::MaskWords(Builder& b, spv::BuiltIn which) {
  TypeManager& t = T();
  const uint32_t lane = c_.Lane(b);
  std::vector<uint32_t> words;
  for (uint32_t low = 0; low < c_.S; low += 32) {
    const uint32_t all = c_.S - low >= 32 ? ~0u : (1u << (c_.S - low)) - 1;
    // Lanes below `lane` in this word: none, all, or the bits under lane - low.
    const uint32_t above = b.Emit(Op::OpULessThanEqual, t.Bool(), {lane, b.U(low)});
    const uint32_t beyond = b.Emit(Op::OpUGreaterThanEqual, t.Bool(), {lane, b.U(low + 32)});
    const uint32_t within = b.Emit(Op::OpISub, t.Uint(), {b.ShiftLeft(b.U(1), b.And(lane, b.U(31))), b.U(1)});
    const uint32_t lt = b.Emit(Op::OpSelect, t.Uint(), {above, b.U(0), b.Emit(Op::OpSelect, t.Uint(), {beyond, b.U(~0u), within})});
    const uint32_t here = b.Emit(Op::OpIEqual, t.Bool(), {b.ShiftRight(lane, b.U(5)), b.U(low / 32)});
    const uint32_t eq = b.Emit(Op::OpSelect, t.Uint(), {here, b.ShiftLeft(b.U(1), b.And(lane, b.U(31))), b.U(0)});
    const uint32_t le = b.Or(lt, eq);
    switch (which) {
      case spv::BuiltIn::SubgroupEqMask: words.push_back(eq); break;
      case spv::BuiltIn::SubgroupLtMask: words.push_back(lt); break;
      case spv::BuiltIn::SubgroupLeMask: words.push_back(le); break;
      case spv::BuiltIn::SubgroupGeMask: words.push_back(b.And(b.U(all), b.Emit(Op::OpNot, t.Uint(), {lt}))); break;
      case spv::BuiltIn::SubgroupGtMask: words.push_back(b.And(b.U(all), b.Emit(Op::OpNot, t.Uint(), {le}))); break;
      default: words.push_back(b.U(all)); break;
    }
  }
  return words;
}

uint32_t SubgroupModel::BuiltinValue(Builder& b, spv::BuiltIn which, uint32_t type) {
  uint32_t value = 0;
  switch (which) {
    case spv::BuiltIn::SubgroupSize: value = b.U(c_.S); break;
    case spv::BuiltIn::SubgroupLocalInvocationId: value = c_.Lane(b); break;
    case spv::BuiltIn::SubgroupId: value = c_.SubgroupId(b); break;
    case spv::BuiltIn::NumSubgroups:
      if (!c_.sameWorkgroupSize) Fail("NumSubgroups in a module whose entry points have workgroups of different sizes");
      value = b.U(c_.SubgroupsPerWorkgroup());
      break;
    default: {  // the masks
      const uint32_t uvec4 = T().Vector(T().Uint(), 4);
      std::vector<uint32_t> words = MaskWords(b, which);
      words.resize(4, b.U(0));
      value = b.Emit(Op::OpCompositeConstruct, uvec4, words);
      return type == uvec4 ? value : b.Emit(Op::OpBitcast, type, {value});
    }
  }
  return b.AsIntType(value, type);
}

uint32_t SubgroupModel::BallotValue(Builder& b, const ir::Instruction& inst) {
  TypeManager& t = T();
  const uint32_t ballot = b.AsIntType(inst.Operand(inst.opcode == Op::OpGroupNonUniformBallotBitCount ? 2 : 1), t.Vector(t.Uint(), 4));
  // The subgroup's bits only (SPIR-V ignores the others).
  std::vector<uint32_t> words = MaskWords(b, spv::BuiltIn::Max);
  for (uint32_t w = 0; w < words.size(); ++w) words[w] = b.And(words[w], b.Emit(Op::OpCompositeExtract, t.Uint(), {ballot, w}));
  auto glsl = [&](uint32_t instruction, uint32_t x) { return b.Emit(Op::OpExtInst, t.Uint(), {c_.GlslImport(), instruction, x}); };
  switch (inst.opcode) {
    case Op::OpGroupNonUniformInverseBallot: {
      const uint32_t lane = c_.Lane(b);
      uint32_t word = words[0];
      for (uint32_t w = 1; w < words.size(); ++w)
        word = b.Emit(Op::OpSelect, t.Uint(), {b.Emit(Op::OpIEqual, t.Bool(), {b.ShiftRight(lane, b.U(5)), b.U(w)}), words[w], word});
      return b.Emit(Op::OpINotEqual, t.Bool(), {b.And(b.ShiftRight(word, b.And(lane, b.U(31))), b.U(1)), b.U(0)});
    }
    case Op::OpGroupNonUniformBallotBitCount: {
      const auto operation = static_cast<spv::GroupOperation>(inst.Operand(1));
      std::vector<uint32_t> keep;
      if (operation == spv::GroupOperation::InclusiveScan) keep = MaskWords(b, spv::BuiltIn::SubgroupLeMask);
      else if (operation == spv::GroupOperation::ExclusiveScan) keep = MaskWords(b, spv::BuiltIn::SubgroupLtMask);
      else if (operation != spv::GroupOperation::Reduce) Fail(Describe(inst) + ": this group operation is not modelled");
      uint32_t count = b.U(0);
      for (uint32_t w = 0; w < words.size(); ++w)
        count = b.Add(count, b.Emit(Op::OpBitCount, t.Uint(), {keep.empty() ? words[w] : b.And(words[w], keep[w])}));
      return count;
    }
    case Op::OpGroupNonUniformBallotFindLSB: {
      uint32_t result = glsl(kGlslFindILsb, words.back());
      if (words.size() > 1) result = b.Add(result, b.U(32));
      for (size_t w = words.size() - 1; w-- > 0;)
        result = b.Emit(Op::OpSelect, t.Uint(), {b.Emit(Op::OpINotEqual, t.Bool(), {words[w], b.U(0)}),
                                                 b.Add(glsl(kGlslFindILsb, words[w]), b.U(32 * uint32_t(w))), result});
      return result;
    }
    default: {  // FindMSB
      uint32_t result = glsl(kGlslFindUMsb, words[0]);
      for (uint32_t w = 1; w < words.size(); ++w)
        result = b.Emit(Op::OpSelect, t.Uint(), {b.Emit(Op::OpINotEqual, t.Bool(), {words[w], b.U(0)}),
                                                 b.Add(glsl(kGlslFindUMsb, words[w]), b.U(32 * w)), result});
      return result;
    }
  }
}

uint32_t SubgroupModel::Gather(Builder& b, uint32_t value, uint32_t type, uint32_t source, uint32_t valid, bool ownChunk) {
  TypeManager& t = T();
  if (c_.Chunked() && !ownChunk) {
    const ChunkSync::Exchange x = c_.chunks->Publish(b, value);
    const uint32_t ok = b.Emit(Op::OpLogicalAnd, t.Bool(), {valid, c_.chunks->Active(b, x, source)});
    return Choose(b, ok, type, c_.chunks->Read(b, x, source), Poison(type));
  }
  c_.RequireCapability(spv::Capability::GroupNonUniformShuffle);
  c_.RequireCapability(spv::Capability::GroupNonUniformBallot);
  const uint32_t scope = b.U(kScopeSubgroup);
  const uint32_t lane = c_.Chunked() ? b.And(source, b.U(c_.N - 1)) : b.Add(c_.SegmentBase(b), source);
  const uint32_t got = b.Emit(Op::OpGroupNonUniformShuffle, type, {scope, value, lane});
  const uint32_t active = b.Emit(Op::OpGroupNonUniformBallot, t.Vector(t.Uint(), 4), {scope, c_.True()});
  const uint32_t ok = b.Emit(Op::OpLogicalAnd, t.Bool(), {valid, b.Emit(Op::OpGroupNonUniformBallotBitExtract, t.Bool(), {scope, active, lane})});
  return Choose(b, ok, type, got, Poison(type));
}

// Shuffle, ShuffleXor, ShuffleUp, ShuffleDown and Broadcast read the lane they name
// inside the virtual subgroup; a lane outside it or inactive gives Poison.
void SubgroupModel::Shuffle(Builder& b, const ir::Instruction& inst) {
  CheckSubgroupScope(inst);
  ++c_.result.subgroupOps;
  TypeManager& t = T();
  if (t.ScalarWidth(t.TypeOf(inst.Operand(2))) != 32) Fail(Describe(inst) + ": only 32-bit lane operands are modelled");
  const uint32_t operand = b.AsIntType(inst.Operand(2), t.Uint());
  const uint32_t lane = c_.Lane(b), size = b.U(c_.S);
  uint32_t valid = 0, source = 0;
  switch (inst.opcode) {
    case Op::OpGroupNonUniformShuffle: case Op::OpGroupNonUniformBroadcast:
      valid = b.Emit(Op::OpULessThan, t.Bool(), {operand, size});
      source = operand;
      break;
    case Op::OpGroupNonUniformShuffleXor:
      valid = b.Emit(Op::OpULessThan, t.Bool(), {operand, size});
      source = b.Xor(lane, operand);
      break;
    case Op::OpGroupNonUniformShuffleUp:
      valid = b.Emit(Op::OpUGreaterThanEqual, t.Bool(), {lane, operand});
      source = b.Emit(Op::OpISub, t.Uint(), {lane, operand});
      break;
    default:  // ShuffleDown
      valid = b.Emit(Op::OpULessThan, t.Bool(), {operand, b.Emit(Op::OpISub, t.Uint(), {size, lane})});
      source = b.Add(lane, operand);
      break;
  }
  // A constant XOR below lavapipe's size stays inside the chunk (the product's reductions'
  // first steps): lavapipe's own shuffle, no meeting.
  const auto mask = t.ConstantValue(inst.Operand(2));
  const bool ownChunk = inst.opcode == Op::OpGroupNonUniformShuffleXor && mask && *mask < c_.N;
  const uint32_t value = Gather(b, inst.Operand(1), inst.typeId, b.And(source, b.U(c_.S - 1)), valid, ownChunk);
  b.Emit(Op::OpCopyObject, inst.typeId, {value}, inst.resultId);
}

uint32_t SubgroupModel::Combine(Builder& b, const Combiner& combiner, uint32_t type, uint32_t x, uint32_t y) {
  if (combiner.op == Op::OpExtInst) return b.Emit(Op::OpExtInst, type, {c_.GlslImport(), combiner.glsl, x, y});
  return b.Emit(combiner.op, type, {x, y});
}

// The identity of a combiner for one scalar type, as the constant's bits.
uint32_t SubgroupModel::Identity(Op group, uint32_t type) {
  TypeManager& t = T();
  const ir::Instruction* def = t.GlobalDef(type);
  if (def && def->opcode == Op::OpTypeVector) {
    const uint32_t component = Identity(group, def->Operand(0));
    const uint32_t id = c_.m.TakeId();
    t.AddGlobal(ir::Instruction(Op::OpConstantComposite, type, id, std::vector<uint32_t>(def->Operand(1), component)));
    return id;
  }
  if (def && def->opcode == Op::OpTypeBool) {
    const bool value = group == Op::OpGroupNonUniformLogicalAnd;
    const uint32_t id = c_.m.TakeId();
    t.AddGlobal(ir::Instruction(value ? Op::OpConstantTrue : Op::OpConstantFalse, type, id, {}));
    return id;
  }
  const uint32_t width = t.ScalarWidth(type);
  if (width > 32) Fail("64-bit subgroup arithmetic is not emulated");
  const uint32_t all = width == 32 ? ~0u : (1u << width) - 1;
  const bool isSigned = t.IsSignedInt(type);
  auto signExtended = [&](uint32_t bits) { return isSigned && width < 32 && (bits >> (width - 1)) & 1 ? bits | ~all : bits; };
  uint32_t bits = 0;
  const bool half = width == 16;
  switch (group) {
    case Op::OpGroupNonUniformIAdd: case Op::OpGroupNonUniformFAdd: case Op::OpGroupNonUniformBitwiseOr:
    case Op::OpGroupNonUniformBitwiseXor: case Op::OpGroupNonUniformUMax:
      bits = 0; break;
    case Op::OpGroupNonUniformIMul: bits = 1; break;
    case Op::OpGroupNonUniformFMul: bits = half ? 0x3c00 : 0x3f800000; break;
    case Op::OpGroupNonUniformFMin: bits = half ? 0x7c00 : 0x7f800000; break;
    case Op::OpGroupNonUniformFMax: bits = half ? 0xfc00 : 0xff800000; break;
    case Op::OpGroupNonUniformUMin: case Op::OpGroupNonUniformBitwiseAnd: bits = signExtended(all); break;
    case Op::OpGroupNonUniformSMin: bits = all >> 1; break;
    case Op::OpGroupNonUniformSMax: bits = signExtended((all >> 1) + 1); break;
    default: Fail("internal error: no identity");
  }
  const uint32_t id = c_.m.TakeId();
  t.AddGlobal(ir::Instruction(Op::OpConstant, type, id, {bits}));
  return id;
}

// ---- Segments: virtual subgroups inside a lavapipe subgroup --------------------------

uint32_t SubgroupModel::SegmentBallot(Builder& b, uint32_t predicate) {
  TypeManager& t = T();
  c_.RequireCapability(spv::Capability::GroupNonUniformBallot);
  const uint32_t base = c_.SegmentBase(b);
  const uint32_t ballot = b.Emit(Op::OpGroupNonUniformBallot, t.Vector(t.Uint(), 4), {b.U(kScopeSubgroup), predicate});
  const uint32_t word = b.Emit(Op::OpVectorExtractDynamic, t.Uint(), {ballot, b.ShiftRight(base, b.U(5))});
  return b.And(b.ShiftRight(word, b.And(base, b.U(31))), b.U((1u << c_.S) - 1));
}

// Reduce as a clustered reduction over the segment; scans one lane at a time.
void SubgroupModel::SegmentArithmetic(Builder& b, const ir::Instruction& inst) {
  CheckSubgroupScope(inst);
  ++c_.result.subgroupOps;
  const Combiner combiner = *CombinerOf(inst.opcode);
  const auto operation = static_cast<spv::GroupOperation>(inst.Operand(1));
  const uint32_t type = inst.typeId, value = inst.Operand(2);
  switch (operation) {
    case spv::GroupOperation::Reduce:
      c_.RequireCapability(spv::Capability::GroupNonUniformClustered);
      b.Emit(inst.opcode, type,
             {inst.Operand(0), static_cast<uint32_t>(spv::GroupOperation::ClusteredReduce), value, b.U(c_.S)}, inst.resultId);
      return;
    case spv::GroupOperation::InclusiveScan: case spv::GroupOperation::ExclusiveScan: {
      const Op before = operation == spv::GroupOperation::InclusiveScan ? Op::OpULessThanEqual : Op::OpULessThan;
      TypeManager& t = T();
      c_.RequireCapability(spv::Capability::GroupNonUniformShuffle);
      const uint32_t lane = c_.Lane(b), base = c_.SegmentBase(b), active = SegmentBallot(b, c_.True());
      uint32_t result = Identity(inst.opcode, type);
      for (uint32_t j = 0; j < c_.S; ++j) {
        const uint32_t there = b.Emit(Op::OpGroupNonUniformShuffle, type, {b.U(kScopeSubgroup), value, b.Add(base, b.U(j))});
        const uint32_t isActive = b.Emit(Op::OpINotEqual, t.Bool(), {b.And(active, b.U(1u << j)), b.U(0)});
        const uint32_t take = b.Emit(Op::OpLogicalAnd, t.Bool(), {isActive, b.Emit(before, t.Bool(), {b.U(j), lane})});
        result = Choose(b, take, type, Combine(b, combiner, type, result, there), result);
      }
      b.Emit(Op::OpCopyObject, type, {result}, inst.resultId);
      return;
    }
    default:
      Fail(Describe(inst) + ": group operation " + std::to_string(inst.Operand(1)) +
           " is not modelled at a subgroup size below lavapipe's");
  }
}

void SubgroupModel::SegmentOperation(Builder& b, const ir::Instruction& inst) {
  TypeManager& t = T();
  CheckSubgroupScope(inst);
  ++c_.result.subgroupOps;
  auto first = [&] { return b.Emit(Op::OpExtInst, t.Uint(), {c_.GlslImport(), kGlslFindILsb, SegmentBallot(b, c_.True())}); };
  uint32_t result = 0;
  switch (inst.opcode) {
    case Op::OpGroupNonUniformElect: result = b.Emit(Op::OpIEqual, t.Bool(), {c_.Lane(b), first()}); break;
    case Op::OpGroupNonUniformBroadcastFirst: result = Gather(b, inst.Operand(1), inst.typeId, first(), c_.True()); break;
    case Op::OpGroupNonUniformAll:
      result = b.Emit(Op::OpIEqual, t.Bool(), {SegmentBallot(b, inst.Operand(1)), SegmentBallot(b, c_.True())});
      break;
    case Op::OpGroupNonUniformAny: result = b.Emit(Op::OpINotEqual, t.Bool(), {SegmentBallot(b, inst.Operand(1)), b.U(0)}); break;
    case Op::OpGroupNonUniformAllEqual: {
      const uint32_t firstValue = Gather(b, inst.Operand(1), t.TypeOf(inst.Operand(1)), first(), c_.True());
      const uint32_t same = Equal(b, t.TypeOf(inst.Operand(1)), inst.Operand(1), firstValue);
      result = b.Emit(Op::OpIEqual, t.Bool(), {SegmentBallot(b, same), SegmentBallot(b, c_.True())});
      break;
    }
    case Op::OpGroupNonUniformBallot:
      result = b.Emit(Op::OpCompositeConstruct, t.Vector(t.Uint(), 4), {SegmentBallot(b, inst.Operand(1)), b.U(0), b.U(0), b.U(0)});
      break;
    default:
      if (IsBallotValueOp(inst.opcode)) {
        result = BallotValue(b, inst);
        break;
      }
      Fail(Describe(inst) + " is not modelled at a subgroup size below lavapipe's (" + std::to_string(c_.S) + " in " +
           std::to_string(c_.N) + ")");
  }
  if (T().IsIntType(inst.typeId)) result = b.AsIntType(result, inst.typeId);
  b.Emit(Op::OpCopyObject, inst.typeId, {result}, inst.resultId);
}

// ---- Chunks: virtual subgroups of several lavapipe subgroups ----------------------

uint32_t SubgroupModel::FirstActive(Builder& b, const ChunkSync::Exchange& x) {
  TypeManager& t = T();
  uint32_t first = b.U(c_.S);
  for (size_t j = x.activeWords.size(); j-- > 0;) {
    const uint32_t lowest = b.Emit(Op::OpExtInst, t.Uint(), {c_.GlslImport(), kGlslFindILsb, x.activeWords[j]});
    first = b.Emit(Op::OpSelect, t.Uint(), {b.Emit(Op::OpINotEqual, t.Bool(), {x.activeWords[j], b.U(0)}),
                                            b.Add(b.U(uint32_t(j) * c_.N), lowest), first});
  }
  return first;
}

// Every active lane's value (or those of its cluster), combined in lane order.
void SubgroupModel::ChunkArithmetic(Builder& b, const ir::Instruction& inst) {
  CheckSubgroupScope(inst);
  ++c_.result.subgroupOps;
  TypeManager& t = T();
  const Combiner combiner = *CombinerOf(inst.opcode);
  const auto operation = static_cast<spv::GroupOperation>(inst.Operand(1));
  const uint32_t type = inst.typeId, lane = c_.Lane(b);
  uint32_t lanes = c_.S, first = b.U(0);
  Op before = Op::OpNop;
  switch (operation) {
    case spv::GroupOperation::Reduce: break;
    case spv::GroupOperation::InclusiveScan: before = Op::OpULessThanEqual; break;
    case spv::GroupOperation::ExclusiveScan: before = Op::OpULessThan; break;
    case spv::GroupOperation::ClusteredReduce: {
      auto cluster = t.ConstantValue(inst.Operand(3));
      if (!cluster || !*cluster || (*cluster & (*cluster - 1)) || *cluster > c_.S) Fail(Describe(inst) + ": bad ClusterSize");
      lanes = *cluster;
      first = b.And(lane, b.U(~(*cluster - 1)));
      break;
    }
    default: Fail(Describe(inst) + ": group operation " + std::to_string(inst.Operand(1)) + " is not modelled");
  }
  const ChunkSync::Exchange x = c_.chunks->Publish(b, inst.Operand(2));
  uint32_t result = Identity(inst.opcode, type);
  for (uint32_t i = 0; i < lanes; ++i) {
    const uint32_t there = b.Add(first, b.U(i));
    uint32_t take = c_.chunks->Active(b, x, there);
    if (before != Op::OpNop) take = b.Emit(Op::OpLogicalAnd, t.Bool(), {take, b.Emit(before, t.Bool(), {there, lane})});
    result = Choose(b, take, type, Combine(b, combiner, type, result, c_.chunks->Read(b, x, there)), result);
  }
  b.Emit(Op::OpCopyObject, type, {Choose(b, x.complete, type, result, Poison(type))}, inst.resultId);
}

void SubgroupModel::ChunkOperation(Builder& b, const ir::Instruction& inst) {
  TypeManager& t = T();
  CheckSubgroupScope(inst);
  ++c_.result.subgroupOps;
  if (IsBallotValueOp(inst.opcode)) {
    uint32_t result = BallotValue(b, inst);
    if (t.IsIntType(inst.typeId)) result = b.AsIntType(result, inst.typeId);
    b.Emit(Op::OpCopyObject, inst.typeId, {result}, inst.resultId);
    return;
  }
  // Everything else reads the values (or predicates) of the active lanes.
  const bool predicate = inst.opcode != Op::OpGroupNonUniformElect;
  const ChunkSync::Exchange x = c_.chunks->Publish(b, predicate ? inst.Operand(1) : c_.True());
  const uint32_t first = FirstActive(b, x);
  uint32_t result = 0;
  switch (inst.opcode) {
    case Op::OpGroupNonUniformElect:
      result = b.Emit(Op::OpLogicalAnd, t.Bool(), {x.complete, b.Emit(Op::OpIEqual, t.Bool(), {c_.Lane(b), first})});
      break;
    case Op::OpGroupNonUniformBroadcastFirst:
      result = Choose(b, x.complete, inst.typeId, c_.chunks->Read(b, x, first), Poison(inst.typeId));
      break;
    case Op::OpGroupNonUniformAll: case Op::OpGroupNonUniformAny: case Op::OpGroupNonUniformAllEqual: {
      const bool all = inst.opcode != Op::OpGroupNonUniformAny;
      const uint32_t firstValue = c_.chunks->Read(b, x, first);
      result = all ? c_.True() : b.Emit(Op::OpLogicalNot, t.Bool(), {c_.True()});
      for (uint32_t l = 0; l < c_.S; ++l) {
        const uint32_t value = c_.chunks->Read(b, x, b.U(l));
        const uint32_t holds = inst.opcode == Op::OpGroupNonUniformAllEqual ? Equal(b, x.type, value, firstValue) : value;
        const uint32_t active = c_.chunks->Active(b, x, b.U(l));
        result = all ? b.Emit(Op::OpLogicalAnd, t.Bool(), {result, b.Emit(Op::OpLogicalOr, t.Bool(), {b.Emit(Op::OpLogicalNot, t.Bool(), {active}), holds})})
                     : b.Emit(Op::OpLogicalOr, t.Bool(), {result, b.Emit(Op::OpLogicalAnd, t.Bool(), {active, holds})});
      }
      result = Choose(b, x.complete, t.Bool(), result, Poison(t.Bool()));
      break;
    }
    case Op::OpGroupNonUniformBallot: {
      std::vector<uint32_t> words;
      for (uint32_t low = 0; low < 128; low += 32) {
        uint32_t word = b.U(0);
        for (uint32_t l = low; l < std::min(c_.S, low + 32); ++l) {
          const uint32_t set = b.Emit(Op::OpLogicalAnd, t.Bool(), {c_.chunks->Active(b, x, b.U(l)), c_.chunks->Read(b, x, b.U(l))});
          word = b.Or(word, b.Emit(Op::OpSelect, t.Uint(), {set, b.U(1u << (l - low)), b.U(0)}));
        }
        words.push_back(word);
      }
      result = b.Emit(Op::OpCompositeConstruct, t.Vector(t.Uint(), 4), words);
      result = Choose(b, x.complete, t.TypeOf(result), result, Poison(t.TypeOf(result)));
      if (inst.typeId != t.TypeOf(result)) result = b.Emit(Op::OpBitcast, inst.typeId, {result});
      break;
    }
    default: Fail(Describe(inst) + " is not modelled for a subgroup of several lavapipe subgroups");
  }
  b.Emit(Op::OpCopyObject, inst.typeId, {result}, inst.resultId);
}

// A barrier of Subgroup execution scope: inside one lavapipe subgroup, whose invocations
// lavapipe runs in step, its memory part only (lavapipe makes every execution barrier a
// workgroup one, lp_bld_nir.c's visit_barrier, which subgroups on other paths never reach);
// across chunks a meeting. One of Workgroup scope (the app's) counts every chunk.
void SubgroupModel::Barrier(Builder& b, const ir::Instruction& inst) {
  const auto scope = T().ConstantValue(inst.Operand(0));
  if (!scope) Fail(Describe(inst) + ": its execution scope is not constant");
  if (*scope == kScopeWorkgroup) return c_.chunks->WorkgroupBarrier(b, inst);
  if (*scope != kScopeSubgroup) Fail(Describe(inst) + ": execution scope " + std::to_string(*scope) + " is not modelled");
  if (c_.Chunked()) c_.chunks->Meet(b, "subgroup barrier");
  b.EmitVoid(Op::OpMemoryBarrier, {inst.Operand(1), inst.Operand(2)});
}

// ---- Dispatch ----------------------------------------------------------------------

bool SubgroupModel::Handles(const ir::Instruction& inst) const {
  if (inst.opcode == Op::OpLoad) return builtinVars_.count(inst.Operand(0)) != 0;
  if (IsShuffle(inst.opcode)) return true;
  if (inst.opcode == Op::OpControlBarrier)
    return c_.Chunked() || c_.T().ConstantValue(inst.Operand(0)) == kScopeSubgroup;
  if (!Confined() || !IsSubgroupOperation(inst.opcode)) return false;
  // What stays inside a lavapipe subgroup runs as it is: quads, a bit of a given ballot,
  // clusters no larger than lavapipe's subgroup.
  switch (inst.opcode) {
    case Op::OpGroupNonUniformBallotBitExtract: case Op::OpGroupNonUniformQuadBroadcast: case Op::OpGroupNonUniformQuadSwap:
      return false;
    default: break;
  }
  if (CombinerOf(inst.opcode) && inst.operands.size() > 3 &&
      inst.Operand(1) == static_cast<uint32_t>(spv::GroupOperation::ClusteredReduce)) {
    const auto cluster = c_.T().ConstantValue(inst.Operand(3));
    return !cluster || *cluster > std::min(c_.S, c_.N);
  }
  return true;
}

void SubgroupModel::CountPassedThrough(const ir::Function& f) {
  for (const ir::Block& block : f.blocks)
    for (const ir::Instruction& inst : block.instructions)
      if (IsSubgroupOperation(inst.opcode) && !Handles(inst)) ++c_.result.lavapipeSubgroupOps;
}

void SubgroupModel::Rewrite(Builder& b, const ir::Instruction& inst) {
  if (inst.opcode == Op::OpLoad) {
    ++c_.result.subgroupOps;
    b.Emit(Op::OpCopyObject, inst.typeId, {BuiltinValue(b, builtinVars_.at(inst.Operand(0)), inst.typeId)}, inst.resultId);
    return;
  }
  if (inst.opcode == Op::OpControlBarrier) return Barrier(b, inst);
  if (IsShuffle(inst.opcode)) return Shuffle(b, inst);
  if (c_.Chunked()) return CombinerOf(inst.opcode) ? ChunkArithmetic(b, inst) : ChunkOperation(b, inst);
  if (CombinerOf(inst.opcode)) return SegmentArithmetic(b, inst);
  SegmentOperation(b, inst);
}

}  // namespace coopmat::virt::detail
