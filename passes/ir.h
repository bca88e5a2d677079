// A compact, mutable SPIR-V IR: the module split into its logical sections, each
// function into blocks. Instructions keep their words verbatim so an untouched
// module emits exactly the words it was parsed from. No global state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#define SPV_ENABLE_UTILITY_CODE
#include <spirv/unified1/spirv.hpp11>

namespace coopmat::ir {

struct Instruction {
  spv::Op opcode = spv::Op::OpNop;
  uint32_t typeId = 0;    // 0 when the opcode has no result type
  uint32_t resultId = 0;  // 0 when the opcode has no result
  std::vector<uint32_t> operands;  // every word after the result type / result id

  Instruction() = default;
  Instruction(spv::Op op, uint32_t type, uint32_t result, std::vector<uint32_t> ops)
      : opcode(op), typeId(type), resultId(result), operands(std::move(ops)) {}

  // The i-th operand word, or 0 past the end: callers check sizes where 0 matters.
  uint32_t Operand(size_t i) const { return i < operands.size() ? operands[i] : 0; }
  size_t WordCount() const { return 1 + (typeId ? 1 : 0) + (resultId ? 1 : 0) + operands.size(); }
};

// instructions[0] is the OpLabel; the terminator is the last non-debug instruction.
struct Block {
  std::vector<Instruction> instructions;
  uint32_t Label() const { return instructions.empty() ? 0 : instructions.front().resultId; }
};

struct Function {
  Instruction definition;                // OpFunction
  std::vector<Instruction> parameters;   // OpFunctionParameter (and debug lines before the first block)
  std::vector<Block> blocks;
  Instruction end;                       // OpFunctionEnd
};

struct Module {
  uint32_t magic = spv::MagicNumber;
  uint32_t version = 0;
  uint32_t generator = 0;
  uint32_t bound = 0;
  uint32_t schema = 0;

  std::vector<Instruction> capabilities;
  std::vector<Instruction> extensions;
  std::vector<Instruction> extInstImports;
  std::vector<Instruction> memoryModel;
  std::vector<Instruction> entryPoints;
  std::vector<Instruction> executionModes;
  std::vector<Instruction> debug;        // OpString, OpSource*, OpName, OpMemberName, OpModuleProcessed
  std::vector<Instruction> annotations;  // decorations
  std::vector<Instruction> globals;      // types, constants, global variables, OpUndef, OpLine, ...
  std::vector<Function> functions;
  std::vector<Instruction> trailing;     // non-semantic instructions after the last function

  uint32_t TakeId() { return bound++; }
  uint32_t SpirvMinor() const { return (version >> 8) & 0xff; }
  bool DeclaresCapability(spv::Capability capability) const {
    for (const Instruction& c : capabilities)
      if (c.Operand(0) == static_cast<uint32_t>(capability)) return true;
    return false;
  }
  void RequireCapability(spv::Capability capability) {
    if (!DeclaresCapability(capability))
      capabilities.emplace_back(spv::Op::OpCapability, 0, 0, std::vector<uint32_t>{static_cast<uint32_t>(capability)});
  }
};

// Parses words into `module`. Returns an empty string on success, otherwise why it
// failed (truncated stream, bad word count, unknown opcode, id out of bound, ...).
// An id bound above 0x400000 is plausible up to 4 ids per word of the module, or per
// word of `boundAllowanceWords` when larger: a module made from a bigger one (a
// lowering that dropped the extension's instructions) keeps that one's bound.
std::string Parse(std::span<const uint32_t> words, Module& module, size_t boundAllowanceWords = 0);

// Serializes the module; the header's bound is module.bound.
std::vector<uint32_t> Emit(const Module& module);

// Literal string operand helpers (nul-terminated, packed little-endian in words).
std::string DecodeString(std::span<const uint32_t> words);
std::vector<uint32_t> EncodeString(const std::string& text);

// True for the block terminators (branch, return, kill, unreachable, ...).
bool IsTerminator(spv::Op op);

// One decoration as it applies to an id: its target and the literals after the
// decoration (a SpecId's number, a BuiltIn's value).
struct AppliedDecoration {
  uint32_t target = 0;
  std::vector<uint32_t> literals;
};
// Every application of `decoration`: by OpDecorate on an id, and through decoration
// groups (OpDecorate on an OpDecorationGroup, applied by OpGroupDecorate), so that a
// pass never sees only half of a module's decorations (review 2, finding 7).
std::vector<AppliedDecoration> FindDecorations(const Module& module, spv::Decoration decoration);

}  // namespace coopmat::ir
