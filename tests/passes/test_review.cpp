// Regression tests for the findings of the code review of 901d75a
// (../shared/reference/review-901d75a.md): each case is the review's reproduction,
// assembled from text (a test shader disassembled and edited, or written out).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <spirv-tools/libspirv.hpp>

#include <stdexcept>

#include "coopmat/lower.h"
#include "test_support.h"

using Catch::Matchers::ContainsSubstring;

using passtest::Assemble;
using passtest::Disassemble;

namespace {

// The test shader `name` as text with `after` followed by `insert` (after must occur).
std::string Edited(const std::string& name, const std::string& env, const std::string& after, const std::string& insert) {
  std::string text = Disassemble(passtest::LoadShader(name, env));
  const size_t at = text.find(after);
  if (at == std::string::npos) throw std::runtime_error("'" + after + "' not in " + name);
  text.insert(at + after.size(), insert);
  return text;
}

std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("'" + from + "' not found");
  return text.replace(at, from.size(), to);
}

// The options the layer passes on a served device (a shared-memory limit always).
coopmat::LowerOptions LayerLike() {
  coopmat::LowerOptions options;
  options.maxSharedMemoryBytes = 65536;
  return options;
}

void ExpectRefused(const coopmat::LowerResult& result, const std::string& fragment) {
  INFO(result.error);
  CHECK_FALSE(result.ok);
  CHECK(result.words.empty());
  CHECK_THAT(result.error, ContainsSubstring(fragment));
}

[[maybe_unused]] void ExpectValid(const coopmat::LowerResult& result) {
  INFO(result.error);
  REQUIRE(result.ok);
  const std::string error = coopmat::ValidateModule(result.words);
  INFO(error);
  CHECK(error.empty());
}

}  // namespace

// Finding 1: the shared-memory accounting recursed into self-referential types.
TEST_CASE("review 1: a self-referential Workgroup type is refused, not recursed into", "[review][malformed]") {
  const std::string workgroupOf = "%wg_ptr = OpTypePointer Workgroup %self\n%wg_var = OpVariable %wg_ptr Workgroup\n";
  for (const std::string& self : {std::string("%self = OpTypeArray %self %uint_2\n"), std::string("%self = OpTypeStruct %self\n")}) {
    const auto words = Assemble(Edited("reduce", "spirv1.3", "%uint_2 = OpConstant %uint 2\n", self + workgroupOf));
    ExpectRefused(coopmat::LowerModule(words, LayerLike()), "not a type declared before it");
  }
}

TEST_CASE("review 1: 100000 levels of nested arrays cost no stack", "[review][malformed]") {
  std::string nested = "%n0 = OpTypeArray %uint %uint_2\n";
  constexpr int kLevels = 100000;
  for (int i = 1; i < kLevels; ++i)
    nested += "%n" + std::to_string(i) + " = OpTypeArray %n" + std::to_string(i - 1) + " %uint_2\n";
  nested += "%wg_ptr = OpTypePointer Workgroup %n" + std::to_string(kLevels - 1) + "\n%wg_var = OpVariable %wg_ptr Workgroup\n";
  const auto words = Assemble(Edited("reduce", "spirv1.3", "%uint_2 = OpConstant %uint 2\n", nested));
  // 2^100000 words saturate: the module's own memory alone is over the limit.
  ExpectRefused(coopmat::LowerModule(words, LayerLike()), "more than the 65536 bytes of shared memory the device allows");
}

// Finding 2: 32-bit wraparound of the scratch size.
TEST_CASE("review 2: a LocalSize product past 32 bits is refused, not wrapped to 0", "[review][malformed]") {
  std::string text = Disassemble(passtest::LoadShader("reduce", "spirv1.3"));
  // Drop the WorkgroupSize constant's decoration so LocalSize is what counts.
  text = Replaced(text, "OpDecorate %gl_WorkGroupSize BuiltIn WorkgroupSize\n", "");
  text = Replaced(text, "LocalSize 8 1 1", "LocalSize 65536 65536 1");
  ExpectRefused(coopmat::LowerModule(Assemble(text), LayerLike()), "LocalSize 65536 65536 1 gives 4294967296 invocations");
  ExpectRefused(coopmat::LowerModule(Assemble(text), {}), "4294967296 invocations");
}

TEST_CASE("review 2: a WorkgroupSize constant whose product wraps is refused", "[review][malformed]") {
  std::string text = Disassemble(passtest::LoadShader("reduce", "spirv1.3"));
  text = Replaced(text, "%gl_WorkGroupSize = OpConstantComposite %v3uint %uint_8 %uint_1 %uint_1",
                  "%gl_WorkGroupSize = OpConstantComposite %v3uint %uint_65536 %uint_65536 %uint_1");
  text = Replaced(text, "%uint_2 = OpConstant %uint 2\n", "%uint_2 = OpConstant %uint 2\n%uint_65536 = OpConstant %uint 65536\n");
  ExpectRefused(coopmat::LowerModule(Assemble(text), {}), "overflows 32 bits");
}

TEST_CASE("review 2: slices times words past 32 bits is refused, not wrapped", "[review][malformed]") {
  // 4096x4096 f32 accumulator: 2^24 words per slice; 1024 invocations at min subgroup 4: 256 slices.
  std::string text = Disassemble(passtest::LoadShader("reduce", "spirv1.3"));
  // Every 16 becomes 4096 and every 8 becomes 2048, so the reductions keep their shapes' ratios.
  text = Replaced(text, "%uint_16 = OpConstant %uint 16", "%uint_16 = OpConstant %uint 4096");
  text = Replaced(text, "%uint_8 = OpConstant %uint 8", "%uint_8 = OpConstant %uint 2048");
  text = Replaced(text, "%gl_WorkGroupSize = OpConstantComposite %v3uint %uint_8 %uint_1 %uint_1",
                  "%gl_WorkGroupSize = OpConstantComposite %v3uint %uint_1024 %uint_1 %uint_1");
  coopmat::LowerOptions options = LayerLike();
  options.minSubgroupSize = 4;
  ExpectRefused(coopmat::LowerModule(Assemble(text), options), "overflows 32 bits");
}

namespace {

// reduce.comp with 256 invocations per workgroup: 32 scratch slices at subgroup size 8,
// 8 at size 32.
std::vector<uint32_t> Reduce256() {
  std::string text = Disassemble(passtest::LoadShader("reduce", "spirv1.6"));
  return Assemble(Replaced(text, "LocalSize 8 1 1", "LocalSize 256 1 1"));
}

}  // namespace

// Finding 23: the scratch was sized for minSubgroupSize slices even when the pipeline's
// own subgroup size is known, so modules that fit at that size were refused.
TEST_CASE("review 23: the scratch has one slice per subgroup at the pipeline's smallest size", "[review]") {
  const std::vector<uint32_t> words = Reduce256();
  coopmat::LowerOptions options = LayerLike();
  options.minSubgroupSize = 8;
  options.maxSharedMemoryBytes = 16384;  // 8 slices fit, 32 do not
  SECTION("sizes 8..32 possible: refused, naming the size") {
    options.subgroupSizes = {8, 16, 32};
    ExpectRefused(coopmat::LowerModule(words, options), "at subgroup size 8");
  }
  SECTION("a pipeline required to run at 32: lowered with 8 slices") {
    options.subgroupSizes = {32};
    const auto result = coopmat::LowerModule(words, options);
    ExpectValid(result);
    CHECK_FALSE(result.dependsOnSubgroupSize);
  }
  SECTION("module time, sizes 8..32: lowered, and left for each pipeline to settle") {
    options.subgroupSizes = {8, 16, 32};
    options.specializationPending = true;
    const auto result = coopmat::LowerModule(words, options);
    REQUIRE(result.ok);
    CHECK(result.dependsOnSubgroupSize);
  }
  SECTION("module time, size 8 only: refused") {
    options.subgroupSizes = {8};
    options.specializationPending = true;
    ExpectRefused(coopmat::LowerModule(words, options), "at subgroup size 8");
  }
}

namespace {

// The reduce test module's text with its entry point a task or mesh one.
std::string ReduceModuleAs(const std::string& model) {
  std::string text = Disassemble(passtest::LoadShader("reduce", "spirv1.3"));
  text = Replaced(text, "OpEntryPoint GLCompute %main", "OpEntryPoint " + model + " %main");
  text = Replaced(text, "OpCapability Shader\n", "OpCapability Shader\nOpCapability MeshShadingEXT\n");
  return Replaced(text, "OpExtension \"SPV_KHR_cooperative_matrix\"\n",
                  "OpExtension \"SPV_KHR_cooperative_matrix\"\nOpExtension \"SPV_EXT_mesh_shader\"\n");
}

}  // namespace

TEST_CASE("review 23: task and mesh entry points are held to their own shared-memory limits", "[review][malformed]") {
  const std::vector<uint32_t> mesh = Assemble(ReduceModuleAs("MeshEXT"));
  coopmat::LowerOptions options = LayerLike();
  CHECK(coopmat::LowerModule(mesh, options).ok);  // the compute limit alone: fits
  options.maxMeshSharedMemoryBytes = 512;
  ExpectRefused(coopmat::LowerModule(mesh, options), "more than the 512 bytes");
  options.maxMeshSharedMemoryBytes = 0;
  options.maxTaskSharedMemoryBytes = 512;  // no task entry point: does not apply
  CHECK(coopmat::LowerModule(mesh, options).ok);
}

// A task shader's payload counts with its shared memory against
// maxTaskPayloadAndSharedMemorySize; the layer held the scratch to the shared-memory limit
// alone, so a module within both limits could leave the lowered one over the first (input
// review of 2026-12-07; validation reported VUID-RuntimeSpirv-maxTaskPayloadAndSharedMemorySize-08760).
TEST_CASE("a task shader's payload counts against the payload-and-shared-memory limit", "[review][malformed]") {
  // 4096 bytes of payload: 1024 floats.
  const std::string text = Replaced(ReduceModuleAs("TaskEXT"), "%uint_3 = OpConstant %uint 3\n",
                  "%uint_3 = OpConstant %uint 3\n%9001 = OpConstant %uint 1024\n%9002 = OpTypeArray %float %9001\n"
                  "%9003 = OpTypePointer TaskPayloadWorkgroupEXT %9002\n"
                  "%9004 = OpVariable %9003 TaskPayloadWorkgroupEXT\n");  // ids above the module's: no clash
  const std::vector<uint32_t> task = Assemble(text);
  coopmat::LowerOptions options = LayerLike();
  const coopmat::LowerResult alone = coopmat::LowerModule(task, options);
  INFO(alone.error);
  REQUIRE(alone.ok);
  const uint64_t scratch = alone.stats.scratchBytes;
  REQUIRE(scratch > 0);
  // The shared-memory limit alone would take the scratch; with the payload it does not fit.
  options.maxTaskSharedMemoryBytes = static_cast<uint32_t>(scratch);
  options.maxTaskPayloadAndSharedMemoryBytes = static_cast<uint32_t>(4096 + scratch - 4);
  ExpectRefused(coopmat::LowerModule(task, options), "less the module's 4096 bytes of payload");
  options.maxTaskPayloadAndSharedMemoryBytes = static_cast<uint32_t>(4096 + scratch);
  CHECK(coopmat::LowerModule(task, options).ok);
  options.maxTaskPayloadAndSharedMemoryBytes = 0;  // no such limit: the shared-memory one alone
  CHECK(coopmat::LowerModule(task, options).ok);
  // A mesh limit does not apply to a task entry point.
  options.maxMeshPayloadAndSharedMemoryBytes = 16;
  CHECK(coopmat::LowerModule(task, options).ok);
}
