// The instruction builder: emission at a cursor, Function variables, block
// splitting and structured counted loops.
#include "lowering.h"

#include <algorithm>

namespace coopmat {

std::string Describe(const ir::Instruction& inst) {
  // The header's names for 5293 is the NV alias; messages use the EXT spelling.
  const char* name = inst.opcode == spv::Op::OpCooperativeMatrixConvertUseEXT ? "OpCooperativeMatrixConvertUseEXT"
                                                                              : spv::OpToString(inst.opcode);
  return std::string(name) + " %" + std::to_string(inst.resultId);
}

CoopMatType MatrixOf(Context& context, const ir::Instruction& inst, uint32_t id, const char* what) {
  auto info = context.types.CoopMatInfo(context.types.TypeOf(id));
  if (!info) Fail(Describe(inst) + ": " + what + " is not an OpTypeCooperativeMatrixKHR value");
  if (info->componentBytes != 1 && info->componentBytes != 2 && info->componentBytes != 4)
    Fail(Describe(inst) + ": " + what +
         " has an unsupported component type (only 8/16/32-bit integers, 16/32-bit floats, bfloat16 and fp8 E4M3/E5M2)");
  auto scope = context.types.ConstantValue(info->scopeId);
  if (!scope || *scope != static_cast<uint32_t>(spv::Scope::Subgroup))
    Fail(Describe(inst) + ": " + what + " must have a constant Subgroup scope");
  const TypeManager& t = context.types;
  if (t.IsSpecConstant(info->rowsId) || t.IsSpecConstant(info->colsId) || t.IsSpecConstant(info->useId))
    context.dependsOnSpecialization = true;
  std::optional<uint32_t> use = t.ConstantValue(info->useId);
  // A specialization-constant Use is settled by the pipeline: until then its default
  // stands in (the portable path never depends on it, the register path is not taken).
  if (!use && context.options.specializationPending) use = t.SpecConstantDefault(info->useId);
  if (!use || *use > 2)
    Fail(Describe(inst) + ": " + what + " must have a constant Use (0, 1 or 2)" +
         (t.IsSpecConstant(info->useId) ? " once specialized" : ""));
  info->use = static_cast<MatrixUse>(*use);
  // A dimension specialized to 0 is no matrix: refused here rather than left to the driver
  // (lavapipe crashes on it).
  for (const auto& [dimension, name] : {std::pair{info->rowsId, "Rows"}, std::pair{info->colsId, "Columns"}})
    if (const auto value = t.ConstantValue(dimension); value && *value == 0)
      Fail(Describe(inst) + ": " + what + " has 0 " + name + (t.IsSpecConstant(dimension) ? " once specialized" : ""));
  return *info;
}

uint32_t Builder::Emit(spv::Op op, uint32_t type, std::vector<uint32_t> operands, uint32_t resultId) {
  if (!resultId) resultId = context_.module.TakeId();
  auto& list = function_.blocks[block_].instructions;
  list.insert(list.begin() + static_cast<ptrdiff_t>(index_), ir::Instruction(op, type, resultId, std::move(operands)));
  ++index_;
  context_.types.SetTypeOf(resultId, type);
  return resultId;
}

void Builder::EmitVoid(spv::Op op, std::vector<uint32_t> operands) {
  auto& list = function_.blocks[block_].instructions;
  list.insert(list.begin() + static_cast<ptrdiff_t>(index_), ir::Instruction(op, 0, 0, std::move(operands)));
  ++index_;
}

uint32_t Builder::Variable(uint32_t type) {
  const uint32_t pointer = context_.types.Pointer(spv::StorageClass::Function, type);
  const uint32_t id = context_.module.TakeId();
  context_.newVariables.emplace_back(spv::Op::OpVariable, pointer, id,
                                     std::vector<uint32_t>{static_cast<uint32_t>(spv::StorageClass::Function)});
  context_.types.SetTypeOf(id, pointer);
  return id;
}

// The labels a block terminator branches to.
std::vector<uint32_t> Successors(const ir::Instruction& terminator) {
  switch (terminator.opcode) {
    case spv::Op::OpBranch: return {terminator.Operand(0)};
    case spv::Op::OpBranchConditional: return {terminator.Operand(1), terminator.Operand(2)};
    case spv::Op::OpSwitch: {
      std::vector<uint32_t> labels{terminator.Operand(1)};
      for (size_t i = 3; i < terminator.operands.size(); i += 2) labels.push_back(terminator.operands[i]);
      return labels;
    }
    default: return {};
  }
}

void RetargetPhis(ir::Function& function, const ir::Instruction& terminator, uint32_t from, uint32_t to) {
  // A predecessor's label appears only in its successors' OpPhis, at their tops.
  const std::vector<uint32_t> successors = Successors(terminator);
  if (successors.empty()) return;
  for (ir::Block& block : function.blocks) {
    if (std::find(successors.begin(), successors.end(), block.Label()) == successors.end()) continue;
    for (ir::Instruction& inst : block.instructions) {
      if (inst.opcode == spv::Op::OpLabel || inst.opcode == spv::Op::OpLine || inst.opcode == spv::Op::OpNoLine) continue;
      if (inst.opcode != spv::Op::OpPhi) break;
      for (size_t i = 1; i < inst.operands.size(); i += 2)
        if (inst.operands[i] == from) inst.operands[i] = to;
    }
  }
}

uint32_t Builder::SplitBlock() {
  ir::Block& current = function_.blocks[block_];
  for (const ir::Instruction& inst : current.instructions)
    if (inst.opcode == spv::Op::OpLoopMerge)
      Fail("cannot insert a loop into loop header block %" + std::to_string(current.Label()));
  const uint32_t oldLabel = current.Label();
  const uint32_t newLabel = context_.module.TakeId();
  ir::Block tail;
  tail.instructions.emplace_back(spv::Op::OpLabel, 0, newLabel, std::vector<uint32_t>{});
  tail.instructions.insert(tail.instructions.end(),
                           std::make_move_iterator(current.instructions.begin() + static_cast<ptrdiff_t>(index_)),
                           std::make_move_iterator(current.instructions.end()));
  current.instructions.erase(current.instructions.begin() + static_cast<ptrdiff_t>(index_), current.instructions.end());
  const bool movedTerminator = tail.instructions.size() > 1;
  function_.blocks.insert(function_.blocks.begin() + static_cast<ptrdiff_t>(block_) + 1, std::move(tail));
  // The terminator moved: successors now come from the tail block. (Emitting at the
  // end of a block being rebuilt moves nothing; LowerFunction retargets once instead.)
  if (movedTerminator)
    RetargetPhis(function_, function_.blocks[block_ + 1].instructions.back(), oldLabel, newLabel);
  return newLabel;
}

void Builder::Switch(uint32_t selector, const std::vector<uint32_t>& values, const std::function<void(size_t)>& body,
                     const std::function<void()>& otherwise) {
  if (values.empty()) Fail("internal error: a switch needs a case");
  const uint32_t merge = SplitBlock();
  std::vector<uint32_t> labels(values.size());
  for (uint32_t& label : labels) label = context_.module.TakeId();
  const uint32_t defaultLabel = context_.module.TakeId();
  EmitVoid(spv::Op::OpSelectionMerge, {merge, static_cast<uint32_t>(spv::SelectionControlMask::MaskNone)});
  std::vector<uint32_t> operands{selector, defaultLabel};
  for (size_t k = 0; k < values.size(); ++k) {
    operands.push_back(values[k]);
    operands.push_back(labels[k]);
  }
  EmitVoid(spv::Op::OpSwitch, std::move(operands));
  // Each target's block goes before the merge block; its code may leave the cursor
  // in a later block of its own, which then branches to the merge.
  auto target = [&](uint32_t label, const std::function<void()>& code) {
    ir::Block block;
    block.instructions.emplace_back(spv::Op::OpLabel, 0, label, std::vector<uint32_t>{});
    function_.blocks.insert(function_.blocks.begin() + static_cast<ptrdiff_t>(block_) + 1, std::move(block));
    ++block_;
    index_ = 1;
    code();
    EmitVoid(spv::Op::OpBranch, {merge});
  };
  for (size_t k = 0; k < values.size(); ++k) target(labels[k], [&] { body(k); });
  target(defaultLabel, otherwise);
  ++block_;
  index_ = 1;
  if (function_.blocks[block_].Label() != merge) Fail("internal error: switch merge block misplaced");
}

void Builder::Loop(uint32_t begin, uint32_t end, uint32_t step, const std::function<void(uint32_t)>& body) {
  TypeManager& t = context_.types;
  const uint32_t preheader = CurrentLabel();
  const uint32_t merge = SplitBlock();
  const uint32_t header = context_.module.TakeId();
  const uint32_t bodyLabel = context_.module.TakeId();
  const uint32_t continueLabel = context_.module.TakeId();
  EmitVoid(spv::Op::OpBranch, {header});

  // Header: induction variable, merge declaration, exit test.
  const uint32_t counter = context_.module.TakeId();
  const uint32_t next = context_.module.TakeId();
  const uint32_t condition = context_.module.TakeId();
  ir::Block headerBlock;
  headerBlock.instructions = {
      ir::Instruction(spv::Op::OpLabel, 0, header, {}),
      ir::Instruction(spv::Op::OpPhi, t.Uint(), counter, {begin, preheader, next, continueLabel}),
      ir::Instruction(spv::Op::OpULessThan, t.Bool(), condition, {counter, end}),
      ir::Instruction(spv::Op::OpLoopMerge, 0, 0, {merge, continueLabel, static_cast<uint32_t>(spv::LoopControlMask::MaskNone)}),
      ir::Instruction(spv::Op::OpBranchConditional, 0, 0, {condition, bodyLabel, merge}),
  };
  t.SetTypeOf(counter, t.Uint());
  t.SetTypeOf(condition, t.Bool());
  ir::Block bodyBlock;
  bodyBlock.instructions.emplace_back(spv::Op::OpLabel, 0, bodyLabel, std::vector<uint32_t>{});
  function_.blocks.insert(function_.blocks.begin() + static_cast<ptrdiff_t>(block_) + 1, std::move(headerBlock));
  function_.blocks.insert(function_.blocks.begin() + static_cast<ptrdiff_t>(block_) + 2, std::move(bodyBlock));
  block_ += 2;
  index_ = 1;

  body(counter);

  // The body may have created blocks of its own; the cursor is in the last one.
  EmitVoid(spv::Op::OpBranch, {continueLabel});
  ir::Block continueBlock;
  continueBlock.instructions = {
      ir::Instruction(spv::Op::OpLabel, 0, continueLabel, {}),
      ir::Instruction(spv::Op::OpIAdd, t.Uint(), next, {counter, step}),
      ir::Instruction(spv::Op::OpBranch, 0, 0, {header}),
  };
  t.SetTypeOf(next, t.Uint());
  function_.blocks.insert(function_.blocks.begin() + static_cast<ptrdiff_t>(block_) + 1, std::move(continueBlock));
  block_ += 2;  // the merge block follows the continue block
  index_ = 1;
  if (function_.blocks[block_].Label() != merge) Fail("internal error: loop merge block misplaced");
}

void Builder::While(const std::function<uint32_t()>& condition, const std::function<void()>& body) {
  const uint32_t merge = SplitBlock();
  const uint32_t header = context_.module.TakeId();
  const uint32_t test = context_.module.TakeId();
  const uint32_t bodyLabel = context_.module.TakeId();
  const uint32_t continueLabel = context_.module.TakeId();
  EmitVoid(spv::Op::OpBranch, {header});
  // Header: the merge declaration only; the test gets a block of its own, where its code goes.
  auto block = [](std::vector<ir::Instruction> instructions) {
    ir::Block made;
    made.instructions = std::move(instructions);
    return made;
  };
  function_.blocks.insert(function_.blocks.begin() + static_cast<ptrdiff_t>(block_) + 1,
                          block({ir::Instruction(spv::Op::OpLabel, 0, header, {}),
                                 ir::Instruction(spv::Op::OpLoopMerge, 0, 0,
                                                 {merge, continueLabel, static_cast<uint32_t>(spv::LoopControlMask::MaskNone)}),
                                 ir::Instruction(spv::Op::OpBranch, 0, 0, {test})}));
  function_.blocks.insert(function_.blocks.begin() + static_cast<ptrdiff_t>(block_) + 2,
                          block({ir::Instruction(spv::Op::OpLabel, 0, test, {})}));
  block_ += 2;
  index_ = 1;
  const uint32_t keepGoing = condition();
  EmitVoid(spv::Op::OpBranchConditional, {keepGoing, bodyLabel, merge});
  function_.blocks.insert(function_.blocks.begin() + static_cast<ptrdiff_t>(block_) + 1,
                          block({ir::Instruction(spv::Op::OpLabel, 0, bodyLabel, {})}));
  ++block_;
  index_ = 1;
  body();
  EmitVoid(spv::Op::OpBranch, {continueLabel});
  function_.blocks.insert(function_.blocks.begin() + static_cast<ptrdiff_t>(block_) + 1,
                          block({ir::Instruction(spv::Op::OpLabel, 0, continueLabel, {}), ir::Instruction(spv::Op::OpBranch, 0, 0, {header})}));
  block_ += 2;  // the merge block follows the continue block
  index_ = 1;
  if (function_.blocks[block_].Label() != merge) Fail("internal error: loop merge block misplaced");
}

uint32_t Builder::Fold(spv::Op op, uint32_t a, uint32_t b) {
  TypeManager& t = context_.types;
  auto x = t.ConstantValue(a), y = t.ConstantValue(b);
  if (x && y) {
    switch (op) {
      case spv::Op::OpIAdd: return U(*x + *y);
      case spv::Op::OpIMul: return U(*x * *y);
      case spv::Op::OpUDiv: if (*y) return U(*x / *y); break;
      case spv::Op::OpUMod: if (*y) return U(*x % *y); break;
      case spv::Op::OpShiftLeftLogical: return U(*y < 32 ? *x << *y : 0);
      case spv::Op::OpShiftRightLogical: return U(*y < 32 ? *x >> *y : 0);
      case spv::Op::OpBitwiseAnd: return U(*x & *y);
      case spv::Op::OpBitwiseOr: return U(*x | *y);
      case spv::Op::OpBitwiseXor: return U(*x ^ *y);
      default: break;
    }
  }
  if (y && *y == 0 && (op == spv::Op::OpIAdd || op == spv::Op::OpBitwiseOr || op == spv::Op::OpBitwiseXor || op == spv::Op::OpShiftLeftLogical ||
                       op == spv::Op::OpShiftRightLogical))
    return a;
  if (y && *y == 1 && (op == spv::Op::OpIMul || op == spv::Op::OpUDiv)) return a;
  if (x && *x == 0 && (op == spv::Op::OpIAdd || op == spv::Op::OpBitwiseOr || op == spv::Op::OpBitwiseXor)) return b;
  if (((x && *x == 0) || (y && *y == 0)) && (op == spv::Op::OpBitwiseAnd || op == spv::Op::OpIMul)) return U(0);
  return Emit(op, t.Uint(), {a, b});
}

uint32_t Builder::Add(uint32_t a, uint32_t b) { return Fold(spv::Op::OpIAdd, a, b); }
uint32_t Builder::Mul(uint32_t a, uint32_t b) { return Fold(spv::Op::OpIMul, a, b); }
uint32_t Builder::Div(uint32_t a, uint32_t b) { return Fold(spv::Op::OpUDiv, a, b); }
uint32_t Builder::Mod(uint32_t a, uint32_t b) { return Fold(spv::Op::OpUMod, a, b); }
uint32_t Builder::ShiftLeft(uint32_t a, uint32_t b) { return Fold(spv::Op::OpShiftLeftLogical, a, b); }
uint32_t Builder::ShiftRight(uint32_t a, uint32_t b) { return Fold(spv::Op::OpShiftRightLogical, a, b); }
uint32_t Builder::And(uint32_t a, uint32_t b) { return Fold(spv::Op::OpBitwiseAnd, a, b); }
uint32_t Builder::Or(uint32_t a, uint32_t b) { return Fold(spv::Op::OpBitwiseOr, a, b); }
uint32_t Builder::Xor(uint32_t a, uint32_t b) { return Fold(spv::Op::OpBitwiseXor, a, b); }

uint32_t Builder::ElementPointer(uint32_t var, uint32_t componentType, uint32_t index, spv::StorageClass storage) {
  return Emit(spv::Op::OpAccessChain, context_.types.Pointer(storage, componentType), {var, index});
}

uint32_t Builder::AsIntType(uint32_t value, uint32_t type) {
  if (context_.types.TypeOf(value) == type) return value;
  return Emit(spv::Op::OpBitcast, type, {value});
}

}  // namespace coopmat
