// The register path's shared pieces: which layout a matrix type has, bit
// arithmetic for linear maps of the lane id and the element index, subgroup
// shuffles of any component type, and the gather that moves elements between two
// register layouts (ConvertUse, transposes, placing reduction results).
//
// Everything here assumes full subgroups of the size whose code is being emitted
// (Context::activeSubgroupSize): with several sizes, LowerForEachSubgroupSize emits
// one version per size behind a switch on SubgroupSize (see lower.h).
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "lowering.h"

namespace coopmat {

// The register layout of a matrix type with exactly this component type, Use and
// constant dimensions, or null (no such layout, specialization-constant
// dimensions, an unmapped component type), at the active subgroup size; with none
// active, only when the pipeline has a single size.
const LinearLayout* RegisterLayout(const Context& c, uint32_t componentType, uint32_t rowsId, uint32_t colsId, MatrixUse use);
inline const LinearLayout* RegisterLayout(const Context& c, const CoopMatType& type) {
  if (!c.types.ConstantValue(type.useId)) return nullptr;  // a specialization-constant Use
  return RegisterLayout(c, type.componentType, type.rowsId, type.colsId, type.use);
}
// Sets the subgroup size whose register code is being planned or emitted, for a scope.
class ActiveSubgroupSize {
 public:
  ActiveSubgroupSize(Context& c, uint32_t size) : c_(c), saved_(c.activeSubgroupSize) { c.activeSubgroupSize = size; }
  ~ActiveSubgroupSize() { c_.activeSubgroupSize = saved_; }
  ActiveSubgroupSize(const ActiveSubgroupSize&) = delete;
  ActiveSubgroupSize& operator=(const ActiveSubgroupSize&) = delete;

 private:
  Context& c_;
  uint32_t saved_;
};

// Whether `type` has a register layout at every subgroup size the pipeline may run with.
bool HasRegisterLayouts(Context& c, const CoopMatType& type);

// XOR over the set bits k of the uint `x` of the constant images[k], as shift
// and mask arithmetic (folded when x is a constant); valueBits: the bits x can have set.
uint32_t XorBits(Builder& b, uint32_t x, const std::vector<uint32_t>& images, uint32_t valueBits = ~0u);
// Index e without the bits of the mask `dropped`, the higher bits moved down;
// SpreadBits is its inverse, with the `skipped` bits clear. Both linear in e.
uint32_t SqueezeBits(uint32_t e, uint32_t dropped);
uint32_t SpreadBits(uint32_t e, uint32_t skipped);
// Row (or column) of element `index` (a uint id) of the invocation: lane part XOR index part.
uint32_t RegisterCoordinate(Builder& b, const FunctionState& fs, const LinearLayout& layout, uint32_t index, bool column);

// A copy of `inst` under a fresh result id that keeps what the lowering reads from
// its decorations (transpose, saturation): another version of the same operation.
ir::Instruction NewVersion(Context& c, const ir::Instruction& inst);

// Lowers a register-path operation once per subgroup size the pipeline may run with:
// directly when there is one, else in an OpSwitch on the SubgroupSize built-in whose
// cases each hold one size's code (the result is carried through a Function variable).
// The switch's default, a size outside the list, holds `unlisted`'s code, lowered with
// no size active (so RegisterLayout finds no layout there).
void LowerForEachSubgroupSize(Builder& b, const ir::Instruction& inst,
                              const std::function<void(Builder&, const ir::Instruction&)>& lower,
                              const std::function<void(Builder&, const ir::Instruction&)>& unlisted);

// Whether values of this scalar type can cross lanes: 32-bit ones directly, 8- and
// 16-bit ones widened to 32 bits, which needs the module's Int8/Int16/Float16.
bool CanShuffle(const Context& c, uint32_t scalarType);
// Whether the module may convert between these scalar types (narrow types need
// their arithmetic capability).
bool CanConvertScalars(const Context& c, uint32_t from, uint32_t to);
// OpGroupNonUniformShuffleXor with a constant mask, or OpGroupNonUniformShuffle
// from the lane `laneId`; narrow values go through 32 bits.
uint32_t ShuffleXor(Builder& b, uint32_t value, uint32_t mask);
uint32_t Shuffle(Builder& b, uint32_t value, uint32_t laneId);
// ShuffleXor of every value (all of one type); 16-bit floats go two per 32-bit shuffle.
std::vector<uint32_t> ShuffleXorAll(Builder& b, const std::vector<uint32_t>& values, uint32_t mask);
// A bfloat16 or fp8 value across lanes as its bits (encoded_float.cpp): copies of
// it fill a 32-bit vector, OpBitcast to uint, `shuffle` moves the uint, and the
// value comes back out of the bitcast vector. No arithmetic, no Int8/Int16.
uint32_t EncodedShuffle(Builder& b, uint32_t value, const std::function<uint32_t(uint32_t)>& shuffle);

// A gather from a source register layout into a destination one, as rounds: in
// round t each invocation L fills its destination element M(L) ^ t with source
// element idx from lane src, where src = A(L) ^ B(t) and idx is computed by the
// sending lane for its receiver. Linear maps are kept as images of input bits.
// A register move as a few exchange stages between lanes L and L ^ (1 << laneBit),
// each a constant single-bit ShuffleXor (one DPP/permlane instruction on AMD) per
// word of moved values, never an index computed per lane. Every layout here maps
// single (lane, index) bits to single coordinate bits, so a move is a rearrangement
// of those bits between lane bits and index bits:
//   Swap:      lane bit and index bit `indexBit` trade coordinates: of each pair of
//              elements (e, e | 1 << indexBit) a lane keeps the one whose index bit
//              equals its lane bit and sends the other (half the elements travel).
//   Replicate: the lane bit's coordinate becomes a new top index bit and the lane
//              bit a replica: every element travels (GFX11's A/B replicas).
//   Drop:      a replica lane bit takes index bit `indexBit`'s coordinate: each lane
//              keeps the half of its elements its lane bit selects (no exchange).
//   LaneSwap:  lane bits `laneBit` and `otherLaneBit` trade coordinates: lanes whose
//              two bits differ exchange every word with lane L ^ both bits (a cycle
//              among lane bits in one stage; with bit 5, two exchanges in a row:
//              LaneSwapExchanges).
// Narrow values travel packed, two or four per 32-bit word. After the stages the
// destination element r is element order[r] (index bits renamed for free).
struct ExchangeStage {
  enum class Kind { Swap, Replicate, Drop, LaneSwap };
  Kind kind = Kind::Swap;
  uint32_t laneBit = 0;
  uint32_t indexBit = 0;      // Swap, Drop
  uint32_t otherLaneBit = 0;  // LaneSwap
};
// The exchanges of a lane swap of bits j and k (lanes L and L ^ both bits): one
// (DPP within 16 lanes, v_permlanex16 across them on AMD), or, with bit 5, the
// exchange across the halves of 64 lanes (v_permlane64) and then the other bit's:
// AMD has no single instruction for a mask with bit 5 and another (EmitExchanges).
inline std::vector<uint32_t> LaneSwapExchanges(uint32_t j, uint32_t k) {
  if (j != 5 && k != 5) return {1u << j | 1u << k};
  return {1u << 5, 1u << (j == 5 ? k : j)};
}

// Whether a swap stage moves 8-bit values within whole words (EmitExchanges'
// SwapWithinWord; the planner counts it so): a lane holds four values a word, in one or
// two words, so the halves a swap sends would each take a word of their own. Measured
// (gfx1201, 16x16, lowering=registers, instructions / inverse throughput): Acc f32 -> A
// e4m3 at wave64 110 / 116 with byte permutes, 90 / 88 with shifts and a select, 65 / 58
// with a rotation; at wave32 (two words) 89 / 100 -> 81 / 94 with the rotation (the shifts
// had cost more than they saved); with four words (navi31's replicated A u8) the repacking
// the next stages need costs more than the rotation saves (navi31 A u8 -> Acc u32 at wave32:
// 95 / 108 with repacking, 99 / 124 rotated; its two-word swaps at wave64 still cost 3 more,
// 86 / 83 -> 89 / 87, where the default route is the round trip).
inline bool SwapsWithinWords(uint32_t valuesPerWord, uint32_t indexBit, uint32_t elements) {
  return valuesPerWord == 4 && (elements == valuesPerWord || elements == 2 * valuesPerWord) && (1u << indexBit) < valuesPerWord;
}

struct ExchangePlan {
  std::vector<ExchangeStage> stages;
  std::vector<uint32_t> order;
  uint32_t words = 0;  // 32-bit words each lane sends, all stages together
  uint32_t cost = 0;   // the planned cost: instructions per lane, about (exchanges, selects, repacking)
  uint32_t foldedLaneBits = 0;  // LowerOptions::foldedShuffleLaneBits it was planned for
};

struct GatherPlan {
  uint32_t laneBits = 0;        // log2 subgroup size
  uint32_t sourceLength = 0;
  uint32_t destLength = 0;
  bool identityLanes = false;   // A == identity: one ShuffleXor per round (none when B(t) == 0)
  std::vector<uint32_t> laneSource;     // A: per destination lane bit, the source lane
  std::vector<uint32_t> laneIndex;      // C: per destination lane bit, the source index
  std::vector<uint32_t> laneDestOffset; // M: per destination lane bit, the destination index
  std::vector<uint32_t> indexSource;    // B: per destination index bit, the source lane
  std::vector<uint32_t> indexIndex;     // D: per destination index bit, the source index
  std::vector<uint32_t> senderIndex;    // when !identityLanes: C' with C'(A(L)) == C(L), per source lane bit
  std::optional<ExchangePlan> exchanges;  // set: the move is these stages instead of the rounds above
  bool NeedsShuffle() const;
  bool DynamicDest() const;
};

// Plans the gather: destination slot d must read a source slot whose coordinate,
// masked to keptRows/keptCols, is targets[bit] XORed over the set bits of d
// (destination lane bits first, then index bits). Source indices that differ by
// a vector of `indexXors` hold the same value (they were combined). Nullopt when
// no plan with one shuffle per round exists (the caller keeps the scratch path).
std::optional<GatherPlan> PlanGather(const LinearLayout& source, uint32_t keptRows, uint32_t keptCols,
                                     const std::vector<uint32_t>& indexXors, const LinearLayout& dest,
                                     const std::vector<BitImage>& targets);

// Whether EmitGather moves this plan's 16-bit values two per 32-bit shuffle: where
// two rounds read the same sending lane and elements of one packed pair there
// (one shuffle and one select per pair instead of per element).
bool GatherSharesWords(const Context& c, const GatherPlan& plan, uint32_t valueType);

// Emits the gather. value(i) returns source element i of this invocation (an id
// of `valueType`, the same id for indices that hold the same value); after(v),
// when set, converts each gathered value. The last instruction defines resultId
// (a new id when 0), of matrix type destType; returns it. `pairedResult`: the
// result is used as a matrix, so its 16-bit pairs should come out as whole words
// (false where the caller converts each element next).
uint32_t EmitGather(Builder& b, const FunctionState& fs, const GatherPlan& plan, const std::function<uint32_t(uint32_t)>& value,
                    uint32_t valueType, const std::function<uint32_t(uint32_t)>& after, uint32_t destType, uint32_t resultId,
                    bool pairedResult = true);

// What decided a conversion's route at the active subgroup size where its move has
// exchanges: their planned cost against the round trip's measured one (passes/costs.cpp).
struct MoveCosts {
  uint32_t exchanges = 0;             // ExchangePlan::cost, instructions per lane
  std::optional<uint32_t> roundTrip;  // LowerOptions::roundTripCost here; none where not measured
  bool taken = false;                 // the exchanges were taken; false: the round trip
};
// nullopt when the conversion `inst` has no exchange plan at the active subgroup size.
std::optional<MoveCosts> ConversionMoveCosts(Context& c, const ir::Instruction& inst);

// EmitGather's form for a plan with exchanges (exchange_emit.cpp).
uint32_t EmitExchanges(Builder& b, const FunctionState& fs, const GatherPlan& plan, const std::function<uint32_t(uint32_t)>& value,
                       uint32_t valueType, const std::function<uint32_t(uint32_t)>& after, uint32_t destType, uint32_t resultId,
                       bool pairedResult);

// The in-register steps of a reduction as a reduced XOR basis (pivot bit, vector),
// in application order: after the step with pivot p, the elements whose pivot bits
// are all clear hold the combination of their coset. Dependent xors are dropped.
std::vector<std::pair<uint32_t, uint32_t>> InRegisterReduceBasis(const std::vector<uint32_t>& indexXors);

// 2x2 reduce-scatter (LowerReduceInRegisters): after the recipe's in-register
// steps, lane step k combines across lane bit laneBit[k] only half of the live
// elements: of each pair (e, e | 1 << indexBit[k]) a lane keeps the one whose
// index bit equals its lane bit, at e, and sends the other (one shuffle per pair,
// not per element). The survivors, at the indices with every dropped bit clear,
// have the layout `scattered`: the source's with those index bits removed and
// lane bit laneBit[k] also moving by the image of indexBit[k]; Expand maps its
// index back to the source's. Needs single-bit lane steps and no replica lanes.
struct ReduceScatter {
  std::vector<uint32_t> laneBit, indexBit;
  uint32_t dropped = 0;             // mask of the indexBit values
  LinearLayout scattered;
  std::vector<uint32_t> indexXors;  // recipe.indexXors in the scattered index space
  uint32_t Expand(uint32_t scatteredIndex) const;
};
// The scatter and the placement of its survivors into `dest` (arguments as
// PlanGather's), or nullopt (then the caller keeps the all-reduce).
std::optional<std::pair<ReduceScatter, GatherPlan>> PlanReduceScatter(const LinearLayout& source, const ReductionRecipe& recipe,
                                                                      uint32_t keptRows, uint32_t keptCols,
                                                                      const LinearLayout& dest,
                                                                      const std::vector<BitImage>& targets);

// Moves between register layouts for conversions: the plan of a Use change (and
// transpose) from one matrix type to another, or nullopt.
std::optional<GatherPlan> PlanRegisterMove(const Context& c, const LinearLayout* from, const LinearLayout* to, bool transpose);
// The same move as exchange stages (ExchangePlan) of values `valueBits` wide, the
// cheapest, or nullopt (a layout bit that maps to several coordinate bits). Exchanges
// across `foldedLaneBits` send both elements of a pair (LowerOptions::foldedShuffleLaneBits).
std::optional<GatherPlan> PlanExchanges(const LinearLayout* from, const LinearLayout* to, bool transpose, uint32_t valueBits,
                                        uint32_t foldedLaneBits = 0);

}  // namespace coopmat
