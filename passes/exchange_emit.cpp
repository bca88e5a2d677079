// Emits an ExchangePlan (see register.h): each stage's values packed into 32-bit
// words, the words chosen per lane with selects, one ShuffleXor with a constant
// single-bit mask per word sent, and the received words kept with selects. The
// selects work on uint words, so they are legal for every component type
// (bfloat16 and fp8 included) and cost one instruction per word, not per element.
#include "register.h"

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>

namespace coopmat {
namespace {

using Kind = ExchangeStage::Kind;

class WordPacker {
 public:
  WordPacker(Builder& b, uint32_t valueType) : b_(b), valueType_(valueType) {
    TypeManager& t = b.types();
    perWord_ = 32 / t.ScalarWidth(valueType);
    if (perWord_ > 1) vectorType_ = t.Vector(valueType, perWord_);
  }
  uint32_t PerWord() const { return perWord_; }
  // values (at most PerWord()) as one uint; a short group repeats its first value.
  // Values unpacked from one word, in its order, are that word again (no repacking
  // between stages that pair the same elements).
  uint32_t Pack(std::vector<uint32_t> values) {
    TypeManager& t = b_.types();
    if (perWord_ == 1) return valueType_ == t.Uint() ? values[0] : b_.Emit(spv::Op::OpBitcast, t.Uint(), {values[0]});
    if (values.size() == perWord_) {
      const auto first = unpackedFrom_.find(values[0]);
      bool same = first != unpackedFrom_.end();
      for (uint32_t i = 0; same && i < perWord_; ++i) {
        const auto it = unpackedFrom_.find(values[i]);
        same = it != unpackedFrom_.end() && it->second == std::make_pair(first->second.first, i);
      }
      if (same) return first->second.first;
    }
    values.resize(perWord_, values[0]);
    const uint32_t vector = b_.Emit(spv::Op::OpCompositeConstruct, vectorType_, values);
    // Signed 8/16-bit vectors through a signed word: GLSL's pack32 of an i8vec4 is an
    // int (SPIRV-Cross writes it so, and glslang rejects it as a uint).
    if (t.IsSignedInt(valueType_)) return b_.Emit(spv::Op::OpBitcast, t.Uint(), {b_.Emit(spv::Op::OpBitcast, t.Int(32, true), {vector})});
    return b_.Emit(spv::Op::OpBitcast, t.Uint(), {vector});
  }
  std::vector<uint32_t> Unpack(uint32_t word, size_t count) {
    TypeManager& t = b_.types();
    if (perWord_ == 1) return {valueType_ == t.Uint() ? word : b_.Emit(spv::Op::OpBitcast, valueType_, {word})};
    const uint32_t vector = t.IsSignedInt(valueType_)
                                ? b_.Emit(spv::Op::OpBitcast, vectorType_, {b_.Emit(spv::Op::OpBitcast, t.Int(32, true), {word})})
                                : b_.Emit(spv::Op::OpBitcast, vectorType_, {word});
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < count; ++i) {
      out.push_back(b_.Emit(spv::Op::OpCompositeExtract, valueType_, {vector, i}));
      unpackedFrom_[out.back()] = {word, i};
    }
    return out;
  }

 private:
  Builder& b_;
  uint32_t valueType_, perWord_ = 1, vectorType_ = 0;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> unpackedFrom_;  // value -> (word, component)
};

// Which index bit each stage's words pair 16-bit values along (~0u: none, words of
// consecutive elements), as the fewest values repacked: a word whose pair differs from
// the one the previous stage left (the source's are consecutive elements, and a 16-bit
// destination's its pairs (2i, 2i + 1)) is rebuilt, a v_perm_b32 or v_swap_b16 per two
// words on AMD. Returns the values repacked and the bits; `stages` may be any order of
// the plan's.
std::pair<uint64_t, std::vector<uint32_t>> PairBits(const std::vector<ExchangeStage>& stages, uint32_t sourceLength,
                                                    std::optional<uint32_t> destinationPair) {
  constexpr uint32_t kNone = ~0u;
  if (!std::has_single_bit(sourceLength)) return {0, std::vector<uint32_t>(stages.size(), kNone)};
  std::map<uint32_t, uint64_t> best{{0u, 0}};  // the pair bit the words leave a stage with -> values repacked so far
  std::vector<std::map<uint32_t, uint32_t>> previous(stages.size());
  uint32_t n = sourceLength;
  for (size_t s = 0; s < stages.size(); ++s) {
    const ExchangeStage& stage = stages[s];
    const uint32_t bits = static_cast<uint32_t>(std::countr_zero(n));
    // A drop groups the elements it keeps: its pair bit counts without the dropped one.
    const uint32_t groupBits = stage.kind == Kind::Drop ? bits - 1 : bits;
    std::map<uint32_t, uint64_t> next;
    auto arrive = [&](uint32_t pair, uint32_t before) {
      for (const auto [left, cost] : best) {
        const uint64_t total = cost + (before != kNone && before == left ? 0 : n);
        auto [it, fresh] = next.try_emplace(pair, total);
        if (fresh || total < it->second) {
          it->second = total;
          previous[s][pair] = left;
        }
      }
    };
    for (uint32_t pair = 0; pair < groupBits; ++pair)
      if (stage.kind != Kind::Swap || pair != stage.indexBit)
        arrive(pair, stage.kind == Kind::Drop && pair >= stage.indexBit ? pair + 1 : pair);
    if (next.empty()) arrive(kNone, kNone);
    best = std::move(next);
    n = stage.kind == Kind::Replicate ? 2 * n : stage.kind == Kind::Drop ? n / 2 : n;
  }
  uint32_t last = best.begin()->first;
  uint64_t least = ~uint64_t{0};
  for (const auto [pair, cost] : best) {
    const uint64_t total = cost + (destinationPair && pair != *destinationPair ? n : 0);
    if (total < least) least = total, last = pair;
  }
  std::vector<uint32_t> bits(stages.size());
  for (size_t s = stages.size(); s-- > 0;) {
    bits[s] = last;
    last = previous[s][last];
  }
  return {least, bits};
}

// The stages in the order they are emitted, and their pair bits (PairBits). Swaps in a
// row on distinct lane and index bits commute, and a swap cannot pair along its own
// index bit; so a run of them takes the order that repacks least (gfx1201 wave32 A f16
// -> Acc f32: the swap of the source's pair bit last, one repacking instead of two).
std::pair<std::vector<ExchangeStage>, std::vector<uint32_t>> PackingOrder(const ExchangePlan& x, uint32_t sourceLength,
                                                                          uint32_t perWord, bool destinationPacked) {
  std::vector<ExchangeStage> stages = x.stages;
  if (perWord != 2) return {stages, std::vector<uint32_t>(stages.size(), ~0u)};
  std::optional<uint32_t> destinationPair;
  if (destinationPacked && x.order.size() >= 2) destinationPair = static_cast<uint32_t>(std::countr_zero(x.order[1] ^ x.order[0]));
  auto [least, bits] = PairBits(stages, sourceLength, destinationPair);
  constexpr size_t kMaxRun = 6;  // 720 orders
  for (size_t begin = 0; begin < stages.size(); ++begin) {
    size_t end = begin;
    uint32_t lanes = 0, indices = 0;
    while (end < stages.size() && end - begin < kMaxRun && stages[end].kind == Kind::Swap &&
           !(lanes >> stages[end].laneBit & 1) && !(indices >> stages[end].indexBit & 1)) {
      lanes |= 1u << stages[end].laneBit;
      indices |= 1u << stages[end].indexBit;
      ++end;
    }
    if (end - begin < 2) continue;
    const std::vector<ExchangeStage> run(stages.begin() + static_cast<std::ptrdiff_t>(begin),
                                         stages.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<size_t> order(run.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::vector<ExchangeStage> trial = stages, chosen = stages;
    while (std::next_permutation(order.begin(), order.end())) {
      for (size_t i = 0; i < run.size(); ++i) trial[begin + i] = run[order[i]];
      auto [cost, trialBits] = PairBits(trial, sourceLength, destinationPair);
      if (cost < least) least = cost, bits = std::move(trialBits), chosen = trial;
    }
    stages = std::move(chosen);
    begin = end - 1;
  }
  return {stages, bits};
}

// The elements of `all` (ascending) in groups of `perWord` that differ in `pairBit`
// where it is one of their free bits, else consecutive.
std::vector<std::vector<uint32_t>> Groups(const std::vector<uint32_t>& all, uint32_t perWord, uint32_t pairBit) {
  std::vector<std::vector<uint32_t>> groups;
  const bool paired = perWord == 2 && pairBit < 32 &&
                      std::all_of(all.begin(), all.end(), [&](uint32_t e) {
                        return std::find(all.begin(), all.end(), e ^ (1u << pairBit)) != all.end();
                      });
  if (paired) {
    for (uint32_t e : all)
      if (!(e >> pairBit & 1)) groups.push_back({e, e | 1u << pairBit});
    return groups;
  }
  for (size_t g = 0; g < all.size(); g += perWord)
    groups.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(g),
                        all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), g + perWord)));
  return groups;
}

// 0, 1, ..., count - 1.
std::vector<uint32_t> Elements(uint32_t count) {
  std::vector<uint32_t> all(count);
  std::iota(all.begin(), all.end(), 0u);
  return all;
}

// A swap stage whose index bit `k` is a place bit within the words of four 8-bit values a
// lane holds (SwapsWithinWords; elements 4w..4w+3 are word w): each word travels whole,
// and a lane keeps its values whose place bit equals its lane bit and takes the
// partner's others, rotated by one place stride into the places it sent from (one
// rotation by a lane-dependent amount, v_alignbit_b32, and a bitfield insert, v_bfi_b32),
// where packing each half into a word of its own took byte permutes.
std::vector<uint32_t> SwapWithinWord(Builder& b, WordPacker& packer, const std::vector<uint32_t>& v, uint32_t k,
                                     uint32_t laneMask, uint32_t laneBitSet) {
  TypeManager& t = b.types();
  const uint32_t perWord = packer.PerWord(), width = 32 / perWord, shift = width * k;
  uint32_t clearPlaces = 0;  // the places whose bit k is clear
  for (uint32_t p = 0; p < perWord; ++p)
    if (!(p & k)) clearPlaces |= ((1u << width) - 1) << (p * width);
  const uint32_t keep = b.Emit(spv::Op::OpSelect, t.Uint(), {laneBitSet, b.U(~clearPlaces), b.U(clearPlaces)});
  const uint32_t take = b.Emit(spv::Op::OpNot, t.Uint(), {keep});
  // A lane whose bit is clear takes the partner's clear places into its set ones (a
  // rotation up by the stride); one whose bit is set, the partner's set places down; the
  // places that wrap around are ones the lane keeps.
  const uint32_t right = b.Emit(spv::Op::OpSelect, t.Uint(), {laneBitSet, b.U(shift), b.U(32 - shift)});
  const uint32_t left = b.Emit(spv::Op::OpISub, t.Uint(), {b.U(32), right});  // the form compilers take for a rotation
  std::vector<uint32_t> next;
  for (size_t w = 0; w < v.size(); w += perWord) {
    const uint32_t word = packer.Pack(std::vector<uint32_t>(v.begin() + static_cast<std::ptrdiff_t>(w),
                                                            v.begin() + static_cast<std::ptrdiff_t>(w + perWord)));
    const uint32_t partner = ShuffleXor(b, word, laneMask);
    const uint32_t moved = b.Or(b.ShiftRight(partner, right), b.ShiftLeft(partner, left));
    const std::vector<uint32_t> values = packer.Unpack(b.Or(b.And(keep, word), b.And(take, moved)), perWord);
    next.insert(next.end(), values.begin(), values.end());
  }
  return next;
}

}  // namespace

uint32_t EmitExchanges(Builder& b, const FunctionState& fs, const GatherPlan& plan, const std::function<uint32_t(uint32_t)>& value,
                       uint32_t valueType, const std::function<uint32_t(uint32_t)>& after, uint32_t destType, uint32_t resultId,
                       bool pairedResult) {
  TypeManager& t = b.types();
  const ExchangePlan& x = *plan.exchanges;
  WordPacker packer(b, valueType);
  const uint32_t perWord = packer.PerWord();
  // Whether lane bit j is set, and clear: a select whose chosen-when-clear operand is
  // the exchanged word takes the exchange as its DPP operand on AMD, so each select
  // is written with the exchanged word there.
  std::map<std::pair<uint32_t, bool>, uint32_t> laneBitIs;
  auto laneBit = [&](uint32_t j, bool set) {
    auto [it, fresh] = laneBitIs.try_emplace({j, set}, 0);
    if (fresh)
      it->second = b.Emit(set ? spv::Op::OpINotEqual : spv::Op::OpIEqual, t.Bool(), {b.And(fs.lane, b.U(1u << j)), b.U(0)});
    return it->second;
  };
  auto select = [&](uint32_t condition, uint32_t ifTrue, uint32_t ifFalse) {
    return b.Emit(spv::Op::OpSelect, t.Uint(), {condition, ifTrue, ifFalse});
  };
  auto pack = [&](const std::vector<uint32_t>& values, const std::vector<uint32_t>& elements, uint32_t offset = 0) {
    std::vector<uint32_t> ids;
    for (uint32_t e : elements) ids.push_back(values[e | offset]);
    return packer.Pack(ids);
  };
  const auto [stages, pairBits] = PackingOrder(x, plan.sourceLength, perWord, pairedResult && !after);
  std::vector<uint32_t> v;
  for (uint32_t i = 0; i < plan.sourceLength; ++i) v.push_back(value(i));
  for (size_t s = 0; s < stages.size(); ++s) {
    const ExchangeStage& stage = stages[s];
    const uint32_t mask = 1u << stage.laneBit;
    const uint32_t n = static_cast<uint32_t>(v.size());
    std::vector<uint32_t> next;
    switch (stage.kind) {
      case Kind::Swap: {
        // Pairs (e, e | K): a lane whose bit is set keeps e | K and sends e, the other
        // keeps e and sends e | K; each receives into the place it sent from. Across a
        // folded lane bit both travel, each exchange inside the select that keeps it.
        const uint32_t k = 1u << stage.indexBit;
        const uint32_t set = laneBit(stage.laneBit, true);
        if (SwapsWithinWords(perWord, stage.indexBit, n)) {
          next = SwapWithinWord(b, packer, v, k, mask, set);
          break;
        }
        const bool folded = x.foldedLaneBits >> stage.laneBit & 1;
        const uint32_t clear = laneBit(stage.laneBit, false);
        std::vector<uint32_t> low;
        for (uint32_t e = 0; e < n; ++e)
          if (!(e & k)) low.push_back(e);
        next = v;
        for (const auto& group : Groups(low, perWord, pairBits[s])) {
          const uint32_t lowWord = pack(v, group), highWord = pack(v, group, k);
          uint32_t newLow = 0, newHigh = 0;
          if (folded) {
            newLow = select(clear, lowWord, ShuffleXor(b, highWord, mask));
            newHigh = select(set, highWord, ShuffleXor(b, lowWord, mask));
          } else {
            const uint32_t received = ShuffleXor(b, select(set, lowWord, highWord), mask);
            newLow = select(clear, lowWord, received);
            newHigh = select(set, highWord, received);
          }
          const auto newLows = packer.Unpack(newLow, group.size());
          const auto newHighs = packer.Unpack(newHigh, group.size());
          for (size_t i = 0; i < group.size(); ++i) {
            next[group[i]] = newLows[i];
            next[group[i] | k] = newHighs[i];
          }
        }
        break;
      }
      case Kind::Replicate: {
        // Element e with the new top bit equal to the lane bit is this lane's own.
        const uint32_t set = laneBit(stage.laneBit, true), clear = laneBit(stage.laneBit, false);
        next.resize(2 * n);
        for (const auto& group : Groups(Elements(n), perWord, pairBits[s])) {
          const uint32_t word = pack(v, group);
          const uint32_t received = ShuffleXor(b, word, mask);
          const auto whenClear = packer.Unpack(select(clear, word, received), group.size());
          const auto whenSet = packer.Unpack(select(set, word, received), group.size());
          for (size_t i = 0; i < group.size(); ++i) {
            next[group[i]] = whenClear[i];
            next[n + group[i]] = whenSet[i];
          }
        }
        break;
      }
      case Kind::LaneSwap: {
        // Lanes whose two bits differ take every word from lane L ^ both bits; the
        // received word is the select's when-false operand, where AMD folds it (DPP).
        // With bit 5 the word crosses the halves of 64 lanes first (v_permlane64), then
        // the other bit: AMD has no single instruction for that mask.
        const uint32_t differ = b.And(b.Xor(b.ShiftRight(fs.lane, b.U(stage.laneBit)), b.ShiftRight(fs.lane, b.U(stage.otherLaneBit))),
                                      b.U(1));
        const uint32_t same = b.Emit(spv::Op::OpIEqual, t.Bool(), {differ, b.U(0)});
        next.resize(n);
        for (const auto& group : Groups(Elements(n), perWord, pairBits[s])) {
          const uint32_t word = pack(v, group);
          uint32_t received = word;
          for (uint32_t exchange : LaneSwapExchanges(stage.laneBit, stage.otherLaneBit)) received = ShuffleXor(b, received, exchange);
          const auto kept = packer.Unpack(select(same, word, received), group.size());
          for (size_t i = 0; i < group.size(); ++i) next[group[i]] = kept[i];
        }
        break;
      }
      case Kind::Drop: {
        // Keep the elements whose index bit equals the lane bit; the bit is removed.
        const uint32_t k = 1u << stage.indexBit;
        const uint32_t set = laneBit(stage.laneBit, true);
        next.resize(n / 2);
        for (const auto& group : Groups(Elements(n / 2), perWord, pairBits[s])) {
          std::vector<uint32_t> inputs;
          for (uint32_t e : group) inputs.push_back(SpreadBits(e, k));
          const auto kept = packer.Unpack(select(set, pack(v, inputs, k), pack(v, inputs)), group.size());
          for (size_t i = 0; i < group.size(); ++i) next[group[i]] = kept[i];
        }
        break;
      }
    }
    v = std::move(next);
  }
  uint32_t result = 0;
  for (uint32_t r = 0; r < plan.destLength; ++r) {
    uint32_t element = v[x.order[r]];
    if (after) element = after(element);
    const bool last = r + 1 == plan.destLength;
    result = r == 0 ? b.Emit(spv::Op::OpCompositeConstruct, destType, {element}, last ? resultId : 0)
                    : b.Emit(spv::Op::OpCompositeInsert, destType, {element, result, r}, last ? resultId : 0);
  }
  return result;
}

}  // namespace coopmat
