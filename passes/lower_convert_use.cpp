// Conversions that change Use (OpCooperativeMatrixConvertUseEXT, the relaxed
// Op*Convert forms) and transposes (decoration CooperativeMatrixTransposeEXT).
// KHR can only convert component types between matrices of the same Use, so a
// Use change becomes a round trip through the scratch slice: store row-major,
// load with the target Use (column-major for a transpose). When the component
// type changes too, the conversion happens either on an intermediate matrix in
// registers, when the driver is known to support that intermediate type, or on
// the scalars in the scratch, which declares no matrix type the module lacks.
#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <set>

#include "register.h"

namespace coopmat {
namespace {

bool SameComponentOrSignedness(TypeManager& t, uint32_t a, uint32_t b) {
  if (a == b) return true;
  return t.IsIntType(a) && t.IsIntType(b) && t.ScalarWidth(a) == t.ScalarWidth(b);
}

// The scratch accesses one lane makes to store or load a matrix of `layout` in the
// given order (ACO, NAK and llvmpipe merge a lane's consecutive addresses into one
// access of up to 16 bytes): the element index bits decide which address bits a lane's
// elements vary in; a run of consecutive addresses covers the low ones. None when the
// layout mixes bits or the dimensions are not powers of two.
std::optional<uint32_t> ScratchAccesses(const LinearLayout& layout, bool columnMajor, uint32_t bytes) {
  const uint32_t rows = layout.key.rows, cols = layout.key.cols;
  if (!std::has_single_bit(rows) || !std::has_single_bit(cols)) return std::nullopt;
  const uint32_t rowShift = columnMajor ? 0 : std::countr_zero(cols), colShift = columnMajor ? std::countr_zero(rows) : 0;
  uint32_t addressBits = 0;
  for (const BitImage& image : layout.indexBits) {
    if (std::popcount(image.rowMask) + std::popcount(image.colMask) != 1) return std::nullopt;
    addressBits |= image.rowMask ? image.rowMask << rowShift : image.colMask << colShift;
  }
  const uint32_t runBits = static_cast<uint32_t>(std::countr_one(addressBits));
  // ACO holds an 8-bit B matrix's elements one per 16-bit half: a merged access of them
  // costs a repacking instruction per two bytes, more than single-byte accesses (navi31
  // wave64: Acc s32 -> B s8 58 inverse throughput with single-byte loads, 70 merged; the
  // transpose 56 and 72; B s8 -> Acc s32 64 and 76; A's bytes merge at no such cost).
  if (bytes == 1 && layout.key.use == kUseB) {
    const uint32_t elements = 1u << std::popcount(addressBits);
    return elements + (runBits ? elements / 2 : 0);
  }
  const uint32_t runs = 1u << (std::popcount(addressBits) - runBits);
  return runs * std::max(1u, ((1u << runBits) * bytes + 15) / 16);
}

// Whether a round trip's scratch should hold the matrix column-major: where the lanes'
// stores of `from` (nullopt: not stored by a matrix store) and loads of `to` (column-major
// when the order and the transpose differ) make fewer accesses so, as the register layouts
// say; row-major where they are unknown, equal, or the columns would not be whole words.
bool ScratchColumnMajor(Context& c, const std::optional<CoopMatType>& from, const CoopMatType& to, bool transpose) {
  const auto rows = c.types.ConstantValue(transpose ? to.colsId : to.rowsId);
  if (!rows || (*rows * to.componentBytes) % 4 != 0 || (from && (*rows * from->componentBytes) % 4 != 0)) return false;
  auto accesses = [&](bool columnMajor) -> std::optional<uint32_t> {
    uint32_t total = 0;
    if (from) {
      const LinearLayout* layout = RegisterLayout(c, *from);
      const auto n = layout ? ScratchAccesses(*layout, columnMajor, from->componentBytes) : std::nullopt;
      if (!n) return std::nullopt;
      total += *n;
    }
    const LinearLayout* layout = RegisterLayout(c, to);
    const auto n = layout ? ScratchAccesses(*layout, columnMajor != transpose, to.componentBytes) : std::nullopt;
    if (!n) return std::nullopt;
    return total + *n;
  };
  // Code shared by several subgroup sizes: the accesses at all of them.
  std::vector<uint32_t> sizes{c.activeSubgroupSize};
  if (!c.activeSubgroupSize && c.subgroupSizes.size() > 1) sizes = c.subgroupSizes;
  auto total = [&](bool columnMajor) -> std::optional<uint32_t> {
    uint32_t sum = 0;
    for (uint32_t size : sizes) {
      ActiveSubgroupSize active(c, size);
      const auto n = accesses(columnMajor);
      if (!n) return std::nullopt;
      sum += *n;
    }
    return sum;
  };
  const auto rowMajor = total(false), columnMajor = total(true);
  return rowMajor && columnMajor && *columnMajor < *rowMajor;
}

// Stores `value` (of `from`) and loads it as `to`, in the order ScratchColumnMajor picks;
// `resultId` names the load.
uint32_t RoundTrip(Builder& b, FunctionState& fs, uint32_t value, const CoopMatType& from, const CoopMatType& to,
                   bool transpose, uint32_t resultId = 0) {
  Scratch& scratch = b.context().scratch;
  const bool columnMajor = ScratchColumnMajor(b.context(), from, to, transpose);
  const uint32_t stride = scratch.StoreMatrix(b, fs, value, from, columnMajor);
  // A load in the other order reads the transpose.
  return scratch.LoadMatrix(b, fs, to, transpose != columnMajor, stride, resultId);
}

CoopMatType MakeType(Context& c, uint32_t component, uint32_t scope, uint32_t rows, uint32_t cols, MatrixUse use) {
  TypeManager& t = c.types;
  auto info = t.CoopMatInfo(t.CoopMat(component, scope, rows, cols, t.UintConstant(static_cast<uint32_t>(use))));
  if (!info) Fail("internal error: cannot make a cooperative matrix type");
  return *info;
}

constexpr uint32_t kSaturateDecoration = static_cast<uint32_t>(spv::Decoration::SaturatedToLargestFloat8NormalConversionEXT);

// Whether the conversion `id` carries the fp8 saturation decoration (decoration groups included).
bool Saturates(const Context& c, uint32_t id) {
  for (const ir::AppliedDecoration& d : ir::FindDecorations(c.module, static_cast<spv::Decoration>(kSaturateDecoration)))
    if (d.target == id) return true;
  return false;
}

// Emits conversion `op`; a saturating (fp8) conversion passes its decoration on to
// every instruction that now does the converting.
uint32_t Convert(Builder& b, spv::Op op, uint32_t type, uint32_t operand, bool saturate, uint32_t resultId = 0) {
  const uint32_t id = b.Emit(op, type, {operand}, resultId);
  if (saturate && op != spv::Op::OpBitcast)
    b.context().module.annotations.emplace_back(spv::Op::OpDecorate, 0, 0, std::vector<uint32_t>{id, kSaturateDecoration});
  return id;
}

// Element `position` (a number) of the uint `word` holding elements of `type`, lowest
// address first. Integers come back as a 32-bit uint, sign- or zero-extended; floats as
// the component type.
uint32_t Widen(Builder& b, const CoopMatType& type, uint32_t word, uint32_t position, bool signExtend) {
  TypeManager& t = b.types();
  if (type.componentFloat) {
    if (type.componentBytes == 4) return b.Emit(spv::Op::OpBitcast, type.componentType, {word});
    const uint32_t elements = b.Emit(spv::Op::OpBitcast, t.Vector(type.componentType, 4 / type.componentBytes), {word});
    return b.Emit(spv::Op::OpCompositeExtract, type.componentType, {elements, position});
  }
  if (type.componentBytes == 4) return word;
  const uint32_t bits = 8 * type.componentBytes;
  if (!signExtend) return b.And(position ? b.ShiftRight(word, b.U(position * bits)) : word, b.U((1u << bits) - 1));
  const uint32_t up = 32 - bits - position * bits;  // the element's sign bit to bit 31
  const uint32_t top = up ? b.ShiftLeft(word, b.U(up)) : word;
  return b.Emit(spv::Op::OpShiftRightArithmetic, t.Uint(), {top, b.U(32 - bits)});
}

// The conversion `op` of element `position` of the source's `word`, in 32-bit
// integer arithmetic wherever an integer is involved, so no 8/16-bit integer scalar
// (and so no Int8/Int16 arithmetic) is needed. Integer results are the low bits of a
// uint (PackConverted truncates them only where the module allows it); float results
// have the destination type.
uint32_t ConvertScalar(Builder& b, spv::Op op, const CoopMatType& from, uint32_t word, uint32_t position,
                       const CoopMatType& to, bool saturate) {
  TypeManager& t = b.types();
  const uint32_t int32 = t.Int(32, true);
  auto widen = [&](bool signExtend) { return Widen(b, from, word, position, signExtend); };
  switch (op) {
    case spv::Op::OpUConvert: return widen(false);
    case spv::Op::OpSConvert: return widen(true);
    case spv::Op::OpConvertUToF: return Convert(b, op, to.componentType, widen(false), saturate);
    case spv::Op::OpConvertSToF:
      return Convert(b, op, to.componentType, b.Emit(spv::Op::OpBitcast, int32, {widen(true)}), saturate);
    case spv::Op::OpConvertFToU: return b.Emit(op, t.Uint(), {widen(false)});
    case spv::Op::OpConvertFToS: return b.Emit(spv::Op::OpBitcast, t.Uint(), {b.Emit(op, int32, {widen(false)})});
    case spv::Op::OpFConvert: return Convert(b, op, to.componentType, widen(false), saturate);
    default: Fail(std::string("internal error: unexpected conversion ") + spv::OpToString(op));
  }
}

// One word of the destination from ConvertScalar's results (4 / componentBytes of them).
uint32_t PackConverted(Builder& b, const CoopMatType& to, const std::vector<uint32_t>& parts) {
  if (to.componentFloat && to.componentBytes < 4) return PackVector(b, to.componentType, parts);
  if (to.componentFloat) return b.Emit(spv::Op::OpBitcast, b.types().Uint(), {parts[0]});
  if (to.componentBytes == 4) return parts[0];
  const uint32_t bits = 8 * to.componentBytes;
  // Where the module may do 8/16-bit integer arithmetic, the parts truncated and
  // packed as a vector: ACO packs that with byte permutes (v_perm_b32, 3 instructions
  // for 4 bytes where the masks and shifts below take 5).
  if (ArithmeticAllowed(b.context(), to.componentType)) {
    const spv::Op truncate = b.types().IsSignedInt(to.componentType) ? spv::Op::OpSConvert : spv::Op::OpUConvert;
    std::vector<uint32_t> narrowed;
    for (uint32_t part : parts) narrowed.push_back(b.Emit(truncate, to.componentType, {part}));
    return PackVector(b, to.componentType, narrowed);
  }
  uint32_t word = 0;
  for (uint32_t j = 0; j < parts.size(); ++j) {
    const uint32_t part = b.ShiftLeft(b.And(parts[j], b.U((1u << bits) - 1)), b.U(j * bits));
    word = j ? b.Or(word, part) : part;
  }
  return word;
}

// Converts component type and Use through the scratch, with scalar conversions
// only, in one region the size of the wider of the two matrices: the source goes
// into the slice (row-major, or column-major where ScratchColumnMajor says the
// lanes' accesses are fewer so), at its end when the destination's elements are
// wider; the destination is written from the start of the slice in the source's
// order and loaded from there (in the other order for a transpose). Each lane
// converts a group of elements that fills whole words on both sides (so elements
// packed into one word have one writer, and a word is read once). Group g's
// destination words overwrite only source words that groups up to g read, so a
// round of groups (one per lane) reads, waits at a barrier, then writes; rounds
// before it have read what it overwrites.
void ConvertInScratch(Builder& b, FunctionState& fs, const ir::Instruction& inst, const CoopMatType& from,
                      const CoopMatType& to, bool transpose, bool saturate) {
  TypeManager& t = b.types();
  Context& c = b.context();
  Scratch& scratch = c.scratch;
  // The region holds the source's shape in one order (ScratchColumnMajor), the
  // destination in `to`'s element size: element k of one is element k of the other.
  const bool columnMajor = ScratchColumnMajor(c, from, to, transpose);
  const uint32_t destStride = columnMajor ? scratch.StrideWords(b, from.rowsId, to.componentBytes, to.id)
                                          : scratch.StrideWords(b, from.colsId, to.componentBytes, to.id);
  const uint32_t widening = to.componentBytes > from.componentBytes ? to.componentBytes - from.componentBytes : 0;
  scratch.Require(from, widening);
  const uint32_t elements = b.Mul(from.rowsId, from.colsId);
  const uint32_t firstSourceWord = widening ? b.Div(b.Mul(elements, b.U(widening)), b.U(4)) : 0;
  scratch.StoreMatrix(b, fs, inst.operands[0], from, columnMajor, firstSourceWord);

  const uint32_t group = 4 / std::min(from.componentBytes, to.componentBytes);
  const uint32_t sourceWords = group * from.componentBytes / 4, destWords = group * to.componentBytes / 4;
  const uint32_t sourcePerWord = 4 / from.componentBytes, destPerWord = 4 / to.componentBytes;
  const uint32_t groups = b.Div(elements, b.U(group));
  // Every lane runs every round (the barrier needs the whole subgroup); a lane past the
  // last group reads group 0 and writes nothing. That test is left out where every size
  // the code runs at divides the groups: the one it is emitted for, else the pipeline's
  // (none known in the per-size switch's default, which runs at sizes it did not list).
  const std::vector<uint32_t> sizes = c.activeSubgroupSize       ? std::vector<uint32_t>{c.activeSubgroupSize}
                                      : c.atUnlistedSubgroupSize ? std::vector<uint32_t>{}
                                                                 : c.options.subgroupSizes;
  const auto constantGroups = t.ConstantValue(groups);
  const bool everyLaneWrites = constantGroups && !sizes.empty() &&
                               std::all_of(sizes.begin(), sizes.end(), [&](uint32_t size) { return *constantGroups % size == 0; });
  b.Loop(b.U(0), groups, fs.subgroupSize, [&](uint32_t round) {
    uint32_t g = b.Add(round, fs.lane);
    const uint32_t inRange = everyLaneWrites ? 0 : b.Emit(spv::Op::OpULessThan, t.Bool(), {g, groups});
    if (inRange) g = b.Emit(spv::Op::OpSelect, t.Uint(), {inRange, g, b.U(0)});
    std::vector<uint32_t> source;
    for (uint32_t i = 0; i < sourceWords; ++i) {
      const uint32_t word = b.Add(b.Mul(g, b.U(sourceWords)), b.U(i));
      source.push_back(scratch.LoadWord(b, fs, firstSourceWord ? b.Add(firstSourceWord, word) : word));
    }
    std::vector<uint32_t> converted;
    for (uint32_t j = 0; j < group; ++j)
      converted.push_back(ConvertScalar(b, inst.opcode, from, source[j / sourcePerWord], j % sourcePerWord, to, saturate));
    std::vector<uint32_t> packed;
    for (uint32_t d = 0; d < destWords; ++d)
      packed.push_back(PackConverted(
          b, to, std::vector<uint32_t>(converted.begin() + d * destPerWord, converted.begin() + (d + 1) * destPerWord)));
    scratch.Barrier(b);
    auto write = [&] {
      for (uint32_t d = 0; d < destWords; ++d) scratch.StoreWord(b, fs, b.Add(b.Mul(g, b.U(destWords)), b.U(d)), packed[d]);
    };
    if (!inRange) return write();
    b.Switch(b.Emit(spv::Op::OpSelect, t.Uint(), {inRange, b.U(1), b.U(0)}), {1}, [&](size_t) { write(); }, [] {});
  });
  scratch.Barrier(b);
  scratch.LoadMatrix(b, fs, to, transpose != columnMajor, destStride, inst.resultId);
}

// ---- Choosing a route ------------------------------------------------------------

enum class Route {
  Move,             // the component type stays (up to signedness): move the Use only
  ConvertThenMove,  // KHR conversion to an intermediate of the source's Use, then move
  MoveThenConvert,  // move to an intermediate of the source's component type, then KHR conversion
  Scalars,          // move and convert each element as a scalar
};

struct Strategy {
  Route route = Route::Move;
  uint32_t midComponent = 0, midRows = 0, midCols = 0;  // the intermediate (Convert*/Move* routes)
  MatrixUse midUse = MatrixUse::Accumulator;
  std::optional<GatherPlan> registers;  // the route's move in registers; none: the scratch
  std::optional<MoveCosts> moveCosts;  // the last exchange plan's costs and whether it was taken
  bool UsesScratch() const { return !registers; }
};

bool SignednessOnly(TypeManager& t, uint32_t a, uint32_t b) {
  return a != b && t.IsIntType(a) && t.IsIntType(b) && t.ScalarWidth(a) == t.ScalarWidth(b);
}

// What the Workgroup round trip costs at the plan's subgroup size (LowerOptions::roundTripCost).
std::optional<uint32_t> RoundTripCost(const Context& c, const GatherPlan& plan) {
  const auto it = c.options.roundTripCost.find(1u << plan.laneBits);
  if (it == c.options.roundTripCost.end()) return std::nullopt;
  return it->second;
}

// A register move's plan when the shuffled values can cross lanes; `shuffled` is
// the scalar type that moves. `costs` says what decided where exchanges were planned
// (a plan without them clears it).
std::optional<GatherPlan> MovePlan(const Context& c, const LinearLayout* from, const LinearLayout* to, bool transpose,
                                   uint32_t shuffled, std::optional<MoveCosts>& costs) {
  auto plan = PlanRegisterMove(c, from, to, transpose);
  if (!plan || !plan->NeedsShuffle()) {
    if (plan) costs.reset();
    return plan;
  }
  if (!CanShuffle(c, shuffled)) return std::nullopt;
  // A move that is a few exchanges of packed words between lanes one bit apart
  // (constant XOR shuffles, DPP/permlane on AMD) instead of a shuffle with a
  // computed lane per element; where it costs more than the round trip measured on
  // this family, the round trip (unless the shared-memory budget wants registers).
  if (auto exchanges = PlanExchanges(from, to, transpose, c.types.ScalarWidth(shuffled), c.options.foldedShuffleLaneBits)) {
    const auto roundTrip = RoundTripCost(c, *exchanges);
    const uint32_t cost = exchanges->exchanges->cost;
    costs = MoveCosts{cost, roundTrip, c.options.registerMovesWithShuffles || !roundTrip || cost <= *roundTrip};
    if (costs->taken) return exchanges;
    return std::nullopt;
  }
  if (!c.options.registerMovesWithShuffles) return std::nullopt;
  costs.reset();
  return plan;
}

Strategy Choose(Context& c, const ir::Instruction& inst, const CoopMatType& from, const CoopMatType& to, bool transpose) {
  TypeManager& t = c.types;
  Strategy s;
  const LinearLayout* fromLayout = RegisterLayout(c, from);
  const LinearLayout* toLayout = RegisterLayout(c, to);
  const bool sameComponent = SameComponentOrSignedness(t, from.componentType, to.componentType);
  if (inst.opcode == spv::Op::OpCooperativeMatrixConvertUseEXT || (sameComponent && t.IsIntType(from.componentType))) {
    s.route = Route::Move;
    // A signedness change is a bitcast of each element.
    if (from.componentType == to.componentType || CanConvertScalars(c, from.componentType, to.componentType))
      s.registers = MovePlan(c, fromLayout, toLayout, transpose, from.componentType, s.moveCosts);
    return s;
  }
  // A specialization-constant Use is not known here: no intermediate matrix can be
  // declared for it, so the elements convert one by one through the scratch.
  if (!t.ConstantValue(from.useId) || !t.ConstantValue(to.useId)) {
    s.route = Route::Scalars;
    return s;
  }
  auto intermediate = [&](Route route, uint32_t component, uint32_t rows, uint32_t cols, MatrixUse use) {
    s.route = route;
    s.midComponent = component;
    s.midRows = rows;
    s.midCols = cols;
    s.midUse = use;
    const LinearLayout* mid = RegisterLayout(c, component, rows, cols, use);
    if (route == Route::ConvertThenMove) s.registers = MovePlan(c, mid, toLayout, transpose, to.componentType, s.moveCosts);
    else s.registers = MovePlan(c, fromLayout, mid, transpose, from.componentType, s.moveCosts);
  };
  if (from.use == MatrixUse::Accumulator && c.IsSupportedMatrix(to.componentType, from.rowsId, from.colsId, MatrixUse::Accumulator)) {
    intermediate(Route::ConvertThenMove, to.componentType, from.rowsId, from.colsId, MatrixUse::Accumulator);
  } else if (from.use == MatrixUse::Accumulator && c.IsSupportedMatrix(from.componentType, to.rowsId, to.colsId, to.use)) {
    intermediate(Route::MoveThenConvert, from.componentType, to.rowsId, to.colsId, to.use);
  } else if (from.use != MatrixUse::Accumulator &&
             c.IsSupportedMatrix(from.componentType, from.rowsId, from.colsId, MatrixUse::Accumulator)) {
    intermediate(Route::MoveThenConvert, from.componentType, from.rowsId, from.colsId, MatrixUse::Accumulator);
  } else if (from.use != MatrixUse::Accumulator && c.IsSupportedMatrix(to.componentType, from.rowsId, from.colsId, from.use)) {
    intermediate(Route::ConvertThenMove, to.componentType, from.rowsId, from.colsId, from.use);
  } else {
    s.route = Route::Scalars;
  }
  if (s.registers) return s;
  // Element-wise conversion during a register move, when the module may convert the
  // scalars; exchanges move the narrower of the two types (RegisterMove converts first
  // when that is the destination's).
  if (CanConvertScalars(c, from.componentType, to.componentType)) {
    const uint32_t narrower = t.ScalarWidth(to.componentType) < t.ScalarWidth(from.componentType) ? to.componentType : from.componentType;
    if (auto plan = MovePlan(c, fromLayout, toLayout, transpose, narrower, s.moveCosts)) {
      s.route = Route::Scalars;
      s.registers = plan;
    }
  }
  return s;
}

// Moves `value` of type `from` into a `to` matrix in registers; `convert`, when
// not OpNop, converts each element (OpBitcast for a signedness change), before the
// move or after it as `early` below says. `convertedNext`: the caller converts the
// result's elements (EmitGather's pairedResult).
uint32_t RegisterMove(Builder& b, const FunctionState& fs, uint32_t value, const CoopMatType& from, const CoopMatType& to,
                      const GatherPlan& plan, spv::Op convert, uint32_t resultId, bool saturate = false,
                      bool convertedNext = false) {
  TypeManager& t = b.types();
  // Exchanges move the narrower type (packed words); a gather converts narrow sources
  // to 32 bits before they cross lanes.
  const uint32_t fromWidth = t.ScalarWidth(from.componentType), toWidth = t.ScalarWidth(to.componentType);
  const bool early = convert != spv::Op::OpNop && (plan.exchanges ? toWidth < fromWidth : fromWidth < 32 && toWidth == 32);
  std::map<uint32_t, uint32_t> extracted;
  auto element = [&](uint32_t i) {
    auto it = extracted.find(i);
    if (it != extracted.end()) return it->second;
    uint32_t v = b.Emit(spv::Op::OpCompositeExtract, from.componentType, {value, i});
    if (early) v = Convert(b, convert, to.componentType, v, saturate);
    return extracted[i] = v;
  };
  std::function<uint32_t(uint32_t)> after;
  if (convert != spv::Op::OpNop && !early) after = [&](uint32_t v) { return Convert(b, convert, to.componentType, v, saturate); };
  return EmitGather(b, fs, plan, element, early ? to.componentType : from.componentType, after, to.id, resultId, !convertedNext);
}

// Validates the conversion and returns its matrix types and transpose flag.
struct ConversionShape {
  CoopMatType from, to;
  bool transpose = false;
};

ConversionShape CheckConversion(Context& c, const ir::Instruction& inst) {
  TypeManager& t = c.types;
  if (inst.operands.size() != 1) Fail(Describe(inst) + ": expected one Matrix operand");
  ConversionShape shape{MatrixOf(c, inst, inst.operands[0], "Matrix"), MatrixOf(c, inst, inst.resultId, "Result Type"),
                        c.transposed.count(inst.resultId) != 0};
  const CoopMatType& from = shape.from;
  const CoopMatType& to = shape.to;
  const bool transpose = shape.transpose;
  // Shape rules (spec 1.2/2.2): transposes swap rows and columns and go Acc -> A/B.
  const uint32_t expectRows = transpose ? from.colsId : from.rowsId;
  const uint32_t expectCols = transpose ? from.rowsId : from.colsId;
  // Dimensions (or Uses) that are distinct specialization constants are only known to
  // match once specialized: while the specialization is pending they are assumed to,
  // and the pipeline-time lowering, with plain constants, checks them.
  const bool pending = c.options.specializationPending;
  auto unsettled = [&](uint32_t x, uint32_t y) { return pending && (t.IsSpecConstant(x) || t.IsSpecConstant(y)); };
  if (to.rowsId != expectRows || to.colsId != expectCols) {
    auto same = [&](uint32_t x, uint32_t y) {
      return x == y || (t.ConstantValue(x) && t.ConstantValue(x) == t.ConstantValue(y)) || unsettled(x, y);
    };
    if (!same(to.rowsId, expectRows) || !same(to.colsId, expectCols)) {
      // A dimension as a user reads it: its value, or the specialization constant
      // it is (SpecId and default), not a raw id.
      bool specialized = false;
      auto show = [&](uint32_t id) -> std::string {
        if (auto v = t.ConstantValue(id)) return std::to_string(*v);
        specialized = true;
        for (const ir::AppliedDecoration& d : ir::FindDecorations(c.module, spv::Decoration::SpecId))
          if (d.target == id && !d.literals.empty()) {
            const auto fallback = t.SpecConstantDefault(id);
            return "SpecId " + std::to_string(d.literals[0]) + (fallback ? " (default " + std::to_string(*fallback) + ")" : "");
          }
        return "%" + std::to_string(id) + " (computed from specialization constants)";
      };
      auto dims = [&](uint32_t rows, uint32_t cols) {
        const std::string r = show(rows), k = show(cols);
        return r + (t.ConstantValue(rows) && t.ConstantValue(cols) ? "x" : " x ") + k;
      };
      const std::string message = Describe(inst) + ": Result dimensions " + dims(to.rowsId, to.colsId) +
                                  " do not match the Matrix dimensions " + dims(expectRows, expectCols) +
                                  (transpose ? " (transposed)" : "") + (c.options.specialization ? " once specialized" : "");
      Fail(specialized ? message + "; they may match once specialized: lower with the pipeline's values "
                                   "(the layer does at pipeline creation; coopmat-lower --specialize ID=VALUE) or "
                                   "assume they will (the layer at module time; coopmat-lower --pending)"
                       : message);
    }
  }
  if (unsettled(from.useId, to.useId)) return shape;  // the Use rules are checked once specialized
  if (transpose && (from.use != MatrixUse::Accumulator || to.use == MatrixUse::Accumulator))
    Fail(Describe(inst) + ": a transposing conversion must go from an Accumulator to an A or B matrix");
  if (from.use != MatrixUse::Accumulator && to.use != MatrixUse::Accumulator)
    Fail(Describe(inst) + ": conversions between A and B matrices are not allowed");
  if (inst.opcode == spv::Op::OpCooperativeMatrixConvertUseEXT && !SameComponentOrSignedness(t, from.componentType, to.componentType))
    Fail(Describe(inst) + ": OpCooperativeMatrixConvertUseEXT must keep the component type (up to signedness)");
  return shape;
}

}  // namespace

bool ConversionUsesScratch(Context& c, const ir::Instruction& inst) {
  const ConversionShape shape = CheckConversion(c, inst);
  return Choose(c, inst, shape.from, shape.to, shape.transpose).UsesScratch();
}

std::optional<MoveCosts> ConversionMoveCosts(Context& c, const ir::Instruction& inst) {
  const ConversionShape shape = CheckConversion(c, inst);
  return Choose(c, inst, shape.from, shape.to, shape.transpose).moveCosts;
}

void LowerConversion(Builder& b, FunctionState& fs, const ir::Instruction& inst) {
  Context& c = b.context();
  TypeManager& t = c.types;
  const auto [from, to, transpose] = CheckConversion(c, inst);
  const Strategy s = Choose(c, inst, from, to, transpose);
  const uint32_t source = inst.operands[0];
  const bool saturate = Saturates(c, inst.resultId);
  // The route's move: in registers when planned, else the scratch round trip.
  auto move = [&](uint32_t value, const CoopMatType& a, const CoopMatType& z, uint32_t resultId, bool convertedNext) {
    if (s.registers) return RegisterMove(b, fs, value, a, z, *s.registers, spv::Op::OpNop, resultId, false, convertedNext);
    return RoundTrip(b, fs, value, a, z, transpose, resultId);
  };
  switch (s.route) {
    case Route::Move:
      if (s.registers) {
        const spv::Op convert = from.componentType == to.componentType ? spv::Op::OpNop : spv::Op::OpBitcast;
        RegisterMove(b, fs, source, from, to, *s.registers, convert, inst.resultId);
      } else {
        // A signedness-only change is a reinterpretation: the bits go through as they are.
        RoundTrip(b, fs, source, from, to, transpose, inst.resultId);
      }
      break;
    case Route::ConvertThenMove: {
      const CoopMatType mid = MakeType(c, s.midComponent, from.scopeId, s.midRows, s.midCols, s.midUse);
      move(Convert(b, inst.opcode, mid.id, source, saturate), mid, to, inst.resultId, false);
      break;
    }
    case Route::MoveThenConvert: {
      const CoopMatType mid = MakeType(c, s.midComponent, from.scopeId, s.midRows, s.midCols, s.midUse);
      b.Emit(inst.opcode, to.id, {move(source, from, mid, 0, true)}, inst.resultId);
      break;
    }
    case Route::Scalars:
      if (s.registers) {
        const spv::Op convert = SignednessOnly(t, from.componentType, to.componentType) ? spv::Op::OpBitcast : inst.opcode;
        RegisterMove(b, fs, source, from, to, *s.registers, convert, inst.resultId, saturate);
      } else {
        ConvertInScratch(b, fs, inst, from, to, transpose, saturate);
      }
      break;
  }
  if (inst.opcode == spv::Op::OpCooperativeMatrixConvertUseEXT) ++c.stats.convertUse;
  else ++c.stats.convert;
  if (transpose) ++c.stats.transpose;
  if (s.registers) ++c.stats.registerPath;
}

void CopySaturation(Context& c, uint32_t from, uint32_t to) {
  if (Saturates(c, from))
    c.module.annotations.emplace_back(spv::Op::OpDecorate, 0, 0, std::vector<uint32_t>{to, kSaturateDecoration});
}

void DropMisplacedSaturation(Context& c) {
  std::set<uint32_t> conversions;
  for (const ir::Function& f : c.module.functions)
    for (const ir::Block& block : f.blocks)
      for (const ir::Instruction& inst : block.instructions)
        if (inst.opcode == spv::Op::OpFConvert || inst.opcode == spv::Op::OpConvertSToF || inst.opcode == spv::Op::OpConvertUToF)
          conversions.insert(inst.resultId);
  auto& annotations = c.module.annotations;
  annotations.erase(std::remove_if(annotations.begin(), annotations.end(),
                                   [&](const ir::Instruction& a) {
                                     return a.opcode == spv::Op::OpDecorate && a.Operand(1) == kSaturateDecoration &&
                                            !conversions.count(a.Operand(0));
                                   }),
                    annotations.end());
}

}  // namespace coopmat
