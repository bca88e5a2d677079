// LowerOptions::supportedMatrixTypes: a conversion that changes both component
// type and Use may go through an intermediate matrix type in registers only when
// the driver supports that type; otherwise it converts the scalars in the scratch.
// The layer must never hand the driver a matrix type it does not support
// (VUID-RuntimeSpirv-OpTypeCooperativeMatrixKHR-10163).
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "coopmat/lower.h"
#include "test_support.h"

using coopmat::ir::Instruction;
using coopmat::ir::Module;

namespace {

// VkComponentTypeKHR values.
constexpr uint32_t kF16 = 0, kF32 = 1, kS8 = 3, kS32 = 5, kU8 = 7, kU32 = 9;

// Lavapipe's four KHR properties (all 8x8x8, subgroup scope).
coopmat::LowerOptions Lavapipe() {
  coopmat::LowerOptions options;
  options.AddMatrixProperties(8, 8, 8, kF16, kF16, kF16, kF16);
  options.AddMatrixProperties(8, 8, 8, kF16, kF16, kF32, kF32);
  options.AddMatrixProperties(8, 8, 8, kU8, kU8, kU32, kU32);
  options.AddMatrixProperties(8, 8, 8, kS8, kS8, kS32, kS32);
  return options;
}

// Every component type in every Use, flexible with granularity 8: every intermediate is allowed.
coopmat::LowerOptions Everything() {
  coopmat::LowerOptions options;
  options.flexibleDimensions = true;
  options.flexibleMaxDimension = 1024;
  for (uint32_t type : {kF16, kF32, kS8, kS32, kU8, kU32})
    for (uint32_t use : {0u, 1u, 2u}) options.supportedMatrixTypes.push_back({type, use, 8, 8});
  return options;
}

// (VkComponentTypeKHR, use, rows, cols) of every constant-sized matrix type a module declares.
using Shape = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>;

std::set<Shape> MatrixTypes(const Module& m) {
  std::map<uint32_t, const Instruction*> globals;
  for (const auto& g : m.globals)
    if (g.resultId) globals[g.resultId] = &g;
  auto constant = [&](uint32_t id) -> std::optional<uint32_t> {
    auto it = globals.find(id);
    if (it == globals.end() || it->second->opcode != spv::Op::OpConstant) return std::nullopt;
    return it->second->Operand(0);
  };
  std::set<Shape> out;
  for (const auto& g : m.globals) {
    if (g.opcode != spv::Op::OpTypeCooperativeMatrixKHR) continue;
    const Instruction* component = globals.at(g.Operand(0));
    const uint32_t width = component->Operand(0);
    const uint32_t log = width == 8 ? 0 : width == 16 ? 1 : 2;
    const uint32_t vk = component->opcode == spv::Op::OpTypeFloat ? log - 1 : (component->Operand(1) ? kS8 : kU8) + log;
    auto rows = constant(g.Operand(2)), cols = constant(g.Operand(3));
    out.insert({vk, *constant(g.Operand(4)), rows.value_or(0), cols.value_or(0)});
  }
  return out;
}

bool Listed(const coopmat::LowerOptions& options, const Shape& shape) {
  const auto [type, use, rows, cols] = shape;
  for (const auto& s : options.supportedMatrixTypes) {
    if (s.componentType != type || s.use != use) continue;
    if (options.flexibleDimensions ? rows && cols && rows % s.rows == 0 && cols % s.cols == 0 : rows == s.rows && cols == s.cols)
      return true;
  }
  return false;
}

// Scalar conversions (the scratch path's): Op*Convert whose result is not a matrix.
size_t ScalarConversions(const Module& m, const std::set<uint32_t>& opcodes) {
  std::set<uint32_t> matrixTypes;
  for (const auto& g : m.globals)
    if (g.opcode == spv::Op::OpTypeCooperativeMatrixKHR) matrixTypes.insert(g.resultId);
  size_t count = 0;
  passtest::ForEachFunctionInstruction(m, [&](const Instruction& i) {
    count += opcodes.count(static_cast<uint32_t>(i.opcode)) && !matrixTypes.count(i.typeId);
  });
  return count;
}

coopmat::LowerResult LowerOk(const std::vector<uint32_t>& words, const coopmat::LowerOptions& options) {
  auto result = coopmat::LowerModule(words, options);
  INFO(result.error);
  REQUIRE(result.ok);
  return result;
}

// How many instructions yield an 8-bit integer scalar, per opcode.
std::map<spv::Op, size_t> NarrowIntValues(const Module& m) {
  std::set<uint32_t> narrowInts;
  for (const auto& g : m.globals)
    if (g.opcode == spv::Op::OpTypeInt && g.Operand(0) == 8) narrowInts.insert(g.resultId);
  std::map<spv::Op, size_t> values;
  passtest::ForEachFunctionInstruction(m, [&](const Instruction& i) {
    if (narrowInts.count(i.typeId)) ++values[i.opcode];
  });
  return values;
}

}  // namespace

TEST_CASE("conversions declare a matrix type of their own only when the driver supports it", "[lower][types]") {
  const std::string name = GENERATE("convert_type", "convert_mixed", "convert_use", "local_size_id", "spec_dims");
  const std::string env = GENERATE("spirv1.3", "spirv1.6");
  const auto input = passtest::LoadShader(name, env);
  const std::set<Shape> before = MatrixTypes(passtest::ParseOrFail(input));
  struct Config {
    const char* what;
    coopmat::LowerOptions options;
  };
  for (const Config& config : {Config{"no list", {}}, Config{"lavapipe", Lavapipe()}, Config{"everything", Everything()}}) {
    INFO(name << " " << env << " with " << config.what);
    const auto result = LowerOk(input, config.options);
    CHECK(coopmat::ValidateModule(result.words).empty());
    for (const Shape& shape : MatrixTypes(passtest::ParseOrFail(result.words))) {
      if (before.count(shape)) continue;
      const auto [type, use, rows, cols] = shape;
      INFO("new type: component " << type << " use " << use << " " << rows << "x" << cols);
      CHECK(Listed(config.options, shape));
    }
  }
}

TEST_CASE("the intermediate type decides between the register and the scratch conversion", "[lower][types]") {
  const auto input = passtest::LoadShader("convert_mixed", "spirv1.5");
  const std::set<uint32_t> convertOps = {static_cast<uint32_t>(spv::Op::OpUConvert), static_cast<uint32_t>(spv::Op::OpSConvert),
                                         static_cast<uint32_t>(spv::Op::OpFConvert), static_cast<uint32_t>(spv::Op::OpConvertUToF)};
  const std::set<Shape> before = MatrixTypes(passtest::ParseOrFail(input));

  SECTION("no list: every mixed conversion converts scalars, no new matrix type") {
    const auto result = LowerOk(input, {});
    const Module m = passtest::ParseOrFail(result.words);
    CHECK(MatrixTypes(m) == before);
    CHECK(result.stats.convert == 7);
    // The largest slice: a 16x32 f32 source, which its f16 result overwrites in place.
    CHECK(result.stats.scratchBytesPerSubgroup == 16 * 32 * 4);
    // Each lane converts whole words: two f16 FConverts per word, for each of the two f32 -> f16 conversions.
    CHECK(ScalarConversions(m, {static_cast<uint32_t>(spv::Op::OpFConvert)}) == 2 * 2);
    CHECK(ScalarConversions(m, {static_cast<uint32_t>(spv::Op::OpConvertUToF)}) >= 1);
    // Integer conversions run in 32-bit arithmetic; an 8-bit scalar is only ever a
    // truncation that packs a destination word (the module declares Int8): the 4 bytes
    // of the word a lane writes each round, for each of the two 32 -> 8-bit conversions.
    CHECK(NarrowIntValues(m) == std::map<spv::Op, size_t>{{spv::Op::OpSConvert, 4}, {spv::Op::OpUConvert, 4}});
    CHECK(coopmat::ValidateModule(result.words).empty());
  }
  SECTION("lavapipe: only the 8x8 f16 Accumulator is added, the u8/s8 conversions stay scalar") {
    const auto options = Lavapipe();
    const auto result = LowerOk(input, options);
    const Module m = passtest::ParseOrFail(result.words);
    std::set<Shape> added;
    for (const Shape& shape : MatrixTypes(m))
      if (!before.count(shape)) added.insert(shape);
    CHECK(added == std::set<Shape>{{kF16, 2, 8, 8}});
    // Acc f32 8x8 -> A f16 converts in registers; the 16x32 one cannot (no flexible dimensions).
    CHECK(ScalarConversions(m, {static_cast<uint32_t>(spv::Op::OpFConvert)}) == 2);
    CHECK(ScalarConversions(m, {static_cast<uint32_t>(spv::Op::OpConvertUToF)}) >= 1);
    CHECK(coopmat::ValidateModule(result.words).empty());
  }
  SECTION("flexible dimensions admit the 16x32 f16 Accumulator") {
    auto options = Lavapipe();
    options.flexibleDimensions = true;
    const auto result = LowerOk(input, options);
    const Module m = passtest::ParseOrFail(result.words);
    CHECK(MatrixTypes(m).count({kF16, 2, 16, 32}));
    CHECK(ScalarConversions(m, {static_cast<uint32_t>(spv::Op::OpFConvert)}) == 0);
    // ... but not past flexibleMaxDimension.
    options.flexibleMaxDimension = 16;
    const Module limited = passtest::ParseOrFail(LowerOk(input, options).words);
    CHECK_FALSE(MatrixTypes(limited).count({kF16, 2, 16, 32}));
  }
  SECTION("everything supported: no scalar conversion at all") {
    const auto result = LowerOk(input, Everything());
    const Module m = passtest::ParseOrFail(result.words);
    CHECK(ScalarConversions(m, convertOps) == 0);
    // Converted in registers to a 16x32 f16 Accumulator first; only that goes through the scratch.
    CHECK(result.stats.scratchBytesPerSubgroup == 16 * 32 * 2);
    CHECK(coopmat::ValidateModule(result.words).empty());
  }
}


// An Acc s32 -> A u8 conversion in a module whose 8-bit types come from
// StorageBuffer8BitAccess alone: no Int8, so no 8-bit arithmetic. spirv-val admits
// a storage-only 8-bit value only in a width conversion: a KHR one to A u32 here,
// which is no intermediate for the Use change (that would be an A s32).
constexpr const char* kNarrowWithoutInt8 = R"(
OpCapability Shader
OpCapability VulkanMemoryModel
OpCapability StorageBuffer8BitAccess
OpCapability CooperativeMatrixKHR
OpCapability CooperativeMatrixConversionsEXT
OpExtension "SPV_KHR_8bit_storage"
OpExtension "SPV_KHR_cooperative_matrix"
OpExtension "SPV_EXT_cooperative_matrix_maintenance1"
OpMemoryModel Logical Vulkan
OpEntryPoint GLCompute %main "main" %buf
OpExecutionMode %main LocalSize 64 1 1
OpDecorate %arr ArrayStride 4
OpDecorate %blk Block
OpMemberDecorate %blk 0 Offset 0
OpDecorate %buf DescriptorSet 0
OpDecorate %buf Binding 0
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%int = OpTypeInt 32 1
%u8 = OpTypeInt 8 0
%u0 = OpConstant %uint 0
%u2 = OpConstant %uint 2
%u3 = OpConstant %uint 3
%u4 = OpConstant %uint 4
%u16 = OpConstant %uint 16
%acc = OpTypeCooperativeMatrixKHR %int %u3 %u16 %u16 %u2
%ma = OpTypeCooperativeMatrixKHR %u8 %u3 %u16 %u16 %u0
%ma32 = OpTypeCooperativeMatrixKHR %uint %u3 %u16 %u16 %u0
%arr = OpTypeRuntimeArray %uint
%blk = OpTypeStruct %arr
%pblk = OpTypePointer StorageBuffer %blk
%pu = OpTypePointer StorageBuffer %uint
%buf = OpVariable %pblk StorageBuffer
%main = OpFunction %void None %fn
%l = OpLabel
%p = OpAccessChain %pu %buf %u0 %u0
%x = OpCooperativeMatrixLoadKHR %acc %p %u0 %u16
%conv = OpSConvert %ma %x
%wide = OpUConvert %ma32 %conv
OpCooperativeMatrixStoreKHR %p %wide %u0 %u16
OpReturn
OpFunctionEnd
)";

TEST_CASE("an 8-bit result packs with byte truncations only where the module declares Int8", "[lower][types]") {
  const std::vector<uint32_t> input = passtest::Assemble(kNarrowWithoutInt8);
  INFO(coopmat::ValidateModule(input));
  REQUIRE(coopmat::ValidateModule(input).empty());
  const auto result = LowerOk(input, {});
  INFO(coopmat::ValidateModule(result.words));
  CHECK(coopmat::ValidateModule(result.words).empty());
  CHECK(NarrowIntValues(passtest::ParseOrFail(result.words)).empty());
  // The same module with Int8: the word's four bytes are truncations.
  Module withInt8 = passtest::ParseOrFail(input);
  withInt8.RequireCapability(spv::Capability::Int8);
  const auto packed = LowerOk(coopmat::ir::Emit(withInt8), {});
  CHECK(coopmat::ValidateModule(packed.words).empty());
  CHECK(NarrowIntValues(passtest::ParseOrFail(packed.words)) == std::map<spv::Op, size_t>{{spv::Op::OpUConvert, 4}});
}

// The same module converting its storage-only A u8 back to an accumulator: the round
// trip would store the 8-bit matrix, which spirv-val admits only with Int8. Refused with
// a reason, never an invalid module; with Int8 it lowers and validates.
TEST_CASE("a storage-only 8-bit matrix that would go through shared memory is refused", "[lower][types]") {
  std::string text = kNarrowWithoutInt8;
  const std::string sink = "%wide = OpUConvert %ma32 %conv\nOpCooperativeMatrixStoreKHR %p %wide %u0 %u16";
  REQUIRE(text.find(sink) != std::string::npos);
  text.replace(text.find(sink), sink.size(), "%back = OpSConvert %acc %conv\nOpCooperativeMatrixStoreKHR %p %back %u0 %u16");
  const std::vector<uint32_t> input = passtest::Assemble(text);
  INFO(coopmat::ValidateModule(input));
  REQUIRE(coopmat::ValidateModule(input).empty());
  const auto refused = coopmat::LowerModule(input, {});
  CHECK_FALSE(refused.ok);
  CHECK_THAT(refused.error, Catch::Matchers::ContainsSubstring("no Int8 capability"));
  Module withInt8 = passtest::ParseOrFail(input);
  withInt8.RequireCapability(spv::Capability::Int8);
  const auto lowered = LowerOk(coopmat::ir::Emit(withInt8), {});
  CHECK(coopmat::ValidateModule(lowered.words).empty());
}

TEST_CASE("a type the module declares itself serves as the intermediate without a list", "[lower][types]") {
  // convert_type declares an 8x8 f16 Accumulator, so Acc f32 -> A/B f16 converts in registers.
  const auto input = passtest::LoadShader("convert_type", "spirv1.3");
  const Module m = passtest::ParseOrFail(LowerOk(input, {}).words);
  CHECK(MatrixTypes(m) == MatrixTypes(passtest::ParseOrFail(input)));
  CHECK(ScalarConversions(m, {static_cast<uint32_t>(spv::Op::OpFConvert)}) == 0);
}
