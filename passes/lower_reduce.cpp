// OpCooperativeMatrixReduceEXT, portable path: the source goes row-major into the
// scratch slice; the invocations of the subgroup share out the rows (columns, 2x2
// blocks) of the result — row r to lane r % SubgroupSize, and so on — and each
// combines its share once, with OpFunctionCall CombineFunc, and writes the
// finished rows (columns, blocks) of the result row-major into the slice; after a
// barrier the result is loaded from there. A Row (Column) result no larger than
// the source is written over the source, with the source's stride: each lane
// writes only the rows (word-columns) it alone has read, so the slice stays the
// size of the source; a 2x2 result row r goes over the start of source row 2r,
// which its lane has read, with twice the source's stride. Larger results and
// specialization-constant shapes use a second region after the source. Row|Column:
// every lane writes the results of its rows into their first words, then every
// lane folds those (the same fold in every lane, so the replicated total is
// identical everywhere).
// Every source element is read once per subgroup (Row|Column: and the R row
// results once per lane), as in hand-written store-to-shared code, and no
// coordinate tables are needed.
//
// The slice is read a word at a time: 8- and 16-bit elements are unpacked from
// their uint and the results packed back, so 8-bit columns go four to a lane.
#include <optional>

#include "lowering.h"

namespace coopmat {
namespace {

constexpr uint32_t kRow = 1, kColumn = 2, kRowColumn = 3, k2x2 = 4;

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
  const bool constantShapes = dim(source.rowsId) && dim(source.colsId) && dim(result.rowsId) && dim(result.colsId);

  Scratch& scratch = c.scratch;
  const uint32_t component = source.componentType;
  const uint32_t perWord = 4 / source.componentBytes;
  auto op = [&](uint32_t x, uint32_t y) { return b.Emit(spv::Op::OpFunctionCall, component, {combine, x, y}); };

  // The slice: the source from word 0; the result over it or after it.
  auto known = [&](const CoopMatType& m) -> std::optional<std::pair<uint32_t, uint32_t>> {  // rows, words per row
    auto rows = dim(m.rowsId), cols = dim(m.colsId);
    if (!rows || !cols) return std::nullopt;
    return std::make_pair(*rows, *cols * m.componentBytes / 4);
  };
  const auto sourceShape = known(source), resultShape = known(result);
  // (A constant 2x2 shape has been checked to halve the source.)
  const bool inPlace = mask == kRowColumn || (mask == k2x2 && constantShapes) ||
                       ((mask == kRow || mask == kColumn) && sourceShape && resultShape &&
                        resultShape->first <= sourceShape->first && resultShape->second <= sourceShape->second);
  auto wordsOf = [&](const CoopMatType& m) {  // as a module-level constant expression, for the size
    const uint32_t rowBytes = t.SpecOp(t.Uint(), spv::Op::OpIMul, {m.colsId, t.UintConstant(m.componentBytes)});
    return t.SpecOp(t.Uint(), spv::Op::OpIMul, {m.rowsId, t.SpecOp(t.Uint(), spv::Op::OpUDiv, {rowBytes, t.UintConstant(4)})});
  };
  scratch.Require(source);
  if (!inPlace) scratch.RequireWords(t.SpecOp(t.Uint(), spv::Op::OpIAdd, {wordsOf(source), wordsOf(result)}));
  scratch.StoreMatrix(b, fs, inst.operands[0], source);
  const uint32_t sourceStride = scratch.StrideWords(b, source);
  const uint32_t sourceWords = b.Mul(source.rowsId, sourceStride);
  const uint32_t region = inPlace ? b.U(0) : sourceWords;  // where the result goes
  // The result's words per row, and its stride where it is written.
  const uint32_t resultRowWords = mask == kRowColumn ? 0 : scratch.StrideWords(b, result);
  // (2x2 in place: result row r over source row 2r.)
  const uint32_t resultStride = !inPlace ? resultRowWords : mask == k2x2 ? b.Mul(sourceStride, b.U(2)) : sourceStride;

  // Word `w` of the source, unpacked; clamped into the source when the shapes are
  // specialization constants (an invalid result shape must not read past it).
  auto readSource = [&](uint32_t w) {
    if (!constantShapes) {
      const uint32_t inRange = b.Emit(spv::Op::OpULessThan, t.Bool(), {w, sourceWords});
      w = b.Emit(spv::Op::OpSelect, t.Uint(), {inRange, w, b.U(0)});
    }
    return scratch.Unpack(b, source, scratch.LoadWord(b, fs, w));
  };
  // acc = fold of every element of the `count` words first, first + stride, ...,
  // in address order within a word (a row when stride is 1); returns the value.
  auto foldWords = [&](uint32_t first, uint32_t count, uint32_t stride) {
    const uint32_t acc = b.Variable(component);
    std::vector<uint32_t> elements = readSource(first);
    uint32_t value = elements[0];
    for (size_t j = 1; j < elements.size(); ++j) value = op(value, elements[j]);
    b.EmitVoid(spv::Op::OpStore, {acc, value});
    b.Loop(b.U(1), count, b.U(1), [&](uint32_t k) {
      uint32_t v = b.Emit(spv::Op::OpLoad, component, {acc});
      for (uint32_t e : readSource(b.Add(first, b.Mul(k, stride)))) v = op(v, e);
      b.EmitVoid(spv::Op::OpStore, {acc, v});
    });
    return b.Emit(spv::Op::OpLoad, component, {acc});
  };

  if (mask == kRowColumn) {
    // Each lane its rows, into the row's first word (the value in every part of it).
    b.Loop(fs.lane, source.rowsId, fs.subgroupSize, [&](uint32_t r) {
      const uint32_t first = b.Mul(r, sourceStride);
      const uint32_t value = foldWords(first, sourceStride, b.U(1));
      scratch.StoreWord(b, fs, first, scratch.Pack(b, source, std::vector<uint32_t>(perWord, value)));
    });
    scratch.Barrier(b);
    // Every lane folds the row results in the same order.
    const uint32_t acc = b.Variable(component);
    b.EmitVoid(spv::Op::OpStore, {acc, scratch.Unpack(b, source, scratch.LoadWord(b, fs, b.U(0)))[0]});
    b.Loop(b.U(1), source.rowsId, b.U(1), [&](uint32_t r) {
      const uint32_t row = scratch.Unpack(b, source, scratch.LoadWord(b, fs, b.Mul(r, sourceStride)))[0];
      b.EmitVoid(spv::Op::OpStore, {acc, op(b.Emit(spv::Op::OpLoad, component, {acc}), row)});
    });
    const uint32_t total = b.Emit(spv::Op::OpLoad, component, {acc});
    b.Emit(spv::Op::OpCompositeConstruct, result.id, {total}, inst.resultId);
    ++c.stats.reduce;
    return;
  }

  if (mask == kRow) {
    // Lane r % S: row r, once; then the whole result row r holds it.
    b.Loop(fs.lane, result.rowsId, fs.subgroupSize, [&](uint32_t r) {
      const uint32_t value = foldWords(b.Mul(r, sourceStride), sourceStride, b.U(1));
      const uint32_t word = scratch.Pack(b, source, std::vector<uint32_t>(perWord, value));
      const uint32_t rowStart = b.Add(region, b.Mul(r, resultStride));
      b.Loop(b.U(0), resultRowWords, b.U(1), [&](uint32_t w) { scratch.StoreWord(b, fs, b.Add(rowStart, w), word); });
    });
  } else if (mask == kColumn) {
    // Lane w % S: the perWord columns of word-column w (so packed elements have one writer).
    b.Loop(fs.lane, resultRowWords, fs.subgroupSize, [&](uint32_t w) {
      std::vector<uint32_t> accs;
      for (uint32_t e : readSource(w)) {
        accs.push_back(b.Variable(component));
        b.EmitVoid(spv::Op::OpStore, {accs.back(), e});
      }
      b.Loop(b.U(1), source.rowsId, b.U(1), [&](uint32_t r) {
        const std::vector<uint32_t> elements = readSource(b.Add(w, b.Mul(r, sourceStride)));
        for (uint32_t j = 0; j < perWord; ++j)
          b.EmitVoid(spv::Op::OpStore, {accs[j], op(b.Emit(spv::Op::OpLoad, component, {accs[j]}), elements[j])});
      });
      std::vector<uint32_t> values;
      for (uint32_t acc : accs) values.push_back(b.Emit(spv::Op::OpLoad, component, {acc}));
      const uint32_t word = scratch.Pack(b, source, values);
      b.Loop(b.U(0), result.rowsId, b.U(1),
             [&](uint32_t r) { scratch.StoreWord(b, fs, b.Add(region, b.Add(w, b.Mul(r, resultStride))), word); });
    });
  } else {  // 2x2: lane r % S: result row r, from source rows 2r and 2r+1
    b.Loop(fs.lane, result.rowsId, fs.subgroupSize, [&](uint32_t row) {
      const uint32_t top = b.Mul(b.Mul(row, b.U(2)), sourceStride);
      const uint32_t bottom = b.Add(top, sourceStride);
      const uint32_t destination = b.Add(region, b.Mul(row, resultStride));
      // Result word w: source columns 2*w*perWord .. +2*perWord-1, two words of each row.
      // In place it goes to word w of row 2r, which the lane has read already.
      b.Loop(b.U(0), resultRowWords, b.U(1), [&](uint32_t w) {
        const uint32_t w2 = b.Mul(w, b.U(2));
        std::vector<uint32_t> upper = readSource(b.Add(top, w2)), lower = readSource(b.Add(bottom, w2));
        for (uint32_t e : readSource(b.Add(top, b.Add(w2, b.U(1))))) upper.push_back(e);
        for (uint32_t e : readSource(b.Add(bottom, b.Add(w2, b.U(1))))) lower.push_back(e);
        std::vector<uint32_t> values;
        for (uint32_t j = 0; j < perWord; ++j)  // (2r,2c), (2r+1,2c), (2r,2c+1), (2r+1,2c+1)
          values.push_back(op(op(op(upper[2 * j], lower[2 * j]), upper[2 * j + 1]), lower[2 * j + 1]));
        scratch.StoreWord(b, fs, b.Add(destination, w), scratch.Pack(b, source, values));
      });
    });
  }
  scratch.Barrier(b);
  scratch.LoadMatrix(b, fs, result, /*columnMajor=*/false, resultStride, inst.resultId, region);
  ++c.stats.reduce;
}

}  // namespace coopmat
