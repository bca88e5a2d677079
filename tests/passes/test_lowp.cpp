// bfloat16 (SPV_KHR_bfloat16) and fp8 (SPV_EXT_float8) matrix components: every
// maintenance1 operation lowers to valid SPIR-V on the portable path and with the
// AMD layouts; elements only move (no conversion the app did not write, no
// Int8/Int16/Float16 the module lacks); saturating fp8 conversions keep their
// decoration on what converts; what cannot be done exactly is refused by name.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <map>
#include <set>

#include <spirv-tools/libspirv.hpp>

#include "coopmat/layout.h"
#include "coopmat/lower.h"
#include "test_support.h"

using coopmat::ir::Instruction;
using coopmat::ir::Module;

using passtest::Assemble;

namespace {

struct Setup {
  const char* name;
  std::vector<std::pair<coopmat::DriverFamily, uint32_t>> layouts;
};

coopmat::LowerResult Lower(const std::vector<uint32_t>& words, const Setup& setup) {
  coopmat::LowerOptions options;
  options.minSubgroupSize = 32;
  std::vector<uint32_t> sizes;
  for (const auto& [family, size] : setup.layouts) {
    for (auto& l : coopmat::BuiltinLayouts(family, size)) options.layouts.push_back(std::move(l));
    sizes.push_back(size);
  }
  options.subgroupSizes = sizes;
  return coopmat::LowerModule(words, options);
}

void Replace(std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
}

bool IsEncodedFloat(const Module& m, uint32_t type) {
  for (const Instruction& g : m.globals)
    if (g.resultId == type) return g.opcode == spv::Op::OpTypeFloat && g.operands.size() > 1;
  return false;
}

// Conversions whose source or result is a bfloat16/fp8 scalar, in any function.
size_t EncodedScalarConversions(const Module& m) {
  std::map<uint32_t, uint32_t> typeOf;
  passtest::ForEachFunctionInstruction(m, [&](const Instruction& i) { if (i.resultId) typeOf[i.resultId] = i.typeId; });
  for (const auto& f : m.functions)
    for (const auto& p : f.parameters) typeOf[p.resultId] = p.typeId;
  size_t count = 0;
  passtest::ForEachFunctionInstruction(m, [&](const Instruction& i) {
    if (i.opcode == spv::Op::OpFConvert || i.opcode == spv::Op::OpConvertFToU || i.opcode == spv::Op::OpConvertUToF)
      count += IsEncodedFloat(m, i.typeId) || IsEncodedFloat(m, typeOf[i.Operand(0)]);
  });
  return count;
}

}  // namespace

TEST_CASE("bf16 and fp8: every operation lowers to valid SPIR-V, portable and with the AMD layouts", "[lowp]") {
  const std::string name = GENERATE("lowp_bf16", "lowp_fp8");
  const std::string env = GENERATE("spirv1.3", "spirv1.6");
  const Setup setup = GENERATE(Setup{"portable", {}}, Setup{"gfx12 wave32", {{coopmat::DriverFamily::RadvGfx12, 32}}},
                               Setup{"gfx12 wave64", {{coopmat::DriverFamily::RadvGfx12, 64}}},
                               Setup{"gfx12 wave32+64", {{coopmat::DriverFamily::RadvGfx12, 32}, {coopmat::DriverFamily::RadvGfx12, 64}}},
                               Setup{"gfx11 wave32", {{coopmat::DriverFamily::RadvGfx11, 32}}});
  INFO(name << " " << env << " " << setup.name);
  const auto input = passtest::LoadShader(name, env);
  const Module before = passtest::ParseOrFail(input);
  const auto result = Lower(input, setup);
  INFO(result.error);
  REQUIRE(result.ok);
  const std::string validation = coopmat::ValidateModule(result.words);
  INFO(validation);
  CHECK(validation.empty());
  const Module after = passtest::ParseOrFail(result.words);
  for (spv::Op op : {spv::Op::OpCooperativeMatrixConvertUseEXT, spv::Op::OpCooperativeMatrixGetCoordinateEXT,
                     spv::Op::OpCooperativeMatrixReduceEXT, spv::Op::OpCooperativeMatrixPerElementOpEXT})
    CHECK(passtest::CountOpcode(after, op) == 0);
  // Moving bf16/fp8 elements needs no 8/16-bit arithmetic capability the module
  // lacks (glslang declares Float16 for bfloat16 modules, nothing else).
  for (spv::Capability cap : {spv::Capability::Int8, spv::Capability::Int16, spv::Capability::Float16})
    CHECK(passtest::HasCapability(after, cap) == passtest::HasCapability(before, cap));
  CHECK_FALSE(passtest::HasCapability(before, spv::Capability::Int8));
  CHECK_FALSE(passtest::HasCapability(before, spv::Capability::Int16));
  const auto& s = result.stats;
  const bool bf16 = name == "lowp_bf16";
  CHECK(s.OpsLowered() == (bf16 ? 8u : 7u));
  // Element moves are bit moves: with layouts (no coordinate tables, whose learning
  // writes small integers exactly with OpConvertUToF) the only scalar bf16
  // conversions are the app's own, in its functions.
  const size_t added = EncodedScalarConversions(after) - EncodedScalarConversions(before);
  if (bf16 && !setup.layouts.empty()) CHECK(added == 0);
  // Register path where GFX12 has the layout: GetCoordinate, PerElementOp and the
  // 16x16 reductions on bf16 accumulators; GetCoordinate and PerElementOp on fp8 A/B.
  if (std::string(setup.name).rfind("gfx12", 0) == 0) CHECK(s.registerPath >= (bf16 ? 5u : 3u));
  if (std::string(setup.name) == "portable") CHECK(s.registerPath == 0);
  // Lanes exchange bf16/fp8 values as uint words, never as the encoded type.
  passtest::ForEachFunctionInstruction(after, [&](const Instruction& i) {
    if (i.opcode == spv::Op::OpGroupNonUniformShuffle || i.opcode == spv::Op::OpGroupNonUniformShuffleXor) CHECK_FALSE(IsEncodedFloat(after, i.typeId));
  });
}

namespace {

// f32 accumulator -> fp8 E4M3 A, relaxed OpFConvert with the saturation decoration.
constexpr const char* kSaturatingModule = R"(
OpCapability Shader
OpCapability VulkanMemoryModel
OpCapability CooperativeMatrixKHR
OpCapability CooperativeMatrixConversionsEXT
OpCapability Float8EXT
OpCapability Float8CooperativeMatrixEXT
OpExtension "SPV_KHR_cooperative_matrix"
OpExtension "SPV_EXT_cooperative_matrix_maintenance1"
OpExtension "SPV_EXT_float8"
OpMemoryModel Logical Vulkan
OpEntryPoint GLCompute %main "main" %buf
OpExecutionMode %main LocalSize 64 1 1
OpDecorate %conv SaturatedToLargestFloat8NormalConversionEXT
OpDecorate %arr ArrayStride 4
OpDecorate %blk Block
OpMemberDecorate %blk 0 Offset 0
OpDecorate %buf DescriptorSet 0
OpDecorate %buf Binding 0
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%f32 = OpTypeFloat 32
%e4 = OpTypeFloat 8 Float8E4M3EXT
%u0 = OpConstant %uint 0
%u2 = OpConstant %uint 2
%u3 = OpConstant %uint 3
%u4 = OpConstant %uint 4
%u16 = OpConstant %uint 16
%acc = OpTypeCooperativeMatrixKHR %f32 %u3 %u16 %u16 %u2
%ma = OpTypeCooperativeMatrixKHR %e4 %u3 %u16 %u16 %u0
%arr = OpTypeRuntimeArray %uint
%blk = OpTypeStruct %arr
%pblk = OpTypePointer StorageBuffer %blk
%pu = OpTypePointer StorageBuffer %uint
%buf = OpVariable %pblk StorageBuffer
%main = OpFunction %void None %fn
%l = OpLabel
%p = OpAccessChain %pu %buf %u0 %u0
%x = OpCooperativeMatrixLoadKHR %acc %p %u0 %u16
%conv = OpFConvert %ma %x
OpCooperativeMatrixStoreKHR %p %conv %u0 %u4
OpReturn
OpFunctionEnd
)";

}  // namespace

TEST_CASE("bf16 and fp8: a saturating fp8 conversion keeps its decoration on what converts", "[lowp]") {
  const Setup setup = GENERATE(Setup{"portable", {}}, Setup{"gfx12 wave32", {{coopmat::DriverFamily::RadvGfx12, 32}}},
                               Setup{"gfx12 wave32+64", {{coopmat::DriverFamily::RadvGfx12, 32}, {coopmat::DriverFamily::RadvGfx12, 64}}});
  INFO(setup.name);
  const auto result = Lower(Assemble(kSaturatingModule), setup);
  INFO(result.error);
  REQUIRE(result.ok);
  const std::string validation = coopmat::ValidateModule(result.words);
  INFO(validation);
  CHECK(validation.empty());
  const Module after = passtest::ParseOrFail(result.words);
  std::set<uint32_t> decorated;
  for (const Instruction& a : after.annotations)
    if (a.opcode == spv::Op::OpDecorate && a.Operand(1) == static_cast<uint32_t>(spv::Decoration::SaturatedToLargestFloat8NormalConversionEXT))
      decorated.insert(a.Operand(0));
  size_t toFp8 = 0, decoratedToFp8 = 0;
  std::set<uint32_t> conversions;
  passtest::ForEachFunctionInstruction(after, [&](const Instruction& i) {
    if (i.opcode != spv::Op::OpFConvert) return;
    conversions.insert(i.resultId);
    bool fp8 = IsEncodedFloat(after, i.typeId);
    for (const Instruction& g : after.globals)
      if (g.resultId == i.typeId && g.opcode == spv::Op::OpTypeCooperativeMatrixKHR) fp8 = IsEncodedFloat(after, g.Operand(0));
    toFp8 += fp8;
    decoratedToFp8 += fp8 && decorated.count(i.resultId);
  });
  CHECK(toFp8 > 0);
  CHECK(decoratedToFp8 == toFp8);                 // every conversion to fp8 saturates
  for (uint32_t id : decorated) CHECK(conversions.count(id));  // and nothing else carries it
}

TEST_CASE("bf16 and fp8: what cannot be done exactly is refused by name", "[lowp][malformed]") {
  SECTION("an fp8 E5M2 matrix too large to learn its coordinates in its own type") {
    std::string text = kSaturatingModule;
    // 128x128 E5M2 accumulator and a GetCoordinate on it (coordinates up to 127, E5M2 is exact to 8).
    Replace(text, "%e4 = OpTypeFloat 8 Float8E4M3EXT", "%e4 = OpTypeFloat 8 Float8E5M2EXT");
    Replace(text, "OpCapability CooperativeMatrixConversionsEXT", "OpCapability CooperativeMatrixGetCoordinateEXT");
    Replace(text, "OpDecorate %conv SaturatedToLargestFloat8NormalConversionEXT\n", "");
    Replace(text, "%u16 = OpConstant %uint 16", "%u16 = OpConstant %uint 128");
    Replace(text, "%ma = OpTypeCooperativeMatrixKHR %e4 %u3 %u16 %u16 %u0", "%ma = OpTypeCooperativeMatrixKHR %e4 %u3 %u16 %u16 %u2\n%v2 = OpTypeVector %uint 2");
    Replace(text, "%conv = OpFConvert %ma %x", "%y = OpCooperativeMatrixLoadKHR %ma %p %u0 %u16\n%conv = OpCooperativeMatrixGetCoordinateEXT %v2 %y %u3");
    Replace(text, "OpCooperativeMatrixStoreKHR %p %conv %u0 %u4", "");
    const auto result = Lower(Assemble(text), Setup{"portable", {}});
    REQUIRE_FALSE(result.ok);
    CHECK_THAT(result.error, Catch::Matchers::ContainsSubstring("too large for its coordinates to be learned exactly"));
  }
  SECTION("a float encoding the lowering does not know") {
    std::string text = kSaturatingModule;
    Replace(text, "%e4 = OpTypeFloat 8 Float8E4M3EXT", "%e4 = OpTypeFloat 8 Float8UnsignedE8M0EXT");
    Replace(text, "OpCapability Float8CooperativeMatrixEXT\n", "OpCapability Float8CooperativeMatrixEXT\nOpCapability Float8UnsignedE8M0EXT\n");
    Replace(text, "OpDecorate %conv SaturatedToLargestFloat8NormalConversionEXT\n", "");
    const auto result = Lower(Assemble(text), Setup{"portable", {}});
    REQUIRE_FALSE(result.ok);
    CHECK_THAT(result.error, Catch::Matchers::ContainsSubstring("unsupported component type"));
  }
}
