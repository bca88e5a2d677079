// Operations in a loop header block (spirv-opt merges a loop's first body block
// into its header, and front ends may put code there). The lowerings emit loops and
// switches, which split the block they are in; a loop header cannot be split that
// way because its OpLoopMerge must stay right before its terminator. So the header
// is first reduced to its OpPhis, the OpLoopMerge and an OpBranch into a new block
// that takes everything else, the original terminator included:
//
//   %H: phis; A; op; B; OpLoopMerge %M %C; <terminator>
// becomes
//   %H: phis; OpLoopMerge %M %C'; OpBranch %H2
//   %H2: A; op; B; <terminator>
//
// %H2 is inside the loop and dominated by %H. Its terminator has no merge
// instruction of its own, which structured control flow allows only for an
// unconditional branch or a conditional one that leaves to the loop's merge block
// or continue target (or back to the header). A single-block loop (%C == %H) gets
// %H2 as its continue target, so the back edge comes from the continue construct.
#include <string>

#include "lowering.h"

namespace coopmat {
namespace {

bool IsLoopHeader(const ir::Block& block) {
  for (const ir::Instruction& inst : block.instructions)
    if (inst.opcode == spv::Op::OpLoopMerge) return true;
  return false;
}

// Whether the header's terminator may stand without a merge instruction once it
// is no longer in the header.
bool CanLeaveHeader(const ir::Instruction& terminator, uint32_t header, uint32_t merge, uint32_t continueTarget) {
  if (terminator.opcode == spv::Op::OpBranch) return true;
  if (terminator.opcode != spv::Op::OpBranchConditional) return false;
  for (size_t i = 1; i <= 2; ++i) {
    const uint32_t target = terminator.Operand(i);
    if (target == merge || target == continueTarget || target == header) return true;
  }
  return false;
}

void SplitLoopHeader(Context& c, ir::Function& function, size_t blockIndex, const ir::Instruction& op) {
  std::vector<ir::Instruction>& list = function.blocks[blockIndex].instructions;
  const uint32_t header = function.blocks[blockIndex].Label();
  const std::string where = "loop header block %" + std::to_string(header);
  if (list.size() < 3 || list[list.size() - 2].opcode != spv::Op::OpLoopMerge)
    Fail(where + ": OpLoopMerge is not right before the terminator");
  ir::Instruction loopMerge = list[list.size() - 2];
  const ir::Instruction terminator = list.back();
  const uint32_t merge = loopMerge.Operand(0), continueTarget = loopMerge.Operand(1);
  if (!CanLeaveHeader(terminator, header, merge, continueTarget))
    Fail("cannot lower " + Describe(op) + " in " + where + ": its " + std::string(spv::OpToString(terminator.opcode)) +
         " chooses between two blocks inside the loop");

  size_t first = 1;
  while (first < list.size() && (list[first].opcode == spv::Op::OpPhi || list[first].opcode == spv::Op::OpLine ||
                                 list[first].opcode == spv::Op::OpNoLine))
    ++first;
  const uint32_t rest = c.module.TakeId();
  ir::Block moved;
  moved.instructions.emplace_back(spv::Op::OpLabel, 0, rest, std::vector<uint32_t>{});
  moved.instructions.insert(moved.instructions.end(), list.begin() + static_cast<ptrdiff_t>(first), list.end() - 2);
  moved.instructions.push_back(terminator);
  if (continueTarget == header) loopMerge.operands[1] = rest;
  list.erase(list.begin() + static_cast<ptrdiff_t>(first), list.end());
  list.push_back(std::move(loopMerge));
  list.emplace_back(spv::Op::OpBranch, 0, 0, std::vector<uint32_t>{rest});
  // The terminator's successors (the header itself, for a single-block loop) are
  // now reached from the new block.
  for (ir::Block& block : function.blocks)
    for (ir::Instruction& inst : block.instructions)
      if (inst.opcode == spv::Op::OpPhi)
        for (size_t i = 1; i < inst.operands.size(); i += 2)
          if (inst.operands[i] == header) inst.operands[i] = rest;
  function.blocks.insert(function.blocks.begin() + static_cast<ptrdiff_t>(blockIndex) + 1, std::move(moved));
}

}  // namespace

void SplitLoopHeadersWith(Context& c, ir::Function& function, const std::function<bool(const ir::Instruction&)>& needsLowering) {
  for (size_t i = 0; i < function.blocks.size(); ++i) {
    const ir::Block& block = function.blocks[i];
    if (!IsLoopHeader(block)) continue;
    for (const ir::Instruction& inst : block.instructions)
      if (needsLowering(inst)) {
        SplitLoopHeader(c, function, i, inst);
        break;
      }
  }
}

}  // namespace coopmat
