// The register path's shared pieces (see register.h): layout lookup, linear bit
// arithmetic, shuffles, and which path and subgroup sizes an operation takes. The
// gather planner is gather_plan.cpp, its emitter gather_emit.cpp.
#include "register.h"
#include "gf2.h"

#include <algorithm>
#include <bit>
#include <map>
#include <utility>

namespace coopmat {
namespace {

using gf2::Apply;
using gf2::Log2;

// The register path unrolls over the elements; longer matrices keep the scratch path.
constexpr uint32_t kMaxLength = 256;

uint32_t VkComponentType(const TypeManager& t, uint32_t componentType, bool& ok) {
  // bfloat16 and fp8 included: their layouts are the 16- and 8-bit ones of the tables.
  const std::optional<uint32_t> type = t.VkComponentType(componentType);
  ok = type.has_value();
  return type.value_or(0);
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

bool ArithmeticAllowed(const Context& c, uint32_t scalarType) {
  const TypeManager& t = c.types;
  const uint32_t width = t.ScalarWidth(scalarType);
  if (width == 32 || t.IsEncodedFloat(scalarType)) return true;
  if (t.IsFloatType(scalarType)) return width == 16 && c.module.DeclaresCapability(spv::Capability::Float16);
  if (t.IsIntType(scalarType)) {
    if (width == 8) return c.module.DeclaresCapability(spv::Capability::Int8);
    if (width == 16) return c.module.DeclaresCapability(spv::Capability::Int16);
  }
  return false;
}

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
bool CanShuffle(const Context& c, uint32_t scalarType) { return ArithmeticAllowed(c, scalarType); }

bool CanConvertScalars(const Context& c, uint32_t from, uint32_t to) { return ArithmeticAllowed(c, from) && ArithmeticAllowed(c, to); }

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
      [&] {
        const bool saved = std::exchange(c.atUnlistedSubgroupSize, true);
        version(0, unlisted);
        c.atUnlistedSubgroupSize = saved;
      });
  c.stats = afterFirst;  // one operation, however many versions
  b.Emit(spv::Op::OpLoad, inst.typeId, {variable}, inst.resultId);
}

std::vector<std::pair<uint32_t, uint32_t>> InRegisterReduceBasis(const std::vector<uint32_t>& indexXors) {
  return gf2::Projection(indexXors).basis;  // the reduced basis the projection clears pivots with
}

}  // namespace coopmat
