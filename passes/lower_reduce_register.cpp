// OpCooperativeMatrixReduceEXT in registers, when the driver's layouts of the
// source and result types are known (LowerOptions::layouts):
//  1. the source's elements are combined in each invocation over the index bits
//     that move along the reduced dimensions (RecipeForReduce's indexXors), as a
//     tree on coset representatives;
//  2. then across lanes, one OpGroupNonUniformShuffleXor step per lane bit that
//     moves along them (laneXors; replica lanes are never combined twice);
//  3. every slot now holds its group's reduction; each result element picks it
//     up from a slot of the right group (GatherPlan: in its own lane when it can,
//     else one shuffle per result element). Row|Column just splats.
// 2x2 (ReduceScatter, register.h) replaces 2 and 3 where it plans: each lane step
// combines only the half of the elements the lane keeps and sends the other
// half (one shuffle per pair), then the survivors are gathered into the result.
// No Workgroup memory, no barrier.
#include <bit>

#include "register.h"

namespace coopmat {
uint32_t ReduceScatter::Expand(uint32_t i) const { return SpreadBits(i, dropped); }

std::optional<std::pair<ReduceScatter, GatherPlan>> PlanReduceScatter(const LinearLayout& s, const ReductionRecipe& recipe,
                                                          uint32_t keptRows, uint32_t keptCols, const LinearLayout& r,
                                                          const std::vector<BitImage>& targets) {
  if (recipe.laneXors.empty() || s.ReplicaLaneBits() != 0) return std::nullopt;
  uint32_t touched = 0;  // index bits the in-register steps combine over
  for (uint32_t u : recipe.indexXors) touched |= u;
  ReduceScatter sc;
  sc.scattered = s;
  uint32_t dropped = 0, usedLanes = 0;
  for (uint32_t x : recipe.laneXors) {
    if (std::popcount(x) != 1 || (usedLanes & x)) return std::nullopt;
    usedLanes |= x;
    const uint32_t lb = static_cast<uint32_t>(std::countr_zero(x));
    const BitImage& laneImage = s.laneBits[lb];
    // A free index bit whose image is wholly kept; prefer the lane bit's dimension.
    int best = -1, bestScore = -1;
    for (uint32_t k = 0; k < s.indexBits.size(); ++k) {
      if ((touched | dropped) >> k & 1) continue;
      const BitImage& im = s.indexBits[k];
      if (im.IsZero() || (im.rowMask & ~keptRows) || (im.colMask & ~keptCols)) continue;
      const int score = ((im.colMask != 0) == (laneImage.colMask != 0)) + ((im.rowMask != 0) == (laneImage.rowMask != 0));
      if (score > bestScore) best = static_cast<int>(k), bestScore = score;
    }
    if (best < 0) return std::nullopt;
    sc.laneBit.push_back(lb);
    sc.indexBit.push_back(static_cast<uint32_t>(best));
    sc.scattered.laneBits[lb].rowMask ^= s.indexBits[best].rowMask;
    sc.scattered.laneBits[lb].colMask ^= s.indexBits[best].colMask;
    dropped |= 1u << best;
  }
  sc.dropped = dropped;
  sc.scattered.indexBits.clear();
  for (uint32_t k = 0; k < s.indexBits.size(); ++k)
    if (!(dropped >> k & 1)) sc.scattered.indexBits.push_back(s.indexBits[k]);
  sc.scattered.length = s.length >> std::popcount(dropped);
  for (uint32_t u : recipe.indexXors) sc.indexXors.push_back(SqueezeBits(u, dropped));
  auto gather = PlanGather(sc.scattered, keptRows, keptCols, sc.indexXors, r, targets);
  if (!gather) return std::nullopt;
  return std::make_pair(std::move(sc), std::move(*gather));
}

namespace {

constexpr uint32_t kRowColumn = kReduceRow | kReduceColumn;

struct ReducePlan {
  const LinearLayout* source = nullptr;
  ReductionRecipe recipe;
  std::optional<GatherPlan> placement;  // none for Row|Column
  std::optional<ReduceScatter> scatter;       // 2x2 only, when it plans
};

std::optional<ReducePlan> PlanReduce(Context& c, const ir::Instruction& inst) {
  TypeManager& t = c.types;
  if (inst.operands.size() != 3) return std::nullopt;
  auto source = t.CoopMatInfo(t.TypeOf(inst.operands[0]));
  auto result = t.CoopMatInfo(inst.typeId);
  if (!source || !result || source->componentType != result->componentType) return std::nullopt;
  if (source->use != MatrixUse::Accumulator || result->use != MatrixUse::Accumulator) return std::nullopt;
  const uint32_t mask = inst.operands[1];
  if (mask != kReduceRow && mask != kReduceColumn && mask != kRowColumn && mask != kReduce2x2) return std::nullopt;
  ReducePlan plan;
  plan.source = RegisterLayout(c, *source);
  if (!plan.source) return std::nullopt;
  const LinearLayout& s = *plan.source;
  if (mask == kReduce2x2 && (s.key.rows < 2 || s.key.cols < 2)) return std::nullopt;
  plan.recipe = RecipeForReduce(s, mask);
  if (!plan.recipe.mixed.empty()) return std::nullopt;  // no surveyed layout needs them
  const bool laneSteps = !plan.recipe.laneXors.empty();
  if (mask == kRowColumn) {
    if (laneSteps && !CanShuffle(c, source->componentType)) return std::nullopt;
    return plan;
  }
  const LinearLayout* r = RegisterLayout(c, *result);
  if (!r || r->key.subgroupSize != s.key.subgroupSize) return std::nullopt;
  // Which source coordinate each result coordinate bit stands for, and the kept bits.
  uint32_t keptRows = s.key.rows - 1, keptCols = s.key.cols - 1;
  std::function<BitImage(const BitImage&)> target;
  if (mask == kReduceRow) {
    if (r->key.rows != s.key.rows) return std::nullopt;
    keptCols = 0;
    target = [](const BitImage& i) { return BitImage{i.rowMask, 0}; };
  } else if (mask == kReduceColumn) {
    if (r->key.cols != s.key.cols) return std::nullopt;
    keptRows = 0;
    target = [](const BitImage& i) { return BitImage{0, i.colMask}; };
  } else {
    if (r->key.rows * 2 != s.key.rows || r->key.cols * 2 != s.key.cols) return std::nullopt;
    keptRows &= ~1u;
    keptCols &= ~1u;
    target = [](const BitImage& i) { return BitImage{i.rowMask << 1, i.colMask << 1}; };
  }
  std::vector<BitImage> targets;
  for (const BitImage& i : r->laneBits) targets.push_back(target(i));
  for (const BitImage& i : r->indexBits) targets.push_back(target(i));
  if (mask == kReduce2x2) {
    if (auto scatter = PlanReduceScatter(s, plan.recipe, keptRows, keptCols, *r, targets)) {
      plan.scatter = std::move(scatter->first);
      plan.placement = std::move(scatter->second);
    }
  }
  if (!plan.placement) plan.placement = PlanGather(s, keptRows, keptCols, plan.recipe.indexXors, *r, targets);
  if (!plan.placement) return std::nullopt;
  if ((laneSteps || plan.placement->NeedsShuffle()) && !CanShuffle(c, source->componentType)) return std::nullopt;
  return plan;
}

}  // namespace

bool CanLowerReduceInRegisters(Context& c, const ir::Instruction& inst) { return PlanReduce(c, inst).has_value(); }

void LowerReduceInRegisters(Builder& b, FunctionState& fs, const ir::Instruction& inst) {
  Context& c = b.context();
  const CoopMatType source = MatrixOf(c, inst, inst.operands[0], "Matrix");
  const CoopMatType result = MatrixOf(c, inst, inst.resultId, "Result Type");
  const uint32_t combine = inst.operands[2];
  const std::vector<uint32_t> params = c.ParameterTypes(combine);
  if (params.size() != 2 || params[0] != source.componentType || params[1] != source.componentType ||
      c.ReturnType(combine) != source.componentType)
    Fail(Describe(inst) + ": CombineFunc must take two and return one value of the component type");
  const std::optional<ReducePlan> plan = PlanReduce(c, inst);
  if (!plan) Fail("internal error: " + Describe(inst) + " has no register plan");
  const uint32_t component = source.componentType;
  auto op = [&](uint32_t x, uint32_t y) { return b.Emit(spv::Op::OpFunctionCall, component, {combine, x, y}); };

  const uint32_t length = plan->source->length;
  std::vector<uint32_t> v(length);
  for (uint32_t e = 0; e < length; ++e) v[e] = b.Emit(spv::Op::OpCompositeExtract, component, {inst.operands[0], e});

  // 1. In registers: a reduced basis of the index moves; after the step with
  // pivot p, the elements whose pivot bits are all clear hold their coset.
  const std::vector<std::pair<uint32_t, uint32_t>> basis = InRegisterReduceBasis(plan->recipe.indexXors);
  uint32_t pivots = 0;
  for (const auto& [p, u] : basis) {
    for (uint32_t e = 0; e < length; ++e)
      if (!(e & pivots) && !(e >> p & 1)) v[e] = op(v[e], v[e ^ u]);
    pivots |= 1u << p;
  }
  std::vector<uint32_t> reps;
  for (uint32_t e = 0; e < length; ++e)
    if (!(e & pivots)) reps.push_back(e);
  // Element e holds the value of its representative.
  auto representative = [&](uint32_t e) {
    for (const auto& [p, u] : basis)
      if (e >> p & 1) e ^= u;
    return e;
  };
  // 2. Across lanes.
  if (const auto& sc = plan->scatter) {
    // Reduce-scatter: of each pair (e, e | bit), a lane keeps the one whose bit
    // equals its lane bit and sends the other; the survivor stays at e.
    TypeManager& t = c.types;
    uint32_t dropped = 0;
    for (size_t k = 0; k < sc->laneBit.size(); ++k) {
      const uint32_t x = 1u << sc->laneBit[k], bit = 1u << sc->indexBit[k];
      const uint32_t high = b.Emit(spv::Op::OpINotEqual, t.Bool(), {b.And(fs.lane, b.U(x)), b.U(0)});
      for (uint32_t e : reps) {
        if (e & (dropped | bit)) continue;
        const uint32_t keep = b.Emit(spv::Op::OpSelect, component, {high, v[e | bit], v[e]});
        const uint32_t send = b.Emit(spv::Op::OpSelect, component, {high, v[e], v[e | bit]});
        v[e] = op(keep, ShuffleXor(b, send, x));
      }
      dropped |= bit;
    }
    EmitGather(b, fs, *plan->placement, [&](uint32_t i) { return v[representative(sc->Expand(i))]; }, component,
               nullptr, result.id, inst.resultId);
    ++c.stats.reduce;
    ++c.stats.registerPath;
    return;
  }
  for (uint32_t x : plan->recipe.laneXors) {
    std::vector<uint32_t> mine;
    for (uint32_t e : reps) mine.push_back(v[e]);
    const std::vector<uint32_t> theirs = ShuffleXorAll(b, mine, x);
    for (size_t i = 0; i < reps.size(); ++i) v[reps[i]] = op(mine[i], theirs[i]);
  }

  // 3. Placement.
  if (!plan->placement) {
    b.Emit(spv::Op::OpCompositeConstruct, result.id, {v[0]}, inst.resultId);
  } else {
    EmitGather(b, fs, *plan->placement, [&](uint32_t i) { return v[representative(i)]; }, component, nullptr, result.id,
               inst.resultId);
  }
  ++c.stats.reduce;
  ++c.stats.registerPath;
}

}  // namespace coopmat
