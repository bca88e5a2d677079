// Conversions that change Use (OpCooperativeMatrixConvertUseEXT, the relaxed
// Op*Convert forms) and transposes (decoration CooperativeMatrixTransposeEXT).
// KHR can only convert component types between matrices of the same Use, so a
// Use change becomes a round trip through the scratch slice: store row-major,
// load with the target Use (column-major for a transpose).
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
  } else if (from.use == MatrixUse::Accumulator) {
    // Convert the component type while still an Accumulator (plain KHR), then move the Use.
    const CoopMatType mid = MakeType(c, to.componentType, from.scopeId, from.rowsId, from.colsId, MatrixUse::Accumulator);
    const uint32_t converted = b.Emit(inst.opcode, mid.id, {inst.operands[0]});
    RoundTrip(b, fs, converted, mid, to, transpose, inst.resultId);
  } else {
    // A/B -> Accumulator: move the Use first, then convert as an Accumulator.
    const CoopMatType mid = MakeType(c, from.componentType, from.scopeId, from.rowsId, from.colsId, MatrixUse::Accumulator);
    const uint32_t moved = RoundTrip(b, fs, inst.operands[0], from, mid, false);
    b.Emit(inst.opcode, to.id, {moved}, inst.resultId);
  }
  ++c.stats.convert;
  if (transpose) ++c.stats.transpose;
}

}  // namespace coopmat
