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

}  // namespace

// The module's own subgroup built-in variables go: every OpLoad of one is replaced
// by the virtual value.
void SubgroupEmulation::TakeBuiltins() {
  std::set<uint32_t> taken;
  for (auto it = c_.m.annotations.begin(); it != c_.m.annotations.end();) {
    const bool builtin = it->opcode == Op::OpDecorate && it->operands.size() >= 3 &&
                         it->operands[1] == static_cast<uint32_t>(spv::Decoration::BuiltIn);
    const auto which = builtin ? static_cast<spv::BuiltIn>(it->operands[2]) : spv::BuiltIn::Max;
    switch (which) {
      case spv::BuiltIn::SubgroupSize: case spv::BuiltIn::SubgroupLocalInvocationId: case spv::BuiltIn::SubgroupId:
      case spv::BuiltIn::NumSubgroups: case spv::BuiltIn::SubgroupEqMask:
        builtinVars_[it->operands[0]] = which;
        taken.insert(it->operands[0]);
        it = c_.m.annotations.erase(it);
        continue;
      case spv::BuiltIn::SubgroupGeMask: case spv::BuiltIn::SubgroupGtMask: case spv::BuiltIn::SubgroupLeMask:
      case spv::BuiltIn::SubgroupLtMask:
        Fail(std::string("the built-in ") + spv::BuiltInToString(which) + " is not emulated");
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

uint32_t SubgroupEmulation::BuiltinValue(Builder& b, spv::BuiltIn which, uint32_t type) {
  uint32_t value = 0;
  switch (which) {
    case spv::BuiltIn::SubgroupSize: value = b.U(c_.S); break;
    case spv::BuiltIn::SubgroupLocalInvocationId: value = c_.Lane(b); break;
    case spv::BuiltIn::SubgroupId: value = c_.SubgroupId(b); break;
    case spv::BuiltIn::NumSubgroups: value = b.U(c_.invocations / c_.S); break;
    case spv::BuiltIn::SubgroupEqMask: {
      const uint32_t lane = c_.Lane(b);
      const uint32_t bit = b.ShiftLeft(b.U(1), b.And(lane, b.U(31)));
      const uint32_t word = b.ShiftRight(lane, b.U(5));
      std::vector<uint32_t> words;
      for (uint32_t w = 0; w < 4; ++w) {
        const uint32_t here = b.Emit(Op::OpIEqual, T().Bool(), {word, b.U(w)});
        words.push_back(b.Emit(Op::OpSelect, T().Uint(), {here, bit, b.U(0)}));
      }
      const uint32_t uvec4 = T().Vector(T().Uint(), 4);
      value = b.Emit(Op::OpCompositeConstruct, uvec4, words);
      return type == uvec4 ? value : b.Emit(Op::OpBitcast, type, {value});
    }
    default: Fail("internal error: unexpected built-in");
  }
  return b.AsIntType(value, type);
}

// A barrier of Subgroup scope covers the virtual subgroup: several real ones.
void SubgroupEmulation::WidenBarrier(Builder& b, const ir::Instruction& inst) {
  ir::Instruction copy = inst;
  const size_t scopes = inst.opcode == Op::OpControlBarrier ? 2 : 1;
  bool widened = false;
  for (size_t i = 0; i < scopes; ++i)
    if (T().ConstantValue(copy.operands[i]) == kScopeSubgroup) {
      copy.operands[i] = b.U(kScopeWorkgroup);
      widened = true;
    }
  if (widened) {
    const uint32_t semanticsId = copy.operands[scopes];
    auto semantics = T().ConstantValue(semanticsId);
    if (!semantics) Fail(Describe(inst) + ": memory semantics are not constant");
    const uint32_t subgroupMemory = static_cast<uint32_t>(spv::MemorySemanticsMask::SubgroupMemory);
    if (*semantics & subgroupMemory)
      copy.operands[scopes] = b.U((*semantics & ~subgroupMemory) | static_cast<uint32_t>(spv::MemorySemanticsMask::WorkgroupMemory));
  }
  b.EmitVoid(copy.opcode, copy.operands);
}

void SubgroupEmulation::CheckSubgroupScope(const ir::Instruction& inst) {
  if (T().ConstantValue(inst.Operand(0)) != kScopeSubgroup) Fail(Describe(inst) + ": only Subgroup scope is emulated");
}

SubgroupEmulation::Exchange SubgroupEmulation::Publish(Builder& b, uint32_t value) {
  Exchange x;
  x.type = T().TypeOf(value);
  x.words = c_.WordCount(x.type);
  c_.Require(x.words * c_.S);
  c_.Barrier(b);
  x.base = c_.RegionBase(b);
  const uint32_t lane = c_.Lane(b);
  const std::vector<uint32_t> words = c_.ToWords(b, value, x.type);
  for (uint32_t w = 0; w < x.words; ++w) c_.StoreWord(b, x.base, b.Add(b.U(w * c_.S), lane), words[w]);
  c_.Barrier(b);
  return x;
}

uint32_t SubgroupEmulation::Read(Builder& b, const Exchange& x, uint32_t lane) {
  std::vector<uint32_t> words;
  for (uint32_t w = 0; w < x.words; ++w) words.push_back(c_.LoadWord(b, x.base, b.Add(b.U(w * c_.S), lane)));
  size_t next = 0;
  return c_.FromWords(b, words, next, x.type);
}

// A lane index kept inside the virtual subgroup (out-of-range ids are undefined in SPIR-V).
uint32_t SubgroupEmulation::Wrap(Builder& b, uint32_t lane) { return b.And(b.AsIntType(lane, T().Uint()), b.U(c_.S - 1)); }

uint32_t SubgroupEmulation::Combine(Builder& b, const Combiner& combiner, uint32_t type, uint32_t x, uint32_t y) {
  if (combiner.op == Op::OpExtInst) return b.Emit(Op::OpExtInst, type, {c_.GlslImport(), combiner.glsl, x, y});
  return b.Emit(combiner.op, type, {x, y});
}

// The identity of a combiner for one scalar type, as the constant's bits.
uint32_t SubgroupEmulation::Identity(Op group, uint32_t type) {
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

void SubgroupEmulation::GroupArithmetic(Builder& b, const ir::Instruction& inst) {
  CheckSubgroupScope(inst);
  ++c_.result.subgroupOps;
  const Combiner combiner = *CombinerOf(inst.opcode);
  const auto operation = static_cast<spv::GroupOperation>(inst.Operand(1));
  const uint32_t type = inst.typeId;
  const Exchange x = Publish(b, inst.Operand(2));
  uint32_t result = 0;
  switch (operation) {
    case spv::GroupOperation::Reduce: {
      result = Read(b, x, b.U(0));
      for (uint32_t j = 1; j < c_.S; ++j) result = Combine(b, combiner, type, result, Read(b, x, b.U(j)));
      break;
    }
    case spv::GroupOperation::ClusteredReduce: {
      auto cluster = T().ConstantValue(inst.Operand(3));
      if (!cluster || !*cluster || (*cluster & (*cluster - 1)) || *cluster > c_.S) Fail(Describe(inst) + ": bad ClusterSize");
      const uint32_t first = b.And(c_.Lane(b), b.U(~(*cluster - 1)));
      result = Read(b, x, first);
      for (uint32_t j = 1; j < *cluster; ++j) result = Combine(b, combiner, type, result, Read(b, x, b.Add(first, b.U(j))));
      break;
    }
    case spv::GroupOperation::InclusiveScan: case spv::GroupOperation::ExclusiveScan: {
      const bool inclusive = operation == spv::GroupOperation::InclusiveScan;
      const uint32_t lane = c_.Lane(b);
      result = Identity(inst.opcode, type);
      for (uint32_t j = 0; j < c_.S; ++j) {
        const uint32_t take = b.Emit(inclusive ? Op::OpULessThanEqual : Op::OpULessThan, T().Bool(), {b.U(j), lane});
        const uint32_t combined = Combine(b, combiner, type, result, Read(b, x, b.U(j)));
        result = b.Emit(Op::OpSelect, type, {take, combined, result});
      }
      break;
    }
    default: Fail(Describe(inst) + ": group operation " + std::to_string(inst.Operand(1)) + " is not emulated");
  }
  b.Emit(Op::OpCopyObject, type, {result}, inst.resultId);
}

void SubgroupEmulation::GroupOperation(Builder& b, const ir::Instruction& inst) {
  TypeManager& t = T();
  switch (inst.opcode) {
    case Op::OpGroupNonUniformElect:
      CheckSubgroupScope(inst);
      ++c_.result.subgroupOps;
      b.Emit(Op::OpIEqual, inst.typeId, {c_.Lane(b), b.U(0)}, inst.resultId);
      return;
    case Op::OpGroupNonUniformBroadcast: case Op::OpGroupNonUniformBroadcastFirst: case Op::OpGroupNonUniformShuffle:
    case Op::OpGroupNonUniformShuffleXor: case Op::OpGroupNonUniformShuffleUp: case Op::OpGroupNonUniformShuffleDown: {
      CheckSubgroupScope(inst);
      ++c_.result.subgroupOps;
      const Exchange x = Publish(b, inst.Operand(1));
      uint32_t source = 0;
      switch (inst.opcode) {
        case Op::OpGroupNonUniformBroadcastFirst: source = b.U(0); break;  // every invocation is active
        case Op::OpGroupNonUniformBroadcast: case Op::OpGroupNonUniformShuffle: source = Wrap(b, inst.Operand(2)); break;
        case Op::OpGroupNonUniformShuffleXor: source = Wrap(b, b.Xor(c_.Lane(b), b.AsIntType(inst.Operand(2), t.Uint()))); break;
        case Op::OpGroupNonUniformShuffleUp:
          source = Wrap(b, b.Emit(Op::OpISub, t.Uint(), {c_.Lane(b), b.AsIntType(inst.Operand(2), t.Uint())}));
          break;
        default: source = Wrap(b, b.Add(c_.Lane(b), b.AsIntType(inst.Operand(2), t.Uint()))); break;
      }
      b.Emit(Op::OpCopyObject, inst.typeId, {Read(b, x, source)}, inst.resultId);
      return;
    }
    case Op::OpGroupNonUniformAll: case Op::OpGroupNonUniformAny: {
      CheckSubgroupScope(inst);
      ++c_.result.subgroupOps;
      const Exchange x = Publish(b, inst.Operand(1));
      const Op combine = inst.opcode == Op::OpGroupNonUniformAll ? Op::OpLogicalAnd : Op::OpLogicalOr;
      uint32_t result = Read(b, x, b.U(0));
      for (uint32_t j = 1; j < c_.S; ++j) result = b.Emit(combine, t.Bool(), {result, Read(b, x, b.U(j))});
      b.Emit(Op::OpCopyObject, inst.typeId, {result}, inst.resultId);
      return;
    }
    case Op::OpGroupNonUniformBallot: {
      CheckSubgroupScope(inst);
      ++c_.result.subgroupOps;
      const Exchange x = Publish(b, inst.Operand(1));
      std::vector<uint32_t> words;
      for (uint32_t w = 0; w < 4; ++w) {
        uint32_t word = b.U(0);
        for (uint32_t j = 32 * w; j < std::min(c_.S, 32 * w + 32); ++j)
          word = b.Or(word, b.ShiftLeft(c_.LoadWord(b, x.base, b.U(j)), b.U(j - 32 * w)));
        words.push_back(word);
      }
      b.Emit(Op::OpCompositeConstruct, inst.typeId, words, inst.resultId);
      return;
    }
    case Op::OpGroupNonUniformBallotBitExtract: {
      CheckSubgroupScope(inst);
      ++c_.result.subgroupOps;
      const uint32_t index = b.AsIntType(inst.Operand(2), t.Uint());
      const uint32_t word = b.Emit(Op::OpVectorExtractDynamic, t.Uint(), {inst.Operand(1), b.ShiftRight(index, b.U(5))});
      const uint32_t bit = b.And(b.ShiftRight(word, b.And(index, b.U(31))), b.U(1));
      b.Emit(Op::OpINotEqual, inst.typeId, {bit, b.U(0)}, inst.resultId);
      return;
    }
    case Op::OpGroupNonUniformBallotBitCount: {
      CheckSubgroupScope(inst);
      ++c_.result.subgroupOps;
      if (inst.Operand(1) != static_cast<uint32_t>(spv::GroupOperation::Reduce))
        Fail(Describe(inst) + ": only the Reduce form is emulated");
      uint32_t count = b.U(0);
      for (uint32_t w = 0; 32 * w < c_.S; ++w) {
        const uint32_t valid = c_.S - 32 * w >= 32 ? ~0u : (1u << (c_.S - 32 * w)) - 1;
        const uint32_t word = b.And(b.Emit(Op::OpCompositeExtract, t.Uint(), {inst.Operand(2), w}), b.U(valid));
        count = b.Add(count, b.Emit(Op::OpBitCount, t.Uint(), {word}));
      }
      b.Emit(Op::OpCopyObject, inst.typeId, {b.AsIntType(count, inst.typeId)}, inst.resultId);
      return;
    }
    default:
      Fail(Describe(inst) + " is not emulated by the virtual device");
  }
}

bool SubgroupEmulation::Handles(const ir::Instruction& inst) const {
  switch (inst.opcode) {
    case Op::OpLoad: return builtinVars_.count(inst.Operand(0)) != 0;
    case Op::OpControlBarrier: case Op::OpMemoryBarrier: return true;
    default: break;
  }
  const std::string_view name = spv::OpToString(inst.opcode);
  return name.starts_with("OpGroup") || name.starts_with("OpSubgroup");
}

void SubgroupEmulation::Rewrite(Builder& b, const ir::Instruction& inst) {
  switch (inst.opcode) {
    case Op::OpLoad:
      ++c_.result.subgroupOps;
      b.Emit(Op::OpCopyObject, inst.typeId, {BuiltinValue(b, builtinVars_.at(inst.Operand(0)), inst.typeId)}, inst.resultId);
      return;
    case Op::OpControlBarrier: case Op::OpMemoryBarrier: return WidenBarrier(b, inst);
    default: break;
  }
  if (CombinerOf(inst.opcode)) return GroupArithmetic(b, inst);
  GroupOperation(b, inst);
}

}  // namespace coopmat::virt::detail
