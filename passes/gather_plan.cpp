// The gather planner (see register.h): which lane and element each destination
// element of a register move or reduction placement reads, solved as GF(2)-linear maps
// on packed vectors (a slot is lane bits then index bits, a coordinate is row bits then
// column bits of the source layout). Moves as exchange stages: exchange_plan.cpp.
#include "register.h"
#include "gf2.h"

#include <algorithm>
#include <bit>
#include <map>

namespace coopmat {
namespace {

using gf2::Apply;
using gf2::Log2;
using gf2::Projection;

}  // namespace

bool GatherPlan::NeedsShuffle() const {
  if (exchanges)
    return std::any_of(exchanges->stages.begin(), exchanges->stages.end(),
                       [](const ExchangeStage& s) { return s.kind != ExchangeStage::Kind::Drop; });
  if (!identityLanes) return true;
  return std::any_of(indexSource.begin(), indexSource.end(), [](uint32_t v) { return v != 0; });
}

bool GatherPlan::DynamicDest() const {
  if (exchanges) return false;
  return std::any_of(laneDestOffset.begin(), laneDestOffset.end(), [](uint32_t v) { return v != 0; });
}

std::optional<GatherPlan> PlanGather(const LinearLayout& source, uint32_t keptRows, uint32_t keptCols,
                                     const std::vector<uint32_t>& indexXors, const LinearLayout& dest,
                                     const std::vector<BitImage>& targets) {
  if (source.key.subgroupSize != dest.key.subgroupSize) return std::nullopt;
  const uint32_t Ls = Log2(source.key.subgroupSize), Is = Log2(source.length), Rs = Log2(source.key.rows);
  const uint32_t Id = Log2(dest.length);
  if (targets.size() != Ls + Id) return std::nullopt;
  const uint64_t laneMask = (uint64_t{1} << Ls) - 1;
  auto pack = [&](const BitImage& image) { return uint64_t{image.rowMask} | (uint64_t{image.colMask} << Rs); };
  const uint64_t kept = pack({keptRows & (source.key.rows - 1), keptCols & (source.key.cols - 1)});

  // P: source slot -> kept coordinate bits.
  gf2::Elimination p;
  for (uint32_t k = 0; k < Ls; ++k) p.Add(pack(source.laneBits[k]) & kept, uint64_t{1} << k);
  for (uint32_t k = 0; k < Is; ++k) p.Add(pack(source.indexBits[k]) & kept, uint64_t{1} << (Ls + k));
  p.Reduce();
  auto imageOf = [&](uint64_t slot) {
    uint64_t image = 0;
    for (uint32_t k = 0; k < Ls; ++k)
      if (slot >> k & 1) image ^= pack(source.laneBits[k]) & kept;
    for (uint32_t k = 0; k < Is; ++k)
      if (slot >> (Ls + k) & 1) image ^= pack(source.indexBits[k]) & kept;
    return image;
  };
  // The freedom: slots with the same kept coordinate (combined elements, replicas).
  std::vector<uint64_t> freedom{0};
  for (size_t k = 0; k < p.kernel.size() && k < 12; ++k) {
    const size_t n = freedom.size();
    for (size_t i = 0; i < n; ++i) freedom.push_back(freedom[i] ^ p.kernel[k]);
  }
  const Projection project(indexXors);
  auto lanePart = [&](uint64_t slot) { return static_cast<uint32_t>(slot & laneMask); };
  auto indexPart = [&](uint64_t slot) { return project(static_cast<uint32_t>(slot >> Ls)); };

  std::vector<uint64_t> solutions;  // particular solutions per destination bit
  for (const BitImage& target : targets) {
    const uint64_t t = pack(target) & kept;
    if (pack(target) != t) return std::nullopt;  // a target outside the kept bits: not a plan this can make
    const uint64_t s = p.Preimage(t);
    if (imageOf(s) != t) return std::nullopt;
    solutions.push_back(s);
  }

  GatherPlan plan;
  plan.laneBits = Ls;
  plan.sourceLength = source.length;
  plan.destLength = dest.length;
  // Destination index bits: prefer a source in the same lane.
  for (uint32_t k = 0; k < Id; ++k) {
    uint64_t best = solutions[Ls + k];
    for (uint64_t w : freedom)
      if (lanePart(solutions[Ls + k] ^ w) == 0) {
        best = solutions[Ls + k] ^ w;
        break;
      }
    plan.indexSource.push_back(lanePart(best));
    plan.indexIndex.push_back(indexPart(best));
  }
  // Destination lane bits: a source slot, plus a destination index offset m that
  // moves the source by B(m), D(m). Prefer the receiver's own lane bit (then the
  // lanes map by XOR), static indices, and otherwise a bijective lane map.
  struct Choice {
    uint32_t lane, index, offset;
  };
  const uint64_t combos = uint64_t{dest.length} * freedom.size();
  const uint32_t offsets = combos > (1u << 16) ? std::max<uint32_t>(1, static_cast<uint32_t>((1u << 16) / freedom.size())) : dest.length;
  auto candidates = [&](uint32_t j, const std::function<bool(const Choice&)>& accept) -> std::optional<Choice> {
    std::optional<Choice> best;
    int bestScore = 1 << 20;
    for (uint32_t m = 0; m < std::min(offsets, dest.length); ++m) {
      const uint32_t bm = static_cast<uint32_t>(Apply(plan.indexSource, m));
      const uint32_t dm = static_cast<uint32_t>(Apply(plan.indexIndex, m));
      for (uint64_t w : freedom) {
        const uint64_t s = solutions[j] ^ w;
        const Choice choice{lanePart(s) ^ bm, indexPart(s) ^ dm, m};
        if (!accept(choice)) continue;
        const int score = (choice.lane != (1u << j) ? 4 : 0) + (m != 0 ? 1 : 0) + (choice.index != 0 ? 1 : 0);
        if (score < bestScore) {
          bestScore = score;
          best = choice;
        }
      }
    }
    return best;
  };
  std::vector<Choice> chosen;
  bool identity = true;
  for (uint32_t j = 0; j < Ls && identity; ++j) {
    auto c = candidates(j, [&](const Choice& ch) { return ch.lane == (1u << j); });
    if (c) chosen.push_back(*c);
    else identity = false;
  }
  if (!identity) {
    chosen.clear();
    gf2::Elimination lanes;
    for (uint32_t j = 0; j < Ls; ++j) {
      auto c = candidates(j, [&](const Choice& ch) { return lanes.Independent(ch.lane); });
      if (!c) c = candidates(j, [](const Choice&) { return true; });
      if (!c) return std::nullopt;
      lanes.Add(c->lane, uint64_t{1} << j);
      chosen.push_back(*c);
    }
  }
  for (const Choice& c : chosen) {
    plan.laneSource.push_back(c.lane);
    plan.laneIndex.push_back(c.index);
    plan.laneDestOffset.push_back(c.offset);
  }
  plan.identityLanes = identity;
  if (!identity) {
    // The sender computes the index for its receiver: needs C constant on the
    // receivers that share a sender (ker A within ker C), then C' = C o A^-1.
    gf2::Elimination a;
    for (uint32_t j = 0; j < Ls; ++j) a.Add(plan.laneSource[j], uint64_t{1} << j);
    for (uint64_t x : a.kernel)
      if (Apply(plan.laneIndex, x) != 0) return std::nullopt;
    a.Reduce();
    plan.senderIndex.assign(Ls, 0);
    for (const auto& [bit, row] : a.pivot) plan.senderIndex[bit] = static_cast<uint32_t>(Apply(plan.laneIndex, row.input));
  }
  return plan;
}

std::optional<GatherPlan> PlanRegisterMove(const Context&, const LinearLayout* from, const LinearLayout* to, bool transpose) {
  if (!from || !to || from->key.subgroupSize != to->key.subgroupSize) return std::nullopt;
  const uint32_t rows = transpose ? to->key.cols : to->key.rows, cols = transpose ? to->key.rows : to->key.cols;
  if (rows != from->key.rows || cols != from->key.cols) return std::nullopt;
  std::vector<BitImage> targets;
  auto add = [&](const BitImage& image) {
    targets.push_back(transpose ? BitImage{image.colMask, image.rowMask} : image);
  };
  for (const BitImage& image : to->laneBits) add(image);
  for (const BitImage& image : to->indexBits) add(image);
  return PlanGather(*from, ~0u, ~0u, {}, *to, targets);
}

}  // namespace coopmat
