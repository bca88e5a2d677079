// Pipeline-time specialization: SpecializeModule freezes specialization constants
// the way a driver applies VkSpecializationInfo, and LowerModule with a
// specialization lowers shapes that were specialization constants as constants
// (register path included). specializationPending accepts at module time what only
// the specialization settles; the specialized lowering refuses a mismatch.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <span>

#include "coopmat/layout.h"
#include "coopmat/lower.h"
#include "ieee_float.h"
#include "test_support.h"

using Catch::Matchers::ContainsSubstring;
using coopmat::ir::Instruction;
using coopmat::ir::Module;

using passtest::Assemble;

namespace {

std::vector<uint8_t> Bytes32(uint32_t value) {
  std::vector<uint8_t> bytes(4);
  std::memcpy(bytes.data(), &value, 4);
  return bytes;
}

coopmat::Specialization Spec(std::initializer_list<std::pair<uint32_t, uint32_t>> values) {
  coopmat::Specialization s;
  for (auto [id, value] : values) s.values[id] = Bytes32(value);
  return s;
}

// The value of the constant with result id `id` (first word), or ~0u.
uint32_t ConstantWord(const Module& m, uint32_t id) {
  for (const Instruction& inst : m.globals)
    if (inst.resultId == id) {
      if (inst.opcode == spv::Op::OpConstantTrue) return 1;
      if (inst.opcode == spv::Op::OpConstantFalse) return 0;
      if (inst.opcode == spv::Op::OpConstant) return inst.Operand(0);
    }
  return ~0u;
}

size_t CountSpecConstants(const Module& m) {
  size_t n = 0;
  for (const Instruction& inst : m.globals)
    switch (inst.opcode) {
      case spv::Op::OpSpecConstant:
      case spv::Op::OpSpecConstantTrue:
      case spv::Op::OpSpecConstantFalse:
      case spv::Op::OpSpecConstantComposite:
      case spv::Op::OpSpecConstantOp: ++n; break;
      default: break;
    }
  return n;
}

const char* kFoldModule = R"(
               OpCapability Shader
               OpCapability Int16
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
               OpDecorate %a SpecId 1
               OpDecorate %b SpecId 2
               OpDecorate %flag SpecId 3
               OpDecorate %narrow SpecId 4
               OpDecorate %kept SpecId 5
       %void = OpTypeVoid
       %bool = OpTypeBool
       %uint = OpTypeInt 32 0
        %int = OpTypeInt 32 1
      %short = OpTypeInt 16 1
     %int_m2 = OpConstant %int -2
    %uint_16 = OpConstant %uint 16
          %a = OpSpecConstant %uint 3
          %b = OpSpecConstant %int 7
       %flag = OpSpecConstantFalse %bool
     %narrow = OpSpecConstant %short 1
       %kept = OpSpecConstant %uint 11
         %10 = OpSpecConstantOp %uint IAdd %a %kept
         %11 = OpSpecConstantOp %int SDiv %b %int_m2
         %12 = OpSpecConstantOp %uint Select %flag %a %kept
         %13 = OpSpecConstantOp %bool IEqual %a %uint_16
         %14 = OpSpecConstantOp %int SConvert %narrow
     %voidfn = OpTypeFunction %void
       %main = OpFunction %void None %voidfn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
)";

}  // namespace

TEST_CASE("specialization freezes constants, folds their operations and drops SpecIds", "[specialize]") {
  const std::vector<uint32_t> input = Assemble(kFoldModule);
  coopmat::Specialization spec = Spec({{1, 16}, {2, static_cast<uint32_t>(-9)}, {3, 1}});
  spec.values[4] = {0xfd, 0xff};  // int16 -3, two bytes as the app passes it
  const coopmat::LowerResult result = coopmat::SpecializeModule(input, spec);
  REQUIRE(result.ok);
  CHECK(coopmat::ValidateModule(result.words).empty());
  const Module m = passtest::ParseOrFail(result.words);
  CHECK(CountSpecConstants(m) == 0);
  CHECK_FALSE(passtest::HasDecoration(m, spv::Decoration::SpecId));
  const Module before = passtest::ParseOrFail(input);
  auto idOf = [&](spv::Op op, size_t nth) {
    size_t seen = 0;
    for (const Instruction& inst : before.globals)
      if (inst.opcode == op && seen++ == nth) return inst.resultId;
    return 0u;
  };
  const uint32_t a = idOf(spv::Op::OpSpecConstant, 0), b = idOf(spv::Op::OpSpecConstant, 1);
  const uint32_t narrow = idOf(spv::Op::OpSpecConstant, 2), kept = idOf(spv::Op::OpSpecConstant, 3);
  CHECK(ConstantWord(m, a) == 16);
  CHECK(ConstantWord(m, b) == static_cast<uint32_t>(-9));
  CHECK(ConstantWord(m, narrow) == 0xfffffffdu);  // narrow signed literals are sign-extended
  CHECK(ConstantWord(m, kept) == 11);             // no entry: the default stands
  CHECK(ConstantWord(m, idOf(spv::Op::OpSpecConstantOp, 0)) == 27);                          // 16 + 11
  CHECK(ConstantWord(m, idOf(spv::Op::OpSpecConstantOp, 1)) == 4);                           // -9 / -2
  CHECK(ConstantWord(m, idOf(spv::Op::OpSpecConstantOp, 2)) == 16);                          // flag ? a : kept
  CHECK(ConstantWord(m, idOf(spv::Op::OpSpecConstantOp, 3)) == 1);                           // a == 16
  CHECK(ConstantWord(m, idOf(spv::Op::OpSpecConstantOp, 4)) == static_cast<uint32_t>(-3));  // SConvert
}

TEST_CASE("specialized shapes are constants: the register path applies", "[specialize][register]") {
  const auto lavapipe = coopmat::BuiltinLayouts(coopmat::DriverFamily::Lavapipe, 8);
  for (const char* env : {"spirv1.3", "spirv1.6"}) {
    INFO(env);
    const std::vector<uint32_t> input = passtest::LoadShader("spec_dims", env);
    coopmat::LowerOptions options;
    options.layouts = lavapipe;
    options.specializationPending = true;
    const coopmat::LowerResult moduleTime = coopmat::LowerModule(input, options);
    REQUIRE(moduleTime.ok);
    CHECK(moduleTime.dependsOnSpecialization);
    CHECK(moduleTime.stats.registerPath == 0);

    options.specializationPending = false;
    options.specialization = Spec({{0, 8}, {1, 8}, {2, 8}});
    const coopmat::LowerResult pipelineTime = coopmat::LowerModule(input, options);
    REQUIRE(pipelineTime.ok);
    CHECK_FALSE(pipelineTime.dependsOnSpecialization);
    CHECK(pipelineTime.stats.OpsLowered() == moduleTime.stats.OpsLowered());
    CHECK(pipelineTime.stats.registerPath == pipelineTime.stats.OpsLowered());
    CHECK(passtest::FindScratchVariable(passtest::ParseOrFail(pipelineTime.words)) == 0);
    CHECK(coopmat::ValidateModule(pipelineTime.words).empty());

    // A shape with no linear layout (24 x 8: not a power of two) stays portable, with a constant scratch size.
    options.specialization = Spec({{0, 8}, {1, 24}, {2, 8}});
    const coopmat::LowerResult other = coopmat::LowerModule(input, options);
    REQUIRE(other.ok);
    CHECK(other.stats.registerPath < other.stats.OpsLowered());
    CHECK(other.stats.scratchBytesPerSubgroup > 0);  // a constant size now
    CHECK(coopmat::ValidateModule(other.words).empty());
  }
}

TEST_CASE("conversions between specialization-constant shapes and Uses", "[specialize]") {
  const std::vector<uint32_t> input = passtest::LoadShader("spec_use", "spirv1.6");
  coopmat::LowerOptions options;
  // Module time without the pending mode: the Use (and TN == TK) cannot be known.
  const coopmat::LowerResult strict = coopmat::LowerModule(input, options);
  CHECK_FALSE(strict.ok);
  CHECK_THAT(strict.error, ContainsSubstring("must have a constant Use (0, 1 or 2) once specialized"));

  options.specializationPending = true;
  const coopmat::LowerResult pending = coopmat::LowerModule(input, options);
  REQUIRE(pending.ok);
  CHECK(pending.dependsOnSpecialization);
  CHECK(coopmat::ValidateModule(pending.words).empty());

  options.specializationPending = false;
  options.layouts = coopmat::BuiltinLayouts(coopmat::DriverFamily::Lavapipe, 8);
  options.AddMatrixProperties(8, 8, 8, coopmat::kTypeF16, coopmat::kTypeF16, coopmat::kTypeF32, coopmat::kTypeF32);
  for (uint32_t use : {0u, 1u}) {  // Acc -> A or B: a conversion the layer lowers, in registers
    INFO("Use " << use);
    options.specialization = Spec({{7, use}});
    const coopmat::LowerResult specialized = coopmat::LowerModule(input, options);
    REQUIRE(specialized.ok);
    CHECK(specialized.stats.convert == 1);
    CHECK(specialized.stats.registerPath == 1);
    CHECK(coopmat::ValidateModule(specialized.words).empty());
  }
  options.specialization = Spec({{7, 2}});  // Acc -> Acc: a plain KHR conversion, nothing to lower
  const coopmat::LowerResult plain = coopmat::LowerModule(input, options);
  REQUIRE(plain.ok);
  CHECK(plain.stats.OpsLowered() == 0);
  CHECK(coopmat::ValidateModule(plain.words).empty());

  options.specialization = Spec({{5, 16}});  // TK = 16 != TN: refused, naming both shapes
  const coopmat::LowerResult mismatch = coopmat::LowerModule(input, options);
  CHECK_FALSE(mismatch.ok);
  CHECK_THAT(mismatch.error, ContainsSubstring("Result dimensions 8x16 do not match the Matrix dimensions 8x8 once specialized"));

  options.specialization = Spec({{7, 5}});  // not a Use at all
  const coopmat::LowerResult badUse = coopmat::LowerModule(input, options);
  CHECK_FALSE(badUse.ok);
  CHECK_THAT(badUse.error, ContainsSubstring("must have a constant Use"));
}

// Issue 15: a published kernel with specialization-constant tiles, lowered without
// saying how to treat them, is refused with what a user can act on: the SpecIds
// and their defaults (not raw ids) and the two ways to lower it.
TEST_CASE("a shape relation only specialization can settle is named by SpecId with the options", "[specialize]") {
  const std::vector<uint32_t> input = passtest::LoadShader("spec_dims_convert", "spirv1.6");
  coopmat::LowerOptions options;
  const coopmat::LowerResult strict = coopmat::LowerModule(input, options);
  REQUIRE_FALSE(strict.ok);
  CHECK_THAT(strict.error, ContainsSubstring("Result dimensions SpecId 3 (default 8) x SpecId 5 (default 16) do not match the "
                                             "Matrix dimensions SpecId 3 (default 8) x SpecId 4 (default 16)"));
  CHECK_THAT(strict.error, ContainsSubstring("--specialize ID=VALUE") && ContainsSubstring("--pending"));
  CHECK(strict.error.find('%', strict.error.find("Result dimensions")) == std::string::npos);  // no raw ids
  // Both ways it names work.
  options.specializationPending = true;
  CHECK(coopmat::LowerModule(input, options).ok);
  options.specializationPending = false;
  options.specialization = Spec({{4, 8}, {5, 8}});
  CHECK(coopmat::LowerModule(input, options).ok);
}

// Review 2 finding 4: a scratch sized by a specialization-constant workgroup
// (local_size_x_id) could not be held to the shared-memory limit at module time and
// was never checked again. Now the module depends on specialization, and the lowering
// with the pipeline's values checks it.
TEST_CASE("a spec-constant workgroup size is held to the shared-memory limit once specialized", "[specialize]") {
  const std::vector<uint32_t> input = passtest::LoadShader("local_size_id", "spirv1.6");
  coopmat::LowerOptions options;
  options.maxSharedMemoryBytes = 32768;
  options.specializationPending = true;
  const coopmat::LowerResult moduleTime = coopmat::LowerModule(input, options);
  REQUIRE(moduleTime.ok);
  CHECK(moduleTime.dependsOnSpecialization);  // the layer lowers it again per pipeline
  options.specializationPending = false;
  // 64 invocations: 8 slices of 256 bytes next to the module's own 2048 fit 32 KiB ...
  options.specialization = Spec({{0, 64}, {1, 1}});
  const coopmat::LowerResult small = coopmat::LowerModule(input, options);
  INFO(small.error);
  CHECK(small.ok);
  // ... 1024 invocations (128 slices, 32 KiB) do not: refused, naming the numbers.
  options.specialization = Spec({{0, 1024}, {1, 1}});
  const coopmat::LowerResult large = coopmat::LowerModule(input, options);
  CHECK_FALSE(large.ok);
  CHECK_THAT(large.error, ContainsSubstring("32768 bytes of Workgroup scratch") && ContainsSubstring("module's own 2048 bytes"));
  // Without a limit nothing depends on it.
  options.specialization.reset();
  options.specializationPending = true;
  options.maxSharedMemoryBytes = 0;
  CHECK_FALSE(coopmat::LowerModule(input, options).dependsOnSpecialization);
}

// Review 2 finding 15: malformed constants reach the freezer only at pipeline time (the
// fuzzer did not run it). A boolean constant of a float type and an integer type of
// width 0 are left alone: no shift by 2^32 - 1 (UBSan in the malformed run).
TEST_CASE("the freezer leaves malformed constants alone", "[specialize][malformed]") {
  const std::string text = R"(
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
               OpDecorate %t SpecId 0
               OpDecorate %w SpecId 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
      %float = OpTypeFloat 32
       %uint = OpTypeInt 32 0
      %zero = OpTypeInt 0 0
          %t = OpSpecConstantTrue %float
          %w = OpSpecConstant %zero 0
        %sum = OpSpecConstantOp %uint IAdd %t %t
       %main = OpFunction %void None %fn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
)";
  const std::vector<uint32_t> words = passtest::Assemble(text);
  REQUIRE(!words.empty());
  const coopmat::LowerResult frozen = coopmat::SpecializeModule(words, Spec({{0, 1}, {1, 7}}));
  INFO(frozen.error);
  REQUIRE(frozen.ok);
  // true + true of a float "boolean" was folded into the constant 2 before; now the
  // operation stays as it was, for the driver to reject.
  const coopmat::ir::Module m = passtest::ParseOrFail(frozen.words);
  size_t specOps = 0, twos = 0;
  for (const auto& g : m.globals) {
    specOps += g.opcode == spv::Op::OpSpecConstantOp;
    twos += g.opcode == spv::Op::OpConstant && !g.operands.empty() && g.operands[0] == 2;
  }
  CHECK(specOps == 1);
  CHECK(twos == 0);
}

// Review 2 finding 7: SpecId and BuiltIn WorkgroupSize applied through a decoration
// group were ignored: the app's value was dropped and a stale SpecId left behind.
TEST_CASE("specialization follows SpecIds applied through decoration groups", "[specialize]") {
  const std::string text = R"(
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpDecorate %group SpecId 7
      %group = OpDecorationGroup
               OpGroupDecorate %group %tile
               OpDecorate %size BuiltIn WorkgroupSize
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
      %uvec3 = OpTypeVector %uint 3
       %tile = OpSpecConstant %uint 8
        %one = OpConstant %uint 1
       %size = OpSpecConstantComposite %uvec3 %tile %one %one
    %doubled = OpSpecConstantOp %uint IAdd %tile %tile
       %main = OpFunction %void None %fn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
)";
  const std::vector<uint32_t> words = passtest::Assemble(text);
  REQUIRE(!words.empty());
  const coopmat::LowerResult frozen = coopmat::SpecializeModule(words, Spec({{7, 32}}));
  INFO(frozen.error);
  REQUIRE(frozen.ok);
  const coopmat::ir::Module m = passtest::ParseOrFail(frozen.words);
  bool thirtyTwo = false, sixtyFour = false;
  for (const auto& g : m.globals) {
    thirtyTwo |= g.opcode == spv::Op::OpConstant && g.operands == std::vector<uint32_t>{32};
    sixtyFour |= g.opcode == spv::Op::OpConstant && g.operands == std::vector<uint32_t>{64};  // the folded IAdd
    CHECK(g.opcode != spv::Op::OpSpecConstantOp);
  }
  CHECK(thirtyTwo);  // before: the group's SpecId was not seen, the default 8 kept
  CHECK(sixtyFour);
  CHECK(coopmat::ValidateModule(frozen.words).empty());
}

// ---- Review 4b565b7 finding 10: composite and float operations ----------------

namespace {

// The global named `name` by OpName (names survive the freezer), or null.
const Instruction* Named(const Module& m, const std::string& name) {
  for (const Instruction& d : m.debug)
    if (d.opcode == spv::Op::OpName && coopmat::ir::DecodeString(std::span(d.operands).subspan(1)) == name)
      for (const Instruction& g : m.globals)
        if (g.resultId == d.Operand(0)) return &g;
  return nullptr;
}

// The scalar words of a frozen constant, composites flattened; empty when `inst`
// is not a constant (still a specialization instruction, say).
std::vector<uint32_t> FrozenWords(const Module& m, const Instruction* inst) {
  if (!inst) return {};
  switch (inst->opcode) {
    case spv::Op::OpConstant: return inst->operands;
    case spv::Op::OpConstantTrue: return {1};
    case spv::Op::OpConstantFalse: return {0};
    case spv::Op::OpConstantComposite: {
      std::vector<uint32_t> words;
      for (uint32_t part : inst->operands)
        for (const Instruction& g : m.globals)
          if (g.resultId == part) {
            const std::vector<uint32_t> inner = FrozenWords(m, &g);
            if (inner.empty()) return {};
            words.insert(words.end(), inner.begin(), inner.end());
          }
      return words;
    }
    default: return {};
  }
}

const char* kCompositeModule = R"(
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
               OpName %wg "wg"
               OpName %x0 "x0"
               OpName %tm "tm"
               OpName %inserted "inserted"
               OpName %shuffled "shuffled"
               OpName %deep "deep"
               OpName %partial "partial"
               OpName %whole "whole"
               OpName %fromPartial "fromPartial"
               OpName %unfoldable "unfoldable"
               OpName %overUnfoldable "overUnfoldable"
               OpDecorate %x SpecId 0
               OpDecorate %y SpecId 1
               OpDecorate %wg BuiltIn WorkgroupSize
       %void = OpTypeVoid
       %uint = OpTypeInt 32 0
     %v2uint = OpTypeVector %uint 2
     %v3uint = OpTypeVector %uint 3
     %v4uint = OpTypeVector %uint 4
     %uint_0 = OpConstant %uint 0
     %uint_1 = OpConstant %uint 1
     %uint_2 = OpConstant %uint 2
     %uint_4 = OpConstant %uint 4
       %pair = OpTypeArray %v3uint %uint_2
          %x = OpSpecConstant %uint 1
          %y = OpSpecConstant %uint 2
         %wg = OpSpecConstantComposite %v3uint %x %uint_1 %y
         %x0 = OpSpecConstantOp %uint CompositeExtract %wg 0
         %tm = OpSpecConstantOp %uint UDiv %x0 %uint_4
         %y2 = OpSpecConstantOp %uint CompositeExtract %wg 2
   %inserted = OpSpecConstantOp %v3uint CompositeInsert %y2 %wg 1
   %shuffled = OpSpecConstantOp %v4uint VectorShuffle %wg %inserted 2 0 4 5
      %nests = OpSpecConstantComposite %pair %wg %inserted
       %deep = OpSpecConstantOp %uint CompositeExtract %nests 1 1
 %unfoldable = OpSpecConstantOp %uint UDiv %x %uint_0
    %partial = OpSpecConstantComposite %v2uint %x %unfoldable
      %whole = OpSpecConstantComposite %v2uint %x %uint_1
%fromPartial = OpSpecConstantOp %uint CompositeExtract %partial 0
%overUnfoldable = OpSpecConstantOp %uint CompositeExtract %partial 1
     %voidfn = OpTypeFunction %void
       %main = OpFunction %void None %voidfn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
)";

}  // namespace

// glslang writes `gl_WorkGroupSize.x / 4u` as CompositeExtract of the WorkgroupSize
// composite, then UDiv: before, the extract stayed a specialization operation, so a
// shape made from it never became a constant at pipeline time.
TEST_CASE("the freezer folds CompositeExtract, CompositeInsert and VectorShuffle over frozen composites", "[specialize]") {
  const uint32_t x = 32, y = 5;
  const coopmat::LowerResult frozen = coopmat::SpecializeModule(Assemble(kCompositeModule), Spec({{0, x}, {1, y}}));
  INFO(frozen.error);
  REQUIRE(frozen.ok);
  CHECK(coopmat::ValidateModule(frozen.words).empty());
  const Module m = passtest::ParseOrFail(frozen.words);
  // The same operations on the values, by hand.
  const std::vector<uint32_t> wg{x, 1, y};
  std::vector<uint32_t> inserted = wg;
  inserted[1] = wg[2];
  const std::vector<uint32_t> both{wg[0], wg[1], wg[2], inserted[0], inserted[1], inserted[2]};
  CHECK(FrozenWords(m, Named(m, "wg")) == wg);
  CHECK(FrozenWords(m, Named(m, "x0")) == std::vector<uint32_t>{x});
  CHECK(FrozenWords(m, Named(m, "tm")) == std::vector<uint32_t>{x / 4});
  CHECK(FrozenWords(m, Named(m, "inserted")) == inserted);
  CHECK(FrozenWords(m, Named(m, "shuffled")) == std::vector<uint32_t>{both[2], both[0], both[4], both[5]});
  CHECK(FrozenWords(m, Named(m, "deep")) == std::vector<uint32_t>{inserted[1]});
}

// SPIR-V: the constituents of an OpConstantComposite are constants. A composite with
// a part the freezer leaves to the driver (UDiv by zero) stays a specialization
// composite (without SpecIds); its constant parts can still be extracted.
TEST_CASE("a composite is frozen only when all its parts are constants", "[specialize]") {
  const coopmat::LowerResult frozen = coopmat::SpecializeModule(Assemble(kCompositeModule), Spec({{0, 32}, {1, 5}}));
  INFO(frozen.error);
  REQUIRE(frozen.ok);
  CHECK(coopmat::ValidateModule(frozen.words).empty());
  const Module m = passtest::ParseOrFail(frozen.words);
  CHECK_FALSE(passtest::HasDecoration(m, spv::Decoration::SpecId));
  REQUIRE(Named(m, "partial"));
  CHECK(Named(m, "partial")->opcode == spv::Op::OpSpecConstantComposite);
  CHECK(Named(m, "unfoldable")->opcode == spv::Op::OpSpecConstantOp);
  CHECK(Named(m, "overUnfoldable")->opcode == spv::Op::OpSpecConstantOp);
  CHECK(FrozenWords(m, Named(m, "fromPartial")) == std::vector<uint32_t>{32});
  CHECK(Named(m, "whole")->opcode == spv::Op::OpConstantComposite);
  CHECK(FrozenWords(m, Named(m, "whole")) == std::vector<uint32_t>{32, 1});
  // Every OpConstantComposite left holds constants only.
  for (const Instruction& g : m.globals)
    if (g.opcode == spv::Op::OpConstantComposite) {
      INFO("%" << g.resultId);
      CHECK_FALSE(FrozenWords(m, &g).empty());
    }
}

namespace {

// One OpSpecConstantOp FConvert / QuantizeToF16 of a plain constant: its operand's
// width and bits, and the result's width.
struct FloatFold {
  spv::Op op;
  uint32_t fromWidth, toWidth;
  uint64_t bits;
};

// Freezes a module with one OpSpecConstantOp per fold; `adjust` may add decorations
// or execution modes (it gets the module and the result ids). Each result: its
// bits when folded into an OpConstant, nullopt when left to the driver.
std::vector<std::optional<uint64_t>> FreezeFloats(
    const std::vector<FloatFold>& folds, bool validate = true,
    const std::function<void(Module&, const std::vector<uint32_t>&)>& adjust = {}) {
  Module m = passtest::ParseOrFail(Assemble(R"(
               OpCapability Shader
               OpCapability Float16
               OpCapability Float64
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
       %void = OpTypeVoid
       %half = OpTypeFloat 16
      %float = OpTypeFloat 32
     %double = OpTypeFloat 64
     %voidfn = OpTypeFunction %void
       %main = OpFunction %void None %voidfn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
)"));
  std::map<uint32_t, uint32_t> floatType;  // width -> type id
  for (const Instruction& g : m.globals)
    if (g.opcode == spv::Op::OpTypeFloat) floatType[g.Operand(0)] = g.resultId;
  std::vector<uint32_t> results;
  for (const FloatFold& f : folds) {
    const uint32_t operand = m.TakeId(), result = m.TakeId();
    std::vector<uint32_t> words{static_cast<uint32_t>(f.bits)};
    if (f.fromWidth == 64) words.push_back(static_cast<uint32_t>(f.bits >> 32));
    m.globals.emplace_back(spv::Op::OpConstant, floatType.at(f.fromWidth), operand, words);
    m.globals.emplace_back(spv::Op::OpSpecConstantOp, floatType.at(f.toWidth), result,
                           std::vector<uint32_t>{static_cast<uint32_t>(f.op), operand});
    results.push_back(result);
  }
  if (adjust) adjust(m, results);
  const coopmat::LowerResult frozen = coopmat::SpecializeModule(coopmat::ir::Emit(m), {});
  INFO(frozen.error);
  REQUIRE(frozen.ok);
  if (validate) CHECK(coopmat::ValidateModule(frozen.words).empty());
  const Module out = passtest::ParseOrFail(frozen.words);
  std::vector<std::optional<uint64_t>> values;
  for (uint32_t id : results)
    for (const Instruction& g : out.globals)
      if (g.resultId == id) {
        if (g.opcode != spv::Op::OpConstant) values.push_back(std::nullopt);
        else values.push_back(g.operands[0] | (g.operands.size() > 1 ? uint64_t{g.operands[1]} << 32 : 0));
      }
  REQUIRE(values.size() == folds.size());
  return values;
}

uint64_t Bits(float v) { return std::bit_cast<uint32_t>(v); }
uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }
uint64_t Bits(_Float16 v) { return std::bit_cast<uint16_t>(v); }
float Float(uint64_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits)); }

// QuantizeToF16 as SPIR-V defines it, by the host's binary16 (round to nearest even),
// for values that do not round across 65504 or 2^-14.
float QuantizeReference(float x) {
  if (std::fabs(x) >= 65520.0f) return std::copysign(INFINITY, x);
  if (std::fabs(x) < 0x1p-14f) return std::copysign(0.0f, x);
  return static_cast<float>(static_cast<_Float16>(x));
}

// The binary16 value next above |h| (h finite, not the largest).
float NextHalfUp(_Float16 h) {
  return static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>((std::bit_cast<uint16_t>(h) & 0x7fff) + 1)));
}

}  // namespace

TEST_CASE("the freezer folds FConvert to the IEEE result the host computes", "[specialize]") {
  const std::vector<float> floats{0.0f,  -0.0f,   1.0f,    -1.5f,   0.1f,     1.0f / 3,  65504.0f, 65519.0f, 65520.0f,
                                  1e6f,  2049.0f, 2051.0f, 1e-5f,   -6e-8f,   2.9e-8f,   1e-9f,    1e-40f,
                                  INFINITY, -INFINITY, std::numeric_limits<float>::max()};
  const std::vector<double> doubles{0.1, -1.0 / 3, 1e300, -1e-320, 65519.99, 6.103515625e-05, 1e-8, 3.0};
  std::vector<FloatFold> folds;
  std::vector<uint64_t> want;
  for (float f : floats) {
    folds.push_back({spv::Op::OpFConvert, 32, 16, Bits(f)});
    want.push_back(Bits(static_cast<_Float16>(f)));
    folds.push_back({spv::Op::OpFConvert, 32, 64, Bits(f)});
    want.push_back(Bits(static_cast<double>(f)));
    const _Float16 h = static_cast<_Float16>(f);
    folds.push_back({spv::Op::OpFConvert, 16, 32, Bits(h)});
    want.push_back(Bits(static_cast<float>(h)));
  }
  for (double d : doubles) {
    folds.push_back({spv::Op::OpFConvert, 64, 32, Bits(d)});
    want.push_back(Bits(static_cast<float>(d)));
    folds.push_back({spv::Op::OpFConvert, 64, 16, Bits(d)});
    want.push_back(Bits(static_cast<_Float16>(d)));
  }
  const auto got = FreezeFloats(folds);
  for (size_t i = 0; i < folds.size(); ++i) {
    INFO("case " << i << ": " << folds[i].fromWidth << " -> " << folds[i].toWidth << " bits 0x" << std::hex << folds[i].bits);
    REQUIRE(got[i].has_value());
    CHECK(*got[i] == want[i]);
  }
  // A NaN stays a NaN.
  const auto nan = FreezeFloats({{spv::Op::OpFConvert, 32, 16, Bits(std::numeric_limits<float>::quiet_NaN())}});
  REQUIRE(nan[0]);
  CHECK(std::isnan(static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(*nan[0])))));
}

TEST_CASE("the freezer folds QuantizeToF16 as SPIR-V defines it", "[specialize]") {
  const std::vector<float> values{1.0f,     -2.5f,   0.1f,    1.0f / 3, 3.14159f, 65504.0f, 65520.0f, -1e6f,
                                  1e30f,    2049.0f, 2051.0f, 0x1p-14f, 1e-5f,    -1e-5f,   0x1.8p-15f, 1e-40f,
                                  -0.0f,    0.0f,    INFINITY, -INFINITY, std::numeric_limits<float>::max()};
  std::vector<FloatFold> folds;
  for (float v : values) folds.push_back({spv::Op::OpQuantizeToF16, 32, 32, Bits(v)});
  const auto got = FreezeFloats(folds);
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("QuantizeToF16(" << values[i] << ")");
    REQUIRE(got[i].has_value());
    CHECK(*got[i] == Bits(QuantizeReference(values[i])));
  }
  const auto nan = FreezeFloats({{spv::Op::OpQuantizeToF16, 32, 32, Bits(std::numeric_limits<float>::quiet_NaN())}});
  REQUIRE(nan[0]);
  CHECK(std::isnan(Float(*nan[0])));
  // Rounding across the limits: 65519 rounds to 65504 but is above it; 2^-14 - 2^-27
  // rounds to 2^-14 but is below it. SPIR-V does not say which side wins: left alone.
  for (const auto& result : FreezeFloats({{spv::Op::OpQuantizeToF16, 32, 32, Bits(65519.0f)},
                                          {spv::Op::OpQuantizeToF16, 32, 32, Bits(0x1.fffp-15f)}}))
    CHECK_FALSE(result.has_value());
}

// Where the result depends on what the module says about rounding and subnormals,
// the freezer follows it or leaves the conversion to the driver.
TEST_CASE("the freezer folds a float conversion only where its rounding and subnormals are fixed", "[specialize]") {
  const uint64_t inexact = Bits(0.7f), exact = Bits(1.5f), subnormal = Bits(1e-5f);
  auto decorate = [](uint32_t mode) {
    return [mode](Module& m, const std::vector<uint32_t>& ids) {
      for (uint32_t id : ids)
        m.annotations.emplace_back(spv::Op::OpDecorate, 0, 0,
                                   std::vector<uint32_t>{id, static_cast<uint32_t>(spv::Decoration::FPRoundingMode), mode});
    };
  };
  auto executionModes = [](std::vector<std::pair<spv::ExecutionMode, uint32_t>> modes) {
    return [modes](Module& m, const std::vector<uint32_t>&) {
      for (auto [mode, width] : modes)
        m.executionModes.emplace_back(spv::Op::OpExecutionMode, 0, 0,
                                      std::vector<uint32_t>{m.entryPoints[0].Operand(1), static_cast<uint32_t>(mode), width});
    };
  };
  const _Float16 towardZero = std::bit_cast<_Float16>(static_cast<uint16_t>(Bits(static_cast<_Float16>(0.7f)) - 1));
  REQUIRE(static_cast<float>(towardZero) < 0.7f);  // 0.7 rounds up to nearest; toward zero is the one below
  REQUIRE(NextHalfUp(towardZero) > 0.7f);
  {  // FPRoundingMode RTZ on the result
    const auto got = FreezeFloats({{spv::Op::OpFConvert, 32, 16, inexact}}, false, decorate(1));
    REQUIRE(got[0]);
    CHECK(*got[0] == Bits(towardZero));
  }
  {  // RTP: not folded when it rounds; an exact conversion needs no rounding
    const auto got = FreezeFloats({{spv::Op::OpFConvert, 32, 16, inexact}, {spv::Op::OpFConvert, 32, 16, exact}}, false, decorate(2));
    CHECK_FALSE(got[0].has_value());
    REQUIRE(got[1]);
    CHECK(*got[1] == Bits(static_cast<_Float16>(1.5f)));
  }
  {  // RoundingModeRTZ for 16-bit results
    const auto got = FreezeFloats({{spv::Op::OpFConvert, 32, 16, inexact}}, false,
                                  executionModes({{spv::ExecutionMode::RoundingModeRTZ, 16}}));
    REQUIRE(got[0]);
    CHECK(*got[0] == Bits(towardZero));
  }
  {  // DenormFlushToZero for 16 bits: a subnormal result is the driver's to flush
    const auto got = FreezeFloats({{spv::Op::OpFConvert, 32, 16, subnormal}, {spv::Op::OpFConvert, 32, 16, exact}}, false,
                                  executionModes({{spv::ExecutionMode::DenormFlushToZero, 16}}));
    CHECK_FALSE(got[0].has_value());
    CHECK(got[1].has_value());
  }
  {  // Disagreeing modes for the width: nothing that rounds is folded
    const auto got = FreezeFloats({{spv::Op::OpFConvert, 32, 16, inexact}}, false,
                                  executionModes({{spv::ExecutionMode::RoundingModeRTE, 16}, {spv::ExecutionMode::RoundingModeRTZ, 16}}));
    CHECK_FALSE(got[0].has_value());
  }
}

// ConvertFloat against the host's own conversions: every binary16 value widened,
// and spread samples of binary32 / binary64 narrowed (round to nearest even); toward
// zero, the result must be the largest binary16 magnitude not above the value.
TEST_CASE("IEEE conversions match the host's", "[specialize][ieee]") {
  using coopmat::ConvertFloat;
  using coopmat::FloatRounding;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const _Float16 half = std::bit_cast<_Float16>(static_cast<uint16_t>(h));
    INFO("binary16 0x" << std::hex << h);
    REQUIRE(ConvertFloat(h, coopmat::kBinary16, coopmat::kBinary32, FloatRounding::NearestEven).bits == Bits(static_cast<float>(half)));
    REQUIRE(ConvertFloat(h, coopmat::kBinary16, coopmat::kBinary64, FloatRounding::NearestEven).bits == Bits(static_cast<double>(half)));
  }
  size_t checked = 0;
  for (uint64_t f = 0; f <= 0xffffffffu; f += 4093) {
    const float value = Float(f);
    INFO("binary32 0x" << std::hex << f);
    if (std::isnan(value)) continue;  // payloads are the host's choice
    REQUIRE(ConvertFloat(f, coopmat::kBinary32, coopmat::kBinary16, FloatRounding::NearestEven).bits ==
            Bits(static_cast<_Float16>(value)));
    const uint64_t truncated = ConvertFloat(f, coopmat::kBinary32, coopmat::kBinary16, FloatRounding::TowardZero).bits;
    const _Float16 t = std::bit_cast<_Float16>(static_cast<uint16_t>(truncated));
    if (!std::isinf(value)) {
      REQUIRE(std::fabs(static_cast<float>(t)) <= std::fabs(value));
      REQUIRE((std::bit_cast<uint16_t>(t) & 0x7fff) <= 0x7bff);  // finite: toward zero never overflows
      if ((std::bit_cast<uint16_t>(t) & 0x7fff) < 0x7bff) REQUIRE(NextHalfUp(t) > std::fabs(value));
    }
    ++checked;
  }
  CHECK(checked > 1000000);
  std::mt19937_64 random(7);
  for (int i = 0; i < 1000000; ++i) {
    const uint64_t d = random();
    const double value = std::bit_cast<double>(d);
    INFO("binary64 0x" << std::hex << d);
    if (std::isnan(value)) continue;
    REQUIRE(ConvertFloat(d, coopmat::kBinary64, coopmat::kBinary32, FloatRounding::NearestEven).bits == Bits(static_cast<float>(value)));
    REQUIRE(ConvertFloat(d, coopmat::kBinary64, coopmat::kBinary16, FloatRounding::NearestEven).bits ==
            Bits(static_cast<_Float16>(value)));
  }
}

// The review's repro: TM = gl_WorkGroupSize.x / 4u as the row count of a transposed
// conversion, and its Use computed the same way. Before, the pipeline-time lowering
// kept TM a specialization operation (portable: 0 in registers) and refused the Use
// ("must have a constant Use"); module time refused the Use too.
TEST_CASE("shapes and Uses computed from gl_WorkGroupSize are constants once specialized", "[specialize][register]") {
  for (const char* env : {"spirv1.3", "spirv1.6"}) {
    INFO(env);
    const std::vector<uint32_t> input = passtest::LoadShader("workgroup_size_tile", env);
    coopmat::LowerOptions options;
    options.layouts = coopmat::BuiltinLayouts(coopmat::DriverFamily::Lavapipe, 8);
    options.specializationPending = true;
    const coopmat::LowerResult moduleTime = coopmat::LowerModule(input, options);
    INFO(moduleTime.error);
    REQUIRE(moduleTime.ok);  // the Use's default (local size 1: Use 0) stands in
    CHECK(moduleTime.dependsOnSpecialization);
    CHECK(moduleTime.stats.registerPath == 0);

    options.specializationPending = false;
    options.specialization = Spec({{0, 32}});  // TM = 8, Use = B
    const coopmat::LowerResult pipelineTime = coopmat::LowerModule(input, options);
    INFO(pipelineTime.error);
    REQUIRE(pipelineTime.ok);
    CHECK_FALSE(pipelineTime.dependsOnSpecialization);
    CHECK(pipelineTime.stats.transpose == 1);
    CHECK(pipelineTime.stats.registerPath == 1);
    CHECK(passtest::FindScratchVariable(passtest::ParseOrFail(pipelineTime.words)) == 0);
    CHECK(coopmat::ValidateModule(pipelineTime.words).empty());

    options.specialization = Spec({{0, 96}});  // Use 3: refused, as a constant Use would be
    const coopmat::LowerResult badUse = coopmat::LowerModule(input, options);
    CHECK_FALSE(badUse.ok);
    CHECK_THAT(badUse.error, ContainsSubstring("must have a constant Use (0, 1 or 2)"));
  }
}

// Review 4b565b7 finding 15, what remained: a specialization entry without bytes
// made the freezer memcpy from an empty vector's null data() (UBSan: "null pointer
// passed as argument 2") and froze the constant to 0. Now it is no value: the
// default stands, for scalars and booleans alike.
TEST_CASE("an empty specialization value leaves the default", "[specialize][malformed]") {
  const std::string text = R"(
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
               OpName %n "n"
               OpName %flag "flag"
               OpDecorate %n SpecId 0
               OpDecorate %flag SpecId 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %bool = OpTypeBool
       %uint = OpTypeInt 32 0
          %n = OpSpecConstant %uint 7
       %flag = OpSpecConstantTrue %bool
       %main = OpFunction %void None %fn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
)";
  coopmat::Specialization spec;
  spec.values[0] = {};
  spec.values[1] = {};
  const coopmat::LowerResult frozen = coopmat::SpecializeModule(Assemble(text), spec);
  INFO(frozen.error);
  REQUIRE(frozen.ok);
  const Module m = passtest::ParseOrFail(frozen.words);
  CHECK(FrozenWords(m, Named(m, "n")) == std::vector<uint32_t>{7});
  CHECK(FrozenWords(m, Named(m, "flag")) == std::vector<uint32_t>{1});
  CHECK(coopmat::ValidateModule(frozen.words).empty());
}
