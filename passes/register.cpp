// The register path's shared pieces (see register.h): layout lookup, linear bit
// arithmetic, shuffles, and the gather planner/emitter. The GF(2) algebra works
// on packed vectors: a slot is lane bits then index bits, a coordinate is row
// bits then column bits of the source layout.
#include "register.h"
#include "gf2.h"

#include <algorithm>
#include <bit>
#include <map>

namespace coopmat {
namespace {

uint32_t Log2(uint32_t v) { return static_cast<uint32_t>(std::countr_zero(v)); }

// The register path unrolls over the elements; longer matrices keep the scratch path.
constexpr uint32_t kMaxLength = 256;

// Applies a linear map given by per-bit images to x.
uint64_t Apply(const std::vector<uint32_t>& images, uint64_t x) {
  uint64_t out = 0;
  for (size_t k = 0; k < images.size(); ++k)
    if (x >> k & 1) out ^= images[k];
  return out;
}

// Projection of an index onto the representatives of the cosets of span(xors):
// clears the pivot bits of a reduced basis. Linear.
struct Projection {
  std::vector<std::pair<uint32_t, uint32_t>> basis;  // (pivot bit, vector), reduced
  explicit Projection(const std::vector<uint32_t>& xors) {
    for (uint32_t u : xors) {
      for (const auto& [p, v] : basis)
        if (u >> p & 1) u ^= v;
      if (!u) continue;
      const uint32_t p = 31 - static_cast<uint32_t>(std::countl_zero(u));
      for (auto& [q, v] : basis)
        if (v >> p & 1) v ^= u;
      basis.push_back({p, u});
    }
  }
  uint32_t operator()(uint32_t i) const {
    for (const auto& [p, v] : basis)
      if (i >> p & 1) i ^= v;
    return i;
  }
};

uint32_t VkComponentType(const TypeManager& t, uint32_t componentType, bool& ok) {
  // bfloat16 and fp8 included: their layouts are the 16- and 8-bit ones of the tables.
  const std::optional<uint32_t> type = t.VkComponentType(componentType);
  ok = type.has_value();
  return type.value_or(0);
}

bool HasCapability(const ir::Module& m, spv::Capability capability) {
  for (const ir::Instruction& cap : m.capabilities)
    if (cap.Operand(0) == static_cast<uint32_t>(capability)) return true;
  return false;
}

// The capability that arithmetic (conversions, subgroup operations) on this
// scalar type needs, or None for 32-bit types.
bool ArithmeticAllowed(const Context& c, uint32_t scalarType) {
  const TypeManager& t = c.types;
  const uint32_t width = t.ScalarWidth(scalarType);
  if (width == 32) return true;
  if (t.IsFloatType(scalarType)) return width == 16 && HasCapability(c.module, spv::Capability::Float16);
  if (t.IsIntType(scalarType)) {
    if (width == 8) return HasCapability(c.module, spv::Capability::Int8);
    if (width == 16) return HasCapability(c.module, spv::Capability::Int16);
  }
  return false;
}

uint32_t ShuffleOp(Builder& b, spv::Op op, uint32_t value, uint32_t operand) {
  Context& c = b.context();
  TypeManager& t = c.types;
  c.usesShuffle = true;
  const uint32_t type = t.TypeOf(value);
  const uint32_t scope = b.U(static_cast<uint32_t>(spv::Scope::Subgroup));
  if (t.ScalarWidth(type) == 32) return b.Emit(op, type, {scope, value, operand});
  if (t.ScalarWidth(type) == 16 && c.options.subgroupExtendedTypes) return b.Emit(op, type, {scope, value, operand});
  if (t.IsFloatType(type) && t.ScalarWidth(type) == 16) {
    // As the low half of a 32-bit word: a bit move, no f16<->f32 conversions (which
    // cost ACO two VALU ops per element and keep it from folding the shuffle into
    // the consumer as DPP).
    const uint32_t pair = t.Vector(type, 2);
    const uint32_t word = b.Emit(spv::Op::OpBitcast, t.Uint(), {b.Emit(spv::Op::OpCompositeConstruct, pair, {value, value})});
    const uint32_t shuffled = b.Emit(op, t.Uint(), {scope, word, operand});
    return b.Emit(spv::Op::OpCompositeExtract, type, {b.Emit(spv::Op::OpBitcast, pair, {shuffled}), 0});
  }
  // Other narrow values cross lanes as 32-bit ones (exact both ways).
  uint32_t wide = 0;
  spv::Op widen = spv::Op::OpFConvert, narrow = spv::Op::OpFConvert;
  if (t.IsFloatType(type)) {
    wide = t.Float(32);
  } else {
    const bool isSigned = t.IsSignedInt(type);
    wide = t.Int(32, isSigned);
    widen = narrow = isSigned ? spv::Op::OpSConvert : spv::Op::OpUConvert;
  }
  const uint32_t shuffled = b.Emit(op, wide, {scope, b.Emit(widen, wide, {value}), operand});
  return b.Emit(narrow, type, {shuffled});
}

}  // namespace

const LinearLayout* RegisterLayout(const Context& c, uint32_t componentType, uint32_t rowsId, uint32_t colsId, MatrixUse use) {
  if (c.options.layouts.empty()) return nullptr;
  bool ok = false;
  const uint32_t vkType = VkComponentType(c.types, componentType, ok);
  const auto rows = c.types.ConstantValue(rowsId), cols = c.types.ConstantValue(colsId);
  if (!ok || !rows || !cols) return nullptr;  // specialization constants are never matched
  // The size whose code is being emitted; with none chosen, only a single size can answer.
  uint32_t size = c.activeSubgroupSize;
  if (!size) {
    if (c.subgroupSizes.size() != 1) return nullptr;
    size = c.subgroupSizes.front();
  }
  const LinearLayout* found = nullptr;
  for (const LinearLayout& l : c.options.layouts) {
    const LayoutKey& k = l.key;
    if (k.componentType != vkType || k.use != static_cast<uint32_t>(use) || k.rows != *rows || k.cols != *cols ||
        k.subgroupSize != size)
      continue;
    if (!found) found = &l;
  }
  if (!found || found->length > kMaxLength || !ValidateLayout(*found).empty()) return nullptr;
  return found;
}

// The bits a value of XorBits(x, images) can have set.
uint32_t ImageBits(const std::vector<uint32_t>& images) {
  uint32_t bits = 0;
  for (uint32_t image : images) bits |= image;
  return bits;
}

uint32_t SqueezeBits(uint32_t e, uint32_t dropped) {
  uint32_t out = 0, k = 0;
  for (uint32_t bit = 0; bit < 32; ++bit) {
    if (dropped >> bit & 1) continue;
    out |= (e >> bit & 1) << k++;
  }
  return out;
}

uint32_t SpreadBits(uint32_t e, uint32_t skipped) {
  uint32_t out = 0, k = 0;
  for (uint32_t bit = 0; bit < 32 && (e >> k); ++bit) {
    if (skipped >> bit & 1) continue;
    out |= (e >> k++ & 1) << bit;
  }
  return out;
}

// XOR of two parts whose possible bits are disjoint is their sum; an OpIAdd lets the
// driver fold the coordinate into the app's arithmetic (row * 3 + col becomes one
// add of a constant per element, as in RADV's own lowering), an OpBitwiseXor does not.
uint32_t CombineParts(Builder& b, uint32_t a, uint32_t aBits, uint32_t c, uint32_t cBits) {
  return (aBits & cBits) == 0 ? b.Add(a, c) : b.Xor(a, c);
}

uint32_t XorBits(Builder& b, uint32_t x, const std::vector<uint32_t>& images, uint32_t valueBits) {
  if (auto constant = b.types().ConstantValue(x)) return b.U(static_cast<uint32_t>(Apply(images, *constant)));
  uint32_t result = b.U(0);
  uint32_t resultBits = 0;
  auto combine = [&](uint32_t part, uint32_t partBits) {
    result = CombineParts(b, result, resultBits, part, partBits);
    resultBits |= partBits;
  };
  // A run of bits that lands reversed on consecutive coordinate bits (GFX12 maps the
  // high lane bits to rows that way) is one OpBitReverse, as the driver's own address
  // code computes it, instead of a mask and shift per bit.
  std::vector<bool> done(images.size(), false);
  // Only single-bit images join a run: a zero or multi-bit one (target -1) must not
  // extend a run that has reached coordinate bit 0.
  auto target = [&](size_t k) { return std::popcount(images[k]) == 1 ? static_cast<int>(Log2(images[k])) : -1; };
  for (size_t k = 0; k < images.size(); ++k) {
    size_t n = 1;
    while (target(k) >= 0 && k + n < images.size() && target(k + n) >= 0 && target(k + n) == target(k) - static_cast<int>(n)) ++n;
    if (target(k) < 0 || n < 2) continue;
    const uint32_t reversed = b.Emit(spv::Op::OpBitReverse, b.types().Uint(), {b.ShiftRight(x, b.U(static_cast<uint32_t>(k)))});
    const uint32_t low = static_cast<uint32_t>(target(k)) - static_cast<uint32_t>(n - 1);
    combine(b.ShiftLeft(b.ShiftRight(reversed, b.U(static_cast<uint32_t>(32 - n))), b.U(low)), ((1u << n) - 1) << low);
    for (size_t i = k; i < k + n; ++i) done[i] = true;
    k += n - 1;
  }
  // Other single-bit images are grouped by how far they move: one mask and one shift per distance.
  std::map<int, uint32_t> byShift;
  for (size_t k = 0; k < images.size(); ++k) {
    const uint32_t image = images[k];
    if (!image || done[k]) continue;
    if (std::popcount(image) == 1) {
      byShift[static_cast<int>(Log2(image)) - static_cast<int>(k)] |= 1u << k;
      continue;
    }
    const uint32_t shifted = b.ShiftRight(x, b.U(static_cast<uint32_t>(k)));
    const uint32_t bit = (valueBits >> k) == 1 ? shifted : b.And(shifted, b.U(1));
    combine(b.Mul(bit, b.U(image)), image);
  }
  for (const auto& [shift, mask] : byShift) {
    // No mask where x cannot have the other bits or a shift drops them (the driver then
    // shares lane >> k with its own load addressing): x << s, x >> s, or (x >> low) << t
    // when the group is every bit of x from its lowest one up.
    const uint32_t stray = valueBits & ~mask;
    const uint32_t low = static_cast<uint32_t>(std::countr_zero(mask));
    const uint32_t targetBits = shift >= 0 ? mask << shift : mask >> -shift;
    uint32_t part;
    if (stray == 0 || (shift < 0 && (stray >> -shift) == 0))
      part = shift >= 0 ? b.ShiftLeft(x, b.U(static_cast<uint32_t>(shift))) : b.ShiftRight(x, b.U(static_cast<uint32_t>(-shift)));
    else if ((stray >> low) == 0)
      part = b.ShiftLeft(b.ShiftRight(x, b.U(low)), b.U(static_cast<uint32_t>(static_cast<int>(low) + shift)));
    else
      part = shift >= 0 ? b.ShiftLeft(b.And(x, b.U(mask)), b.U(static_cast<uint32_t>(shift)))
                        : b.ShiftRight(b.And(x, b.U(mask)), b.U(static_cast<uint32_t>(-shift)));
    combine(part, targetBits);
  }
  return result;
}

uint32_t RegisterCoordinate(Builder& b, const FunctionState& fs, const LinearLayout& l, uint32_t index, bool column) {
  std::vector<uint32_t> laneImages, indexImages;
  for (const BitImage& image : l.laneBits) laneImages.push_back(column ? image.colMask : image.rowMask);
  for (const BitImage& image : l.indexBits) indexImages.push_back(column ? image.colMask : image.rowMask);
  return CombineParts(b, XorBits(b, fs.lane, laneImages, l.key.subgroupSize - 1), ImageBits(laneImages),
                      XorBits(b, index, indexImages),
                      ImageBits(indexImages));
}

// bfloat16 and fp8 cross lanes as bits (EncodedShuffle) and convert with
// OpFConvert and friends, which their type capabilities allow.
bool CanShuffle(const Context& c, uint32_t scalarType) {
  return c.types.IsEncodedFloat(scalarType) || ArithmeticAllowed(c, scalarType);
}

bool CanConvertScalars(const Context& c, uint32_t from, uint32_t to) {
  auto allowed = [&](uint32_t type) { return c.types.IsEncodedFloat(type) || ArithmeticAllowed(c, type); };
  return allowed(from) && allowed(to);
}

uint32_t ShuffleXor(Builder& b, uint32_t value, uint32_t mask) {
  if (mask == 0) return value;
  auto shuffle = [&](uint32_t v) { return ShuffleOp(b, spv::Op::OpGroupNonUniformShuffleXor, v, b.U(mask)); };
  if (b.types().IsEncodedFloat(b.types().TypeOf(value))) return EncodedShuffle(b, value, shuffle);
  return shuffle(value);
}

std::vector<uint32_t> ShuffleXorAll(Builder& b, const std::vector<uint32_t>& values, uint32_t mask) {
  if (mask == 0 || values.empty()) return values;
  TypeManager& t = b.types();
  const uint32_t type = t.TypeOf(values[0]);
  std::vector<uint32_t> out;
  // 16-bit floats travel two per 32-bit shuffle (half the cross-lane moves), unless
  // the device shuffles f16 itself (shaderSubgroupExtendedTypes; never bfloat16).
  const bool half = t.IsFloatType(type) && t.ScalarWidth(type) == 16;
  if (!half || (!t.IsEncodedFloat(type) && b.context().options.subgroupExtendedTypes)) {
    for (uint32_t v : values) out.push_back(ShuffleXor(b, v, mask));
    return out;
  }
  b.context().usesShuffle = true;
  const uint32_t pair = t.Vector(type, 2);
  const uint32_t scope = b.U(static_cast<uint32_t>(spv::Scope::Subgroup));
  for (size_t i = 0; i < values.size(); i += 2) {
    const uint32_t second = i + 1 < values.size() ? values[i + 1] : values[i];
    const uint32_t word = b.Emit(spv::Op::OpBitcast, t.Uint(), {b.Emit(spv::Op::OpCompositeConstruct, pair, {values[i], second})});
    const uint32_t moved = b.Emit(spv::Op::OpBitcast, pair,
                                  {b.Emit(spv::Op::OpGroupNonUniformShuffleXor, t.Uint(), {scope, word, b.U(mask)})});
    out.push_back(b.Emit(spv::Op::OpCompositeExtract, type, {moved, 0}));
    if (i + 1 < values.size()) out.push_back(b.Emit(spv::Op::OpCompositeExtract, type, {moved, 1}));
  }
  return out;
}

uint32_t Shuffle(Builder& b, uint32_t value, uint32_t laneId) {
  auto shuffle = [&](uint32_t v) { return ShuffleOp(b, spv::Op::OpGroupNonUniformShuffle, v, laneId); };
  if (b.types().IsEncodedFloat(b.types().TypeOf(value))) return EncodedShuffle(b, value, shuffle);
  return shuffle(value);
}

// ---- Gather ---------------------------------------------------------------------

bool GatherPlan::NeedsShuffle() const {
  if (pairs) return true;
  if (!identityLanes) return true;
  return std::any_of(indexSource.begin(), indexSource.end(), [](uint32_t v) { return v != 0; });
}

bool GatherPlan::DynamicDest() const {
  if (pairs) return false;
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

namespace {

uint32_t EmitPairExchange(Builder& b, const FunctionState& fs, const GatherPlan& plan,
                          const std::function<uint32_t(uint32_t)>& value, uint32_t valueType,
                          const std::function<uint32_t(uint32_t)>& after, uint32_t destType, uint32_t resultId) {
  TypeManager& t = b.types();
  const PairExchange& x = *plan.pairs;
  if (t.ScalarWidth(valueType) != 16) Fail("internal error: a pair exchange moves 16-bit values");
  const uint32_t pairType = t.Vector(valueType, 2);
  // parity(lane & laneMask), once.
  const uint32_t masked = b.And(fs.lane, b.U(x.laneMask));
  const uint32_t odd = std::popcount(x.laneMask) == 1 ? masked : b.And(b.Emit(spv::Op::OpBitCount, t.Uint(), {masked}), b.U(1));
  const uint32_t parity = b.Emit(spv::Op::OpINotEqual, t.Bool(), {odd, b.U(0)});
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> words;  // word -> (own, partner's)
  std::map<std::pair<uint32_t, bool>, uint32_t> halves;     // (word, own when parity) -> the chosen pair
  uint32_t result = 0;
  for (uint32_t r = 0; r < plan.destLength; ++r) {
    const uint32_t w = x.word[r];
    if (!words.count(w)) {
      const uint32_t pair = b.Emit(spv::Op::OpCompositeConstruct, pairType, {value(2 * w), value(2 * w + 1)});
      const uint32_t own = b.Emit(spv::Op::OpBitcast, t.Uint(), {pair});
      words[w] = {own, ShuffleXor(b, own, x.distance)};
    }
    const auto key = std::make_pair(w, static_cast<bool>(x.ownWhenParity[r]));
    if (!halves.count(key)) {
      const auto [own, partner] = words[w];
      const uint32_t chosen = key.second ? b.Emit(spv::Op::OpSelect, t.Uint(), {parity, own, partner})
                                         : b.Emit(spv::Op::OpSelect, t.Uint(), {parity, partner, own});
      halves[key] = b.Emit(spv::Op::OpBitcast, pairType, {chosen});
    }
    uint32_t v = b.Emit(spv::Op::OpCompositeExtract, valueType, {halves[key], x.half[r]});
    if (after) v = after(v);
    // A cooperative matrix is constructed from one value (every element), then filled.
    const uint32_t id = r + 1 == plan.destLength ? resultId : 0;
    result = r == 0 ? b.Emit(spv::Op::OpCompositeConstruct, destType, {v}, plan.destLength == 1 ? resultId : 0)
                    : b.Emit(spv::Op::OpCompositeInsert, destType, {v, result, r}, id);
  }
  return result;
}

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
  if (plan.pairs || c.types.ScalarWidth(valueType) != 16 || !plan.NeedsShuffle()) return std::nullopt;
  if (plan.identityLanes && c.options.subgroupExtendedTypes) return std::nullopt;  // native 16-bit XOR shuffles fold into DPP
  return SharedWordRounds(plan);
}

}  // namespace

bool GatherSharesWords(const Context& c, const GatherPlan& plan, uint32_t valueType) {
  return SharedWords(c, plan, valueType).has_value();
}

uint32_t EmitGather(Builder& b, const FunctionState& fs, const GatherPlan& plan, const std::function<uint32_t(uint32_t)>& value,
                    uint32_t valueType, const std::function<uint32_t(uint32_t)>& after, uint32_t destType, uint32_t resultId) {
  TypeManager& t = b.types();
  if (const auto shared = SharedWords(b.context(), plan, valueType))
    return EmitSharedWordGather(b, fs, plan, shared->first, shared->second, value, valueType, after, destType, resultId);
  ElementPicker fetch(b, plan.sourceLength, valueType, value);
  const bool dynamicDest = plan.DynamicDest();
  const uint32_t destVar = dynamicDest ? b.Variable(destType) : 0;
  const uint32_t destComponent = t.GlobalDef(destType)->Operand(0);
  if (plan.pairs) return EmitPairExchange(b, fs, plan, value, valueType, after, destType, resultId);
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

std::optional<GatherPlan> PlanPairExchange(const LinearLayout* from, const LinearLayout* to, bool transpose) {
  if (!from || !to || from->key.subgroupSize != to->key.subgroupSize || from->length % 2 != 0) return std::nullopt;
  const uint32_t lanes = from->key.subgroupSize;
  // Where each coordinate lives in the source: one place each (no replicas).
  std::map<std::pair<uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>> home;
  for (uint32_t lane = 0; lane < lanes; ++lane)
    for (uint32_t index = 0; index < from->length; ++index) {
      const Coord c = from->CoordinateOf(lane, index);
      if (!home.emplace(std::make_pair(c.row, c.col), std::make_pair(lane, index)).second) return std::nullopt;
    }
  PairExchange x;
  std::vector<std::vector<bool>> partner(to->length, std::vector<bool>(lanes));
  for (uint32_t r = 0; r < to->length; ++r) {
    std::optional<uint32_t> index;
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      Coord c = to->CoordinateOf(lane, r);
      if (transpose) std::swap(c.row, c.col);
      const auto found = home.find({c.row, c.col});
      if (found == home.end()) return std::nullopt;
      const auto [sourceLane, sourceIndex] = found->second;
      if (index && *index != sourceIndex) return std::nullopt;  // the sender could not pick it alone
      index = sourceIndex;
      if (const uint32_t distance = sourceLane ^ lane) {
        if (x.distance && x.distance != distance) return std::nullopt;
        x.distance = distance;
        partner[r][lane] = true;
      }
    }
    x.word.push_back(*index / 2);
    x.half.push_back(*index % 2);
  }
  if (!x.distance) return std::nullopt;  // no lane crossing: the plain plan has no shuffle
  // partner[r][L] == parity(L & laneMask) ^ partner[r][0]: one mask for every element.
  for (uint32_t bit = 1; bit < lanes; bit <<= 1)
    if (partner[0][bit] != partner[0][0]) x.laneMask |= bit;
  for (uint32_t r = 0; r < to->length; ++r) {
    for (uint32_t lane = 0; lane < lanes; ++lane)
      if (partner[r][lane] != ((std::popcount(lane & x.laneMask) & 1) != static_cast<int>(partner[r][0]))) return std::nullopt;
    x.ownWhenParity.push_back(partner[r][0]);  // parity set flips it: own when the lane-0 choice was the partner
  }
  GatherPlan plan;
  plan.laneBits = Log2(lanes);
  plan.sourceLength = from->length;
  plan.destLength = to->length;
  plan.pairs = std::move(x);
  return plan;
}

bool HasRegisterLayouts(Context& c, const CoopMatType& type) {
  if (c.subgroupSizes.empty()) return false;
  return std::all_of(c.subgroupSizes.begin(), c.subgroupSizes.end(), [&](uint32_t size) {
    ActiveSubgroupSize active(c, size);
    return RegisterLayout(c, type) != nullptr;
  });
}

bool TakesRegisterPath(Context& c, const ir::Instruction& inst) {
  if (c.options.layouts.empty() || c.subgroupSizes.empty()) return false;
  if (auto it = c.registerPath.find(inst.resultId); it != c.registerPath.end()) return it->second;
  TypeManager& t = c.types;
  // Register code only when every size the pipeline may run with has its own.
  bool registers = true;
  for (uint32_t size : c.subgroupSizes) {
    ActiveSubgroupSize active(c, size);
    switch (inst.opcode) {
      case spv::Op::OpCooperativeMatrixGetCoordinateEXT:
      case spv::Op::OpCooperativeMatrixPerElementOpEXT: {
        auto type = t.CoopMatInfo(t.TypeOf(inst.Operand(0)));
        registers &= type && RegisterLayout(c, *type);
        break;
      }
      case spv::Op::OpCooperativeMatrixReduceEXT: registers &= CanLowerReduceInRegisters(c, inst); break;
      default: registers &= !ConversionUsesScratch(c, inst); break;
    }
    if (!registers) break;
  }
  return c.registerPath[inst.resultId] = registers;
}

bool ConversionInRegistersAtSomeSize(Context& c, const ir::Instruction& inst) {
  switch (inst.opcode) {
    case spv::Op::OpCooperativeMatrixGetCoordinateEXT:
    case spv::Op::OpCooperativeMatrixPerElementOpEXT:
    case spv::Op::OpCooperativeMatrixReduceEXT: return false;
    default: break;
  }
  if (c.options.layouts.empty() || c.subgroupSizes.size() < 2) return false;
  return std::any_of(c.subgroupSizes.begin(), c.subgroupSizes.end(), [&](uint32_t size) {
    ActiveSubgroupSize active(c, size);
    return !ConversionUsesScratch(c, inst);
  });
}

ir::Instruction NewVersion(Context& c, const ir::Instruction& inst) {
  ir::Instruction copy = inst;
  copy.resultId = c.module.TakeId();
  c.types.SetTypeOf(copy.resultId, inst.typeId);
  if (c.transposed.count(inst.resultId)) c.transposed.insert(copy.resultId);  // decorations follow the id
  CopySaturation(c, inst.resultId, copy.resultId);
  return copy;
}

void LowerForEachSubgroupSize(Builder& b, const ir::Instruction& inst,
                              const std::function<void(Builder&, const ir::Instruction&)>& lower,
                              const std::function<void(Builder&, const ir::Instruction&)>& unlisted) {
  Context& c = b.context();
  if (c.subgroupSizes.size() == 1) {
    ActiveSubgroupSize active(c, c.subgroupSizes.front());
    lower(b, inst);
    return;
  }
  // One version per size, chosen by SubgroupSize; each stores its result in a
  // Function variable the merge block loads (drivers promote it to registers).
  const uint32_t variable = b.Variable(inst.typeId);
  const uint32_t selector = LoadBuiltin(b, spv::BuiltIn::SubgroupSize);
  auto version = [&](uint32_t size, const std::function<void(Builder&, const ir::Instruction&)>& how) {
    ActiveSubgroupSize active(c, size);
    const ir::Instruction copy = NewVersion(c, inst);
    how(b, copy);
    b.EmitVoid(spv::Op::OpStore, {variable, copy.resultId});
  };
  LowerStats afterFirst;
  b.Switch(
      selector, c.subgroupSizes,
      [&](size_t k) {
        version(c.subgroupSizes[k], lower);
        if (k == 0) afterFirst = c.stats;
      },
      [&] { version(0, unlisted); });
  c.stats = afterFirst;  // one operation, however many versions
  b.Emit(spv::Op::OpLoad, inst.typeId, {variable}, inst.resultId);
}

std::vector<std::pair<uint32_t, uint32_t>> InRegisterReduceBasis(const std::vector<uint32_t>& indexXors) {
  std::vector<std::pair<uint32_t, uint32_t>> basis;  // (pivot, vector)
  for (uint32_t u : indexXors) {
    for (const auto& [p, w] : basis)
      if (u >> p & 1) u ^= w;
    if (!u) continue;
    const uint32_t p = 31 - static_cast<uint32_t>(std::countl_zero(u));
    for (auto& [q, w] : basis)
      if (w >> p & 1) w ^= u;
    basis.push_back({p, u});
  }
  return basis;
}

}  // namespace coopmat
