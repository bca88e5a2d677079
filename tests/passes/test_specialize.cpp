// Pipeline-time specialization: SpecializeModule freezes specialization constants
// the way a driver applies VkSpecializationInfo, and LowerModule with a
// specialization lowers shapes that were specialization constants as constants
// (register path included). specializationPending accepts at module time what only
// the specialization settles; the specialized lowering refuses a mismatch.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstring>


#include "coopmat/layout.h"
#include "coopmat/lower.h"
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
  // 64 invocations: 8 slices of 384 bytes next to the module's own 2048 fit 32 KiB ...
  options.specialization = Spec({{0, 64}, {1, 1}});
  const coopmat::LowerResult small = coopmat::LowerModule(input, options);
  INFO(small.error);
  CHECK(small.ok);
  // ... 1024 invocations (128 slices, 48 KiB) do not: refused, naming the numbers.
  options.specialization = Spec({{0, 1024}, {1, 1}});
  const coopmat::LowerResult large = coopmat::LowerModule(input, options);
  CHECK_FALSE(large.ok);
  CHECK_THAT(large.error, ContainsSubstring("49152 bytes of Workgroup scratch") && ContainsSubstring("module's own 2048 bytes"));
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
