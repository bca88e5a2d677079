// coopmat/inspect.h: the text of LowerResult::operations (no SPIR-V library needed).
#include "coopmat/inspect.h"

#include <cstdio>

namespace coopmat {
namespace {

std::string Located(const OperationReport& op) {
  std::string text = op.operation + " %" + std::to_string(op.resultId);
  if (!op.resultName.empty()) text += " \"" + op.resultName + "\"";
  text += " in function %" + std::to_string(op.functionId);
  if (!op.functionName.empty()) text += " \"" + op.functionName + "\"";
  return text;
}

std::string Microseconds(double us) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f us", us);
  return text;
}

}  // namespace

std::string ExplainLowering(const LowerResult& result, const std::string& where) {
  const LowerStats& s = result.stats;
  size_t registers = 0;
  for (const OperationReport& op : result.operations) registers += op.registerPath;
  std::string text = "# " + where + "\n";
  if (!result.ok) text += "lowering failed: " + result.error + "\n";
  text += std::to_string(result.operations.size()) + (result.operations.size() == 1 ? " operation" : " operations") +
          " lowered, " + std::to_string(registers) +
          " in registers; " + std::to_string(s.wordsIn) + " -> " + std::to_string(s.wordsOut) + " words; scratch " +
          std::to_string(s.scratchBytesPerSubgroup) + " bytes per subgroup; rewrite " + Microseconds(s.microseconds) +
          "\n";
  if (!result.routeNote.empty()) text += result.routeNote + "\n";
  for (const OperationReport& op : result.operations) {
    text += Located(op) + ": ";
    if (op.registerPath) text += op.registerNote.empty() ? "register path" : "register path (" + op.registerNote + ")";
    else text += "portable path (" + op.portableReason + ")";
    text += "; scratch " + std::to_string(op.scratchBytes) + " bytes";
    if (op.scratchSpecialized) text += " + a size set by specialization constants";
    text += "; " + Microseconds(op.microseconds) + "\n";
  }
  return text;
}

}  // namespace coopmat
