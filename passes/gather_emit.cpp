// Emits a GatherPlan (see register.h): the shuffles, per-lane element choices and
// destination placement, with two 16-bit values to a 32-bit shuffle where that pays;
// plans made of exchange stages go to exchange_emit.cpp.
#include "register.h"
#include "gf2.h"

#include <algorithm>
#include <bit>
#include <map>

namespace coopmat {
namespace {

using gf2::Apply;
using gf2::Log2;

}  // namespace

namespace {

// Element `index` (a uint id) of the `count` values element(i) of `type`: the value
// itself for a constant index, else a load from a Function array of all of them,
// built once (a per-lane index: the sender picks for its receiver).
class ElementPicker {
 public:
  ElementPicker(Builder& b, uint32_t count, uint32_t type, std::function<uint32_t(uint32_t)> element)
      : b_(b), count_(count), type_(type), element_(std::move(element)) {}
  uint32_t operator()(uint32_t index) {
    TypeManager& t = b_.types();
    if (auto constant = t.ConstantValue(index)) return element_(*constant % count_);
    if (!array_) {
      std::vector<uint32_t> all;
      for (uint32_t i = 0; i < count_; ++i) all.push_back(element_(i));
      const uint32_t arrayType = t.UndecoratedArray(type_, b_.U(count_));
      array_ = b_.Variable(arrayType);
      b_.EmitVoid(spv::Op::OpStore, {array_, b_.Emit(spv::Op::OpCompositeConstruct, arrayType, all)});
    }
    return b_.Emit(spv::Op::OpLoad, type_, {b_.ElementPointer(array_, type_, index)});
  }

 private:
  Builder& b_;
  uint32_t count_, type_;
  std::function<uint32_t(uint32_t)> element_;
  uint32_t array_ = 0;
};

// Rounds t and t ^ (1 << p) of a gather can share one 32-bit shuffle of 16-bit
// values when they read the same sending lane (B(p) == 0) and, in that lane,
// source elements that differ in one index bit q (D(p) == 1 << q) that no lane
// moves, and when their destination elements differ in bit p alone (M has no p):
// the sender then packs elements e and e | 1 << q in one word. Returns (p, q).
std::optional<std::pair<uint32_t, uint32_t>> SharedWordRounds(const GatherPlan& plan) {
  const std::vector<uint32_t>& indexLanes = plan.identityLanes ? plan.laneIndex : plan.senderIndex;
  for (uint32_t p = 0; (1u << p) < plan.destLength; ++p) {
    if (plan.indexSource[p] != 0 || std::popcount(plan.indexIndex[p]) != 1) continue;
    const uint32_t q = Log2(plan.indexIndex[p]);
    if ((1u << q) >= plan.sourceLength) continue;
    if (std::any_of(indexLanes.begin(), indexLanes.end(), [&](uint32_t image) { return image >> q & 1; })) continue;
    if (std::any_of(plan.laneDestOffset.begin(), plan.laneDestOffset.end(), [&](uint32_t image) { return image >> p & 1; }))
      continue;
    return std::make_pair(p, q);
  }
  return std::nullopt;
}

// EmitGather with two 16-bit elements per shuffle (SharedWordRounds): half the
// cross-lane moves, and the per-lane choices of what to send and where to keep it
// are made on words, two elements per select.
uint32_t EmitSharedWordGather(Builder& b, const FunctionState& fs, const GatherPlan& plan, uint32_t p, uint32_t q,
                              const std::function<uint32_t(uint32_t)>& value, uint32_t valueType,
                              const std::function<uint32_t(uint32_t)>& after, uint32_t destType, uint32_t resultId) {
  TypeManager& t = b.types();
  const uint32_t pairType = t.Vector(valueType, 2);
  auto pack = [&](uint32_t lo, uint32_t hi) {
    return b.Emit(spv::Op::OpBitcast, t.Uint(), {b.Emit(spv::Op::OpCompositeConstruct, pairType, {lo, hi})});
  };
  const uint32_t words = plan.sourceLength / 2;
  auto word = [&](uint32_t w) {  // source elements w with bit q inserted as 0 and 1
    const uint32_t low = SpreadBits(w, 1u << q);
    return pack(value(low), value(low | 1u << q));
  };
  ElementPicker fetch(b, words, t.Uint(), word);
  const std::vector<uint32_t>& indexLanes = plan.identityLanes ? plan.laneIndex : plan.senderIndex;
  std::vector<uint32_t> wordLanes;  // the lane part of the sender's word index
  for (uint32_t image : indexLanes) wordLanes.push_back(SqueezeBits(image, 1u << q));
  const bool dynamicDest = plan.DynamicDest();
  // Destination words pair elements e and e | 1 << p, when nothing converts them.
  const bool destWords = dynamicDest && !after;
  std::vector<uint32_t> destWordLanes;
  for (uint32_t image : plan.laneDestOffset) destWordLanes.push_back(SqueezeBits(image, 1u << p));
  const uint32_t destComponent = t.GlobalDef(destType)->Operand(0);
  const uint32_t destVar =
      !dynamicDest ? 0 : destWords ? b.Variable(t.UndecoratedArray(t.Uint(), b.U(plan.destLength / 2))) : b.Variable(destType);
  std::vector<uint32_t> received(plan.destLength, 0);
  for (uint32_t round = 0; round < plan.destLength; ++round) {
    if (round >> p & 1) continue;
    const uint32_t bt = static_cast<uint32_t>(Apply(plan.indexSource, round));
    const uint32_t k = static_cast<uint32_t>(Apply(indexLanes, bt) ^ Apply(plan.indexIndex, round));
    const uint32_t index = b.Xor(XorBits(b, fs.lane, wordLanes), b.U(SqueezeBits(k, 1u << q)));
    const uint32_t moved = plan.identityLanes
                               ? ShuffleXor(b, fetch(index), bt)
                               : Shuffle(b, fetch(index), b.Xor(XorBits(b, fs.lane, plan.laneSource), b.U(bt)));
    // Round `round` reads element k, round | 1 << p element k ^ 1 << q: the word's other half.
    const uint32_t half = k >> q & 1;
    if (destWords) {  // the word as received, its halves swapped where round's element is the high one
      const uint32_t destWord = b.Xor(XorBits(b, fs.lane, destWordLanes), b.U(SqueezeBits(round, 1u << p)));
      uint32_t stored = moved;
      if (half) {
        const uint32_t pair = b.Emit(spv::Op::OpBitcast, pairType, {moved});
        stored = pack(b.Emit(spv::Op::OpCompositeExtract, valueType, {pair, 1}),
                      b.Emit(spv::Op::OpCompositeExtract, valueType, {pair, 0}));
      }
      b.EmitVoid(spv::Op::OpStore, {b.ElementPointer(destVar, t.Uint(), destWord), stored});
      continue;
    }
    const uint32_t pair = b.Emit(spv::Op::OpBitcast, pairType, {moved});
    uint32_t mine = b.Emit(spv::Op::OpCompositeExtract, valueType, {pair, half});
    uint32_t partner = b.Emit(spv::Op::OpCompositeExtract, valueType, {pair, half ^ 1});
    if (after) mine = after(mine), partner = after(partner);
    received[round] = mine;
    received[round | 1u << p] = partner;
    if (dynamicDest) {
      for (uint32_t r : {round, round | 1u << p}) {
        const uint32_t destIndex = b.Xor(XorBits(b, fs.lane, plan.laneDestOffset), b.U(r));
        b.EmitVoid(spv::Op::OpStore, {b.ElementPointer(destVar, destComponent, destIndex), received[r]});
      }
    }
  }
  std::vector<uint32_t> elements = received;
  if (destWords) {
    for (uint32_t w = 0; w < plan.destLength / 2; ++w) {
      const uint32_t pair = b.Emit(spv::Op::OpBitcast, pairType, {b.Emit(spv::Op::OpLoad, t.Uint(), {b.ElementPointer(destVar, t.Uint(), b.U(w))})});
      const uint32_t low = SpreadBits(w, 1u << p);
      elements[low] = b.Emit(spv::Op::OpCompositeExtract, valueType, {pair, 0});
      elements[low | 1u << p] = b.Emit(spv::Op::OpCompositeExtract, valueType, {pair, 1});
    }
  } else if (dynamicDest) {
    return b.Emit(spv::Op::OpLoad, destType, {destVar}, resultId);
  }
  uint32_t result = 0;
  for (uint32_t r = 0; r < plan.destLength; ++r) {
    const bool last = r + 1 == plan.destLength;
    result = r == 0 ? b.Emit(spv::Op::OpCompositeConstruct, destType, {elements[r]}, last ? resultId : 0)
                    : b.Emit(spv::Op::OpCompositeInsert, destType, {elements[r], result, r}, last ? resultId : 0);
  }
  return result;
}

// SharedWordRounds where packing pays: a general shuffle (or a widened one) costs the
// same for one value as for a pair.
std::optional<std::pair<uint32_t, uint32_t>> SharedWords(const Context& c, const GatherPlan& plan, uint32_t valueType) {
  if (plan.exchanges || c.types.ScalarWidth(valueType) != 16 || !plan.NeedsShuffle()) return std::nullopt;
  if (plan.identityLanes && c.options.subgroupExtendedTypes) return std::nullopt;  // native 16-bit XOR shuffles fold into DPP
  return SharedWordRounds(plan);
}

}  // namespace

bool GatherSharesWords(const Context& c, const GatherPlan& plan, uint32_t valueType) {
  return SharedWords(c, plan, valueType).has_value();
}

uint32_t EmitGather(Builder& b, const FunctionState& fs, const GatherPlan& plan, const std::function<uint32_t(uint32_t)>& value,
                    uint32_t valueType, const std::function<uint32_t(uint32_t)>& after, uint32_t destType, uint32_t resultId,
                    bool pairedResult) {
  TypeManager& t = b.types();
  if (plan.exchanges) return EmitExchanges(b, fs, plan, value, valueType, after, destType, resultId, pairedResult);
  if (const auto shared = SharedWords(b.context(), plan, valueType))
    return EmitSharedWordGather(b, fs, plan, shared->first, shared->second, value, valueType, after, destType, resultId);
  ElementPicker fetch(b, plan.sourceLength, valueType, value);
  const bool dynamicDest = plan.DynamicDest();
  const uint32_t destVar = dynamicDest ? b.Variable(destType) : 0;
  const uint32_t destComponent = t.GlobalDef(destType)->Operand(0);
  uint32_t result = 0;
  for (uint32_t round = 0; round < plan.destLength; ++round) {
    const uint32_t bt = static_cast<uint32_t>(Apply(plan.indexSource, round));
    const uint32_t dt = static_cast<uint32_t>(Apply(plan.indexIndex, round));
    uint32_t v = 0;
    if (plan.identityLanes) {
      // Receiver = own lane ^ bt.
      const uint32_t index = b.Xor(XorBits(b, fs.lane, plan.laneIndex), b.U(static_cast<uint32_t>(Apply(plan.laneIndex, bt)) ^ dt));
      v = ShuffleXor(b, fetch(index), bt);
    } else {
      const uint32_t index =
          b.Xor(XorBits(b, fs.lane, plan.senderIndex), b.U(static_cast<uint32_t>(Apply(plan.senderIndex, bt)) ^ dt));
      const uint32_t sourceLane = b.Xor(XorBits(b, fs.lane, plan.laneSource), b.U(bt));
      v = Shuffle(b, fetch(index), sourceLane);
    }
    if (after) v = after(v);
    const bool last = round + 1 == plan.destLength;
    if (dynamicDest) {
      const uint32_t destIndex = b.Xor(XorBits(b, fs.lane, plan.laneDestOffset), b.U(round));
      b.EmitVoid(spv::Op::OpStore, {b.ElementPointer(destVar, destComponent, destIndex), v});
    } else if (round == 0) {
      result = b.Emit(spv::Op::OpCompositeConstruct, destType, {v}, last ? resultId : 0);
    } else {
      result = b.Emit(spv::Op::OpCompositeInsert, destType, {v, result, round}, last ? resultId : 0);
    }
  }
  if (dynamicDest) result = b.Emit(spv::Op::OpLoad, destType, {destVar}, resultId);
  return result;
}

}  // namespace coopmat
