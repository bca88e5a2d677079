// Runs straight-line code a Builder emitted, for every lane of a simulated
// subgroup at once: the register helpers' output (lane arithmetic, gathers, pair
// exchanges) checked by executing it, not by re-deriving what it should compute.
#pragma once

#include <catch2/catch_test_macros.hpp>

#include <bit>
#include <functional>
#include <map>
#include <vector>

#include "lowering.h"
#include "type_manager.h"

namespace passtest {

// A module, context and one-block function to emit into with a Builder.
struct EmitFixture {
  coopmat::ir::Module module;
  coopmat::TypeManager types{module};
  coopmat::LowerOptions options;
  coopmat::LowerStats stats;
  coopmat::Context context{module, types, options, stats};
  coopmat::ir::Function function;
  EmitFixture() {
    module.bound = 1;
    function.blocks.emplace_back();
    function.blocks[0].instructions.emplace_back(spv::Op::OpLabel, 0, module.TakeId(), std::vector<uint32_t>{});
  }
  const std::vector<coopmat::ir::Instruction>& Emitted() const { return function.blocks[0].instructions; }
};

// Each id holds one vector of components per lane, each component in the low bits
// of a uint32 (a bool as 0/1, a scalar as one component). Function variables
// (Builder::Variable) live per lane; a pointer is (variable, element or whole).
class SubgroupEvaluator {
 public:
  SubgroupEvaluator(const coopmat::TypeManager& types, uint32_t lanes) : types_(types), lanes_(lanes) {}
  void Set(uint32_t id, std::vector<std::vector<uint32_t>> perLane) { values_[id] = std::move(perLane); }
  // Each lane's own index (SubgroupLocalInvocationId) as `id`'s value.
  void SetLaneIds(uint32_t id) {
    std::vector<std::vector<uint32_t>> lanes(lanes_);
    for (uint32_t lane = 0; lane < lanes_; ++lane) lanes[lane] = {lane};
    values_[id] = std::move(lanes);
  }
  // The same scalar in every lane.
  void SetUniform(uint32_t id, uint32_t value) { values_[id] = std::vector<std::vector<uint32_t>>(lanes_, {value}); }
  const std::vector<std::vector<uint32_t>>& Get(uint32_t id) {
    if (!values_.count(id)) {
      auto c = types_.ConstantValue(id);
      INFO("id %" << id << " has no value");
      REQUIRE(c);
      values_[id] = std::vector<std::vector<uint32_t>>(lanes_, {*c});
    }
    return values_[id];
  }
  // What OpFunctionCall of a two-argument function computes (a CombineFunc), on
  // the arguments' low bits; the result is cut to the return type's width.
  void SetCall(std::function<uint32_t(uint32_t, uint32_t)> call) { call_ = std::move(call); }
  // The element count of a cooperative matrix type, so that OpCompositeConstruct
  // with one constituent fills the matrix with it, as SPIR-V defines.
  void SetLength(uint32_t type, uint32_t length) { lengths_[type] = length; }
  // Opcodes seen, to let a test say which forms it covered.
  const std::map<spv::Op, size_t>& Seen() const { return seen_; }

  void Run(const std::vector<coopmat::ir::Instruction>& block) {
    for (const coopmat::ir::Instruction& inst : block) {
      if (inst.opcode == spv::Op::OpLabel) continue;
      ++seen_[inst.opcode];
      if (inst.opcode == spv::Op::OpAccessChain) {
        REQUIRE(inst.operands.size() == 2);
        std::vector<Pointer> p(lanes_);
        for (uint32_t lane = 0; lane < lanes_; ++lane) p[lane] = {Base(inst.Operand(0), lane).variable, static_cast<int64_t>(Get(inst.Operand(1))[lane][0])};
        pointers_[inst.resultId] = std::move(p);
        continue;
      }
      if (inst.opcode == spv::Op::OpStore) {
        for (uint32_t lane = 0; lane < lanes_; ++lane) {
          const Pointer p = Base(inst.Operand(0), lane);
          std::vector<uint32_t>& memory = memory_[p.variable][lane];
          const std::vector<uint32_t>& v = Get(inst.Operand(1))[lane];
          if (p.element < 0) {
            memory = v;
          } else {
            if (memory.size() <= static_cast<size_t>(p.element)) memory.resize(static_cast<size_t>(p.element) + 1);
            memory[static_cast<size_t>(p.element)] = v.at(0);
          }
        }
        continue;
      }
      std::vector<std::vector<uint32_t>> out(lanes_);
      for (uint32_t lane = 0; lane < lanes_; ++lane) out[lane] = One(inst, lane);
      values_[inst.resultId] = std::move(out);
    }
  }

 private:
  struct Pointer {
    uint32_t variable = 0;
    int64_t element = -1;  // -1: the whole variable
  };
  Pointer Base(uint32_t id, uint32_t lane) {
    if (auto it = pointers_.find(id); it != pointers_.end()) return it->second[lane];
    return {id, -1};  // a variable itself
  }
  uint32_t Width(uint32_t type) const {
    const coopmat::ir::Instruction* def = types_.GlobalDef(type);
    if (def && def->opcode == spv::Op::OpTypeVector) return types_.ScalarWidth(def->Operand(0));
    if (def && def->opcode == spv::Op::OpTypeBool) return 1;
    return types_.ScalarWidth(type);
  }
  static uint32_t Mask(uint32_t width) { return width >= 32 ? ~0u : (1u << width) - 1; }

  std::vector<uint32_t> One(const coopmat::ir::Instruction& inst, uint32_t lane) {
    auto op = [&](size_t k) { return Get(inst.Operand(k))[lane]; };
    auto a = [&] { return op(0).at(0); };
    auto b = [&] { return op(1).at(0); };
    const uint32_t width = Width(inst.typeId);
    switch (inst.opcode) {
      case spv::Op::OpShiftRightLogical: return {b() < 32 ? a() >> b() : 0};
      case spv::Op::OpShiftLeftLogical: return {b() < 32 ? (a() << b()) & Mask(width) : 0};
      case spv::Op::OpBitwiseAnd: return {a() & b()};
      case spv::Op::OpBitwiseOr: return {a() | b()};
      case spv::Op::OpBitwiseXor: return {a() ^ b()};
      case spv::Op::OpNot: return {~a() & Mask(width)};
      case spv::Op::OpIAdd: return {(a() + b()) & Mask(width)};
      case spv::Op::OpISub: return {(a() - b()) & Mask(width)};
      case spv::Op::OpIMul: return {(a() * b()) & Mask(width)};
      case spv::Op::OpBitReverse: return {Reverse(a())};
      case spv::Op::OpBitCount: return {static_cast<uint32_t>(std::popcount(a()))};
      case spv::Op::OpINotEqual: return {a() != b() ? 1u : 0u};
      case spv::Op::OpIEqual: return {a() == b() ? 1u : 0u};
      case spv::Op::OpSelect: return a() ? op(1) : op(2);
      case spv::Op::OpCopyObject: return op(0);
      // Integer widening and narrowing of tags (values the tests move are unsigned bits).
      case spv::Op::OpUConvert: return {a() & Mask(width)};
      case spv::Op::OpSConvert: {
        const uint32_t from = Width(types_.TypeOf(inst.Operand(0)));
        uint32_t v = a();
        if (from < 32 && (v >> (from - 1) & 1)) v |= ~Mask(from);
        return {v & Mask(width)};
      }
      case spv::Op::OpFunctionCall: {
        REQUIRE(call_);
        REQUIRE(inst.operands.size() == 3);
        return {call_(op(1).at(0), op(2).at(0)) & Mask(width)};
      }
      case spv::Op::OpCompositeConstruct: {
        if (auto it = lengths_.find(inst.typeId); it != lengths_.end()) {
          REQUIRE(inst.operands.size() == 1);
          return std::vector<uint32_t>(it->second, a());
        }
        std::vector<uint32_t> v;
        for (size_t k = 0; k < inst.operands.size(); ++k) {
          const std::vector<uint32_t> part = op(k);
          v.insert(v.end(), part.begin(), part.end());
        }
        return v;
      }
      case spv::Op::OpCompositeExtract: return {op(0).at(inst.operands[1])};
      case spv::Op::OpCompositeInsert: {
        std::vector<uint32_t> v = op(1);
        if (v.size() <= inst.operands[2]) v.resize(inst.operands[2] + 1);
        v[inst.operands[2]] = a();
        return v;
      }
      case spv::Op::OpBitcast: {
        // Between a uint and a vector of narrower components, low component first.
        const std::vector<uint32_t> v = op(0);
        const uint32_t from = Width(types_.TypeOf(inst.Operand(0)));
        if (v.size() > 1) {
          uint32_t word = 0;
          for (size_t k = 0; k < v.size(); ++k) word |= (v[k] & Mask(from)) << (from * k);
          return {word};
        }
        if (width == 32 && from == 32) return v;
        std::vector<uint32_t> parts;
        for (uint32_t k = 0; k < 32 / width; ++k) parts.push_back(v[0] >> (width * k) & Mask(width));
        return parts;
      }
      case spv::Op::OpLoad: {
        const Pointer p = Base(inst.Operand(0), lane);
        const std::vector<uint32_t>& memory = memory_[p.variable][lane];
        INFO("load of %" << p.variable << " before a store");
        if (p.element < 0) {
          REQUIRE(!memory.empty());
          return memory;
        }
        REQUIRE(static_cast<size_t>(p.element) < memory.size());
        return {memory[static_cast<size_t>(p.element)]};
      }
      case spv::Op::OpGroupNonUniformShuffleXor: {
        const uint32_t from = lane ^ op(2).at(0);
        REQUIRE(from < lanes_);
        return Get(inst.Operand(1))[from];
      }
      case spv::Op::OpGroupNonUniformShuffle: {
        const uint32_t from = op(2).at(0);
        REQUIRE(from < lanes_);
        return Get(inst.Operand(1))[from];
      }
      default: FAIL("unexpected opcode " << spv::OpToString(inst.opcode)); return {};
    }
  }
  static uint32_t Reverse(uint32_t v) {
    uint32_t r = 0;
    for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
    return r;
  }

  const coopmat::TypeManager& types_;
  uint32_t lanes_;
  std::map<uint32_t, std::vector<std::vector<uint32_t>>> values_;
  std::map<uint32_t, std::vector<Pointer>> pointers_;
  std::map<uint32_t, std::map<uint32_t, std::vector<uint32_t>>> memory_;  // variable -> lane -> components
  std::map<spv::Op, size_t> seen_;
  std::function<uint32_t(uint32_t, uint32_t)> call_;
  std::map<uint32_t, uint32_t> lengths_;
};

// A 16- or 8-bit float type with a non-IEEE encoding (bfloat16, fp8), added to the module.
inline uint32_t EncodedFloatType(coopmat::ir::Module& m, coopmat::TypeManager& t, uint32_t width, spv::FPEncoding encoding) {
  const uint32_t id = m.TakeId();
  t.AddGlobal(coopmat::ir::Instruction(spv::Op::OpTypeFloat, 0, id, {width, static_cast<uint32_t>(encoding)}));
  return id;
}

}  // namespace passtest
