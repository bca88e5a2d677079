#include "test_support.h"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <spirv-tools/libspirv.hpp>

namespace passtest {

std::string ShaderDir() { return COOPMAT_PASSES_SHADER_DIR; }

std::vector<uint32_t> LoadWords(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<uint32_t> words(bytes.size() / 4);
  std::copy(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(words.size() * 4), reinterpret_cast<char*>(words.data()));
  return words;
}

std::vector<uint32_t> LoadShader(const std::string& name, const std::string& env) {
  return LoadWords(ShaderDir() + "/" + name + "." + env + ".spv");
}

std::vector<std::string> AllShaderPaths() {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(ShaderDir()))
    if (entry.path().extension() == ".spv") out.push_back(entry.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

coopmat::ir::Module ParseOrFail(const std::vector<uint32_t>& words) {
  coopmat::ir::Module m;
  if (std::string error = coopmat::ir::Parse(words, m); !error.empty()) throw std::runtime_error("parse: " + error);
  return m;
}

void ForEachFunctionInstruction(const coopmat::ir::Module& m, const std::function<void(const coopmat::ir::Instruction&)>& fn) {
  for (const auto& f : m.functions)
    for (const auto& b : f.blocks)
      for (const auto& i : b.instructions) fn(i);
}

size_t CountOpcode(const coopmat::ir::Module& m, spv::Op op) {
  size_t n = 0;
  ForEachFunctionInstruction(m, [&](const coopmat::ir::Instruction& i) { n += i.opcode == op; });
  return n;
}

bool HasCapability(const coopmat::ir::Module& m, spv::Capability cap) { return m.DeclaresCapability(cap); }

bool HasExtension(const coopmat::ir::Module& m, const std::string& name) {
  for (const auto& i : m.extensions)
    if (coopmat::ir::DecodeString(i.operands) == name) return true;
  return false;
}

bool HasDecoration(const coopmat::ir::Module& m, spv::Decoration decoration) {
  for (const auto& i : m.annotations)
    if (i.opcode == spv::Op::OpDecorate && i.Operand(1) == static_cast<uint32_t>(decoration)) return true;
  return false;
}

uint32_t FindScratchVariable(const coopmat::ir::Module& m) {
  auto def = [&](uint32_t id) -> const coopmat::ir::Instruction* {
    for (const auto& g : m.globals)
      if (g.resultId == id) return &g;
    return nullptr;
  };
  for (const auto& g : m.globals) {
    if (g.opcode != spv::Op::OpVariable || g.Operand(0) != static_cast<uint32_t>(spv::StorageClass::Workgroup)) continue;
    const auto* pointer = def(g.typeId);
    const auto* array = pointer ? def(pointer->Operand(1)) : nullptr;
    const auto* element = array && array->opcode == spv::Op::OpTypeArray ? def(array->Operand(0)) : nullptr;
    if (element && element->opcode == spv::Op::OpTypeInt && element->Operand(0) == 32 && element->Operand(1) == 0) return g.resultId;
  }
  return 0;
}

std::vector<uint32_t> Assemble(const std::string& text, spv_target_env env) {
  spvtools::SpirvTools tools(env);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&, const char* m) { messages += m; });
  std::vector<uint32_t> words;
  if (!tools.Assemble(text, &words, SPV_TEXT_TO_BINARY_OPTION_PRESERVE_NUMERIC_IDS))
    throw std::runtime_error("cannot assemble: " + messages);
  return words;
}

std::string Disassemble(const std::vector<uint32_t>& words) {
  spvtools::SpirvTools tools(SPV_ENV_UNIVERSAL_1_6);
  std::string text;
  if (!tools.Disassemble(words, &text, SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_NO_HEADER))
    throw std::runtime_error("cannot disassemble");
  return text;
}

bool CheckCorruptedInput(const std::vector<uint32_t>& words, const coopmat::LowerOptions& options) {
  const coopmat::LowerResult result = coopmat::LowerModule(words, options);
  if (!result.ok) {
    CHECK_FALSE(result.error.empty());
    return false;
  }
  if (!coopmat::ValidateModule(words).empty()) return false;  // garbage in: nothing to promise
  const std::string problem = coopmat::ValidateModule(result.words);
  INFO(problem);
  CHECK(problem.empty());
  return true;
}

uint32_t ExhaustiveStride() {
  static const uint32_t stride = [] {
    const char* text = std::getenv("COOPMAT_PASSES_STRIDE");
    const unsigned long value = text ? std::strtoul(text, nullptr, 10) : 1;
    return static_cast<uint32_t>(value ? value : 1);
  }();
  return stride;
}

}  // namespace passtest
