// Runs the register path's emitted code (moves and reductions) on a simulated
// subgroup (SubgroupEvaluator), for the unit tests of built-in and random layouts.
#pragma once

#include <functional>
#include <optional>
#include <random>

#include "coopmat/layout.h"
#include "lowering.h"
#include "register.h"
#include "subgroup_eval.h"

namespace passtest {

// The SPIR-V type of a layout's component type, for a matrix the evaluator runs.
inline uint32_t ComponentType(coopmat::ir::Module& m, coopmat::TypeManager& t, uint32_t vkType) {
  switch (vkType) {
    case coopmat::kTypeF16: return t.Float(16);
    case coopmat::kTypeF32: return t.Float(32);
    case coopmat::kTypeBF16: return passtest::EncodedFloatType(m, t, 16, spv::FPEncoding::BFloat16KHR);
    case coopmat::kTypeE4M3: return passtest::EncodedFloatType(m, t, 8, spv::FPEncoding::Float8E4M3EXT);
    case coopmat::kTypeS8: return t.Int(8, true);
    case coopmat::kTypeU8: return t.Int(8, false);
    case coopmat::kTypeS16: return t.Int(16, true);
    case coopmat::kTypeU16: return t.Int(16, false);
    case coopmat::kTypeS32: return t.Int(32, true);
    case coopmat::kTypeU32: return t.Uint();
  }
  FAIL("component type " << vkType);
  return 0;
}

inline uint32_t ComponentBits(uint32_t vkType) {
  switch (vkType) {
    case coopmat::kTypeE4M3:
    case coopmat::kTypeS8:
    case coopmat::kTypeU8: return 8;
    case coopmat::kTypeF16:
    case coopmat::kTypeBF16:
    case coopmat::kTypeS16:
    case coopmat::kTypeU16: return 16;
  }
  return 32;
}

// Runs a gather or pair-exchange plan's emitted code on a subgroup and checks that
// each destination element holds the source element of its (transposed) coordinate.
// Values are tagged twice (once with their lane, once with their index) so that the
// tags fit 8-bit elements. `convert`: with a per-value conversion after the move (an
// OpCopyObject), which keeps the 16-bit shared-word gather from storing words.
// Returns whether the gather moved 16-bit values two per shuffle.
// `element`: the moved values' component type (VkComponentTypeKHR).
// `extendedTypes`: the device shuffles 16-bit values itself (shaderSubgroupExtendedTypes);
// `narrowShuffles` counts the shuffles of 16-bit values emitted.
inline bool CheckMove(const coopmat::GatherPlan& plan, const coopmat::LinearLayout& from, const coopmat::LinearLayout& to,
                      bool transpose, uint32_t element, bool convert = false, bool extendedTypes = false,
                      size_t* narrowShuffles = nullptr) {
  const uint32_t size = from.key.subgroupSize;
  EmitFixture f;
  f.options.subgroupExtendedTypes = extendedTypes;
  coopmat::TypeManager& types = f.types;
  coopmat::FunctionState fs{f.function};
  fs.lane = f.module.TakeId();
  const uint32_t valueType = ComponentType(f.module, types, element);
  std::vector<uint32_t> sources(from.length);
  for (uint32_t& id : sources) {
    id = f.module.TakeId();
    types.SetTypeOf(id, valueType);
  }
  coopmat::Builder b(f.context, f.function, 0, 1);
  const bool sharedWords = coopmat::GatherSharesWords(f.context, plan, valueType);
  std::function<uint32_t(uint32_t)> after;
  if (convert) after = [&](uint32_t v) { return b.Emit(spv::Op::OpCopyObject, valueType, {v}); };
  const uint32_t result = coopmat::EmitGather(b, fs, plan, [&](uint32_t i) { return sources.at(i); }, valueType, after,
                                              types.Vector(valueType, to.length), 0);
  for (const auto& inst : f.Emitted())
    if (narrowShuffles && (inst.opcode == spv::Op::OpGroupNonUniformShuffle || inst.opcode == spv::Op::OpGroupNonUniformShuffleXor))
      *narrowShuffles += types.ScalarWidth(inst.typeId) == 16;
  std::vector<std::vector<uint32_t>> tag[2];  // [0]: source lane, [1]: source index
  for (int pass = 0; pass < 2; ++pass) {
    SubgroupEvaluator eval(types, size);
    eval.SetLaneIds(fs.lane);
    for (uint32_t i = 0; i < from.length; ++i) {
      std::vector<std::vector<uint32_t>> tagged(size);
      for (uint32_t lane = 0; lane < size; ++lane) tagged[lane] = {pass == 0 ? lane : i};
      eval.Set(sources[i], tagged);
    }
    eval.Run(f.Emitted());
    tag[pass] = eval.Get(result);
  }
  for (uint32_t lane = 0; lane < size; ++lane) {
    REQUIRE(tag[0][lane].size() == to.length);
    for (uint32_t e = 0; e < to.length; ++e) {
      coopmat::Coord want = to.CoordinateOf(lane, e);
      if (transpose) std::swap(want.row, want.col);
      const uint32_t sourceLane = tag[0][lane][e], sourceIndex = tag[1][lane][e];
      REQUIRE(sourceLane < size);
      REQUIRE(sourceIndex < from.length);
      const coopmat::Coord got = from.CoordinateOf(sourceLane, sourceIndex);
      INFO("lane " << lane << " element " << e << ": source lane " << sourceLane << " index " << sourceIndex << " holds ("
                   << got.row << ", " << got.col << "), want (" << want.row << ", " << want.col << ")");
      REQUIRE(got == want);
    }
  }
  return sharedWords;
}

struct ReduceRun {
  std::vector<std::vector<uint32_t>> out;  // [lane][result element]
  size_t shuffles = 0;                     // per invocation, as emitted
};

// Emits OpCooperativeMatrixReduceEXT of `input` ([lane][source element]) with
// LowerReduceInRegisters and runs the code on every lane, with a wrapping sum of
// the component's bits as CombineFunc. None where the register path has no plan.
// extendedTypes: the device shuffles 16-bit values itself (shaderSubgroupExtendedTypes).
inline std::optional<ReduceRun> RunReduce(const coopmat::LinearLayout& source, const coopmat::LinearLayout& result, uint32_t mask,
                                   const std::vector<std::vector<uint32_t>>& input, bool extendedTypes = false) {
  const uint32_t size = source.key.subgroupSize;
  EmitFixture f;
  f.options.layouts = {source, result};
  f.options.subgroupExtendedTypes = extendedTypes;
  f.context.subgroupSizes = {size};
  for (auto capability : {spv::Capability::Float16, spv::Capability::Int16, spv::Capability::Int8}) f.module.RequireCapability(capability);
  coopmat::TypeManager& t = f.types;
  coopmat::FunctionState fs{f.function};
  fs.lane = f.module.TakeId();
  coopmat::Builder b(f.context, f.function, 0, 1);
  const uint32_t component = ComponentType(f.module, t, source.key.componentType);
  auto matrix = [&](const coopmat::LinearLayout& l) {
    return t.CoopMat(component, b.U(static_cast<uint32_t>(spv::Scope::Subgroup)), b.U(l.key.rows), b.U(l.key.cols), b.U(l.key.use));
  };
  const uint32_t sourceType = matrix(source), resultType = matrix(result);
  const uint32_t combine = f.module.TakeId();
  f.context.functionTypes[combine] = t.FunctionType(component, {component, component});
  const uint32_t value = f.module.TakeId();
  t.SetTypeOf(value, sourceType);
  const coopmat::ir::Instruction reduce(spv::Op::OpCooperativeMatrixReduceEXT, resultType, f.module.TakeId(), {value, mask, combine});
  t.SetTypeOf(reduce.resultId, resultType);
  if (!coopmat::CanLowerReduceInRegisters(f.context, reduce)) return std::nullopt;
  coopmat::LowerReduceInRegisters(b, fs, reduce);

  SubgroupEvaluator eval(t, size);
  eval.SetLaneIds(fs.lane);
  eval.Set(value, input);
  eval.SetCall([](uint32_t x, uint32_t y) { return x + y; });
  eval.SetLength(resultType, result.length);
  eval.Run(f.Emitted());
  ReduceRun run;
  run.out = eval.Get(reduce.resultId);
  for (const coopmat::ir::Instruction& i : f.Emitted())
    run.shuffles += i.opcode == spv::Op::OpGroupNonUniformShuffle || i.opcode == spv::Op::OpGroupNonUniformShuffleXor;
  return run;
}

// Row, Column, Row|Column or 2x2 group of source element (r, c) holding result coordinate `at`.
inline bool InGroup(uint32_t mask, coopmat::Coord at, uint32_t r, uint32_t c) {
  if (mask == coopmat::kReduceRow) return r == at.row;
  if (mask == coopmat::kReduceColumn) return c == at.col;
  if (mask == coopmat::kReduce2x2) return r >> 1 == at.row && c >> 1 == at.col;
  return true;
}

// RunReduce on random values of the source's elements (the same in every replica),
// checking that every result element holds the wrapping sum of its group. None where
// the register path has no plan.
inline std::optional<ReduceRun> CheckReduce(const coopmat::LinearLayout& source, const coopmat::LinearLayout& result,
                                            uint32_t mask, std::mt19937& random, bool extendedTypes = false) {
  const uint32_t width = ComponentBits(source.key.componentType), digits = width == 32 ? ~0u : (1u << width) - 1;
  std::vector<std::vector<uint32_t>> element(source.key.rows, std::vector<uint32_t>(source.key.cols));
  for (auto& row : element)
    for (auto& x : row) x = random() & digits;
  const uint32_t size = source.key.subgroupSize;
  std::vector<std::vector<uint32_t>> input(size, std::vector<uint32_t>(source.length));
  for (uint32_t lane = 0; lane < size; ++lane)
    for (uint32_t e = 0; e < source.length; ++e) {
      const coopmat::Coord c = source.CoordinateOf(lane, e);
      input[lane][e] = element[c.row][c.col];
    }
  auto run = RunReduce(source, result, mask, input, extendedTypes);
  if (!run) return std::nullopt;
  for (uint32_t lane = 0; lane < size; ++lane) {
    REQUIRE(run->out[lane].size() == result.length);
    for (uint32_t e = 0; e < result.length; ++e) {
      const coopmat::Coord at = result.CoordinateOf(lane, e);
      uint32_t sum = 0;
      for (uint32_t r = 0; r < source.key.rows; ++r)
        for (uint32_t c = 0; c < source.key.cols; ++c)
          if (InGroup(mask, at, r, c)) sum += element[r][c];
      INFO("lane " << lane << " element " << e << " at (" << at.row << ", " << at.col << ")");
      REQUIRE(run->out[lane][e] == (sum & digits));
    }
  }
  return run;
}

}  // namespace passtest
