// OpCooperativeMatrixReduceEXT: the source goes row-major into the scratch slice;
// each result element this invocation holds is then combined from the source
// elements it covers, read back as scalars, with OpFunctionCall CombineFunc.
#include <functional>

#include "lowering.h"

namespace coopmat {
namespace {

constexpr uint32_t kRow = 1, kColumn = 2, kRowColumn = 3, k2x2 = 4;

using ReadFn = std::function<uint32_t(uint32_t)>;  // row-major source element k, as the component type

// acc = combine over k in [begin, end) step `step` of source[first + k*stride], with
// acc starting at source[first]; returns the loaded accumulator.
uint32_t CombineRange(Builder& b, const CoopMatType& source, const ReadFn& read, uint32_t combine, uint32_t first,
                      uint32_t count, uint32_t stride) {
  const uint32_t component = source.componentType;
  const uint32_t acc = b.Variable(component);
  b.EmitVoid(spv::Op::OpStore, {acc, read(first)});
  b.Loop(b.U(1), count, b.U(1), [&](uint32_t k) {
    const uint32_t element = read(b.Add(first, b.Mul(k, stride)));
    const uint32_t current = b.Emit(spv::Op::OpLoad, component, {acc});
    b.EmitVoid(spv::Op::OpStore, {acc, b.Emit(spv::Op::OpFunctionCall, component, {combine, current, element})});
  });
  return b.Emit(spv::Op::OpLoad, component, {acc});
}

}  // namespace

void LowerReduce(Builder& b, FunctionState& fs, const ir::Instruction& inst) {
  Context& c = b.context();
  TypeManager& t = c.types;
  if (inst.operands.size() != 3) Fail(Describe(inst) + ": expected Matrix, Reduce and CombineFunc operands");
  const CoopMatType source = MatrixOf(c, inst, inst.operands[0], "Matrix");
  const CoopMatType result = MatrixOf(c, inst, inst.resultId, "Result Type");
  const uint32_t mask = inst.operands[1];
  const uint32_t combine = inst.operands[2];
  if (source.use != MatrixUse::Accumulator || result.use != MatrixUse::Accumulator)
    Fail(Describe(inst) + ": Matrix and Result Type must be Accumulator matrices");
  if (source.componentType != result.componentType) Fail(Describe(inst) + ": Matrix and Result Type component types differ");
  if (mask != kRow && mask != kColumn && mask != kRowColumn && mask != k2x2)
    Fail(Describe(inst) + ": unsupported Reduce mask " + std::to_string(mask));
  const std::vector<uint32_t> params = c.ParameterTypes(combine);
  if (params.size() != 2 || params[0] != source.componentType || params[1] != source.componentType ||
      c.ReturnType(combine) != source.componentType)
    Fail(Describe(inst) + ": CombineFunc must take two and return one value of the component type");
  auto dim = [&](uint32_t id) { return t.ConstantValue(id); };
  // Dimensions that are specialization constants are checked only at pipeline creation, by nobody:
  // they are taken as valid here, and the reads below are clamped to the source.
  auto sameDim = [&](uint32_t x, uint32_t y) { return x == y || !dim(x) || !dim(y) || dim(x) == dim(y); };
  if (mask == kRow && !sameDim(result.rowsId, source.rowsId)) Fail(Describe(inst) + ": a Row reduction keeps the row count");
  if (mask == kColumn && !sameDim(result.colsId, source.colsId)) Fail(Describe(inst) + ": a Column reduction keeps the column count");
  if (mask == k2x2 && dim(source.rowsId) && dim(result.rowsId) && dim(source.colsId) && dim(result.colsId) &&
      (*dim(result.rowsId) * 2 != *dim(source.rowsId) || *dim(result.colsId) * 2 != *dim(source.colsId)))
    Fail(Describe(inst) + ": a 2x2 reduction halves both dimensions");

  Scratch& scratch = c.scratch;
  scratch.StoreMatrix(b, fs, inst.operands[0], source);
  const uint32_t sourceCols = source.colsId;
  const uint32_t sourceRows = source.rowsId;
  const bool constantShapes = dim(source.rowsId) && dim(source.colsId) && dim(result.rowsId) && dim(result.colsId);
  const uint32_t sourceElements = b.Mul(sourceRows, sourceCols);
  const ReadFn read = [&](uint32_t k) {
    if (!constantShapes) {  // a result larger than the source allows (invalid) must not read past the slice
      const uint32_t inRange = b.Emit(spv::Op::OpULessThan, t.Bool(), {k, sourceElements});
      k = b.Emit(spv::Op::OpSelect, t.Uint(), {inRange, k, b.U(0)});
    }
    return scratch.ReadElement(b, fs, source, k);
  };

  if (mask == kRowColumn) {
    const uint32_t total = CombineRange(b, source, read, combine, b.U(0), sourceElements, b.U(1));
    b.Emit(spv::Op::OpCompositeConstruct, result.id, {total}, inst.resultId);
    ++c.stats.reduce;
    return;
  }

  const uint32_t resultVar = b.Variable(result.id);
  const uint32_t length = b.Emit(spv::Op::OpCooperativeMatrixLengthKHR, t.Uint(), {result.id});
  b.Loop(b.U(0), length, b.U(1), [&](uint32_t i) {
    const uint32_t row = ReadCoordinate(b, fs, result, i, false);
    const uint32_t col = ReadCoordinate(b, fs, result, i, true);
    uint32_t value = 0;
    if (mask == kRow) {
      value = CombineRange(b, source, read, combine, b.Mul(row, sourceCols), sourceCols, b.U(1));
    } else if (mask == kColumn) {
      value = CombineRange(b, source, read, combine, col, sourceRows, sourceCols);
    } else {  // 2x2: source (2r,2c), (2r+1,2c), (2r,2c+1), (2r+1,2c+1)
      const uint32_t topLeft = b.Add(b.Mul(b.Mul(row, b.U(2)), sourceCols), b.Mul(col, b.U(2)));
      const uint32_t bottomLeft = b.Add(topLeft, sourceCols);
      const uint32_t component = source.componentType;
      value = read(topLeft);
      for (uint32_t k : {bottomLeft, b.Add(topLeft, b.U(1)), b.Add(bottomLeft, b.U(1))})
        value = b.Emit(spv::Op::OpFunctionCall, component, {combine, value, read(k)});
    }
    b.EmitVoid(spv::Op::OpStore, {b.ElementPointer(resultVar, result.componentType, i), value});
  });
  b.Emit(spv::Op::OpLoad, result.id, {resultVar}, inst.resultId);
  ++c.stats.reduce;
}

}  // namespace coopmat
