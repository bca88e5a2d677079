// The exchange planner (see register.h, ExchangePlan): the cheapest sequence of
// swaps, replications, drops and lane swaps that gives every lane bit the coordinate
// bit the destination wants there. Index bits can be renamed for free (which register holds
// which element), so a state is only what each lane bit holds, and the index bits
// hold the rest; a shortest-path search over those states finds the plan.
#include <algorithm>
#include <bit>
#include <map>
#include <mutex>
#include <queue>
#include <unordered_map>

#include "register.h"

namespace coopmat {
namespace {

using Kind = ExchangeStage::Kind;
constexpr uint32_t kReplica = 0xF;  // a lane bit that holds no coordinate bit
constexpr uint32_t kMaxLaneBits = 7;
// States a search may expand before it gives up (the move keeps its other routes): a
// bound on the time a layout file's odd layouts can cost; the built-in pairs need
// hundreds at most.
constexpr size_t kMaxExpansions = 200000;

// A coordinate bit as a token: row bits first, then column bits; kReplica for a
// lane bit that maps to nothing, nullopt for one that maps to several.
std::optional<uint32_t> Token(const BitImage& image, uint32_t rowBits) {
  const uint32_t packed = image.rowMask | image.colMask << rowBits;
  if (packed == 0) return kReplica;
  if (std::popcount(packed) != 1) return std::nullopt;
  return static_cast<uint32_t>(std::countr_zero(packed));
}

// Lane bits' tokens, four bits each.
using State = uint32_t;
uint32_t LaneToken(State s, uint32_t j) { return s >> (4 * j) & 0xF; }
State WithLaneToken(State s, uint32_t j, uint32_t token) { return (s & ~(0xFu << (4 * j))) | token << (4 * j); }

struct Step {
  Kind kind;
  uint32_t laneBit, token;  // token: the index bit's coordinate taken (Swap, Drop); LaneSwap: the other lane bit
};

struct Visit {
  uint64_t cost;
  State parent;
  Step step;
};

std::optional<GatherPlan> Search(const LinearLayout* from, const LinearLayout* to, bool transpose, uint32_t valueBits,
                                 uint32_t foldedLaneBits) {
  const uint32_t rows = transpose ? to->key.cols : to->key.rows, cols = transpose ? to->key.rows : to->key.cols;
  if (rows != from->key.rows || cols != from->key.cols) return std::nullopt;
  const uint32_t laneBits = static_cast<uint32_t>(from->laneBits.size());
  const uint32_t rowBits = static_cast<uint32_t>(std::countr_zero(from->key.rows));
  const uint32_t tokens = rowBits + static_cast<uint32_t>(std::countr_zero(from->key.cols));
  if (laneBits > kMaxLaneBits || tokens >= kReplica || valueBits == 0 || valueBits > 32) return std::nullopt;

  // Both layouts as tokens; every coordinate bit exactly once in each.
  auto tokensOf = [&](const LinearLayout& layout, bool swap, State& lanes, std::vector<uint32_t>& index) {
    uint32_t seen = 0;
    for (uint32_t j = 0; j < laneBits; ++j) {
      const BitImage& image = layout.laneBits[j];
      const auto token = Token(swap ? BitImage{image.colMask, image.rowMask} : image, rowBits);
      if (!token) return false;
      lanes = WithLaneToken(lanes, j, *token);
      if (*token != kReplica && (seen >> *token & 1)) return false;
      if (*token != kReplica) seen |= 1u << *token;
    }
    for (const BitImage& image : layout.indexBits) {
      const auto token = Token(swap ? BitImage{image.colMask, image.rowMask} : image, rowBits);
      if (!token || *token == kReplica || (seen >> *token & 1)) return false;
      seen |= 1u << *token;
      index.push_back(*token);
    }
    return seen == (1u << tokens) - 1;
  };
  State source = 0, goal = 0;
  std::vector<uint32_t> sourceIndex, destIndex;
  if (!tokensOf(*from, false, source, sourceIndex) || !tokensOf(*to, transpose, goal, destIndex)) return std::nullopt;

  // Costs in instructions per lane, as ACO emits them: a swap is, per word, a select
  // of what to send, the exchange and two selects keeping what stays, or, across a
  // folded lane bit, both halves exchanged inside two selects; a replication is the
  // exchange and two selects per word, a drop a select per kept word.
  const uint32_t perWord = 32 / valueBits;
  const uint32_t maxElements = std::max(from->length, to->length);
  auto elementsOf = [&](State s) {
    uint32_t onLanes = 0;
    for (uint32_t j = 0; j < laneBits; ++j) onLanes += LaneToken(s, j) != kReplica;
    return 1u << (tokens - onLanes);
  };
  auto words = [&](uint32_t values) { return (values + perWord - 1) / perWord; };
  auto wordsSent = [&](const Step& step, uint32_t n) {
    const bool folded = foldedLaneBits >> step.laneBit & 1;
    if (step.kind == Kind::LaneSwap) return words(n);
    return step.kind == Kind::Swap ? (folded ? 2 : 1) * words(n / 2) : step.kind == Kind::Replicate ? words(n) : 0;
  };
  auto exchangeCost = [&](const Step& step, uint32_t n) -> uint64_t {
    switch (step.kind) {
      case Kind::Swap: return (foldedLaneBits >> step.laneBit & 1 ? 2 : 4) * words(n / 2);
      case Kind::Replicate: return 3 * words(n);
      case Kind::Drop: return words(n / 2);
      case Kind::LaneSwap: {
        // The exchange and a select per word, or the select alone with the exchange
        // folded in. Across bit 5 (two exchanges) both count, though AMD folds the
        // second: counted as folded, navi31 wave64's transposes Acc -> B took a lane swap
        // before their replications instead of after (ACO, lowering=registers: 107 / 72
        // -> 108 / 76 and 99 / 68 -> 101 / 72); counted so, they keep their plans and
        // gfx1201 wave64's A <-> Acc moves still take it (72 / 63 -> 60 / 53 for f16 A -> f32 Acc).
        const auto exchanges = LaneSwapExchanges(step.laneBit, step.token);
        const bool folded = exchanges.size() == 1 && (exchanges[0] & ~foldedLaneBits) == 0;
        return (folded ? 1 : 1 + exchanges.size()) * words(n);
      }
    }
    return 0;
  };

  // 8-bit values also cost their unpacking and repacking around each exchange (a
  // byte extract and insert per value: ACO has no 8-bit halves to select as for 16 bits).
  const uint32_t repack = perWord == 4 ? 6 : 0;
  auto costOf = [&](const Step& step, uint32_t n) -> uint64_t {
    return exchangeCost(step, n) + repack * wordsSent(step, n);
  };

  uint32_t goalIndex = (1u << tokens) - 1;
  for (uint32_t j = 0; j < laneBits; ++j)
    if (LaneToken(goal, j) != kReplica) goalIndex &= ~(1u << LaneToken(goal, j));
  // A* with half the number of wrong lane bits as the bound (a step costs 1 at least
  // and fixes two lane bits at most).
  auto bound = [&](State s) {
    uint64_t wrong = 0;
    for (uint32_t j = 0; j < laneBits; ++j) wrong += LaneToken(s, j) != LaneToken(goal, j);
    return (wrong + 1) / 2;
  };
  std::unordered_map<State, Visit> visits{{source, {0, source, {}}}};
  using Entry = std::pair<uint64_t, State>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> open;
  open.push({bound(source), source});
  bool found = false;
  size_t expanded = 0;
  while (!open.empty() && expanded < kMaxExpansions) {
    const State state = open.top().second;
    const uint64_t cost = visits[state].cost;
    const bool stale = open.top().first != cost + bound(state);
    open.pop();
    if (stale) continue;
    if (state == goal) {
      found = true;
      break;
    }
    ++expanded;
    const uint32_t n = elementsOf(state);
    uint32_t inIndex = (1u << tokens) - 1;
    for (uint32_t j = 0; j < laneBits; ++j)
      if (LaneToken(state, j) != kReplica) inIndex &= ~(1u << LaneToken(state, j));
    auto relax = [&](State next, Step step) {
      const uint64_t total = cost + costOf(step, n);
      auto [it, fresh] = visits.try_emplace(next, Visit{total, state, step});
      if (!fresh && it->second.cost <= total) return;
      it->second = {total, state, step};
      open.push({total + bound(next), next});
    };
    // Only steps toward the goal: a lane bit that is already right is never touched;
    // a wrong one takes its goal from the index bits, or, when that is held by
    // another lane bit (a cycle among lane bits), for a while one that stays in the
    // index bits in the destination; a lane
    // bit whose goal is a replica replicates.
    for (uint32_t j = 0; j < laneBits; ++j) {
      const uint32_t held = LaneToken(state, j), want = LaneToken(goal, j);
      if (held == want) continue;
      if (want == kReplica) {
        if (2 * n <= maxElements) relax(WithLaneToken(state, j, kReplica), {Kind::Replicate, j, 0});
        continue;
      }
      const Kind kind = held == kReplica ? Kind::Drop : Kind::Swap;
      if (inIndex >> want & 1) {
        relax(WithLaneToken(state, j, want), {kind, j, want});
        continue;
      }
      for (uint32_t t = 0; t < tokens; ++t)
        if ((inIndex >> t & 1) && (goalIndex >> t & 1)) relax(WithLaneToken(state, j, t), {kind, j, t});
    }
    // Two lane bits that hold each other's goal (or one the other's) trade in one stage.
    for (uint32_t j = 0; j < laneBits; ++j)
      for (uint32_t k = j + 1; k < laneBits; ++k) {
        const uint32_t a = LaneToken(state, j), z = LaneToken(state, k);
        if (a == z || (a != LaneToken(goal, k) && z != LaneToken(goal, j))) continue;
        relax(WithLaneToken(WithLaneToken(state, j, z), k, a), {Kind::LaneSwap, j, k});
      }
  }
  if (!found) return std::nullopt;

  // The path, then the index positions its steps reach.
  std::vector<Step> path;
  for (State s = goal; s != source; s = visits[s].parent) path.push_back(visits[s].step);
  std::reverse(path.begin(), path.end());
  ExchangePlan plan;
  std::vector<uint32_t> index = sourceIndex;
  State lanes = source;
  uint32_t n = from->length;
  auto position = [&](uint32_t token) {
    return static_cast<uint32_t>(std::find(index.begin(), index.end(), token) - index.begin());
  };
  for (const Step& step : path) {
    const uint32_t held = LaneToken(lanes, step.laneBit);
    // A swap of an 8-bit value's place bit within a lane's words: each word travels once,
    // then a rotation and a bitfield insert, nothing repacked (exchange_emit.cpp,
    // SwapWithinWord); the search counted it as a repacked swap.
    if (step.kind == Kind::Swap && SwapsWithinWords(perWord, position(step.token), n)) {
      plan.words += n / perWord;
      plan.cost += 3 * (n / perWord);
    } else {
      // A lane swap across bit 5 sends each word twice; it is repacked once.
      const size_t sends = step.kind == Kind::LaneSwap ? LaneSwapExchanges(step.laneBit, step.token).size() : 1;
      plan.words += static_cast<uint32_t>(sends) * wordsSent(step, n);
      plan.cost += static_cast<uint32_t>(costOf(step, n));
    }
    switch (step.kind) {
      case Kind::Swap: {
        const uint32_t k = position(step.token);
        plan.stages.push_back({Kind::Swap, step.laneBit, k});
        index[k] = held;
        break;
      }
      case Kind::Replicate:
        plan.stages.push_back({Kind::Replicate, step.laneBit, 0});
        index.push_back(held);
        n *= 2;
        break;
      case Kind::Drop: {
        const uint32_t k = position(step.token);
        plan.stages.push_back({Kind::Drop, step.laneBit, k});
        index.erase(index.begin() + k);
        n /= 2;
        break;
      }
      case Kind::LaneSwap:
        plan.stages.push_back({Kind::LaneSwap, step.laneBit, 0, step.token});
        lanes = WithLaneToken(WithLaneToken(lanes, step.laneBit, LaneToken(lanes, step.token)), step.token, held);
        continue;
    }
    lanes = WithLaneToken(lanes, step.laneBit, step.kind == Kind::Replicate ? kReplica : step.token);
  }
  if (n != to->length || index.size() != destIndex.size()) return std::nullopt;
  plan.foldedLaneBits = foldedLaneBits;
  for (uint32_t r = 0; r < to->length; ++r) {
    uint32_t e = 0;
    for (uint32_t k = 0; k < destIndex.size(); ++k)
      if (r >> k & 1) e |= 1u << position(destIndex[k]);
    plan.order.push_back(e);
  }
  GatherPlan gather;
  gather.laneBits = laneBits;
  gather.sourceLength = from->length;
  gather.destLength = to->length;
  gather.exchanges = std::move(plan);
  return gather;
}

}  // namespace

std::optional<GatherPlan> PlanExchanges(const LinearLayout* from, const LinearLayout* to, bool transpose, uint32_t valueBits,
                                        uint32_t foldedLaneBits) {
  if (!from || !to || from->key.subgroupSize != to->key.subgroupSize) return std::nullopt;
  // The same moves come back for every conversion of a module, every module and
  // pipeline: searched once per process (pipelines are made on many threads).
  std::vector<uint32_t> key{transpose, valueBits, foldedLaneBits, from->key.rows, from->key.cols, to->key.rows, to->key.cols};
  for (const LinearLayout* layout : {from, to}) {
    key.push_back(layout->length);
    for (const auto* bits : {&layout->laneBits, &layout->indexBits}) {
      key.push_back(static_cast<uint32_t>(bits->size()));
      for (const BitImage& image : *bits) key.insert(key.end(), {image.rowMask, image.colMask});
    }
  }
  static std::mutex mutex;
  static std::map<std::vector<uint32_t>, std::optional<GatherPlan>> plans;
  {
    std::lock_guard lock(mutex);
    if (auto it = plans.find(key); it != plans.end()) return it->second;
  }
  auto plan = Search(from, to, transpose, valueBits, foldedLaneBits);
  std::lock_guard lock(mutex);
  return plans.emplace(std::move(key), std::move(plan)).first->second;
}

}  // namespace coopmat
