// What the lowering tells a user about each operation it rewrote: where it was,
// which path it took and, for the portable path, why the register path did not
// apply (the register path's own checks answer; this only names the first one
// that failed, in the order a user can act on).
#include "report.h"

#include <algorithm>
#include <optional>

#include "register.h"

namespace coopmat {
namespace {

std::string NameOf(const ir::Module& module, uint32_t id) {
  for (const ir::Instruction& debug : module.debug)
    if (debug.opcode == spv::Op::OpName && !debug.operands.empty() && debug.operands[0] == id)
      return ir::DecodeString(std::span<const uint32_t>(debug.operands).subspan(1));
  return {};
}

const char* UseName(MatrixUse use) {
  switch (use) {
    case MatrixUse::A: return "A";
    case MatrixUse::B: return "B";
    default: return "Accumulator";
  }
}

// "f16 16x16 Accumulator" (dimensions "spec" when they are specialization constants).
std::string TypeText(const Context& c, const CoopMatType& type) {
  const TypeManager& t = c.types;
  std::string text = type.componentFloat ? "f" : (type.componentSigned ? "s" : "u");
  text += std::to_string(type.componentBytes * 8) + " ";
  auto dimension = [&](uint32_t id) {
    auto value = t.ConstantValue(id);
    return value ? std::to_string(*value) : std::string("spec");
  };
  return text + dimension(type.rowsId) + "x" + dimension(type.colsId) + " " + UseName(type.use);
}

// The matrix types an operation reads and produces.
std::vector<CoopMatType> MatricesOf(Context& c, const ir::Instruction& inst) {
  TypeManager& t = c.types;
  std::vector<CoopMatType> types;
  auto add = [&](uint32_t typeId) {
    if (auto info = t.CoopMatInfo(typeId))
      if (std::none_of(types.begin(), types.end(), [&](const CoopMatType& seen) { return seen.id == info->id; }))
        types.push_back(*info);
  };
  if (!inst.operands.empty()) add(t.TypeOf(inst.operands[0]));
  if (inst.opcode != spv::Op::OpCooperativeMatrixGetCoordinateEXT) add(inst.typeId);
  return types;
}

std::string ReasonAtOneSize(Context& c, const ir::Instruction& inst);

bool IsConversion(const ir::Instruction& inst) {
  return inst.opcode != spv::Op::OpCooperativeMatrixGetCoordinateEXT &&
         inst.opcode != spv::Op::OpCooperativeMatrixPerElementOpEXT && inst.opcode != spv::Op::OpCooperativeMatrixReduceEXT;
}

std::string PortableReason(Context& c, const ir::Instruction& inst) {
  if (c.options.layouts.empty())
    return c.options.withoutLayoutsBecause.empty() ? "no register layouts given" : c.options.withoutLayoutsBecause;
  if (c.subgroupSizes.size() < 2) return ReasonAtOneSize(c, inst);
  // Several sizes: the reason at the first size without register code, and the sizes
  // that have it (a conversion then takes registers there, LowerConversion per size).
  std::string registers, why;
  for (uint32_t size : c.subgroupSizes) {
    ActiveSubgroupSize active(c, size);
    const std::string reason = IsConversion(inst) && !ConversionUsesScratch(c, inst) ? "" : ReasonAtOneSize(c, inst);
    if (reason.empty()) {
      registers += (registers.empty() ? "" : ", ") + std::to_string(size);
    } else if (why.empty()) {
      why = "at subgroup size " + std::to_string(size) + ": " + reason;
    }
  }
  return registers.empty() ? why : "registers at subgroup size " + registers + "; the scratch " + why;
}

std::string ReasonAtOneSize(Context& c, const ir::Instruction& inst) {
  for (const CoopMatType& type : MatricesOf(c, inst)) {
    if (RegisterLayout(c, type)) continue;
    const bool constant = c.types.ConstantValue(type.rowsId) && c.types.ConstantValue(type.colsId);
    return "no register layout for " + TypeText(c, type) +
           (constant ? "" : " (dimensions from specialization constants are never matched)");
  }
  for (const CoopMatType& type : MatricesOf(c, inst))
    if (!CanShuffle(c, type.componentType))
      return "values of " + TypeText(c, type) +
             " cannot cross lanes without the module's Float16/Int8/Int16 capability";
  if (inst.opcode == spv::Op::OpCooperativeMatrixReduceEXT)
    return "the register reduction has no plan for this reduction mode and shape";
  if (inst.opcode == spv::Op::OpCooperativeMatrixGetCoordinateEXT || inst.opcode == spv::Op::OpCooperativeMatrixPerElementOpEXT)
    return "";  // its layouts are all there: nothing at this size
  if (const auto costs = ConversionMoveCosts(c, inst); costs && !costs->taken && costs->roundTrip)
    return "its register move is exchanges costing about " + std::to_string(costs->exchanges) +
           " instructions per lane, more than the Workgroup round trip's " + std::to_string(*costs->roundTrip) +
           " on this driver family at this subgroup size (measured: passes/costs.cpp)";
  if (!c.options.registerMovesWithShuffles)
    return "the move needs shuffles, and on this driver family the Workgroup round trip is cheaper (measured: "
           "passes/costs.cpp)";
  return "no register move between these layouts (needs more than one shuffle per element, or an intermediate "
         "type the driver does not list)";
}

// What sent a conversion's move into registers as exchanges at the active size.
std::string ExchangesTakenAtOneSize(Context& c, const ir::Instruction& inst) {
  const auto costs = ConversionMoveCosts(c, inst);
  if (!costs || !costs->taken) return "";
  const std::string exchanges = "exchanges costing about " + std::to_string(costs->exchanges) + " instructions per lane";
  if (!costs->roundTrip) return exchanges + " (no round-trip cost is measured for this driver family)";
  const std::string roundTrip = "the Workgroup round trip's " + std::to_string(*costs->roundTrip);
  if (costs->exchanges <= *costs->roundTrip)
    return exchanges + ", at most " + roundTrip + " on this driver family at this subgroup size (measured: passes/costs.cpp)";
  return exchanges + ", more than " + roundTrip + ", taken anyway (lowering=registers, or the shared-memory budget)";
}

// The same at each subgroup size the module is lowered for.
std::string RegisterNote(Context& c, const ir::Instruction& inst) {
  if (!IsConversion(inst)) return "";
  if (c.subgroupSizes.size() < 2) return ExchangesTakenAtOneSize(c, inst);
  std::string text;
  for (uint32_t size : c.subgroupSizes) {
    ActiveSubgroupSize active(c, size);
    const std::string note = ExchangesTakenAtOneSize(c, inst);  // empty where the round trip is taken
    if (!note.empty()) text += (text.empty() ? "" : "; ") + std::string("at subgroup size ") + std::to_string(size) + ": " + note;
  }
  return text;
}

}  // namespace

OperationReport ReportOperation(Context& c, const ir::Function& function, const ir::Instruction& inst) {
  OperationReport report;
  report.operation = Describe(inst).substr(0, Describe(inst).find(' '));
  report.resultId = inst.resultId;
  report.resultName = NameOf(c.module, inst.resultId);
  report.functionId = function.definition.resultId;
  report.functionName = NameOf(c.module, report.functionId);
  report.registerPath = TakesRegisterPath(c, inst);
  if (report.registerPath) report.registerNote = RegisterNote(c, inst);
  else report.portableReason = PortableReason(c, inst);
  return report;
}

}  // namespace coopmat
