// OpCooperativeMatrixGetCoordinateEXT, and the coordinate tables that PerElementOp
// and Reduce share. The element layout is implementation-defined, so the shader
// learns it: it writes a row-major matrix whose elements hold their own row (and
// one holding the column) into scratch, loads it back as the matrix type, and
// element i of the loaded matrix then names the row (column) of element i. When
// the shape is constant and small enough for every row-major index to be exact in
// the component type (f32 and 32-bit integers always, f16 up to 2048 elements,
// 8-bit integers and bfloat16 up to 256, fp8 up to 16 or 8), one table of indices serves both: row = k / cols and
// col = k % cols, one round trip and one table read per coordinate.
#include "register.h"

namespace coopmat {
namespace {

enum class Part { Whole, Low, High, Index };

// Largest integer a component type represents exactly, as a coordinate (floats:
// every integer up to 2^(mantissa bits + 1), so bfloat16 256, fp8 E4M3 16, E5M2 8).
uint64_t MaxExact(const TypeManager& t, const CoopMatType& type) {
  if (type.componentFloat) return t.ExactIntegerLimit(type.componentType);
  if (type.componentBytes == 1) return 255;
  if (type.componentBytes == 2) return 65535;
  return 0xffffffffu;
}

// The base of the low/high split: low = x % base fits the type exactly.
uint32_t SplitBase(const TypeManager& t, const CoopMatType& type) {
  if (type.componentFloat) {
    // A float type whose exact integers are unknown (malformed input: no known width
    // or encoding) cannot hold coordinates; never divide by its zero base.
    const uint32_t limit = t.ExactIntegerLimit(type.componentType);
    if (!limit)
      Fail("cooperative matrix type %" + std::to_string(type.id) +
           " has a float component type that cannot hold its coordinates exactly");
    return limit;
  }
  return type.componentBytes == 1 ? 256 : 65536;
}

// A split coordinate's high part must be exact too: with fp8 (base 8 or 16) that
// bounds the dimensions, which a constant shape can be checked against here.
void CheckSplitFits(const TypeManager& t, const CoopMatType& type) {
  auto rows = t.ConstantValue(type.rowsId), cols = t.ConstantValue(type.colsId);
  if (!rows || !cols) return;
  const uint64_t base = SplitBase(t, type);
  if ((uint64_t{std::max(*rows, *cols)} - 1) / base <= MaxExact(t, type)) return;
  Fail("cooperative matrix type %" + std::to_string(type.id) + " is " + std::to_string(*rows) + "x" + std::to_string(*cols) +
       ": too large for its coordinates to be learned exactly in its component type (at most " +
       std::to_string(base * (MaxExact(t, type) + 1)) + " rows and columns)");
}

bool IndexTable(TypeManager& t, const CoopMatType& type) {
  auto rows = t.ConstantValue(type.rowsId), cols = t.ConstantValue(type.colsId);
  return rows && cols && *rows && *cols && uint64_t{*rows} * *cols - 1 <= MaxExact(t, type);
}

bool NeedsSplit(TypeManager& t, const CoopMatType& type) {
  if (type.componentBytes == 4) return false;  // f32 is exact to 2^24, far above any matrix dimension
  auto rows = t.ConstantValue(type.rowsId), cols = t.ConstantValue(type.colsId);
  if (!rows || !cols) return true;  // specialization constants: be exact for any value
  return uint64_t{std::max(*rows, *cols)} - 1 > MaxExact(t, type);
}

// Encodes the uint `value` as one element of the component type, as raw bits in
// the low componentBytes*8 bits of a uint (or, for f16, as a half value).
uint32_t EncodeElement(Builder& b, const CoopMatType& type, uint32_t value) {
  if (type.componentFloat) return b.Emit(spv::Op::OpConvertUToF, type.componentType, {value});
  if (type.componentBytes == 4) return value;
  return b.And(value, b.U(type.componentBytes == 1 ? 0xffu : 0xffffu));
}

// One learned table: barrier, striped write of the coordinate matrix, barrier, load,
// stored into `target` (a new Function variable when 0), which is returned.
uint32_t LearnTable(Builder& b, FunctionState& fs, const CoopMatType& type, bool column, Part part, uint32_t base,
                    uint32_t target = 0) {
  Context& c = b.context();
  TypeManager& t = c.types;
  Scratch& scratch = c.scratch;
  scratch.Require(type);
  scratch.BeginUse(b, fs);
  const uint32_t perWord = 4 / type.componentBytes;
  const uint32_t elements = b.Mul(type.rowsId, type.colsId);
  const uint32_t words = b.Div(b.Add(elements, b.U(perWord - 1)), b.U(perWord));
  b.Loop(fs.lane, words, fs.subgroupSize, [&](uint32_t w) {
    std::vector<uint32_t> encoded;
    for (uint32_t j = 0; j < perWord; ++j) {
      const uint32_t k = b.Add(b.Mul(w, b.U(perWord)), b.U(j));
      uint32_t coordinate = part == Part::Index ? k : column ? b.Mod(k, type.colsId) : b.Div(k, type.colsId);
      if (part == Part::Low) coordinate = b.Mod(coordinate, b.U(base));
      if (part == Part::High) coordinate = b.Div(coordinate, b.U(base));
      encoded.push_back(EncodeElement(b, type, coordinate));
    }
    uint32_t word = 0;
    if (type.componentFloat && type.componentBytes < 4) {
      word = PackVector(b, type.componentType, encoded);
    } else if (type.componentFloat) {
      word = b.Emit(spv::Op::OpBitcast, t.Uint(), {encoded[0]});
    } else {
      word = encoded[0];
      for (uint32_t j = 1; j < perWord; ++j) word = b.Or(word, b.ShiftLeft(encoded[j], b.U(j * 8 * type.componentBytes)));
    }
    scratch.StoreWord(b, fs, w, word);
  });
  scratch.Barrier(b);
  const uint32_t matrix = scratch.LoadMatrix(b, fs, type, /*columnMajor=*/false, scratch.StrideWords(b, type));
  const uint32_t variable = target ? target : b.Variable(type.id);
  b.EmitVoid(spv::Op::OpStore, {variable, matrix});
  return variable;
}

// Element `index` of a learned table as a uint.
uint32_t ReadTable(Builder& b, const CoopMatType& type, uint32_t variable, uint32_t index, spv::StorageClass storage) {
  TypeManager& t = b.types();
  const uint32_t element =
      b.Emit(spv::Op::OpLoad, type.componentType, {b.ElementPointer(variable, type.componentType, index, storage)});
  if (type.componentFloat) return b.Emit(spv::Op::OpConvertFToU, t.Uint(), {element});
  if (type.componentBytes == 4) return b.AsIntType(element, t.Uint());
  return b.Emit(spv::Op::OpUConvert, t.Uint(), {element});
}

}  // namespace

const CoordinateTables& PrivateCoordinates(Context& c, const CoopMatType& type) {
  if (auto it = c.privateTables.find(type.id); it != c.privateTables.end()) return it->second;
  TypeManager& t = c.types;
  auto variable = [&] {
    const uint32_t id = c.module.TakeId();
    t.AddGlobal(ir::Instruction(spv::Op::OpVariable, t.Pointer(spv::StorageClass::Private, type.id), id,
                                {static_cast<uint32_t>(spv::StorageClass::Private)}));
    return id;
  };
  CoordinateTables tables;
  tables.storage = spv::StorageClass::Private;
  if (IndexTable(t, type)) {
    tables.indexVar = variable();
    return c.privateTables[type.id] = tables;
  }
  tables.rowVar = variable();
  tables.colVar = variable();
  if (NeedsSplit(t, type)) {
    CheckSplitFits(t, type);
    tables.splitBase = SplitBase(t, type);
    tables.rowHighVar = variable();
    tables.colHighVar = variable();
  }
  return c.privateTables[type.id] = tables;
}

void LearnPrivateCoordinates(Builder& entry, FunctionState& fs, const CoopMatType& type) {
  const CoordinateTables tables = PrivateCoordinates(entry.context(), type);
  if (tables.indexVar) {
    LearnTable(entry, fs, type, false, Part::Index, 0, tables.indexVar);
    return;
  }
  const bool split = tables.splitBase != 0;
  const Part low = split ? Part::Low : Part::Whole;
  LearnTable(entry, fs, type, false, low, tables.splitBase, tables.rowVar);
  LearnTable(entry, fs, type, true, low, tables.splitBase, tables.colVar);
  if (split) {
    LearnTable(entry, fs, type, false, Part::High, tables.splitBase, tables.rowHighVar);
    LearnTable(entry, fs, type, true, Part::High, tables.splitBase, tables.colHighVar);
  }
}

void PrepareCoordinates(Builder& entry, FunctionState& fs, const CoopMatType& type) {
  if (fs.coordinates.count(type.id)) return;
  if (!entry.context().entryFunctions.count(fs.function.definition.resultId)) {
    // Not an entry point: it may be called from non-uniform control flow, so it
    // reads the tables its callers' entry points learned.
    fs.coordinates[type.id] = PrivateCoordinates(entry.context(), type);
    return;
  }
  CoordinateTables tables;
  if (IndexTable(entry.types(), type)) {
    tables.indexVar = LearnTable(entry, fs, type, false, Part::Index, 0);
  } else if (NeedsSplit(entry.types(), type)) {
    CheckSplitFits(entry.types(), type);
    tables.splitBase = SplitBase(entry.types(), type);
    tables.rowVar = LearnTable(entry, fs, type, false, Part::Low, tables.splitBase);
    tables.rowHighVar = LearnTable(entry, fs, type, false, Part::High, tables.splitBase);
    tables.colVar = LearnTable(entry, fs, type, true, Part::Low, tables.splitBase);
    tables.colHighVar = LearnTable(entry, fs, type, true, Part::High, tables.splitBase);
  } else {
    tables.rowVar = LearnTable(entry, fs, type, false, Part::Whole, 0);
    tables.colVar = LearnTable(entry, fs, type, true, Part::Whole, 0);
  }
  fs.coordinates[type.id] = tables;
}

uint32_t ReadCoordinate(Builder& b, FunctionState& fs, const CoopMatType& type, uint32_t index, bool column) {
  // Register path: the driver's layout is known, the coordinate is bit arithmetic.
  if (const LinearLayout* layout = RegisterLayout(b.context(), type)) return RegisterCoordinate(b, fs, *layout, index, column);
  auto it = fs.coordinates.find(type.id);
  if (it == fs.coordinates.end()) Fail("internal error: no coordinate tables for type %" + std::to_string(type.id));
  const CoordinateTables& tables = it->second;
  if (tables.indexVar) {
    const uint32_t k = ReadTable(b, type, tables.indexVar, index, tables.storage);
    return column ? b.Mod(k, type.colsId) : b.Div(k, type.colsId);
  }
  const uint32_t low = ReadTable(b, type, column ? tables.colVar : tables.rowVar, index, tables.storage);
  const uint32_t highVar = column ? tables.colHighVar : tables.rowHighVar;
  if (!highVar) return low;
  const uint32_t high = ReadTable(b, type, highVar, index, tables.storage);
  return b.Add(b.Mul(high, b.U(tables.splitBase)), low);
}

void LowerGetCoordinate(Builder& b, FunctionState& fs, const ir::Instruction& inst) {
  Context& c = b.context();
  TypeManager& t = c.types;
  if (inst.operands.size() != 2) Fail(Describe(inst) + ": expected Matrix and Index operands");
  const CoopMatType type = MatrixOf(c, inst, inst.operands[0], "Matrix");
  const uint32_t indexType = t.TypeOf(inst.operands[1]);
  if (!t.IsIntType(indexType) || t.ScalarWidth(indexType) != 32) Fail(Describe(inst) + ": Index must be a 32-bit integer");
  const ir::Instruction* result = t.GlobalDef(inst.typeId);
  if (!result || result->opcode != spv::Op::OpTypeVector || result->Operand(1) != 2 || !t.IsIntType(result->Operand(0)) ||
      t.ScalarWidth(result->Operand(0)) != 32)
    Fail(Describe(inst) + ": Result Type must be a vector of two 32-bit integers");
  const uint32_t component = result->Operand(0);
  // The result for an Index past the length is undefined, but reading the table
  // there would access past a Function/Private variable: read element 0 instead.
  uint32_t index = b.AsIntType(inst.operands[1], t.Uint());
  const bool registers = RegisterLayout(c, type) != nullptr;  // in range whatever the index
  if (auto constant = t.ConstantValue(index); !registers && (!constant || *constant != 0)) {
    const uint32_t length = b.Emit(spv::Op::OpCooperativeMatrixLengthKHR, t.Uint(), {type.id});
    const uint32_t inRange = b.Emit(spv::Op::OpULessThan, t.Bool(), {index, length});
    index = b.Emit(spv::Op::OpSelect, t.Uint(), {inRange, index, b.U(0)});
  }
  const uint32_t row = b.AsIntType(ReadCoordinate(b, fs, type, index, false), component);
  const uint32_t col = b.AsIntType(ReadCoordinate(b, fs, type, index, true), component);
  b.Emit(spv::Op::OpCompositeConstruct, inst.typeId, {row, col}, inst.resultId);
  ++c.stats.getCoordinate;
  if (registers) ++c.stats.registerPath;
}

}  // namespace coopmat
