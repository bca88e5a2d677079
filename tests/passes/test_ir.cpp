// The IR: exact round trips, the type manager's find-or-create, and every class
// of malformed input ending in an error value rather than a crash.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <random>

#include "coopmat/lower.h"
#include "test_support.h"
#include "type_manager.h"

using Catch::Matchers::ContainsSubstring;
using coopmat::ir::Module;
using coopmat::ir::Parse;

namespace {

std::string ParseError(const std::vector<uint32_t>& words) {
  Module m;
  return Parse(words, m);
}

constexpr uint32_t Word(uint32_t count, spv::Op op) { return (count << 16) | static_cast<uint32_t>(op); }

// A minimal valid module: header + OpCapability Shader + OpMemoryModel.
std::vector<uint32_t> Minimal(uint32_t bound = 10) {
  return {spv::MagicNumber, 0x00010300, 0, bound, 0,
          Word(2, spv::Op::OpCapability), static_cast<uint32_t>(spv::Capability::Shader),
          Word(3, spv::Op::OpMemoryModel), 0, 1};
}

}  // namespace

TEST_CASE("every test module parses and emits back to identical words", "[ir]") {
  const auto paths = passtest::AllShaderPaths();
  REQUIRE(paths.size() >= 24);  // 8 shaders x 3 environments + the GLSL450 copy
  for (const std::string& path : paths) {
    INFO(path);
    const auto words = passtest::LoadWords(path);
    Module m;
    REQUIRE(Parse(words, m).empty());
    CHECK(coopmat::ir::Emit(m) == words);
    CHECK_FALSE(m.functions.empty());
  }
}

TEST_CASE("the parser puts instructions into their logical sections", "[ir]") {
  const Module m = passtest::ParseOrFail(passtest::LoadShader("reduce", "spirv1.3"));
  CHECK(m.memoryModel.size() == 1);
  CHECK(m.entryPoints.size() == 1);
  CHECK(passtest::HasCapability(m, spv::Capability::CooperativeMatrixReductionsEXT));
  CHECK(passtest::HasExtension(m, "SPV_EXT_cooperative_matrix_maintenance1"));
  for (const auto& f : m.functions)
    for (const auto& b : f.blocks) {
      REQUIRE_FALSE(b.instructions.empty());
      CHECK(b.instructions.front().opcode == spv::Op::OpLabel);
      CHECK(coopmat::ir::IsTerminator(b.instructions.back().opcode));
    }
  CHECK(passtest::CountOpcode(m, spv::Op::OpCooperativeMatrixReduceEXT) == 8);
}

TEST_CASE("the type manager finds existing types and constants and creates each new one once", "[ir]") {
  Module m = passtest::ParseOrFail(passtest::LoadShader("getcoord", "spirv1.3"));
  const size_t globalsBefore = m.globals.size();
  const uint32_t boundBefore = m.bound;
  coopmat::TypeManager types(m);

  // Existing ones come back without new instructions.
  const uint32_t uintType = types.Uint();
  const uint32_t halfType = types.Float(16);
  const uint32_t eight = types.UintConstant(8);
  CHECK(m.globals.size() == globalsBefore);
  CHECK(types.GlobalDef(uintType)->opcode == spv::Op::OpTypeInt);
  CHECK(types.ConstantValue(eight) == 8u);
  const uint32_t accUse = types.UintConstant(2), scope = types.UintConstant(3);
  const uint32_t acc = types.CoopMat(types.Float(32), scope, eight, eight, accUse);
  CHECK(m.globals.size() == globalsBefore);
  auto info = types.CoopMatInfo(acc);
  REQUIRE(info);
  CHECK(info->use == coopmat::MatrixUse::Accumulator);
  CHECK(info->componentBytes == 4);
  CHECK(info->componentFloat);
  (void)halfType;

  // New ones are added once; asking again adds nothing.
  const uint32_t uvec4 = types.Vector(uintType, 4);
  const uint32_t c12345 = types.UintConstant(12345);
  const uint32_t accB = types.CoopMat(halfType, scope, eight, eight, types.UintConstant(1));
  const size_t globalsAfterCreate = m.globals.size();
  CHECK(globalsAfterCreate > globalsBefore);
  CHECK(globalsAfterCreate == globalsBefore + 3);  // uvec4, 12345 and the B f16 8x8 type
  CHECK(m.bound - boundBefore == globalsAfterCreate - globalsBefore);
  CHECK(types.Vector(uintType, 4) == uvec4);
  CHECK(types.UintConstant(12345) == c12345);
  CHECK(types.CoopMat(halfType, scope, eight, eight, types.UintConstant(1)) == accB);
  CHECK(m.globals.size() == globalsAfterCreate);
  CHECK(types.GlobalDef(c12345)->opcode == spv::Op::OpConstant);
  // Specialization ops fold when every operand is a plain constant.
  CHECK(types.ConstantValue(types.SpecOp(uintType, spv::Op::OpIMul, {eight, eight})) == 64u);

  // The grown module still validates and round-trips.
  const auto words = coopmat::ir::Emit(m);
  CHECK(coopmat::ValidateModule(words).empty());
  CHECK(coopmat::ir::Emit(passtest::ParseOrFail(words)) == words);
}

TEST_CASE("specialization-constant sizes become OpSpecConstantOp, never folded", "[ir]") {
  Module m = passtest::ParseOrFail(passtest::LoadShader("spec_dims", "spirv1.3"));
  coopmat::TypeManager types(m);
  uint32_t rows = 0;
  for (const auto& g : m.globals)
    if (g.opcode == spv::Op::OpSpecConstant) rows = g.resultId;
  REQUIRE(rows);
  CHECK(types.IsSpecConstant(rows));
  CHECK_FALSE(types.ConstantValue(rows).has_value());
  const uint32_t product = types.SpecOp(types.Uint(), spv::Op::OpIMul, {rows, types.UintConstant(4)});
  CHECK(types.GlobalDef(product)->opcode == spv::Op::OpSpecConstantOp);
  CHECK(types.SpecOp(types.Uint(), spv::Op::OpIMul, {rows, types.UintConstant(4)}) == product);
}

TEST_CASE("malformed streams are rejected with a reason", "[ir][malformed]") {
  CHECK_THAT(ParseError({}), ContainsSubstring("shorter than the 5-word"));
  CHECK_THAT(ParseError({spv::MagicNumber, 0x10300, 0}), ContainsSubstring("shorter than the 5-word"));
  CHECK_THAT(ParseError({0x12345678, 0x10300, 0, 10, 0}), ContainsSubstring("bad magic"));
  CHECK_THAT(ParseError({0x03022307, 0x10300, 0, 10, 0}), ContainsSubstring("byte-swapped"));
  CHECK_THAT(ParseError({spv::MagicNumber, 0x20000, 0, 10, 0}), ContainsSubstring("unsupported SPIR-V version"));
  CHECK_THAT(ParseError({spv::MagicNumber, 0x10700, 0, 10, 0}), ContainsSubstring("unsupported SPIR-V version"));
  CHECK_THAT(ParseError(Minimal(0)), ContainsSubstring("implausible id bound"));
  CHECK_THAT(ParseError(Minimal(0x7fffffff)), ContainsSubstring("implausible id bound"));
  CHECK(ParseError(Minimal()).empty());

  auto with = [](std::vector<uint32_t> tail) {
    auto words = Minimal();
    words.insert(words.end(), tail.begin(), tail.end());
    return words;
  };
  CHECK_THAT(ParseError(with({0})), ContainsSubstring("word count 0"));
  CHECK_THAT(ParseError(with({Word(9, spv::Op::OpTypeInt), 1, 32})), ContainsSubstring("runs past the end"));
  CHECK_THAT(ParseError(with({Word(1, static_cast<spv::Op>(0xfffe))})), ContainsSubstring("unknown opcode 65534"));
  CHECK_THAT(ParseError(with({Word(4, spv::Op::OpTypeInt), 10, 32, 0})), ContainsSubstring("outside the id bound"));
  CHECK_THAT(ParseError(with({Word(4, spv::Op::OpTypeInt), 0, 32, 0})), ContainsSubstring("outside the id bound"));
  CHECK_THAT(ParseError(with({Word(4, spv::Op::OpConstant), 12, 2, 7})), ContainsSubstring("result type id 12"));
  CHECK_THAT(ParseError(with({Word(1, spv::Op::OpTypeInt)})), ContainsSubstring("too short"));
  CHECK_THAT(ParseError(with({Word(4, spv::Op::OpTypeInt), 1, 32, 0, Word(3, spv::Op::OpTypeFloat), 1, 32})),
             ContainsSubstring("defined twice"));
  CHECK_THAT(ParseError(with({Word(2, spv::Op::OpCapability), 1})), ContainsSubstring("logical layout order"));
  CHECK_THAT(ParseError(with({Word(2, spv::Op::OpLabel), 1})), ContainsSubstring("outside a function"));
  const std::vector<uint32_t> fnHeader{Word(2, spv::Op::OpTypeVoid), 1, Word(3, spv::Op::OpTypeFunction), 2, 1,
                                       Word(5, spv::Op::OpFunction), 1, 3, 0, 2};
  auto fn = [&](std::vector<uint32_t> body) {
    auto words = with(fnHeader);
    words.insert(words.end(), body.begin(), body.end());
    return words;
  };
  CHECK_THAT(ParseError(fn({Word(2, spv::Op::OpLabel), 4, Word(1, spv::Op::OpReturn)})), ContainsSubstring("missing OpFunctionEnd"));
  CHECK_THAT(ParseError(fn({Word(5, spv::Op::OpFunction), 1, 5, 0, 2})), ContainsSubstring("nested OpFunction"));
  CHECK_THAT(ParseError(fn({Word(1, spv::Op::OpReturn)})), ContainsSubstring("before the first OpLabel"));
  CHECK_THAT(ParseError(fn({Word(2, spv::Op::OpLabel), 4, Word(2, spv::Op::OpName), 4, Word(1, spv::Op::OpFunctionEnd)})),
             ContainsSubstring("inside a function"));
  CHECK(ParseError(fn({Word(2, spv::Op::OpLabel), 4, Word(1, spv::Op::OpReturn), Word(1, spv::Op::OpFunctionEnd)})).empty());
}

TEST_CASE("every truncation of a real module fails cleanly in LowerModule", "[ir][malformed]") {
  const auto words = passtest::LoadShader("per_element", "spirv1.6");
  coopmat::LowerOptions options;
  size_t rejected = 0;
  for (size_t n = 0; n < words.size(); ++n) {
    std::vector<uint32_t> prefix(words.begin(), words.begin() + static_cast<ptrdiff_t>(n));
    const auto result = coopmat::LowerModule(prefix, options);
    if (!result.ok) {
      ++rejected;
      CHECK_FALSE(result.error.empty());
      CHECK(result.words.empty());
    }
  }
  // A prefix can only be complete when it ends between instructions outside functions.
  CHECK(rejected >= words.size() - 200);
}

// Not under options.validate (that refuses invalid output itself, so checking the output
// again could not fail, test audit §0.10): a corrupted input that still validates must
// lower to a module that validates; any other input is refused with a message or
// passed through, never a crash.
TEST_CASE("random corruption never crashes, and an input that still validates lowers to one that validates",
          "[ir][malformed]") {
  std::mt19937 random(1234);
  coopmat::LowerOptions options;
  size_t stillValid = 0;
  for (const char* name : {"reduce", "per_element", "getcoord", "convert_type"}) {
    const auto original = passtest::LoadShader(name, "spirv1.5");
    for (int round = 0; round < 150; ++round) {
      auto words = original;
      const int flips = 1 + static_cast<int>(random() % 4);
      for (int f = 0; f < flips; ++f) {
        const size_t at = 5 + random() % (words.size() - 5);
        switch (random() % 4) {
          case 0: words[at] ^= 1u << (random() % 32); break;
          case 1: words[at] = static_cast<uint32_t>(random()); break;
          case 2: words[at] = words[at] & 0xffff; break;  // word count 0
          default: words[at] = (words[at] & 0xffff) | (0xffffu << 16); break;  // huge word count
        }
      }
      INFO(name << " round " << round);
      stillValid += passtest::CheckCorruptedInput(words, options);
    }
  }
  CHECK(stillValid > 0);  // the property was checked at all
}

// The id bound above 0x400000 is plausible up to 4 ids per word. The lower campaign
// found an output that was smaller than its input (the extension's instructions
// dropped) and kept the input's bound, which its own size no longer allowed: the
// caller passes the input's size (tests/fuzz/corpus/lower/bound-near-limit-output-shrinks).
TEST_CASE("an id bound is plausible for the module's size or the size it came from", "[ir][malformed]") {
  const std::vector<uint32_t> words = Minimal(0x400000 + 4 * 12);  // 10 words: 40 ids over 0x400000
  REQUIRE(words.size() == 10);
  Module m;
  CHECK_THAT(coopmat::ir::Parse(words, m), ContainsSubstring("implausible id bound"));
  CHECK(coopmat::ir::Parse(words, m, 12).empty());
  CHECK_THAT(coopmat::ir::Parse(words, m, 11), ContainsSubstring("implausible id bound"));
}
