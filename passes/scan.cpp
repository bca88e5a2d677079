// The cheap test the layer runs on every module: does it need the rewrite?
// It reads only the preamble (capabilities, extensions) and stops at the first
// function, so modules without the extension cost a few hundred word reads.
#include <cstring>
#include <map>

#include <spirv/unified1/spirv.hpp11>

#include "coopmat/lower.h"

namespace coopmat {
namespace {

constexpr uint32_t kHeaderWords = 5;

// A literal string operand starting at words[begin], at most `limit` words long.
std::string ReadLiteralString(std::span<const uint32_t> words, size_t begin, size_t end) {
  std::string out;
  for (size_t w = begin; w < end; ++w) {
    for (int b = 0; b < 4; ++b) {
      char c = static_cast<char>((words[w] >> (8 * b)) & 0xff);
      if (c == 0) return out;
      out.push_back(c);
    }
  }
  return out;  // unterminated: caller compares, a partial string simply won't match
}

// Calls visit(opcode, pos, wordCount) for each instruction of the preamble (up to the first
// function); the error where the module cannot be read that far, else "".
template <typename Visit>
std::string VisitPreamble(std::span<const uint32_t> words, Visit visit) {
  if (words.size() < kHeaderWords) return "module is shorter than the 5-word SPIR-V header";
  if (words[0] != spv::MagicNumber) return "not a SPIR-V module (bad magic number)";
  for (size_t pos = kHeaderWords; pos < words.size();) {
    const uint32_t wordCount = words[pos] >> 16;
    const auto opcode = static_cast<spv::Op>(words[pos] & 0xffff);
    if (wordCount == 0 || pos + wordCount > words.size())
      return "instruction at word " + std::to_string(pos) + " has an invalid word count";
    if (opcode == spv::Op::OpFunction) break;
    visit(opcode, pos, wordCount);
    pos += wordCount;
  }
  return "";
}

}  // namespace

ScanResult ScanModule(std::span<const uint32_t> words) {
  ScanResult result;
  result.error = VisitPreamble(words, [&](spv::Op opcode, size_t pos, uint32_t wordCount) {
    if (opcode == spv::Op::OpCapability && wordCount >= 2) {
      switch (static_cast<spv::Capability>(words[pos + 1])) {
        case spv::Capability::CooperativeMatrixConversionsEXT: result.usage.conversions = true; break;
        case spv::Capability::CooperativeMatrixReductionsEXT: result.usage.reductions = true; break;
        case spv::Capability::CooperativeMatrixPerElementOperationsEXT: result.usage.perElement = true; break;
        case spv::Capability::CooperativeMatrixGetCoordinateEXT: result.usage.getCoordinate = true; break;
        default: break;
      }
    } else if (opcode == spv::Op::OpDecorate && wordCount >= 4 &&
               words[pos + 2] == static_cast<uint32_t>(spv::Decoration::SpecId)) {
      result.specIds.push_back(words[pos + 3]);
    } else if (opcode == spv::Op::OpDecorationGroup) {
      result.specIdsComplete = false;
    } else if (opcode == spv::Op::OpExtension && wordCount >= 2) {
      const std::string name = ReadLiteralString(words, pos + 1, pos + wordCount);
      if (name == "SPV_EXT_cooperative_matrix_maintenance1") result.usage.extExtension = true;
      if (name == "SPV_NV_cooperative_matrix2") result.usage.nvExtension = true;
    }
  });
  result.ok = result.error.empty();
  return result;
}

std::map<uint32_t, SpecConstantType> SpecConstantTypes(std::span<const uint32_t> words) {
  std::map<uint32_t, uint32_t> specIdOf;                  // decorated id -> SpecId
  std::map<uint32_t, SpecConstantType> scalarTypes;        // type id -> scalar type
  std::map<uint32_t, SpecConstantType> specConstantTypes;  // constant id -> its type
  VisitPreamble(words, [&](spv::Op opcode, size_t pos, uint32_t wordCount) {
    if (opcode == spv::Op::OpDecorate && wordCount >= 4 && words[pos + 2] == static_cast<uint32_t>(spv::Decoration::SpecId)) {
      specIdOf[words[pos + 1]] = words[pos + 3];
    } else if (opcode == spv::Op::OpTypeBool && wordCount >= 2) {
      scalarTypes[words[pos + 1]] = {SpecConstantType::Kind::Bool, 32, false};
    } else if (opcode == spv::Op::OpTypeInt && wordCount >= 4) {
      scalarTypes[words[pos + 1]] = {SpecConstantType::Kind::Int, words[pos + 2], words[pos + 3] != 0};
    } else if (opcode == spv::Op::OpTypeFloat && wordCount >= 3) {
      scalarTypes[words[pos + 1]] = {SpecConstantType::Kind::Float, words[pos + 2], false};
    } else if ((opcode == spv::Op::OpSpecConstant || opcode == spv::Op::OpSpecConstantTrue ||
                opcode == spv::Op::OpSpecConstantFalse) && wordCount >= 3) {
      if (const auto type = scalarTypes.find(words[pos + 1]); type != scalarTypes.end())
        specConstantTypes[words[pos + 2]] = type->second;
    }
  });
  std::map<uint32_t, SpecConstantType> out;
  for (const auto& [id, specId] : specIdOf)
    if (const auto type = specConstantTypes.find(id); type != specConstantTypes.end()) out[specId] = type->second;
  return out;
}

}  // namespace coopmat
