#include <algorithm>
#include <string_view>

#include "rewrite_internal.h"

namespace coopmat::virt::detail {
namespace {

using spv::Op;

// Element-wise operations KHR allows on matrices (each element on its own).
bool IsElementWise(Op op) {
  switch (op) {
    case Op::OpFNegate: case Op::OpSNegate: case Op::OpFAdd: case Op::OpIAdd: case Op::OpFSub: case Op::OpISub:
    case Op::OpFMul: case Op::OpIMul: case Op::OpFDiv: case Op::OpSDiv: case Op::OpUDiv: case Op::OpMatrixTimesScalar:
    case Op::OpFConvert: case Op::OpSConvert: case Op::OpUConvert: case Op::OpConvertFToS: case Op::OpConvertFToU:
    case Op::OpConvertSToF: case Op::OpConvertUToF: case Op::OpBitcast:
      return true;
    default: return false;
  }
}

bool IsConversion(Op op) {
  switch (op) {
    case Op::OpFConvert: case Op::OpSConvert: case Op::OpUConvert: case Op::OpConvertFToS: case Op::OpConvertFToU:
    case Op::OpConvertSToF: case Op::OpConvertUToF: case Op::OpBitcast:
      return true;
    default: return false;
  }
}

// Operations on matrix values that work on the arrays unchanged.
bool KeepsMatrices(Op op) {
  switch (op) {
    case Op::OpLoad: case Op::OpStore: case Op::OpVariable: case Op::OpPhi: case Op::OpSelect: case Op::OpCopyObject:
    case Op::OpFunctionCall: case Op::OpReturnValue: case Op::OpFunctionParameter: case Op::OpCompositeExtract:
    case Op::OpCompositeInsert: case Op::OpAccessChain: case Op::OpInBoundsAccessChain: case Op::OpUndef:
    case Op::OpCopyMemory: case Op::OpLine: case Op::OpNoLine:
      return true;
    default: return false;
  }
}

// Whether every one of `meetings` (bool ids) was whole.
uint32_t AllOf(Builder& b, const std::vector<uint32_t>& meetings) {
  uint32_t all = meetings.front();
  for (size_t i = 1; i < meetings.size(); ++i) all = b.Emit(Op::OpLogicalAnd, b.types().Bool(), {all, meetings[i]});
  return all;
}

}  // namespace

// Every OpTypeCooperativeMatrixKHR becomes, under the same id, an array of its
// component type with the profile's length; the length constants are put before
// the first matrix type so that every array can stay where its matrix was.
void MatrixRewrite::ReplaceTypes() {
  TypeManager t(c_.m);
  size_t first = c_.m.globals.size();
  for (size_t i = 0; i < c_.m.globals.size(); ++i) {
    const ir::Instruction& inst = c_.m.globals[i];
    if (inst.opcode != Op::OpTypeCooperativeMatrixKHR) continue;
    first = std::min(first, i);
    auto info = t.CoopMatInfo(inst.resultId);
    auto scope = t.ConstantValue(info->scopeId);
    auto rows = t.ConstantValue(info->rowsId), cols = t.ConstantValue(info->colsId), use = t.ConstantValue(info->useId);
    if (!scope || *scope != kScopeSubgroup) Fail("matrix type %" + std::to_string(inst.resultId) + " is not of Subgroup scope");
    if (!rows || !cols || !use || *use > 2)
      Fail("matrix type %" + std::to_string(inst.resultId) + " has a shape or Use that is not constant");
    auto vkType = t.VkComponentType(info->componentType);
    if (!vkType) Fail("matrix type %" + std::to_string(inst.resultId) + " has a component type without a VkComponentTypeKHR");
    info->use = static_cast<MatrixUse>(*use);
    const LayoutKey key{*vkType, *use, *rows, *cols, c_.S};
    std::optional<ElementLayout> layout = c_.profile.FindLayout(key);
    if (!layout) Fail("profile " + c_.profile.name + " has no layout for " + ToString(key));
    const uint32_t length = layout->Length();
    matrices_[inst.resultId] = Matrix{*info, std::move(layout), *rows, *cols, length};
  }
  if (matrices_.empty()) return;
  if (c_.partialSubgroups)
    Fail("a workgroup of " + std::to_string(c_.invocations) + " invocations ends in a partial subgroup of " + std::to_string(c_.S) +
         ", and cooperative matrices need full subgroups");
  // A 32-bit unsigned int type before the first matrix type (moved there, or made).
  uint32_t uintType = 0;
  for (size_t i = 0; i < c_.m.globals.size(); ++i) {
    const ir::Instruction& inst = c_.m.globals[i];
    if (inst.opcode == Op::OpTypeInt && inst.Operand(0) == 32 && inst.Operand(1) == 0) {
      uintType = inst.resultId;
      if (i > first) {
        ir::Instruction moved = inst;
        c_.m.globals.erase(c_.m.globals.begin() + static_cast<ptrdiff_t>(i));
        c_.m.globals.insert(c_.m.globals.begin() + static_cast<ptrdiff_t>(first), moved);
        ++first;
      }
      break;
    }
  }
  if (!uintType) {
    uintType = c_.m.TakeId();
    c_.m.globals.insert(c_.m.globals.begin() + static_cast<ptrdiff_t>(first), ir::Instruction(Op::OpTypeInt, 0, uintType, {32, 0}));
    ++first;
  }
  std::map<uint32_t, uint32_t> lengthConstants;
  for (const auto& [id, matrix] : matrices_) {
    if (lengthConstants.count(matrix.length)) continue;
    const uint32_t constant = c_.m.TakeId();
    lengthConstants[matrix.length] = constant;
    c_.m.globals.insert(c_.m.globals.begin() + static_cast<ptrdiff_t>(first++),
                      ir::Instruction(Op::OpConstant, uintType, constant, {matrix.length}));
  }
  for (ir::Instruction& inst : c_.m.globals)
    if (inst.opcode == Op::OpTypeCooperativeMatrixKHR) {
      const Matrix& matrix = matrices_.at(inst.resultId);
      inst = ir::Instruction(Op::OpTypeArray, 0, inst.resultId, {matrix.info.componentType, lengthConstants.at(matrix.length)});
    }
}

const Matrix* MatrixRewrite::MatrixType(uint32_t typeId) const {
  auto it = matrices_.find(typeId);
  return it == matrices_.end() ? nullptr : &it->second;
}

const Matrix& MatrixRewrite::MatrixOperand(const ir::Instruction& inst, uint32_t id, const char* what) {
  const Matrix* matrix = MatrixValue(id);
  if (!matrix) Fail(Describe(inst) + ": " + what + " is not a cooperative matrix");
  return *matrix;
}

// A matrix constant names one value for every element.
void MatrixRewrite::ExpandConstants() {
  for (ir::Instruction& inst : c_.m.globals)
    if ((inst.opcode == Op::OpConstantComposite || inst.opcode == Op::OpSpecConstantComposite) && MatrixType(inst.typeId)) {
      if (inst.operands.size() != 1) Fail("matrix constant %" + std::to_string(inst.resultId) + " does not have one constituent");
      inst.opcode = Op::OpConstantComposite;
      inst.operands.assign(MatrixType(inst.typeId)->length, inst.operands[0]);
    }
}

// The (row, col) of each element this invocation holds, from the profile's layout as
// the virtual device reads it: the lane's part once (the XOR of the images of its set
// bits), each element's in-tile part and tile corner as constants.
std::vector<std::pair<uint32_t, uint32_t>> MatrixRewrite::Coordinates(Builder& b, const Matrix& matrix) {
  const ElementLayout& layout = *matrix.layout;
  const uint32_t lane = c_.Lane(b);
  uint32_t laneRow = b.U(0), laneCol = b.U(0);
  for (uint32_t bit = 0; (1u << bit) < c_.S; ++bit) {
    const ElementCoord image = layout.LaneImage(bit);
    if (!image.row && !image.col) continue;
    const uint32_t set = b.And(b.ShiftRight(lane, b.U(bit)), b.U(1));
    laneRow = b.Xor(laneRow, b.Mul(set, b.U(image.row)));
    laneCol = b.Xor(laneCol, b.Mul(set, b.U(image.col)));
  }
  std::vector<std::pair<uint32_t, uint32_t>> coords;
  for (uint32_t e = 0; e < matrix.length; ++e) {
    const ElementCoord part = layout.IndexPart(e), corner = layout.TileCorner(e);
    coords.emplace_back(b.Add(b.U(corner.row), b.Xor(laneRow, b.U(part.row))), b.Add(b.U(corner.col), b.Xor(laneCol, b.U(part.col))));
  }
  return coords;
}

// A component of fewer than 32 bits as the low bits of a word, the rest zero. A 16-bit
// float goes through a vector of two, so that no Int16 capability is needed.
uint32_t MatrixRewrite::ComponentBits(Builder& b, uint32_t value) {
  const uint32_t type = T().TypeOf(value);
  if (!c_.IsArithmeticFloat(type)) return b.Emit(Op::OpUConvert, T().Uint(), {value});  // zero-extends signed ones too
  const uint32_t pair = b.Emit(Op::OpCompositeConstruct, T().Vector(type, 2), {value, value});
  return b.And(b.Emit(Op::OpBitcast, T().Uint(), {pair}), b.U(0xffff));
}

// The component of type `component` in the low bits of `word`.
uint32_t MatrixRewrite::ComponentFromBits(Builder& b, uint32_t word, uint32_t component) {
  if (T().IsEncodedFloat(component)) return b.Emit(Op::OpUConvert, component, {word});
  if (T().IsFloatType(component))
    return b.Emit(Op::OpCompositeExtract, component, {b.Emit(Op::OpBitcast, T().Vector(component, 2), {word}), 0});
  const uint32_t narrow = T().Int(T().ScalarWidth(component), false);
  const uint32_t value = b.Emit(Op::OpUConvert, narrow, {word});
  return narrow == component ? value : b.Emit(Op::OpBitcast, component, {value});
}

void MatrixRewrite::LoadOrStore(Builder& b, const ir::Instruction& inst, bool store) {
  ++c_.result.matrixOps;
  const uint32_t pointer = inst.Operand(0);
  const uint32_t object = store ? inst.Operand(1) : 0;
  const Matrix& matrix = store ? MatrixOperand(inst, object, "Object") : *MatrixType(inst.typeId);
  const size_t layoutAt = store ? 2 : 1;
  auto memoryLayout = T().ConstantValue(inst.Operand(layoutAt));
  if (!memoryLayout || *memoryLayout > 1)
    Fail(Describe(inst) + ": only constant RowMajor and ColumnMajor layouts are emulated");
  if (inst.operands.size() <= layoutAt + 1) Fail(Describe(inst) + ": a Stride is needed");
  const uint32_t strideId = inst.Operand(layoutAt + 1);
  if (T().ScalarWidth(T().TypeOf(strideId)) != 32) Fail(Describe(inst) + ": only 32-bit strides are emulated");
  const uint32_t stride = b.AsIntType(strideId, T().Uint());

  // The pointer is an access chain whose last index walks an array of P (a scalar or
  // a vector): each element gets the same chain with that index moved. The stride and
  // that index count P; the matrix's components lie packed in the P they fill.
  auto def = c_.defs.find(pointer);
  if (def == c_.defs.end() || (def->second.opcode != Op::OpAccessChain && def->second.opcode != Op::OpInBoundsAccessChain) ||
      def->second.operands.size() < 2)
    Fail(Describe(inst) + ": the Pointer must be an access chain into an array in the same function");
  const ir::Instruction chain = def->second;
  const ir::Instruction* pointerType = T().GlobalDef(chain.typeId);
  const uint32_t pointee = pointerType ? pointerType->Operand(1) : 0;
  const ir::Instruction* pointeeDef = T().GlobalDef(pointee);
  const bool vector = pointeeDef && pointeeDef->opcode == Op::OpTypeVector;
  const uint32_t scalar = vector ? pointeeDef->Operand(0) : pointee;  // what one access below reads or writes
  const uint32_t vectorSize = vector ? pointeeDef->Operand(1) : 1;
  const uint32_t component = matrix.info.componentType;
  const uint32_t scalarBits = T().ScalarWidth(scalar), componentBits = T().ScalarWidth(component);
  if (!scalarBits || scalarBits > 32 || scalarBits < componentBits || scalarBits % componentBits)
    Fail(Describe(inst) + ": loads and stores through a pointer to " + std::to_string(scalarBits) + "-bit values of " +
         std::to_string(componentBits) + "-bit components are not emulated");
  const uint32_t perScalar = scalarBits / componentBits;  // components packed in one scalar
  const uint32_t perPointee = perScalar * vectorSize;     // ... in one P
  if (store && perScalar > 1 && (scalarBits != 32 || !T().IsIntType(scalar)))
    Fail(Describe(inst) + ": stores of packed components are emulated through 32-bit integers only");
  const uint32_t lastIndex = chain.operands.back();
  if (T().ScalarWidth(T().TypeOf(lastIndex)) != 32) Fail(Describe(inst) + ": only 32-bit access chain indices are emulated");
  const uint32_t first = b.AsIntType(lastIndex, T().Uint());
  const bool rowMajor = *memoryLayout == 0;
  const uint32_t scalarPointer = vector ? T().Pointer(static_cast<spv::StorageClass>(pointerType->Operand(0)), scalar) : chain.typeId;

  const auto coords = Coordinates(b, matrix);
  const std::vector<uint32_t> stored = store ? StoredElements(b, object, matrix) : std::vector<uint32_t>{};
  std::vector<uint32_t> elements;
  for (uint32_t e = 0; e < matrix.length; ++e) {
    const auto [row, col] = coords[e];
    // The element's place counted in components from the start of the array.
    const uint32_t strideUnits = perPointee == 1 ? stride : b.Mul(stride, b.U(perPointee));
    const uint32_t offset = rowMajor ? b.Add(b.Mul(row, strideUnits), col) : b.Add(b.Mul(col, strideUnits), row);
    const uint32_t unit = b.Add(perPointee == 1 ? first : b.Mul(first, b.U(perPointee)), offset);
    std::vector<uint32_t> operands(chain.operands.begin(), chain.operands.end() - 1);
    operands.push_back(perPointee == 1 ? unit : b.Div(unit, b.U(perPointee)));
    if (vector) operands.push_back(b.Div(b.Mod(unit, b.U(perPointee)), b.U(perScalar)));
    const uint32_t at = b.Emit(chain.opcode, scalarPointer, operands);
    // Where the component sits in its scalar (bits), when several share one.
    const uint32_t shift = perScalar == 1 ? 0 : b.Mul(b.Mod(unit, b.U(perScalar)), b.U(componentBits));
    if (store) {
      uint32_t value = stored[e];
      if (perScalar == 1) {
        value = c_.Reinterpret(b, value, scalar);
        b.EmitVoid(Op::OpStore, {at, value});
        continue;
      }
      // Neighbours in the same word belong to other invocations: clear and set this
      // component's bits atomically (replicas write the same bits).
      const uint32_t bits = b.ShiftLeft(ComponentBits(b, value), shift);
      const uint32_t keep = b.Emit(Op::OpNot, T().Uint(), {b.ShiftLeft(b.U((1u << componentBits) - 1), shift)});
      const uint32_t scope = b.U(kScopeWorkgroup), relaxed = b.U(0);
      b.Emit(Op::OpAtomicAnd, scalar, {at, scope, relaxed, b.AsIntType(keep, scalar)});
      b.Emit(Op::OpAtomicOr, scalar, {at, scope, relaxed, b.AsIntType(bits, scalar)});
    } else {
      uint32_t value = b.Emit(Op::OpLoad, scalar, {at});
      if (perScalar > 1) {
        const uint32_t word = T().ScalarWidth(scalar) == 32 ? b.AsIntType(value, T().Uint())
                                                             : b.Emit(Op::OpUConvert, T().Uint(), {b.AsIntType(value, T().Int(scalarBits, false))});
        value = ComponentFromBits(b, b.ShiftRight(word, shift), component);
      }
      value = c_.Reinterpret(b, value, component);
      elements.push_back(value);
    }
  }
  if (!store) b.Emit(Op::OpCompositeConstruct, inst.typeId, elements, inst.resultId);
}

// The elements a store writes: the matrix's own, or, where its layout has replicas, the
// words the region holds once Scatter compared them (a real device stores one of the copies,
// so copies that disagree must not pass because the last one written was right).
std::vector<uint32_t> MatrixRewrite::StoredElements(Builder& b, uint32_t object, const Matrix& matrix) {
  if (matrix.layout->Replicas() > 1) return ThroughRegion(b, object, matrix, matrix, "a store's replica check");
  std::vector<uint32_t> elements;
  for (uint32_t e = 0; e < matrix.length; ++e)
    elements.push_back(b.Emit(Op::OpCompositeExtract, matrix.info.componentType, {object, e}));
  return elements;
}

// `value`, laid out as `from`, written to the region (Scatter: its replicas compared, each
// element through `convert` when given) between two meetings, then read back in `to`'s
// layout: all bits set where a meeting was not whole (the region may hold another
// operation's words). `what` names the meetings' sites.
std::vector<uint32_t> MatrixRewrite::ThroughRegion(Builder& b, uint32_t value, const Matrix& from, const Matrix& to,
                                                   const std::string& what, const std::function<uint32_t(uint32_t)>& convert) {
  c_.Require(to.rows * to.cols);
  std::vector<uint32_t> meetings;
  meetings.push_back(c_.SubgroupBarrier(b, ("before " + what).c_str()));
  const uint32_t base = c_.RegionBase(b);
  meetings.push_back(Scatter(b, base, 0, value, from, false, convert));
  meetings.push_back(c_.SubgroupBarrier(b, ("after " + what).c_str()));
  const uint32_t met = AllOf(b, meetings);
  const auto coords = Coordinates(b, to);
  std::vector<uint32_t> elements;
  for (uint32_t e = 0; e < to.length; ++e) {
    const uint32_t word = c_.LoadWord(b, base, b.Add(b.Mul(coords[e].first, b.U(to.cols)), coords[e].second));
    elements.push_back(c_.FromWord(b, b.Emit(Op::OpSelect, T().Uint(), {met, word, b.U(~0u)}), to.info.componentType));
  }
  return elements;
}

// Writes every element of `value` to its (row, col) of a rows x cols row-major
// block at `offset` words into the region. Where the layout gives an element to
// several invocations, the copies must agree bit for bit (a driver may store or
// multiply from any of them): after a meeting each copy is compared with the word
// stored, and one that differs is a fault and leaves the word all ones.
uint32_t MatrixRewrite::Scatter(Builder& b, uint32_t base, uint32_t offset, uint32_t value, const Matrix& matrix, bool transpose,
                                const std::function<uint32_t(uint32_t)>& convert) {
  TypeManager& t = T();
  const auto coords = Coordinates(b, matrix);
  const uint32_t width = transpose ? matrix.rows : matrix.cols;
  std::vector<std::pair<uint32_t, uint32_t>> written;  // (word offset, word) per element
  for (uint32_t e = 0; e < matrix.length; ++e) {
    uint32_t element = b.Emit(Op::OpCompositeExtract, matrix.info.componentType, {value, e});
    uint32_t type = matrix.info.componentType;
    if (convert) {
      element = convert(element);
      type = t.TypeOf(element);
    }
    const auto [row, col] = coords[e];
    const uint32_t at = b.Add(b.U(offset), transpose ? b.Add(b.Mul(col, b.U(width)), row) : b.Add(b.Mul(row, b.U(width)), col));
    written.emplace_back(at, c_.ToWords(b, element, type)[0]);
    c_.StoreWord(b, base, at, written.back().second);
  }
  if (matrix.layout->Replicas() == 1) return c_.True();
  const uint32_t met = c_.SubgroupBarrier(b, "replicas written");
  const uint32_t site = c_.faults->Site("replicas compared");
  uint32_t differs = b.Emit(Op::OpLogicalNot, t.Bool(), {c_.True()}), first = b.U(0);
  for (uint32_t e = 0; e < matrix.length; ++e) {
    const auto [at, word] = written[e];
    const uint32_t unlike = b.Emit(Op::OpINotEqual, t.Bool(), {c_.LoadWord(b, base, at), word});
    b.Emit(Op::OpAtomicOr, t.Uint(), {c_.WordPointer(b, base, at), b.U(kScopeWorkgroup), b.U(0),
                                      b.Emit(Op::OpSelect, t.Uint(), {unlike, b.U(~0u), b.U(0)})});
    first = b.Emit(Op::OpSelect, t.Uint(), {differs, first, b.Emit(Op::OpSelect, t.Uint(), {unlike, b.U(e), first})});
    differs = b.Emit(Op::OpLogicalOr, t.Bool(), {differs, unlike});
  }
  c_.If(b, differs, [&] {
    c_.faults->Report(b, b.U(faults::kReplicasDisagree), site, b.Or(b.ShiftLeft(c_.Lane(b), b.U(16)), first));
  });
  return met;
}

// Converts a scalar to the MulAdd's Result component type.
uint32_t MatrixRewrite::ToResultType(Builder& b, uint32_t value, uint32_t to, bool isSigned) {
  TypeManager& t = T();
  const uint32_t from = t.TypeOf(value);
  if (from == to) return value;
  if (t.IsFloatType(to) != t.IsFloatType(from)) Fail("MulAdd between integer and floating-point matrices is not emulated");
  if (t.IsFloatType(to)) return b.Emit(Op::OpFConvert, to, {value});
  const uint32_t toWidth = t.ScalarWidth(to);
  if (t.ScalarWidth(from) == toWidth) return b.Emit(Op::OpBitcast, to, {value});
  const uint32_t wide = isSigned ? b.Emit(Op::OpSConvert, t.Int(toWidth, true), {value}) : b.Emit(Op::OpUConvert, t.Int(toWidth, false), {value});
  return t.TypeOf(wide) == to ? wide : b.Emit(Op::OpBitcast, to, {wide});
}

void MatrixRewrite::NoContraction(uint32_t id) {
  c_.m.annotations.emplace_back(Op::OpDecorate, 0, 0, std::vector<uint32_t>{id, static_cast<uint32_t>(spv::Decoration::NoContraction)});
}

void MatrixRewrite::MulAdd(Builder& b, const ir::Instruction& inst) {
  ++c_.result.matrixOps;
  const Matrix& a = MatrixOperand(inst, inst.Operand(0), "A");
  const Matrix& bm = MatrixOperand(inst, inst.Operand(1), "B");
  const Matrix& c = MatrixOperand(inst, inst.Operand(2), "C");
  const Matrix& r = *MatrixType(inst.typeId);
  const uint32_t M = r.rows, N = r.cols, K = a.cols;
  if (a.rows != M || bm.rows != K || bm.cols != N || c.rows != M || c.cols != N)
    Fail(Describe(inst) + ": the shapes of A, B, C and Result do not agree");
  const uint32_t operands = inst.operands.size() > 3 ? inst.operands[3] : 0;
  if (operands & static_cast<uint32_t>(spv::CooperativeMatrixOperandsMask::SaturatingAccumulationKHR))
    Fail(Describe(inst) + ": saturating accumulation is not emulated yet");
  auto signedBit = [&](spv::CooperativeMatrixOperandsMask bit) { return (operands & static_cast<uint32_t>(bit)) != 0; };
  const bool aSigned = signedBit(spv::CooperativeMatrixOperandsMask::MatrixASignedComponentsKHR);
  const bool bSigned = signedBit(spv::CooperativeMatrixOperandsMask::MatrixBSignedComponentsKHR);
  const bool cSigned = signedBit(spv::CooperativeMatrixOperandsMask::MatrixCSignedComponentsKHR);
  c_.Require(M * K + K * N);

  // Each meeting must have been whole: otherwise the region holds another operation's
  // words, and the result is poison (the fault is recorded where the meeting failed).
  std::vector<uint32_t> meetings;
  meetings.push_back(c_.SubgroupBarrier(b, "before A and B are written"));
  const uint32_t base = c_.RegionBase(b);
  meetings.push_back(Scatter(b, base, 0, inst.Operand(0), a));
  meetings.push_back(Scatter(b, base, M * K, inst.Operand(1), bm));
  meetings.push_back(c_.SubgroupBarrier(b, "after A and B are written"));
  const uint32_t met = AllOf(b, meetings);

  const uint32_t resultType = r.info.componentType;
  // bfloat16 and fp8 have no arithmetic: their accumulators sum in binary32, rounded to
  // nearest even once at the end (their A and B enter as their exact binary32 values).
  const IeeeFormat* resultFormat = encoded_.Format(resultType);
  const uint32_t sumType = resultFormat ? T().Float(32) : resultType;
  const bool isFloat = T().IsFloatType(sumType);
  auto widen = [&](uint32_t value, const Matrix& matrix, bool isSigned) {
    if (const IeeeFormat* format = encoded_.Format(matrix.info.componentType))
      return ToResultType(b, encoded_.Decode(b, c_.ToWords(b, value, matrix.info.componentType)[0], *format), sumType, false);
    return ToResultType(b, value, sumType, isSigned);
  };
  // An element of A or B from its word in the region.
  auto operand = [&](uint32_t word, const Matrix& matrix, bool isSigned) {
    if (const IeeeFormat* format = encoded_.Format(matrix.info.componentType))
      return ToResultType(b, encoded_.Decode(b, word, *format), sumType, false);
    return ToResultType(b, c_.FromWord(b, word, matrix.info.componentType), sumType, isSigned);
  };
  // Over K in a loop (in order, each element's sum in a Function variable): the code stays
  // small enough for lavapipe to compile kernels of many MulAdds in seconds.
  const auto coords = Coordinates(b, r);
  std::vector<uint32_t> sums;
  for (uint32_t e = 0; e < r.length; ++e) {
    sums.push_back(b.Variable(sumType));
    b.EmitVoid(Op::OpStore, {sums[e], widen(b.Emit(Op::OpCompositeExtract, c.info.componentType, {inst.Operand(2), e}), c, cSigned)});
  }
  b.Loop(b.U(0), b.U(K), b.U(1), [&](uint32_t k) {
    for (uint32_t e = 0; e < r.length; ++e) {
      const auto [row, col] = coords[e];
      const uint32_t x = operand(c_.LoadWord(b, base, b.Add(b.Mul(row, b.U(K)), k)), a, aSigned);
      const uint32_t y = operand(c_.LoadWord(b, base, b.Add(b.U(M * K), b.Add(b.Mul(k, b.U(N)), col))), bm, bSigned);
      const uint32_t product = b.Emit(isFloat ? Op::OpFMul : Op::OpIMul, sumType, {x, y});
      const uint32_t acc = b.Emit(isFloat ? Op::OpFAdd : Op::OpIAdd, sumType, {b.Emit(Op::OpLoad, sumType, {sums[e]}), product});
      if (isFloat) {
        NoContraction(product);
        NoContraction(acc);
      }
      b.EmitVoid(Op::OpStore, {sums[e], acc});
    }
  });
  std::vector<uint32_t> elements;
  for (uint32_t e = 0; e < r.length; ++e) {
    uint32_t acc = b.Emit(Op::OpLoad, sumType, {sums[e]});
    if (resultFormat) acc = c_.FromWord(b, encoded_.Encode(b, acc, *resultFormat, false), resultType);
    elements.push_back(b.Emit(Op::OpSelect, resultType, {met, acc, Loud(resultType)}));
  }
  b.Emit(Op::OpCompositeConstruct, inst.typeId, elements, inst.resultId);
}

// Arithmetic and conversions element by element; a conversion into a matrix laid
// out otherwise moves its elements through the region.
void MatrixRewrite::ElementWise(Builder& b, const ir::Instruction& inst) {
  ++c_.result.matrixOps;
  const Matrix& r = *MatrixType(inst.typeId);
  const uint32_t component = r.info.componentType;
  Op op = inst.opcode;
  if (op == Op::OpMatrixTimesScalar && !T().IsFloatType(component)) op = Op::OpIMul;
  if (op == Op::OpMatrixTimesScalar) op = Op::OpFMul;
  // bfloat16 and fp8 matrices are only moved and converted (SPV_KHR_bfloat16, SPV_EXT_float8).
  const Matrix* operandMatrix = MatrixValue(inst.Operand(0));
  const bool encoded = encoded_.Format(component) || (operandMatrix && encoded_.Format(operandMatrix->info.componentType));
  if (encoded && !IsConversion(op))
    Fail(Describe(inst) + ": arithmetic on bfloat16 and fp8 matrices is not allowed (SPV_KHR_bfloat16, SPV_EXT_float8)");
  const bool saturate = encoded && encoded_.ConversionSaturates(inst);
  // One element's conversion or operation.
  auto compute = [&](const std::vector<uint32_t>& operands) {
    if (encoded && op == Op::OpBitcast) return c_.Reinterpret(b, operands[0], component);
    if (encoded) return encoded_.ConvertScalar(b, op, operands[0], component, saturate);
    return b.Emit(op, component, operands);
  };
  // Decorations of the result (NoContraction, FPRoundingMode, ...) belong to each element's operation.
  std::vector<ir::Instruction> decorations;
  std::erase_if(c_.m.annotations, [&](const ir::Instruction& a) {
    if (a.opcode != Op::OpDecorate || a.Operand(0) != inst.resultId) return false;
    decorations.push_back(a);
    return true;
  });
  auto decorate = [&](uint32_t id) {
    for (ir::Instruction d : decorations) {
      d.operands[0] = id;
      c_.m.annotations.push_back(d);
    }
  };
  const Matrix* source = IsConversion(inst.opcode) ? &MatrixOperand(inst, inst.Operand(0), "the operand") : nullptr;
  if (source && (source->rows != r.rows || source->cols != r.cols))
    Fail(Describe(inst) + ": a conversion between matrices of different shapes");
  auto elementOf = [&](uint32_t operand, uint32_t e) {
    const Matrix* matrix = MatrixValue(operand);
    return matrix ? b.Emit(Op::OpCompositeExtract, matrix->info.componentType, {operand, e}) : operand;
  };
  if (source && !source->layout->SameMap(*r.layout)) {
    const std::vector<uint32_t> elements = ThroughRegion(b, inst.Operand(0), *source, r, "the relayout", [&](uint32_t element) {
      const uint32_t converted = compute({element});
      decorate(converted);
      return converted;
    });
    b.Emit(Op::OpCompositeConstruct, inst.typeId, elements, inst.resultId);
    return;
  }
  for (uint32_t operand : inst.operands)
    if (const Matrix* matrix = MatrixValue(operand); matrix && !matrix->layout->SameMap(*r.layout))
      Fail(Describe(inst) + ": operands laid out unlike the result");
  std::vector<uint32_t> elements;
  for (uint32_t e = 0; e < r.length; ++e) {
    std::vector<uint32_t> operands;
    for (uint32_t operand : inst.operands) operands.push_back(elementOf(operand, e));
    const uint32_t element = compute(operands);
    decorate(element);
    elements.push_back(element);
  }
  b.Emit(Op::OpCompositeConstruct, inst.typeId, elements, inst.resultId);
}

void MatrixRewrite::DropDeclarations() {
  std::erase_if(c_.m.capabilities, [](const ir::Instruction& inst) {
    return inst.Operand(0) == static_cast<uint32_t>(spv::Capability::CooperativeMatrixKHR);
  });
  std::erase_if(c_.m.extensions, [](const ir::Instruction& inst) { return ir::DecodeString(inst.operands) == "SPV_KHR_cooperative_matrix"; });
}

bool MatrixRewrite::PastLength(const ir::Instruction& inst) {
  // Extract: composite, index...; Insert: object, composite, index...
  const size_t composite = inst.opcode == Op::OpCompositeExtract ? 0 : inst.opcode == Op::OpCompositeInsert ? 1 : SIZE_MAX;
  if (composite == SIZE_MAX || inst.operands.size() < composite + 2) return false;
  const Matrix* matrix = MatrixValue(inst.operands[composite]);
  return matrix && inst.operands[composite + 1] >= matrix->length;
}

// Code for another subgroup size of the profile (a driver compiling for this size never
// runs it): an extract gives a loud value, so a run that reaches it shows in the outputs.
void MatrixRewrite::PastLengthAccess(Builder& b, const ir::Instruction& inst) {
  ++c_.result.pastLengthAccesses;
  if (c_.profile.subgroupSizes.size() == 1)
    Fail(Describe(inst) + " reads or writes past the matrix's " + std::to_string(MatrixValue(inst.opcode == Op::OpCompositeExtract
                                                                                               ? inst.Operand(0)
                                                                                               : inst.Operand(1))->length) +
         " elements, and profile " + c_.profile.name + " has no other subgroup size whose code this could be");
  if (inst.opcode == Op::OpCompositeExtract)
    b.Emit(Op::OpCopyObject, inst.typeId, {Loud(inst.typeId)}, inst.resultId);
  else
    b.Emit(Op::OpCopyObject, inst.typeId, {inst.operands[1]}, inst.resultId);
}

uint32_t MatrixRewrite::Loud(uint32_t componentType) {
  const uint32_t width = T().ScalarWidth(componentType), id = c_.m.TakeId();
  const bool narrowSigned = T().IsSignedInt(componentType) && width < 32;
  std::vector<uint32_t> bits = {width >= 32 || narrowSigned ? ~0u : (1u << width) - 1};
  if (width == 64) bits.push_back(~0u);
  T().AddGlobal(ir::Instruction(Op::OpConstant, componentType, id, bits));
  return id;
}

bool MatrixRewrite::Handles(const ir::Instruction& inst) {
  if (PastLength(inst)) return true;
  switch (inst.opcode) {
    case Op::OpCooperativeMatrixLoadKHR: case Op::OpCooperativeMatrixStoreKHR: case Op::OpCooperativeMatrixMulAddKHR:
    case Op::OpCooperativeMatrixLengthKHR:
      return true;
    default: break;
  }
  if (std::string_view(spv::OpToString(inst.opcode)).starts_with("OpCooperativeMatrix")) return true;
  return inst.typeId && MatrixType(inst.typeId) && !KeepsMatrices(inst.opcode);
}

void MatrixRewrite::Rewrite(Builder& b, const ir::Instruction& inst) {
  if (PastLength(inst)) return PastLengthAccess(b, inst);
  switch (inst.opcode) {
    case Op::OpCooperativeMatrixLoadKHR: return LoadOrStore(b, inst, false);
    case Op::OpCooperativeMatrixStoreKHR: return LoadOrStore(b, inst, true);
    case Op::OpCooperativeMatrixMulAddKHR: return MulAdd(b, inst);
    case Op::OpCooperativeMatrixLengthKHR: {
      const Matrix* matrix = MatrixType(inst.Operand(0));
      if (!matrix) Fail(Describe(inst) + ": the operand is not a cooperative matrix type");
      ++c_.result.matrixOps;
      b.Emit(Op::OpCopyObject, inst.typeId, {b.U(matrix->length)}, inst.resultId);
      return;
    }
    case Op::OpCompositeConstruct: {
      const Matrix& matrix = *MatrixType(inst.typeId);
      if (inst.operands.size() != 1) Fail(Describe(inst) + ": a matrix is constructed from one value");
      b.Emit(Op::OpCompositeConstruct, inst.typeId, std::vector<uint32_t>(matrix.length, inst.operands[0]), inst.resultId);
      return;
    }
    default: break;
  }
  if (!inst.typeId || !MatrixType(inst.typeId)) Fail(Describe(inst) + " is not emulated by the virtual device");
  if (!IsElementWise(inst.opcode)) Fail(Describe(inst) + " on cooperative matrices is not emulated");
  ElementWise(b, inst);
}

}  // namespace coopmat::virt::detail
