// Parsing and emission of the IR. Every read is bounds-checked; malformed input
// yields an error string, never an exception or a crash.
#include "ir.h"

#include <unordered_map>
#include <unordered_set>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace coopmat::ir {
namespace {

constexpr uint32_t kHeaderWords = 5;
// The per-id tables cost a few bytes per id. 4,194,303 is the limits appendix's
// minimum every implementation supports, not a maximum: the bound may exceed it by
// 4 ids per word of the module (every id is defined by an instruction of at least 2
// words, so a real module stays far below), which keeps the tables proportional to
// the module's size. The allowance grows with the module, so a lowered module (more
// ids, each with its instruction's words) parses whenever its input did.
constexpr uint32_t kMinMaxBound = 0x400000;
constexpr uint64_t kIdsPerWord = 4;

// The logical layout of a module (SPIR-V 2.4); sections must not go backwards.
enum class Section { Capability, Extension, ExtInstImport, MemoryModel, EntryPoint, ExecutionMode, Debug,
                     Annotation, Global, Function };

Section SectionOf(spv::Op op) {
  using spv::Op;
  switch (op) {
    case Op::OpCapability: return Section::Capability;
    case Op::OpExtension: return Section::Extension;
    case Op::OpExtInstImport: return Section::ExtInstImport;
    case Op::OpMemoryModel: return Section::MemoryModel;
    case Op::OpEntryPoint: return Section::EntryPoint;
    case Op::OpExecutionMode:
    case Op::OpExecutionModeId: return Section::ExecutionMode;
    case Op::OpString:
    case Op::OpSourceExtension:
    case Op::OpSource:
    case Op::OpSourceContinued:
    case Op::OpName:
    case Op::OpMemberName:
    case Op::OpModuleProcessed: return Section::Debug;
    case Op::OpDecorate:
    case Op::OpMemberDecorate:
    case Op::OpDecorationGroup:
    case Op::OpGroupDecorate:
    case Op::OpGroupMemberDecorate:
    case Op::OpDecorateId:
    case Op::OpDecorateString:
    case Op::OpMemberDecorateString: return Section::Annotation;
    case Op::OpFunction: return Section::Function;
    default: return Section::Global;
  }
}

bool IsKnownOpcode(uint32_t opcode) {
  return std::strcmp(spv::OpToString(static_cast<spv::Op>(opcode)), "Unknown") != 0;
}

bool IsDebugLine(spv::Op op) { return op == spv::Op::OpLine || op == spv::Op::OpNoLine; }

class Parser {
 public:
  Parser(std::span<const uint32_t> words, Module& module, size_t boundAllowanceWords)
      : words_(words), module_(module), allowanceWords_(std::max(words.size(), boundAllowanceWords)) {}

  std::string Run() {
    if (words_.size() < kHeaderWords) return "module is shorter than the 5-word SPIR-V header";
    if (words_[0] != spv::MagicNumber) {
      if (words_[0] == 0x03022307u) return "byte-swapped SPIR-V modules are not supported";
      return "not a SPIR-V module (bad magic number)";
    }
    module_.magic = words_[0];
    module_.version = words_[1];
    module_.generator = words_[2];
    module_.bound = words_[3];
    module_.schema = words_[4];
    if ((module_.version >> 16) != 1 || module_.SpirvMinor() > 6)
      return "unsupported SPIR-V version word 0x" + Hex(module_.version);
    if (module_.bound == 0 || module_.bound > kMinMaxBound + kIdsPerWord * allowanceWords_)
      return "implausible id bound " + std::to_string(module_.bound);
    defined_.assign(module_.bound, false);

    size_t pos = kHeaderWords;
    while (pos < words_.size()) {
      Instruction inst;
      size_t next = 0;
      if (std::string error = Decode(pos, inst, next); !error.empty()) return error;
      if (std::string error = Place(std::move(inst), pos); !error.empty()) return error;
      pos = next;
    }
    if (function_) return "module ends inside a function (missing OpFunctionEnd)";
    return {};
  }

 private:
  static std::string Hex(uint32_t v) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (int shift = 28; shift >= 0; shift -= 4) s.push_back(digits[(v >> shift) & 0xf]);
    return s;
  }

  std::string At(size_t pos) const { return " (instruction at word " + std::to_string(pos) + ")"; }

  std::string Decode(size_t pos, Instruction& inst, size_t& next) {
    const uint32_t first = words_[pos];
    const uint32_t wordCount = first >> 16;
    const uint32_t opcode = first & 0xffff;
    if (wordCount == 0) return "word count 0" + At(pos);
    if (wordCount > words_.size() - pos) return "word count " + std::to_string(wordCount) + " runs past the end of the module" + At(pos);
    if (!IsKnownOpcode(opcode)) return "unknown opcode " + std::to_string(opcode) + At(pos);
    inst.opcode = static_cast<spv::Op>(opcode);
    bool hasResult = false, hasType = false;
    spv::HasResultAndType(inst.opcode, &hasResult, &hasType);
    const uint32_t needed = 1 + (hasResult ? 1 : 0) + (hasType ? 1 : 0);
    if (wordCount < needed) return std::string(spv::OpToString(inst.opcode)) + " is too short" + At(pos);
    size_t w = pos + 1;
    if (hasType) {
      inst.typeId = words_[w++];
      if (inst.typeId == 0 || inst.typeId >= module_.bound)
        return "result type id " + std::to_string(inst.typeId) + " is outside the id bound" + At(pos);
    }
    if (hasResult) {
      inst.resultId = words_[w++];
      if (inst.resultId == 0 || inst.resultId >= module_.bound)
        return "result id " + std::to_string(inst.resultId) + " is outside the id bound " + std::to_string(module_.bound) + At(pos);
      if (defined_[inst.resultId]) return "result id " + std::to_string(inst.resultId) + " is defined twice" + At(pos);
      defined_[inst.resultId] = true;
    }
    inst.operands.assign(words_.begin() + static_cast<ptrdiff_t>(w), words_.begin() + static_cast<ptrdiff_t>(pos + wordCount));
    next = pos + wordCount;
    return {};
  }

  std::string Place(Instruction&& inst, size_t pos) {
    const spv::Op op = inst.opcode;
    if (function_) return PlaceInFunction(std::move(inst), pos);
    const Section section = SectionOf(op);
    if (!module_.functions.empty()) {
      if (section == Section::Function) return BeginFunction(std::move(inst));
      if (op == spv::Op::OpExtInst || IsDebugLine(op)) {
        module_.trailing.push_back(std::move(inst));
        return {};
      }
      return std::string(spv::OpToString(op)) + " appears after the first function" + At(pos);
    }
    if (section < section_) return std::string(spv::OpToString(op)) + " is out of the logical layout order" + At(pos);
    section_ = section;
    switch (section) {
      case Section::Capability: module_.capabilities.push_back(std::move(inst)); break;
      case Section::Extension: module_.extensions.push_back(std::move(inst)); break;
      case Section::ExtInstImport: module_.extInstImports.push_back(std::move(inst)); break;
      case Section::MemoryModel:
        if (!module_.memoryModel.empty()) return "more than one OpMemoryModel" + At(pos);
        module_.memoryModel.push_back(std::move(inst));
        break;
      case Section::EntryPoint: module_.entryPoints.push_back(std::move(inst)); break;
      case Section::ExecutionMode: module_.executionModes.push_back(std::move(inst)); break;
      case Section::Debug: module_.debug.push_back(std::move(inst)); break;
      case Section::Annotation: module_.annotations.push_back(std::move(inst)); break;
      case Section::Global:
        if (op == spv::Op::OpLabel || op == spv::Op::OpFunctionEnd || op == spv::Op::OpFunctionParameter)
          return std::string(spv::OpToString(op)) + " outside a function" + At(pos);
        module_.globals.push_back(std::move(inst));
        break;
      case Section::Function: return BeginFunction(std::move(inst));
    }
    return {};
  }

  std::string BeginFunction(Instruction&& inst) {
    section_ = Section::Function;
    module_.functions.emplace_back();
    function_ = &module_.functions.back();
    function_->definition = std::move(inst);
    return {};
  }

  std::string PlaceInFunction(Instruction&& inst, size_t pos) {
    const spv::Op op = inst.opcode;
    if (op == spv::Op::OpFunction) return "nested OpFunction" + At(pos);
    if (op == spv::Op::OpFunctionEnd) {
      function_->end = std::move(inst);
      function_ = nullptr;
      return {};
    }
    if (op == spv::Op::OpLabel) {
      function_->blocks.emplace_back();
      function_->blocks.back().instructions.push_back(std::move(inst));
      return {};
    }
    if (function_->blocks.empty()) {
      if (op != spv::Op::OpFunctionParameter && !IsDebugLine(op))
        return std::string(spv::OpToString(op)) + " before the first OpLabel of a function" + At(pos);
      function_->parameters.push_back(std::move(inst));
      return {};
    }
    if (op == spv::Op::OpFunctionParameter) return "OpFunctionParameter inside a block" + At(pos);
    if (SectionOf(op) != Section::Global) return std::string(spv::OpToString(op)) + " inside a function" + At(pos);
    function_->blocks.back().instructions.push_back(std::move(inst));
    return {};
  }

  std::span<const uint32_t> words_;
  Module& module_;
  size_t allowanceWords_;
  std::vector<bool> defined_;
  Section section_ = Section::Capability;
  Function* function_ = nullptr;
};

void Append(std::vector<uint32_t>& out, const Instruction& inst) {
  if (inst.WordCount() > 0xffff)
    throw std::length_error(std::string(spv::OpToString(inst.opcode)) + " would have " + std::to_string(inst.WordCount()) +
                            " words (at most 65535)");
  out.push_back(static_cast<uint32_t>(inst.WordCount() << 16) | static_cast<uint32_t>(inst.opcode));
  if (inst.typeId) out.push_back(inst.typeId);
  if (inst.resultId) out.push_back(inst.resultId);
  out.insert(out.end(), inst.operands.begin(), inst.operands.end());
}

void AppendAll(std::vector<uint32_t>& out, const std::vector<Instruction>& list) {
  for (const Instruction& inst : list) Append(out, inst);
}

}  // namespace

std::string Parse(std::span<const uint32_t> words, Module& module, size_t boundAllowanceWords) {
  module = Module{};
  return Parser(words, module, boundAllowanceWords).Run();
}

std::vector<uint32_t> Emit(const Module& module) {
  std::vector<uint32_t> out{module.magic, module.version, module.generator, module.bound, module.schema};
  AppendAll(out, module.capabilities);
  AppendAll(out, module.extensions);
  AppendAll(out, module.extInstImports);
  AppendAll(out, module.memoryModel);
  AppendAll(out, module.entryPoints);
  AppendAll(out, module.executionModes);
  AppendAll(out, module.debug);
  AppendAll(out, module.annotations);
  AppendAll(out, module.globals);
  for (const Function& function : module.functions) {
    Append(out, function.definition);
    AppendAll(out, function.parameters);
    for (const Block& block : function.blocks) AppendAll(out, block.instructions);
    Append(out, function.end);
  }
  AppendAll(out, module.trailing);
  return out;
}

std::string DecodeString(std::span<const uint32_t> words) {
  std::string out;
  for (uint32_t word : words) {
    for (int b = 0; b < 4; ++b) {
      const char c = static_cast<char>((word >> (8 * b)) & 0xff);
      if (c == 0) return out;
      out.push_back(c);
    }
  }
  return out;
}

std::vector<uint32_t> EncodeString(const std::string& text) {
  std::vector<uint32_t> out(text.size() / 4 + 1, 0);
  for (size_t i = 0; i < text.size(); ++i)
    out[i / 4] |= static_cast<uint32_t>(static_cast<unsigned char>(text[i])) << (8 * (i % 4));
  return out;
}

bool IsTerminator(spv::Op op) {
  using spv::Op;
  switch (op) {
    case Op::OpBranch:
    case Op::OpBranchConditional:
    case Op::OpSwitch:
    case Op::OpReturn:
    case Op::OpReturnValue:
    case Op::OpKill:
    case Op::OpUnreachable:
    case Op::OpTerminateInvocation:
    case Op::OpIgnoreIntersectionKHR:
    case Op::OpTerminateRayKHR:
    case Op::OpEmitMeshTasksEXT: return true;
    default: return false;
  }
}

std::vector<AppliedDecoration> FindDecorations(const Module& module, spv::Decoration decoration) {
  std::unordered_set<uint32_t> groups;
  for (const Instruction& a : module.annotations)
    if (a.opcode == spv::Op::OpDecorationGroup) groups.insert(a.resultId);
  std::vector<AppliedDecoration> out;
  std::unordered_map<uint32_t, std::vector<std::vector<uint32_t>>> byGroup;
  for (const Instruction& a : module.annotations) {
    if (a.opcode != spv::Op::OpDecorate || a.operands.size() < 2 || a.Operand(1) != static_cast<uint32_t>(decoration)) continue;
    std::vector<uint32_t> literals(a.operands.begin() + 2, a.operands.end());
    if (groups.count(a.Operand(0))) byGroup[a.Operand(0)].push_back(std::move(literals));
    else out.push_back({a.Operand(0), std::move(literals)});
  }
  if (byGroup.empty()) return out;
  for (const Instruction& a : module.annotations) {
    if (a.opcode != spv::Op::OpGroupDecorate || a.operands.empty()) continue;
    const auto group = byGroup.find(a.Operand(0));
    if (group == byGroup.end()) continue;
    for (size_t k = 1; k < a.operands.size(); ++k)
      for (const std::vector<uint32_t>& literals : group->second) out.push_back({a.operands[k], literals});
  }
  return out;
}

}  // namespace coopmat::ir
