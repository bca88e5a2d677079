// Regression tests for the second round of review findings (review-901d75a.md):
// decoration groups (7), loop-header code (10), mixed-stage modules (13), builtins
// declared as int (15), and the low ones. Each case fails on the code before its fix.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include <filesystem>
#include <regex>
#include <stdexcept>

#include "coopmat/layout.h"
#include "coopmat/lower.h"
#include "test_support.h"

using Catch::Matchers::ContainsSubstring;
using coopmat::ir::Block;
using coopmat::ir::Instruction;
using coopmat::ir::Module;

using passtest::Assemble;
using passtest::Disassemble;

namespace {

// spirv-opt -O
std::vector<uint32_t> Optimized(const std::vector<uint32_t>& words) {
  spvtools::Optimizer optimizer(SPV_ENV_UNIVERSAL_1_6);
  optimizer.RegisterPerformancePasses();
  std::vector<uint32_t> out;
  if (!optimizer.Run(words.data(), words.size(), &out)) throw std::runtime_error("spirv-opt -O failed");
  return out;
}

coopmat::LowerOptions LayerLike() {
  coopmat::LowerOptions options;
  options.maxSharedMemoryBytes = 65536;
  return options;
}

void ExpectValid(const coopmat::LowerResult& result) {
  INFO(result.error);
  REQUIRE(result.ok);
  const std::string error = coopmat::ValidateModule(result.words);
  INFO(error);
  CHECK(error.empty());
}

bool IsExtOp(spv::Op op) {
  return op == spv::Op::OpCooperativeMatrixConvertUseEXT || op == spv::Op::OpCooperativeMatrixGetCoordinateEXT ||
         op == spv::Op::OpCooperativeMatrixReduceEXT || op == spv::Op::OpCooperativeMatrixPerElementOpEXT;
}

bool IsLoopHeader(const Block& block) {
  for (const Instruction& inst : block.instructions)
    if (inst.opcode == spv::Op::OpLoopMerge) return true;
  return false;
}

size_t ExtOpsInLoopHeaders(const Module& m) {
  size_t n = 0;
  for (const auto& f : m.functions)
    for (const Block& block : f.blocks)
      if (IsLoopHeader(block))
        for (const Instruction& inst : block.instructions) n += IsExtOp(inst.opcode);
  return n;
}

// Merges every loop header that branches unconditionally to a block holding an EXT
// op with that block, the way spirv-opt's block merging does when it can: the
// successor's selection merge (if any) becomes the loop merge.
void MergeHeadersWithTheirBody(Module& m) {
  for (auto& f : m.functions)
    for (size_t i = 0; i + 1 < f.blocks.size(); ++i) {
      auto& header = f.blocks[i].instructions;
      if (!IsLoopHeader(f.blocks[i]) || header.back().opcode != spv::Op::OpBranch) continue;
      const uint32_t target = header.back().Operand(0);
      size_t j = 0;
      while (j < f.blocks.size() && f.blocks[j].Label() != target) ++j;
      if (j == f.blocks.size()) continue;
      auto body = f.blocks[j].instructions;
      bool hasExt = false;
      for (const Instruction& inst : body) hasExt |= IsExtOp(inst.opcode);
      if (!hasExt) continue;
      Instruction loopMerge = header[header.size() - 2];
      header.resize(header.size() - 2);
      header.insert(header.end(), body.begin() + 1, body.end());
      if (header[header.size() - 2].opcode == spv::Op::OpSelectionMerge) header[header.size() - 2] = loopMerge;
      else header.insert(header.end() - 1, loopMerge);
      f.blocks.erase(f.blocks.begin() + static_cast<ptrdiff_t>(j));
      for (Block& block : f.blocks)
        for (Instruction& inst : block.instructions)
          if (inst.opcode == spv::Op::OpPhi)
            for (size_t k = 1; k < inst.operands.size(); k += 2)
              if (inst.operands[k] == target) inst.operands[k] = f.blocks[i].Label();
    }
}

// The value of an OpConstant id (first word), or ~0u.
uint32_t ConstantValue(const Module& m, uint32_t id) {
  for (const Instruction& inst : m.globals)
    if (inst.resultId == id && inst.opcode == spv::Op::OpConstant) return inst.Operand(0);
  return ~0u;
}

size_t ColumnMajorLoads(const Module& m) {
  size_t n = 0;
  passtest::ForEachFunctionInstruction(m, [&](const Instruction& inst) {
    if (inst.opcode == spv::Op::OpCooperativeMatrixLoadKHR &&
        ConstantValue(m, inst.Operand(1)) == static_cast<uint32_t>(spv::CooperativeMatrixLayout::ColumnMajorKHR))
      ++n;
  });
  return n;
}

// `text` with every `OpDecorate %x CooperativeMatrixTransposeEXT` replaced by one
// decoration group that carries the decoration and an OpGroupDecorate of all of them.
std::string TransposeThroughGroup(const std::string& text) {
  static const std::regex decoration(R"( *OpDecorate (%\w+) CooperativeMatrixTransposeEXT\n)");
  std::string targets, rest;
  size_t first = std::string::npos;
  std::smatch match;
  std::string remaining = text;
  size_t offset = 0;
  while (std::regex_search(remaining, match, decoration)) {
    if (first == std::string::npos) first = offset + static_cast<size_t>(match.position(0));
    targets += " " + match[1].str();
    rest += match.prefix().str();
    offset += static_cast<size_t>(match.position(0) + match.length(0));
    remaining = match.suffix().str();
  }
  rest += remaining;
  if (targets.empty()) throw std::runtime_error("no transpose decoration");
  return rest.insert(first, "OpDecorate %tgroup CooperativeMatrixTransposeEXT\n%tgroup = OpDecorationGroup\nOpGroupDecorate %tgroup" +
                                targets + "\n");
}

}  // namespace

// Finding 7: the decoration was only looked for in OpDecorate, so a transpose applied
// through a group lowered as a plain (untransposed) conversion.
TEST_CASE("review 7: a transpose applied through a decoration group transposes", "[review]") {
  for (auto [env, version] : {std::pair{"spirv1.3", SPV_ENV_UNIVERSAL_1_3}, std::pair{"spirv1.6", SPV_ENV_UNIVERSAL_1_6}}) {
    INFO(env);
    const std::string text = Disassemble(passtest::LoadShader("convert_type", env));
    const std::string grouped = TransposeThroughGroup(text);
    REQUIRE(grouped.find("OpGroupDecorate") != std::string::npos);
    const auto direct = coopmat::LowerModule(Assemble(text, version), LayerLike());
    const auto viaGroup = coopmat::LowerModule(Assemble(grouped, version), LayerLike());
    ExpectValid(direct);
    ExpectValid(viaGroup);
    const Module a = passtest::ParseOrFail(direct.words), b = passtest::ParseOrFail(viaGroup.words);
    CHECK(ColumnMajorLoads(a) > 0);  // the transposes read the scratch column-major
    CHECK(ColumnMajorLoads(b) == ColumnMajorLoads(a));
    CHECK(viaGroup.stats.transpose == direct.stats.transpose);
    CHECK_FALSE(passtest::HasDecoration(b, spv::Decoration::CooperativeMatrixTransposeEXT));
  }
}

// Finding 10: spirv-opt -O puts the operations into loop headers (a do-while becomes
// a single-block loop); the lowerings split blocks and refused those.
TEST_CASE("review 10: operations in loop header blocks are lowered to valid code", "[review]") {
  for (const char* env : {"spirv1.3", "spirv1.6"}) {
    INFO(env);
    Module m = passtest::ParseOrFail(Optimized(passtest::LoadShader("loop_header", env)));
    MergeHeadersWithTheirBody(m);  // the for(;;) body too, as a front end may emit it
    REQUIRE(ExtOpsInLoopHeaders(m) == 2);
    const std::vector<uint32_t> input = coopmat::ir::Emit(m);
    INFO(coopmat::ValidateModule(input));
    REQUIRE(coopmat::ValidateModule(input).empty());
    SECTION("scratch path") { ExpectValid(coopmat::LowerModule(input, LayerLike())); }
    SECTION("register path for two subgroup sizes (switch on SubgroupSize)") {
      coopmat::LowerOptions options = LayerLike();
      options.layouts = coopmat::BuiltinLayouts(coopmat::DriverFamily::Lavapipe, 8);
      for (auto l : coopmat::BuiltinLayouts(coopmat::DriverFamily::Lavapipe, 8)) {
        l.key.subgroupSize = 16;
        l.laneBits.push_back({});
        options.layouts.push_back(l);
      }
      const auto result = coopmat::LowerModule(input, options);
      ExpectValid(result);
      CHECK(result.stats.registerPath > 0);
    }
  }
}

TEST_CASE("review 10: a loop header choosing between two blocks inside the loop is refused by name", "[review][malformed]") {
  Module m = passtest::ParseOrFail(Optimized(passtest::LoadShader("loop_header", "spirv1.6")));
  MergeHeadersWithTheirBody(m);
  // Make the for(;;) header's exit test choose between two blocks inside the loop:
  // its break goes to a new block that continues the loop instead.
  bool edited = false;
  for (auto& f : m.functions)
    for (size_t i = 0; i < f.blocks.size() && !edited; ++i) {
      Block& block = f.blocks[i];
      if (!IsLoopHeader(block) || block.instructions.back().opcode != spv::Op::OpBranchConditional) continue;
      const Instruction loopMerge = block.instructions[block.instructions.size() - 2];
      Instruction& branch = block.instructions.back();
      if (loopMerge.Operand(1) == block.Label() || branch.Operand(1) != loopMerge.Operand(0)) continue;
      const uint32_t detour = m.TakeId();
      branch.operands[1] = detour;
      Block extra;
      extra.instructions = {Instruction(spv::Op::OpLabel, 0, detour, {}), Instruction(spv::Op::OpBranch, 0, 0, {loopMerge.Operand(1)})};
      f.blocks.insert(f.blocks.begin() + static_cast<ptrdiff_t>(i) + 1, extra);
      edited = true;
    }
  REQUIRE(edited);
  const auto result = coopmat::LowerModule(coopmat::ir::Emit(m), LayerLike());
  INFO(result.error);
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.error, ContainsSubstring("OpCooperativeMatrixReduceEXT"));
  CHECK_THAT(result.error, ContainsSubstring("loop header"));
}

namespace {

std::string ReduceText() { return Disassemble(passtest::LoadShader("reduce", "spirv1.6")); }

std::string InsertAfter(std::string text, const std::string& after, const std::string& insert) {
  const size_t at = text.find(after);
  if (at == std::string::npos) throw std::runtime_error("'" + after + "' not found");
  return text.insert(text.find('\n', at) + 1, insert);
}

size_t BuiltinVariables(const Module& m, spv::BuiltIn builtin) {
  size_t n = 0;
  for (const Instruction& a : m.annotations)
    if (a.opcode == spv::Op::OpDecorate && a.Operand(1) == static_cast<uint32_t>(spv::Decoration::BuiltIn) &&
        a.Operand(2) == static_cast<uint32_t>(builtin))
      ++n;
  return n;
}

}  // namespace

// Finding 13: a Fragment entry point reaching a lowered operation got code that uses
// a Workgroup variable and builtins outside its interface.
TEST_CASE("review 13: a non-compute entry point reaching a lowered operation is refused by name", "[review][malformed]") {
  const std::string text = InsertAfter(ReduceText(), "OpEntryPoint GLCompute %main", "OpEntryPoint Fragment %main \"frag\"\nOpExecutionMode %main OriginUpperLeft\n");
  const auto result = coopmat::LowerModule(Assemble(text), LayerLike());
  INFO(result.error);
  CHECK_FALSE(result.ok);
  CHECK(result.words.empty());
  CHECK_THAT(result.error, ContainsSubstring("entry point \"frag\" (Fragment)"));
  CHECK_THAT(result.error, ContainsSubstring("OpCooperativeMatrixReduceEXT"));
}

TEST_CASE("review 13: a non-compute entry point that reaches nothing lowered keeps its interface", "[review]") {
  std::string text = InsertAfter(ReduceText(), "OpEntryPoint GLCompute %main", "OpEntryPoint Fragment %frag \"frag\"\nOpExecutionMode %frag OriginUpperLeft\n");
  text += "%frag = OpFunction %void None %3\n%frag_entry = OpLabel\nOpReturn\nOpFunctionEnd\n";
  const auto input = Assemble(text);
  const auto result = coopmat::LowerModule(input, LayerLike());
  ExpectValid(result);
  auto fragmentEntry = [](const Module& m) {
    for (const Instruction& entry : m.entryPoints)
      if (entry.Operand(0) == static_cast<uint32_t>(spv::ExecutionModel::Fragment)) return entry.operands;
    return std::vector<uint32_t>{};
  };
  const auto before = fragmentEntry(passtest::ParseOrFail(input));
  REQUIRE_FALSE(before.empty());
  CHECK(fragmentEntry(passtest::ParseOrFail(result.words)) == before);
}

// Finding 15: a module's own SubgroupLocalInvocationId declared as `int` was not
// reused, so the interface got a second variable with the same BuiltIn.
TEST_CASE("review 15: a builtin the module declares as int is reused through a bitcast", "[review]") {
  std::string text = ReduceText();
  text = InsertAfter(text, "OpCapability Shader", "OpCapability GroupNonUniform\n");
  text = InsertAfter(text, "OpDecorate", "OpDecorate %lane BuiltIn SubgroupLocalInvocationId\nOpDecorate %sgsize BuiltIn SubgroupSize\n");
  text = InsertAfter(text, "%int = OpTypeInt 32 1",
                     "%_ptr_Input_int_lane = OpTypePointer Input %int\n%lane = OpVariable %_ptr_Input_int_lane Input\n"
                     "%sgsize = OpVariable %_ptr_Input_int_lane Input\n");
  const size_t entry = text.find("OpEntryPoint GLCompute %main \"main\"");
  text.insert(text.find('\n', entry), " %lane %sgsize");
  const auto input = Assemble(text);
  REQUIRE(coopmat::ValidateModule(input).empty());
  const auto result = coopmat::LowerModule(input, LayerLike());
  ExpectValid(result);
  const Module m = passtest::ParseOrFail(result.words);
  CHECK(BuiltinVariables(m, spv::BuiltIn::SubgroupLocalInvocationId) == 1);
  CHECK(BuiltinVariables(m, spv::BuiltIn::SubgroupSize) == 1);
  CHECK(passtest::CountOpcode(m, spv::Op::OpBitcast) >= 2);
}

// Finding 19: an EXT instruction outside every function went through untouched.
TEST_CASE("review 19: an EXT instruction outside a function is refused by name", "[review][malformed]") {
  const std::string text = InsertAfter(ReduceText(), "%uint = OpTypeInt 32 0", "%bogus = OpCooperativeMatrixPerElementOpEXT %uint %uint %uint\n");
  const auto result = coopmat::LowerModule(Assemble(text), LayerLike());
  INFO(result.error);
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.error, ContainsSubstring("OpCooperativeMatrixPerElementOpEXT"));
  CHECK_THAT(result.error, ContainsSubstring("outside a function"));
}

// Finding 20: 4,194,303 ids is the minimum implementations support, not a maximum.
TEST_CASE("review 20: a module with an id bound above 0x400000 is lowered", "[review]") {
  std::vector<uint32_t> words = passtest::LoadShader("reduce", "spirv1.6");
  words[3] = 0x400001;
  // Enough words for the bound: long OpSourceExtension strings in the debug section.
  size_t pos = 5;
  while (pos < words.size()) {
    const uint32_t op = words[pos] & 0xffff;
    if (op == 3 /*OpSource*/ || op == 4 /*OpSourceExtension*/ || op == 5 /*OpName*/ || op == 7 /*OpString*/) break;
    pos += words[pos] >> 16;
  }
  std::vector<uint32_t> padding;
  while (padding.size() * 4 < 0x400001 + 0x1000 * 4) {
    padding.push_back((65535u << 16) | 4u);
    padding.insert(padding.end(), 65533, 0x61616161u);  // "aaaa"...
    padding.push_back(0);                                // the terminating nul
  }
  words.insert(words.begin() + static_cast<ptrdiff_t>(pos), padding.begin(), padding.end());
  REQUIRE(words.size() * 4 > 0x400001);
  INFO(coopmat::ValidateModule(words));
  REQUIRE(coopmat::ValidateModule(words).empty());
  const auto result = coopmat::LowerModule(words, LayerLike());
  ExpectValid(result);
  CHECK(result.stats.reduce > 0);
}

// Found by the lower campaign after the fix above: an input whose bound was just
// under a fixed limit gave an output (more ids) that no longer parsed.
TEST_CASE("review 20: a module whose bound is near the limit lowers to a module that parses", "[review][malformed]") {
  std::vector<uint32_t> words = passtest::LoadShader("reduce", "spirv1.6");
  words[3] = 0x3ffff0;
  const auto result = coopmat::LowerModule(words, LayerLike());
  INFO(result.error);
  REQUIRE(result.ok);
  coopmat::ir::Module m;
  CHECK(coopmat::ir::Parse(result.words, m).empty());
  CHECK(m.bound > 0x400000);
}

// Finding 21: the lowering's interface variables could push an OpEntryPoint past
// 65535 words, whose word count then wrapped in the output.
TEST_CASE("review 21: an entry point that would pass 65535 words is refused", "[review][malformed]") {
  std::vector<uint32_t> words = passtest::LoadShader("reduce", "spirv1.6");
  for (size_t pos = 5; pos < words.size(); pos += words[pos] >> 16) {
    if ((words[pos] & 0xffff) != 15 /*OpEntryPoint*/) continue;
    const uint32_t count = words[pos] >> 16, variable = words[pos + count - 1];
    const uint32_t added = 65535 - count;
    words.insert(words.begin() + static_cast<ptrdiff_t>(pos + count), added, variable);
    words[pos] = (65535u << 16) | 15u;
    break;
  }
  const auto result = coopmat::LowerModule(words, LayerLike());
  INFO(result.error);
  CHECK_FALSE(result.ok);
  CHECK(result.words.empty());
  CHECK_THAT(result.error, ContainsSubstring("OpEntryPoint"));
  CHECK_THAT(result.error, ContainsSubstring("at most 65535"));
}

// Finding 28 (non-semantic debug info in the entry block): spirv-val accepts no
// instruction but OpLine/OpNoLine between the OpVariables, so the review's case
// cannot occur in valid input. What does occur: glslang -gVS puts
// DebugFunctionDefinition right after the variables, and the entry-block preamble's
// loops moved it out of the entry block (invalid). Every test shader, with -gVS.
TEST_CASE("review 28: modules with NonSemantic.Shader.DebugInfo (glslang -gVS) lower to valid code", "[review]") {
  size_t lowered = 0;
  for (const auto& entry : std::filesystem::directory_iterator(passtest::ShaderDir() + "/debuginfo")) {
    INFO(entry.path().string());
    const std::vector<uint32_t> input = passtest::LoadWords(entry.path().string());
    if (!coopmat::ValidateModule(input).empty()) continue;  // the property is about valid input
    const auto result = coopmat::LowerModule(input, LayerLike());
    if (!result.ok) continue;  // refusals are covered elsewhere; this is about what is produced
    ExpectValid(result);
    ++lowered;
  }
  CHECK(lowered >= 10);
}

// Finding 29: Block-decorated (explicit layout) Workgroup variables alias each other
// and may not be mixed with the undecorated scratch.
TEST_CASE("review 29: explicit-layout Workgroup memory is refused where the scratch is needed", "[review][malformed]") {
  std::string text = ReduceText();
  text = InsertAfter(text, "OpCapability Shader", "OpCapability WorkgroupMemoryExplicitLayoutKHR\n");
  text = InsertAfter(text, "OpExtension", "OpExtension \"SPV_KHR_workgroup_memory_explicit_layout\"\n");
  text = InsertAfter(text, "OpDecorate", "OpDecorate %Shared Block\nOpMemberDecorate %Shared 0 Offset 0\n");
  text = InsertAfter(text, "%uint = OpTypeInt 32 0",
                     "%Shared = OpTypeStruct %uint\n%_ptr_Workgroup_Shared = OpTypePointer Workgroup %Shared\n"
                     "%shared = OpVariable %_ptr_Workgroup_Shared Workgroup\n");
  const size_t entry = text.find("OpEntryPoint GLCompute %main \"main\"");
  text.insert(text.find('\n', entry), " %shared");
  const auto result = coopmat::LowerModule(Assemble(text), LayerLike());
  INFO(result.error);
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.error, ContainsSubstring("explicit layout"));
}

// Finding 18: each operation's code was inserted into the middle of its block and
// every block split rescanned the function's OpPhis, so lowering time grew with
// (operations x block size): 2,000 PerElementOps in a 556k-instruction block took 70 s
// in coopmat-lower, 0.25 s now (docs/design.md). Blocks are now rebuilt by appending;
// this checks the rebuild on 200 operations in one block, with the OpPhis after
// spirv-opt -O naming the operations' block as their predecessor.
TEST_CASE("review 18: many operations in one block, OpPhis after them, lower to valid code", "[review]") {
  for (const char* env : {"spirv1.3", "spirv1.6"}) {
    INFO(env);
    const std::vector<uint32_t> plain = passtest::LoadShader("long_block", env);
    const std::vector<uint32_t> optimized = Optimized(plain);
    size_t phis = 0;
    for (const auto& f : passtest::ParseOrFail(optimized).functions)
      for (const Block& block : f.blocks)
        for (const Instruction& inst : block.instructions) phis += inst.opcode == spv::Op::OpPhi;
    REQUIRE(phis >= 100);
    for (const auto* input : {&plain, &optimized}) {
      SECTION(std::string(env) + (input == &plain ? " as compiled" : " after spirv-opt -O") + ", scratch path") {
        const auto result = coopmat::LowerModule(*input, LayerLike());
        ExpectValid(result);
        CHECK(result.stats.perElement == 100);
        CHECK(result.stats.reduce == 100);
      }
      SECTION(std::string(env) + (input == &plain ? " as compiled" : " after spirv-opt -O") + ", register path") {
        coopmat::LowerOptions options = LayerLike();
        options.layouts = coopmat::BuiltinLayouts(coopmat::DriverFamily::Lavapipe, 8);
        const auto result = coopmat::LowerModule(*input, options);
        ExpectValid(result);
        CHECK(result.stats.registerPath == 200);
      }
    }
  }
}
