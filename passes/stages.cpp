// Which entry points reach the operations to lower. The lowering declares a
// Workgroup scratch and subgroup builtins and wires them into compute-like entry
// points only; a fragment or ray-tracing entry point that reached a lowered
// operation would get code using variables outside its interface (invalid SPIR-V),
// so such a module is refused, naming the entry point and the operation. Entry
// points of other stages that reach nothing lowered are left as they are.
#include <map>
#include <set>
#include <string>

#include "lowering.h"

namespace coopmat {
namespace {

// Functions each function calls directly or hands to PerElementOp / Reduce.
std::map<uint32_t, std::vector<uint32_t>> Callees(const ir::Module& m) {
  std::map<uint32_t, std::vector<uint32_t>> callees;
  for (const ir::Function& f : m.functions)
    for (const ir::Block& block : f.blocks)
      for (const ir::Instruction& inst : block.instructions) {
        if (inst.opcode == spv::Op::OpFunctionCall) callees[f.definition.resultId].push_back(inst.Operand(0));
        if (inst.opcode == spv::Op::OpCooperativeMatrixPerElementOpEXT) callees[f.definition.resultId].push_back(inst.Operand(1));
        if (inst.opcode == spv::Op::OpCooperativeMatrixReduceEXT) callees[f.definition.resultId].push_back(inst.Operand(2));
      }
  return callees;
}

}  // namespace

void CheckLoweredStages(Context& c, const std::function<bool(const ir::Instruction&)>& needsLowering) {
  std::map<uint32_t, const ir::Instruction*> firstLowered;  // function -> its first operation to lower
  for (const ir::Function& f : c.module.functions)
    for (const ir::Block& block : f.blocks)
      for (const ir::Instruction& inst : block.instructions)
        if (needsLowering(inst) && !firstLowered.count(f.definition.resultId)) firstLowered[f.definition.resultId] = &inst;
  if (firstLowered.empty()) return;
  const auto callees = Callees(c.module);
  for (const ir::Instruction& entry : c.module.entryPoints) {
    if (IsComputeLikeModel(entry.Operand(0))) continue;
    std::set<uint32_t> seen{entry.Operand(1)};
    std::vector<uint32_t> stack{entry.Operand(1)};
    while (!stack.empty()) {
      const uint32_t f = stack.back();
      stack.pop_back();
      if (auto lowered = firstLowered.find(f); lowered != firstLowered.end())
        Fail("entry point \"" + ir::DecodeString(std::span(entry.operands).subspan(std::min<size_t>(2, entry.operands.size()))) +
             "\" (" + spv::ExecutionModelToString(static_cast<spv::ExecutionModel>(entry.Operand(0))) + ") reaches " +
             Describe(*lowered->second) + ": only compute, task and mesh entry points can use the emulated operations");
      if (auto it = callees.find(f); it != callees.end())
        for (uint32_t callee : it->second)
          if (seen.insert(callee).second) stack.push_back(callee);
    }
  }
}

}  // namespace coopmat
