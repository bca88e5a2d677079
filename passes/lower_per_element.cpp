// OpCooperativeMatrixPerElementOpEXT: a loop over the elements this invocation
// holds, calling Func(row, col, element, extras...) for each, with the
// coordinates from the learned tables. Func stays an ordinary function.
#include "register.h"

namespace coopmat {

void LowerPerElement(Builder& b, FunctionState& fs, const ir::Instruction& inst) {
  Context& c = b.context();
  TypeManager& t = c.types;
  if (inst.operands.size() < 2) Fail(Describe(inst) + ": expected Matrix and Func operands");
  const CoopMatType type = MatrixOf(c, inst, inst.operands[0], "Matrix");
  if (inst.typeId != type.id) Fail(Describe(inst) + ": Result Type must equal the Matrix type");
  const uint32_t func = inst.operands[1];
  const std::vector<uint32_t> params = c.ParameterTypes(func);
  const size_t extraCount = inst.operands.size() - 2;
  if (params.size() != 3 + extraCount) Fail(Describe(inst) + ": Func must take row, column, element and one parameter per extra operand");
  if (c.ReturnType(func) != type.componentType || params[2] != type.componentType)
    Fail(Describe(inst) + ": Func must take and return the matrix component type");
  for (int i = 0; i < 2; ++i)
    if (!t.IsIntType(params[i]) || t.ScalarWidth(params[i]) != 32) Fail(Describe(inst) + ": Func's row and column parameters must be 32-bit integers");

  // Function-variable copies so elements can be read and written at a dynamic index.
  const uint32_t matrixVar = b.Variable(type.id);
  b.EmitVoid(spv::Op::OpStore, {matrixVar, inst.operands[0]});
  std::vector<uint32_t> extraVars(extraCount, 0);
  for (size_t e = 0; e < extraCount; ++e) {
    const uint32_t operand = inst.operands[2 + e];
    const uint32_t operandType = t.TypeOf(operand);
    if (t.IsCoopMat(operandType)) {
      if (operandType != type.id || params[3 + e] != type.componentType)
        Fail(Describe(inst) + ": a matrix extra operand must have the Matrix type and a component-type parameter");
      extraVars[e] = b.Variable(type.id);
      b.EmitVoid(spv::Op::OpStore, {extraVars[e], operand});
    } else if (operandType != params[3 + e]) {
      Fail(Describe(inst) + ": extra operand " + std::to_string(e) + " does not match Func's parameter type");
    }
  }

  const uint32_t length = b.Emit(spv::Op::OpCooperativeMatrixLengthKHR, t.Uint(), {type.id});
  b.Loop(b.U(0), length, b.U(1), [&](uint32_t i) {
    const uint32_t row = b.AsIntType(ReadCoordinate(b, fs, type, i, false), params[0]);
    const uint32_t col = b.AsIntType(ReadCoordinate(b, fs, type, i, true), params[1]);
    const uint32_t elementPtr = b.ElementPointer(matrixVar, type.componentType, i);
    std::vector<uint32_t> args{func, row, col, b.Emit(spv::Op::OpLoad, type.componentType, {elementPtr})};
    for (size_t e = 0; e < extraCount; ++e) {
      if (extraVars[e])
        args.push_back(b.Emit(spv::Op::OpLoad, type.componentType, {b.ElementPointer(extraVars[e], type.componentType, i)}));
      else
        args.push_back(inst.operands[2 + e]);
    }
    const uint32_t value = b.Emit(spv::Op::OpFunctionCall, type.componentType, std::move(args));
    b.EmitVoid(spv::Op::OpStore, {elementPtr, value});
  });
  b.Emit(spv::Op::OpLoad, type.id, {matrixVar}, inst.resultId);
  ++c.stats.perElement;
  if (RegisterLayout(c, type)) ++c.stats.registerPath;  // coordinates were bit arithmetic
}

}  // namespace coopmat
