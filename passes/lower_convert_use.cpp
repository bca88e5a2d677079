// Conversions that change Use (OpCooperativeMatrixConvertUseEXT, the relaxed
// Op*Convert forms) and transposes (decoration CooperativeMatrixTransposeEXT).
// KHR can only convert component types between matrices of the same Use, so a
// Use change becomes a round trip through the scratch slice: store row-major,
// load with the target Use (column-major for a transpose). When the component
// type changes too, the conversion happens either on an intermediate matrix in
// registers, when the driver is known to support that intermediate type, or on
// the scalars in the scratch, which declares no matrix type the module lacks.
#include "lowering.h"

namespace coopmat {
namespace {

bool SameComponentOrSignedness(TypeManager& t, uint32_t a, uint32_t b) {
  if (a == b) return true;
  return t.IsIntType(a) && t.IsIntType(b) && t.ScalarWidth(a) == t.ScalarWidth(b);
}

// Stores `value` (of `from`) and loads it as `to`; `resultId` names the load.
uint32_t RoundTrip(Builder& b, FunctionState& fs, uint32_t value, const CoopMatType& from, const CoopMatType& to,
                   bool transpose, uint32_t resultId = 0) {
  Scratch& scratch = b.context().scratch;
  scratch.StoreMatrix(b, fs, value, from);
  // The stored matrix's row stride; a column-major load with it reads the transpose.
  const uint32_t stride = scratch.StrideWords(b, from);
  return scratch.LoadMatrix(b, fs, to, transpose, stride, resultId);
}

CoopMatType MakeType(Context& c, uint32_t component, uint32_t scope, uint32_t rows, uint32_t cols, MatrixUse use) {
  TypeManager& t = c.types;
  auto info = t.CoopMatInfo(t.CoopMat(component, scope, rows, cols, t.UintConstant(static_cast<uint32_t>(use))));
  if (!info) Fail("internal error: cannot make a cooperative matrix type");
  return *info;
}

// Element k (row-major) of the source in the slice. Integers come back as a
// 32-bit uint, sign- or zero-extended; floats as the component type.
uint32_t ReadWide(Builder& b, FunctionState& fs, const CoopMatType& type, uint32_t k, bool signExtend) {
  Scratch& scratch = b.context().scratch;
  if (type.componentFloat) return scratch.ReadElement(b, fs, type, k);
  if (type.componentBytes == 4) return scratch.LoadWord(b, fs, k);
  const uint32_t bits = 8 * type.componentBytes;
  const uint32_t perWord = 4 / type.componentBytes;
  const uint32_t word = scratch.LoadWord(b, fs, b.Div(k, b.U(perWord)));
  const uint32_t low = b.ShiftRight(word, b.Mul(b.Mod(k, b.U(perWord)), b.U(bits)));
  if (!signExtend) return b.And(low, b.U((1u << bits) - 1));
  const uint32_t top = b.ShiftLeft(low, b.U(32 - bits));
  return b.Emit(spv::Op::OpShiftRightArithmetic, b.types().Uint(), {top, b.U(32 - bits)});
}

// The conversion `op` of one element, in 32-bit integer arithmetic wherever an
// integer is involved, so no 8/16-bit integer scalar (and so no Int8/Int16
// arithmetic) is needed. Integer results are the low bits of a uint; float
// results have the destination type.
uint32_t ConvertScalar(Builder& b, FunctionState& fs, spv::Op op, const CoopMatType& from, const CoopMatType& to, uint32_t k) {
  TypeManager& t = b.types();
  const uint32_t int32 = t.Int(32, true);
  switch (op) {
    case spv::Op::OpUConvert: return ReadWide(b, fs, from, k, false);
    case spv::Op::OpSConvert: return ReadWide(b, fs, from, k, true);
    case spv::Op::OpConvertUToF: return b.Emit(op, to.componentType, {ReadWide(b, fs, from, k, false)});
    case spv::Op::OpConvertSToF:
      return b.Emit(op, to.componentType, {b.Emit(spv::Op::OpBitcast, int32, {ReadWide(b, fs, from, k, true)})});
    case spv::Op::OpConvertFToU: return b.Emit(op, t.Uint(), {ReadWide(b, fs, from, k, false)});
    case spv::Op::OpConvertFToS:
      return b.Emit(spv::Op::OpBitcast, t.Uint(), {b.Emit(op, int32, {ReadWide(b, fs, from, k, false)})});
    case spv::Op::OpFConvert: return b.Emit(op, to.componentType, {ReadWide(b, fs, from, k, false)});
    default: Fail(std::string("internal error: unexpected conversion ") + spv::OpToString(op));
  }
}

// Converts component type and Use through the scratch, with scalar conversions
// only: the source goes row-major into the slice; each lane converts whole
// destination words (so elements packed into one word have one writer) into a
// second region laid out in the source's order; the destination is loaded from
// there (column-major for a transpose).
void ConvertInScratch(Builder& b, FunctionState& fs, const ir::Instruction& inst, const CoopMatType& from,
                      const CoopMatType& to, bool transpose) {
  TypeManager& t = b.types();
  Scratch& scratch = b.context().scratch;
  // The destination region's rows are the source's rows in `to`'s element size.
  const uint32_t destStride = scratch.StrideWords(b, from.colsId, to.componentBytes, to.id);
  scratch.Require(from, to.componentBytes);
  scratch.StoreMatrix(b, fs, inst.operands[0], from);
  const uint32_t elements = b.Mul(from.rowsId, from.colsId);
  const uint32_t sourceWords = b.Div(b.Mul(elements, b.U(from.componentBytes)), b.U(4));
  const uint32_t perWord = 4 / to.componentBytes;
  const uint32_t destWords = b.Div(elements, b.U(perWord));
  b.Loop(fs.lane, destWords, fs.subgroupSize, [&](uint32_t w) {
    std::vector<uint32_t> converted;
    for (uint32_t j = 0; j < perWord; ++j)
      converted.push_back(ConvertScalar(b, fs, inst.opcode, from, to, b.Add(b.Mul(w, b.U(perWord)), b.U(j))));
    uint32_t word = 0;
    if (to.componentFloat && to.componentBytes == 2) {
      const uint32_t pair = b.Emit(spv::Op::OpCompositeConstruct, t.Vector(to.componentType, 2), converted);
      word = b.Emit(spv::Op::OpBitcast, t.Uint(), {pair});
    } else if (to.componentFloat) {
      word = b.Emit(spv::Op::OpBitcast, t.Uint(), {converted[0]});
    } else if (to.componentBytes == 4) {
      word = converted[0];
    } else {
      const uint32_t bits = 8 * to.componentBytes;
      for (uint32_t j = 0; j < perWord; ++j) {
        const uint32_t part = b.ShiftLeft(b.And(converted[j], b.U((1u << bits) - 1)), b.U(j * bits));
        word = j ? b.Or(word, part) : part;
      }
    }
    scratch.StoreWord(b, fs, b.Add(sourceWords, w), word);
  });
  scratch.Barrier(b);
  scratch.LoadMatrix(b, fs, to, transpose, destStride, inst.resultId, sourceWords);
}

}  // namespace

void LowerConversion(Builder& b, FunctionState& fs, const ir::Instruction& inst) {
  Context& c = b.context();
  TypeManager& t = c.types;
  if (inst.operands.size() != 1) Fail(Describe(inst) + ": expected one Matrix operand");
  const CoopMatType from = MatrixOf(c, inst, inst.operands[0], "Matrix");
  const CoopMatType to = MatrixOf(c, inst, inst.resultId, "Result Type");
  const bool transpose = c.transposed.count(inst.resultId) != 0;
  const bool convertUse = inst.opcode == spv::Op::OpCooperativeMatrixConvertUseEXT;

  // Shape rules (spec 1.2/2.2): transposes swap rows and columns and go Acc -> A/B.
  const uint32_t expectRows = transpose ? from.colsId : from.rowsId;
  const uint32_t expectCols = transpose ? from.rowsId : from.colsId;
  if (to.rowsId != expectRows || to.colsId != expectCols) {
    auto same = [&](uint32_t x, uint32_t y) { return x == y || (t.ConstantValue(x) && t.ConstantValue(x) == t.ConstantValue(y)); };
    if (!same(to.rowsId, expectRows) || !same(to.colsId, expectCols))
      Fail(Describe(inst) + ": Result dimensions do not match the Matrix dimensions" + (transpose ? " transposed" : ""));
  }
  if (transpose && (from.use != MatrixUse::Accumulator || to.use == MatrixUse::Accumulator))
    Fail(Describe(inst) + ": a transposing conversion must go from an Accumulator to an A or B matrix");
  if (from.use != MatrixUse::Accumulator && to.use != MatrixUse::Accumulator)
    Fail(Describe(inst) + ": conversions between A and B matrices are not allowed");

  if (convertUse) {
    if (!SameComponentOrSignedness(t, from.componentType, to.componentType))
      Fail(Describe(inst) + ": OpCooperativeMatrixConvertUseEXT must keep the component type (up to signedness)");
    RoundTrip(b, fs, inst.operands[0], from, to, transpose, inst.resultId);
    ++c.stats.convertUse;
    if (transpose) ++c.stats.transpose;
    return;
  }
  if (SameComponentOrSignedness(t, from.componentType, to.componentType) && t.IsIntType(from.componentType) &&
      from.componentType != to.componentType) {
    // A signedness-only S/UConvert is a reinterpretation: the bits go through as they are.
    RoundTrip(b, fs, inst.operands[0], from, to, transpose, inst.resultId);
  } else if (from.use == MatrixUse::Accumulator &&
             c.IsSupportedMatrix(to.componentType, from.rowsId, from.colsId, MatrixUse::Accumulator)) {
    // Convert the component type while still an Accumulator (plain KHR), then move the Use.
    const CoopMatType mid = MakeType(c, to.componentType, from.scopeId, from.rowsId, from.colsId, MatrixUse::Accumulator);
    const uint32_t converted = b.Emit(inst.opcode, mid.id, {inst.operands[0]});
    RoundTrip(b, fs, converted, mid, to, transpose, inst.resultId);
  } else if (from.use == MatrixUse::Accumulator && c.IsSupportedMatrix(from.componentType, to.rowsId, to.colsId, to.use)) {
    // Move the Use first (an A/B matrix of the source component type), then convert as A/B.
    const CoopMatType mid = MakeType(c, from.componentType, from.scopeId, to.rowsId, to.colsId, to.use);
    const uint32_t moved = RoundTrip(b, fs, inst.operands[0], from, mid, transpose);
    b.Emit(inst.opcode, to.id, {moved}, inst.resultId);
  } else if (from.use != MatrixUse::Accumulator &&
             c.IsSupportedMatrix(from.componentType, from.rowsId, from.colsId, MatrixUse::Accumulator)) {
    // A/B -> Accumulator: move the Use first, then convert as an Accumulator.
    const CoopMatType mid = MakeType(c, from.componentType, from.scopeId, from.rowsId, from.colsId, MatrixUse::Accumulator);
    const uint32_t moved = RoundTrip(b, fs, inst.operands[0], from, mid, false);
    b.Emit(inst.opcode, to.id, {moved}, inst.resultId);
  } else if (from.use != MatrixUse::Accumulator && c.IsSupportedMatrix(to.componentType, from.rowsId, from.colsId, from.use)) {
    // Convert as A/B first, then move the Use.
    const CoopMatType mid = MakeType(c, to.componentType, from.scopeId, from.rowsId, from.colsId, from.use);
    const uint32_t converted = b.Emit(inst.opcode, mid.id, {inst.operands[0]});
    RoundTrip(b, fs, converted, mid, to, false, inst.resultId);
  } else {
    // No intermediate matrix type is known to be supported: convert the scalars.
    ConvertInScratch(b, fs, inst, from, to, transpose);
  }
  ++c.stats.convert;
  if (transpose) ++c.stats.transpose;
}

}  // namespace coopmat
