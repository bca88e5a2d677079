// Helpers shared by the pass tests: loading the compiled shaders and looking
// into modules through the IR.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <spirv-tools/libspirv.h>

#include "coopmat/lower.h"
#include "ir.h"

namespace passtest {

std::string ShaderDir();
std::vector<uint32_t> LoadWords(const std::string& path);
// "<dir>/<name>.<env>.spv"
std::vector<uint32_t> LoadShader(const std::string& name, const std::string& env);
// Every .spv the build produced for these tests (sorted).
std::vector<std::string> AllShaderPaths();

coopmat::ir::Module ParseOrFail(const std::vector<uint32_t>& words);
// Calls fn on every instruction of every function.
void ForEachFunctionInstruction(const coopmat::ir::Module& m, const std::function<void(const coopmat::ir::Instruction&)>& fn);
size_t CountOpcode(const coopmat::ir::Module& m, spv::Op op);
bool HasCapability(const coopmat::ir::Module& m, spv::Capability cap);
bool HasExtension(const coopmat::ir::Module& m, const std::string& name);
bool HasDecoration(const coopmat::ir::Module& m, spv::Decoration decoration);
// The Workgroup OpVariable whose pointee is an array of 32-bit uint (our scratch), or 0.
uint32_t FindScratchVariable(const coopmat::ir::Module& m);

// SPIR-V assembly text to words; numeric ids (%12) stay as written; `env` sets the
// header's SPIR-V version. Throws with the assembler's messages.
// Lowers a corrupted module (without options.validate, which would refuse invalid
// output itself): a refusal must say why, and an input that still validates must lower
// to a module that validates. Returns whether the input still validated.
bool CheckCorruptedInput(const std::vector<uint32_t>& words, const coopmat::LowerOptions& options);

std::vector<uint32_t> Assemble(const std::string& text, spv_target_env env = SPV_ENV_UNIVERSAL_1_6);
// Words to text with friendly names and no header. Throws when they do not disassemble.
std::string Disassemble(const std::vector<uint32_t>& words);

// The exhaustive evaluator loops check every Nth case: $COOPMAT_PASSES_STRIDE, 1 (all)
// unless set. The sanitizer stage (scripts/test) runs the whole suite with a stride,
// where checking every case would take ten minutes under ASan.
uint32_t ExhaustiveStride();

}  // namespace passtest
