// Rewrite tests: every test shader, for SPIR-V 1.3, 1.5 and 1.6, lowered and
// checked with spirv-val, for leftovers of the extension, and structurally.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "coopmat/lower.h"
#include "test_support.h"

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using coopmat::ir::Instruction;
using coopmat::ir::Module;

namespace {

constexpr uint32_t kMakeAvailableVisible = 0x2000 | 0x4000;
constexpr uint32_t kNonPrivatePointer = 0x20;

struct Expected {
  uint32_t getCoordinate, convertUse, convert, transpose, perElement, reduce;
};

// What each shader holds (counted by hand from the GLSL).
const std::map<std::string, Expected> kShaders = {
    {"getcoord", {4, 0, 0, 0, 0, 0}},
    {"convert_use", {0, 6, 0, 0, 0, 0}},
    {"convert_type", {0, 1, 6, 4, 0, 0}},
    {"per_element", {0, 0, 0, 0, 5, 0}},
    {"reduce", {0, 0, 0, 0, 0, 8}},
    {"spec_dims", {1 + 1, 0, 1, 0, 1, 1}},
    {"local_size_id", {0, 0, 1, 1, 0, 1}},
    {"coordinates_large", {4, 0, 0, 0, 1, 0}},
    {"convert_mixed", {0, 0, 7, 1, 0, 0}},
    {"functions", {2, 0, 0, 0, 1, 1}},
    {"reduce_spec", {0, 0, 0, 0, 0, 2}},
    {"reduce_narrow", {0, 0, 0, 0, 0, 7}},
};

coopmat::LowerResult Lower(const std::vector<uint32_t>& words, coopmat::LowerOptions options = {}) {
  auto result = coopmat::LowerModule(words, options);
  INFO(result.error);
  REQUIRE(result.ok);
  return result;
}

std::map<uint32_t, const Instruction*> Globals(const Module& m) {
  std::map<uint32_t, const Instruction*> out;
  for (const auto& g : m.globals)
    if (g.resultId) out[g.resultId] = &g;
  return out;
}

// The semantics of every subgroup-scope OpControlBarrier (the lowering's; the
// shaders' own barriers are workgroup-scope).
std::vector<uint32_t> BarrierSemantics(const Module& m) {
  auto globals = Globals(m);
  std::vector<uint32_t> out;
  passtest::ForEachFunctionInstruction(m, [&](const Instruction& i) {
    if (i.opcode != spv::Op::OpControlBarrier || !globals.count(i.Operand(0)) || !globals.count(i.Operand(2))) return;
    if (globals[i.Operand(0)]->Operand(0) == static_cast<uint32_t>(spv::Scope::Subgroup))
      out.push_back(globals[i.Operand(2)]->Operand(0));
  });
  return out;
}

void CheckNoExtensionLeft(const Module& m) {
  for (spv::Op op : {spv::Op::OpCooperativeMatrixConvertUseEXT, spv::Op::OpCooperativeMatrixGetCoordinateEXT,
                     spv::Op::OpCooperativeMatrixReduceEXT, spv::Op::OpCooperativeMatrixPerElementOpEXT})
    CHECK(passtest::CountOpcode(m, op) == 0);
  for (spv::Capability cap : {spv::Capability::CooperativeMatrixConversionsEXT, spv::Capability::CooperativeMatrixGetCoordinateEXT,
                              spv::Capability::CooperativeMatrixReductionsEXT, spv::Capability::CooperativeMatrixPerElementOperationsEXT})
    CHECK_FALSE(passtest::HasCapability(m, cap));
  CHECK_FALSE(passtest::HasExtension(m, "SPV_EXT_cooperative_matrix_maintenance1"));
  CHECK_FALSE(passtest::HasDecoration(m, spv::Decoration::CooperativeMatrixTransposeEXT));
  CHECK(passtest::HasCapability(m, spv::Capability::CooperativeMatrixKHR));
}

// The functions the input's PerElementOp / Reduce instructions name.
std::set<uint32_t> CallbackFunctions(const Module& m) {
  std::set<uint32_t> out;
  passtest::ForEachFunctionInstruction(m, [&](const Instruction& i) {
    if (i.opcode == spv::Op::OpCooperativeMatrixPerElementOpEXT) out.insert(i.Operand(1));
    if (i.opcode == spv::Op::OpCooperativeMatrixReduceEXT) out.insert(i.Operand(2));
  });
  return out;
}

}  // namespace

TEST_CASE("every test shader lowers to valid KHR-only SPIR-V", "[lower]") {
  const std::string name = GENERATE("getcoord", "convert_use", "convert_type", "per_element", "reduce", "spec_dims",
                                    "local_size_id", "coordinates_large", "convert_mixed",
                                    "functions", "reduce_spec", "reduce_narrow");
  const std::string env = GENERATE("spirv1.3", "spirv1.5", "spirv1.6");
  INFO(name << " " << env);
  const auto input = passtest::LoadShader(name, env);
  const Module before = passtest::ParseOrFail(input);
  REQUIRE(coopmat::ScanModule(input).usage.NeedsLowering());

  const auto result = Lower(input);
  const Module after = passtest::ParseOrFail(result.words);
  const std::string validation = coopmat::ValidateModule(result.words);
  INFO(validation);
  CHECK(validation.empty());
  CheckNoExtensionLeft(after);
  CHECK_FALSE(coopmat::ScanModule(result.words).usage.NeedsLowering());
  CHECK(after.version == before.version);

  // Statistics match the shader's operations.
  const Expected& e = kShaders.at(name);
  const auto& s = result.stats;
  CHECK(s.getCoordinate == e.getCoordinate);
  CHECK(s.convertUse == e.convertUse);
  CHECK(s.convert == e.convert);
  CHECK(s.transpose == e.transpose);
  CHECK(s.perElement == e.perElement);
  CHECK(s.reduce == e.reduce);
  CHECK(s.wordsIn == input.size());
  CHECK(s.wordsOut == result.words.size());
  CHECK(s.microseconds > 0);

  // The scratch, its slice index and the barriers are there.
  const uint32_t scratch = passtest::FindScratchVariable(after);
  REQUIRE(scratch != 0);
  CHECK(passtest::HasCapability(after, spv::Capability::GroupNonUniform));
  CHECK(passtest::HasDecoration(after, spv::Decoration::BuiltIn));
  const auto semantics = BarrierSemantics(after);
  // Two per round trip, two per learned table (at least a row and a column table),
  // less the leading one of the first use when it is the first thing in the entry block.
  const bool learns = s.getCoordinate + s.perElement > 0;
  CHECK(semantics.size() + 1 >= 2 * (s.convert + s.convertUse + s.reduce) + (learns ? 4 : 0));
  // glslang always uses the Vulkan memory model with cooperative matrices.
  for (uint32_t sem : semantics) CHECK(sem == (0x108 | kMakeAvailableVisible));
  bool entryListsScratch = false;
  for (const auto& entry : after.entryPoints)
    entryListsScratch |= std::find(entry.operands.begin() + 3, entry.operands.end(), scratch) != entry.operands.end();
  CHECK(entryListsScratch == (after.SpirvMinor() >= 4));

  // Scratch accesses are non-private under the Vulkan memory model.
  std::set<uint32_t> scratchPointers;
  size_t scratchStores = 0;
  passtest::ForEachFunctionInstruction(after, [&](const Instruction& i) {
    if (i.opcode == spv::Op::OpAccessChain && i.Operand(0) == scratch) scratchPointers.insert(i.resultId);
    if (i.opcode == spv::Op::OpCooperativeMatrixStoreKHR && scratchPointers.count(i.Operand(0))) {
      ++scratchStores;
      REQUIRE(i.operands.size() == 5);
      CHECK((i.operands[4] & kNonPrivatePointer) != 0);
    }
    if ((i.opcode == spv::Op::OpLoad || i.opcode == spv::Op::OpCooperativeMatrixLoadKHR) && scratchPointers.count(i.Operand(0)))
      CHECK((i.operands.back() & kNonPrivatePointer) != 0);
  });
  CHECK(scratchStores >= s.convert + s.convertUse + s.reduce);

  // Func / CombineFunc stay and are called.
  std::set<uint32_t> called;
  passtest::ForEachFunctionInstruction(after, [&](const Instruction& i) {
    if (i.opcode == spv::Op::OpFunctionCall) called.insert(i.Operand(0));
  });
  for (uint32_t callback : CallbackFunctions(before)) CHECK(called.count(callback));
  CHECK(after.functions.size() == before.functions.size());
}

TEST_CASE("GetCoordinate learns the layout once per matrix type and function", "[lower]") {
  const auto result = Lower(passtest::LoadShader("getcoord", "spirv1.3"));
  const Module m = passtest::ParseOrFail(result.words);
  // Four 8x8 types (A f16, B u8, Acc f32, Acc s32), each small enough for one table of
  // row-major indices (row = k / 8, col = k % 8).
  CHECK(passtest::CountOpcode(m, spv::Op::OpCooperativeMatrixLoadKHR) == 4);
  CHECK(passtest::CountOpcode(m, spv::Op::OpLoopMerge) == 4 + 4);  // the shader's 4 loops + one write loop per table
  CHECK(result.stats.scratchBytesPerSubgroup == 8 * 8 * 4);
  CHECK(passtest::CountOpcode(m, spv::Op::OpConvertUToF) >= 2);  // f16 and f32 tables are written as floats
}

TEST_CASE("functions other than the entry point read coordinate tables their entry point learned", "[lower]") {
  const std::string env = GENERATE("spirv1.3", "spirv1.5", "spirv1.6");
  INFO(env);
  const auto input = passtest::LoadShader("functions", env);
  const Module before = passtest::ParseOrFail(input);
  // The functions that hold GetCoordinate (called from non-uniform control flow).
  std::set<uint32_t> getCoordinateFunctions;
  for (const auto& f : before.functions)
    for (const auto& block : f.blocks)
      for (const auto& i : block.instructions)
        if (i.opcode == spv::Op::OpCooperativeMatrixGetCoordinateEXT) getCoordinateFunctions.insert(f.definition.resultId);
  REQUIRE(getCoordinateFunctions.size() == 2);

  const auto result = Lower(input);
  const Module m = passtest::ParseOrFail(result.words);
  CHECK(coopmat::ValidateModule(result.words).empty());
  std::set<uint32_t> privateTables;
  for (const auto& g : m.globals)
    if (g.opcode == spv::Op::OpVariable && g.Operand(0) == static_cast<uint32_t>(spv::StorageClass::Private))
      privateTables.insert(g.resultId);
  // f32 8x8 Acc: one index table; u8 8x512 B: row and column split, four tables.
  CHECK(privateTables.size() == 1 + 4);
  const uint32_t entry = m.entryPoints.at(0).Operand(1);
  for (const auto& f : m.functions) {
    size_t barriers = 0, matrixLoads = 0, privateStores = 0, privateReads = 0;
    for (const auto& block : f.blocks)
      for (const auto& i : block.instructions) {
        barriers += i.opcode == spv::Op::OpControlBarrier;
        matrixLoads += i.opcode == spv::Op::OpCooperativeMatrixLoadKHR;
        privateStores += i.opcode == spv::Op::OpStore && privateTables.count(i.Operand(0));
        privateReads += i.opcode == spv::Op::OpAccessChain && privateTables.count(i.Operand(0));
      }
    INFO("function %" << f.definition.resultId);
    if (getCoordinateFunctions.count(f.definition.resultId)) {
      CHECK(barriers == 0);
      CHECK(matrixLoads == 0);
      CHECK(privateReads > 0);
    }
    CHECK(privateStores == (f.definition.resultId == entry ? privateTables.size() : 0));
  }
  // From SPIR-V 1.4 the entry point lists the Private tables.
  const auto& interface = m.entryPoints.at(0).operands;
  for (uint32_t variable : privateTables)
    CHECK((std::find(interface.begin(), interface.end(), variable) != interface.end()) == (m.SpirvMinor() >= 4));
}

TEST_CASE("reductions with specialization-constant shapes are accepted and read inside the source", "[lower]") {
  // A Row reduction whose result rows are a different specialization constant was rejected before.
  const auto result = Lower(passtest::LoadShader("reduce_spec", "spirv1.6"));
  const Module m = passtest::ParseOrFail(result.words);
  CHECK(coopmat::ValidateModule(result.words).empty());
  CHECK(result.stats.reduce == 2);
  // Every source read is clamped: Row reads once before and once inside its loop, 2x2 four times.
  CHECK(passtest::CountOpcode(m, spv::Op::OpSelect) >= 2 + 4);
  // Constant shapes need no clamp.
  const Module constant = passtest::ParseOrFail(Lower(passtest::LoadShader("reduce", "spirv1.6")).words);
  CHECK(passtest::CountOpcode(constant, spv::Op::OpSelect) == 0);
  // No coordinate tables: one scratch load per reduction except Row|Column (a splat),
  // beside the shader's own three loads.
  CHECK(passtest::CountOpcode(constant, spv::Op::OpCooperativeMatrixLoadKHR) == 3 + 7);
  // Three barriers per reduction (before and after the store, before the result is
  // read), but none before the first: nothing can have used the slice before it.
  CHECK(passtest::CountOpcode(constant, spv::Op::OpControlBarrier) == 8 * 3 - 1);
}

TEST_CASE("GetCoordinate reads its tables at an index clamped to the matrix length", "[lower]") {
  const auto result = Lower(passtest::LoadShader("getcoord", "spirv1.5"));
  const Module m = passtest::ParseOrFail(result.words);
  CHECK(passtest::CountOpcode(m, spv::Op::OpSelect) >= result.stats.getCoordinate);
  CHECK(passtest::CountOpcode(m, spv::Op::OpCooperativeMatrixLengthKHR) >= result.stats.getCoordinate);
}

TEST_CASE("coordinates past a narrow type's exact range are split into low and high parts", "[lower]") {
  const auto result = Lower(passtest::LoadShader("coordinates_large", "spirv1.6"));
  const Module m = passtest::ParseOrFail(result.words);
  // 8-bit 512x8 (rows past 255) and f16 8x4096 (cols past 2048) need four tables each; the f32 matrix one
  // of indices.
  CHECK(passtest::CountOpcode(m, spv::Op::OpCooperativeMatrixLoadKHR) == 4 + 4 + 1);
  CHECK(result.stats.scratchBytesPerSubgroup == 8 * 4096 * 2);
}

TEST_CASE("specialization-constant dimensions and workgroup sizes size the scratch with OpSpecConstantOp", "[lower]") {
  for (const char* name : {"spec_dims", "local_size_id"}) {
    INFO(name);
    const auto result = Lower(passtest::LoadShader(name, "spirv1.6"));
    const Module m = passtest::ParseOrFail(result.words);
    const auto globals = Globals(m);
    const uint32_t scratch = passtest::FindScratchVariable(m);
    REQUIRE(scratch);
    const Instruction* pointer = globals.at(globals.at(scratch)->typeId);
    const Instruction* array = globals.at(pointer->Operand(1));
    CHECK(globals.at(array->Operand(1))->opcode == spv::Op::OpSpecConstantOp);
    if (std::string(name) == "spec_dims") {
      CHECK(result.stats.scratchBytesPerSubgroup == 0);  // depends on ROWS/COLS
      // 8-bit and f16 coordinates with unknown dimensions are always split.
      CHECK(passtest::CountOpcode(m, spv::Op::OpCooperativeMatrixLoadKHR) >= 4 + 4 + 4);
    } else {
      // The transpose Acc f32 -> B f16 converts in the scratch, in place: the f16 result
      // overwrites the f32 source it has read.
      CHECK(result.stats.scratchBytesPerSubgroup == 8 * 8 * 4);
    }
  }
}

TEST_CASE("the slice count follows LocalSize and the minimum subgroup size", "[lower]") {
  const auto input = passtest::LoadShader("reduce", "spirv1.3");  // local_size_x = 8, 16x16 f32 = 256 words
  for (uint32_t minSubgroup : {8u, 4u, 1u, 64u}) {
    coopmat::LowerOptions options;
    options.minSubgroupSize = minSubgroup;
    const auto result = Lower(input, options);
    const Module m = passtest::ParseOrFail(result.words);
    const auto globals = Globals(m);
    const uint32_t scratch = passtest::FindScratchVariable(m);
    const Instruction* array = globals.at(globals.at(globals.at(scratch)->typeId)->Operand(1));
    const Instruction* length = globals.at(array->Operand(1));
    REQUIRE(length->opcode == spv::Op::OpConstant);
    CHECK(length->Operand(0) == (8 + minSubgroup - 1) / minSubgroup * 256);
  }
}

TEST_CASE("maxSharedMemoryBytes counts the module's own shared memory and names the numbers", "[lower][malformed]") {
  coopmat::LowerOptions options;
  options.maxSharedMemoryBytes = 1024;  // reduce needs exactly 1024 for its one slice
  CHECK(coopmat::LowerModule(passtest::LoadShader("reduce", "spirv1.3"), options).ok);
  options.maxSharedMemoryBytes = 1023;
  auto result = coopmat::LowerModule(passtest::LoadShader("reduce", "spirv1.3"), options);
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.error, ContainsSubstring("1024 bytes") && ContainsSubstring("1023"));
  // per_element declares float sharedBias[8] (32 bytes) next to 256 bytes of scratch.
  options.maxSharedMemoryBytes = 256 + 31;
  result = coopmat::LowerModule(passtest::LoadShader("per_element", "spirv1.5"), options);
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.error, ContainsSubstring("module's own 32 bytes") && ContainsSubstring("the module alone fits"));
  // The refusal says when the module alone is already over the limit.
  options.maxSharedMemoryBytes = 31;
  result = coopmat::LowerModule(passtest::LoadShader("per_element", "spirv1.5"), options);
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.error, ContainsSubstring("the module's own shared memory alone exceeds it"));
  options.maxSharedMemoryBytes = 256 + 32;
  CHECK(coopmat::LowerModule(passtest::LoadShader("per_element", "spirv1.5"), options).ok);
}

TEST_CASE("the GLSL450 memory model gets barriers without availability bits", "[lower]") {
  const auto input = passtest::LoadWords(passtest::ShaderDir() + "/convert_type.glsl450.spv");
  const auto result = Lower(input);
  const Module m = passtest::ParseOrFail(result.words);
  CheckNoExtensionLeft(m);
  const auto semantics = BarrierSemantics(m);
  REQUIRE_FALSE(semantics.empty());
  for (uint32_t sem : semantics) CHECK(sem == 0x108);  // AcquireRelease | WorkgroupMemory
  passtest::ForEachFunctionInstruction(m, [&](const Instruction& i) {
    if (i.opcode == spv::Op::OpCooperativeMatrixStoreKHR && i.operands.size() == 5) CHECK((i.operands[4] & kNonPrivatePointer) == 0);
  });
}

TEST_CASE("options.validate runs spirv-val on the output", "[lower]") {
  coopmat::LowerOptions options;
  options.validate = true;
  CHECK(coopmat::LowerModule(passtest::LoadShader("convert_use", "spirv1.6"), options).ok);
  // The GLSL450 copy lowers, but spirv-val rejects cooperative matrices without the Vulkan model.
  const auto result = coopmat::LowerModule(passtest::LoadWords(passtest::ShaderDir() + "/convert_type.glsl450.spv"), options);
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.error, ContainsSubstring("does not validate") && ContainsSubstring("VulkanMemoryModel"));
  // The input breaks the same rule: the message says so rather than blaming the lowering.
  CHECK_THAT(result.error, StartsWith("the input module does not validate"));
  CHECK_FALSE(coopmat::ValidateModule(passtest::LoadWords(passtest::ShaderDir() + "/convert_type.glsl450.spv")).empty());
}

TEST_CASE("a module without maintenance1 operations comes back word for word", "[lower]") {
  const auto lowered = Lower(passtest::LoadShader("reduce", "spirv1.5")).words;
  const auto again = Lower(lowered);
  CHECK(again.words == lowered);
  CHECK(again.stats.OpsLowered() == 0);
  CHECK(again.stats.scratchBytesPerSubgroup == 0);
}

TEST_CASE("LowerModule is deterministic and safe to call from many threads", "[lower]") {
  std::vector<std::vector<uint32_t>> inputs, expected;
  for (const auto& path : passtest::AllShaderPaths()) {
    inputs.push_back(passtest::LoadWords(path));
    expected.push_back(coopmat::LowerModule(inputs.back(), {}).words);
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round)
        for (size_t i = 0; i < inputs.size(); ++i)
          mismatches[t] += coopmat::LowerModule(inputs[i], {}).words != expected[i];
    });
  for (auto& thread : threads) thread.join();
  for (int m : mismatches) CHECK(m == 0);
}

// ---- Malformed maintenance1 instructions: ok == false, naming the op and its result id.

namespace {

// Parses `name`, lets `edit` change the first instruction with `op`, and lowers.
coopmat::LowerResult LowerEdited(const std::string& name, spv::Op op, const std::function<void(Module&, Instruction&)>& edit,
                                 uint32_t* resultId) {
  Module m = passtest::ParseOrFail(passtest::LoadShader(name, "spirv1.3"));
  for (auto& f : m.functions)
    for (auto& b : f.blocks)
      for (auto& i : b.instructions)
        if (i.opcode == op) {
          *resultId = i.resultId;
          edit(m, i);
          return coopmat::LowerModule(coopmat::ir::Emit(m), {});
        }
  FAIL("no such instruction");
  return {};
}

void ExpectFailure(const coopmat::LowerResult& result, const std::string& opName, uint32_t resultId, const std::string& fragment) {
  INFO(result.error);
  CHECK_FALSE(result.ok);
  CHECK(result.words.empty());
  CHECK_THAT(result.error, ContainsSubstring(opName + " %" + std::to_string(resultId)) && ContainsSubstring(fragment));
}

}  // namespace

TEST_CASE("malformed maintenance1 instructions fail with the op and result id", "[lower][malformed]") {
  uint32_t id = 0;
  const std::string getCoord = "OpCooperativeMatrixGetCoordinateEXT";
  // Matrix operand that is not a matrix: use the Index as the Matrix.
  auto r = LowerEdited("getcoord", spv::Op::OpCooperativeMatrixGetCoordinateEXT,
                       [](Module&, Instruction& i) { i.operands[0] = i.operands[1]; }, &id);
  ExpectFailure(r, getCoord, id, "not an OpTypeCooperativeMatrixKHR");
  // Result type that is a scalar: the Index's type.
  r = LowerEdited("getcoord", spv::Op::OpCooperativeMatrixGetCoordinateEXT, [](Module& m, Instruction& i) {
    for (auto& g : m.globals)
      if (g.opcode == spv::Op::OpTypeInt && g.Operand(0) == 32 && g.Operand(1) == 0) i.typeId = g.resultId;
  }, &id);
  ExpectFailure(r, getCoord, id, "vector of two 32-bit integers");
  // Missing operand.
  r = LowerEdited("getcoord", spv::Op::OpCooperativeMatrixGetCoordinateEXT, [](Module&, Instruction& i) { i.operands.pop_back(); }, &id);
  ExpectFailure(r, getCoord, id, "expected Matrix and Index");

  const std::string reduce = "OpCooperativeMatrixReduceEXT";
  r = LowerEdited("reduce", spv::Op::OpCooperativeMatrixReduceEXT, [](Module&, Instruction& i) { i.operands[1] = 5; }, &id);
  ExpectFailure(r, reduce, id, "unsupported Reduce mask 5");
  r = LowerEdited("reduce", spv::Op::OpCooperativeMatrixReduceEXT, [](Module&, Instruction& i) { i.operands[1] = 0; }, &id);
  ExpectFailure(r, reduce, id, "unsupported Reduce mask 0");
  // CombineFunc that is main (wrong signature).
  r = LowerEdited("reduce", spv::Op::OpCooperativeMatrixReduceEXT,
                  [](Module& m, Instruction& i) { i.operands[2] = m.entryPoints[0].Operand(1); }, &id);
  ExpectFailure(r, reduce, id, "CombineFunc must take two");
  // CombineFunc that is not a function at all.
  r = LowerEdited("reduce", spv::Op::OpCooperativeMatrixReduceEXT, [](Module&, Instruction& i) { i.operands[2] = i.operands[0]; }, &id);
  ExpectFailure(r, reduce, id, "CombineFunc");

  const std::string perElement = "OpCooperativeMatrixPerElementOpEXT";
  // The first PerElementOp passes a scalar extra; dropping it breaks the parameter count.
  r = LowerEdited("per_element", spv::Op::OpCooperativeMatrixPerElementOpEXT, [](Module&, Instruction& i) { i.operands.pop_back(); }, &id);
  ExpectFailure(r, perElement, id, "one parameter per extra operand");
  // An extra of the wrong type: the matrix itself where a float is expected.
  r = LowerEdited("per_element", spv::Op::OpCooperativeMatrixPerElementOpEXT,
                  [](Module& m, Instruction& i) {
                    std::set<uint32_t> intTypes;  // an integer constant where Func takes a float
                    for (const auto& g : m.globals) {
                      if (g.opcode == spv::Op::OpTypeInt) intTypes.insert(g.resultId);
                      if (g.opcode == spv::Op::OpConstant && intTypes.count(g.typeId)) { i.operands.back() = g.resultId; break; }
                    }
                  }, &id);
  ExpectFailure(r, perElement, id, "extra operand 0");

  const std::string convertUse = "OpCooperativeMatrixConvertUseEXT";
  r = LowerEdited("convert_type", spv::Op::OpCooperativeMatrixConvertUseEXT,
                  [](Module&, Instruction& i) { i.operands.clear(); }, &id);
  ExpectFailure(r, convertUse, id, "expected one Matrix operand");
  r = LowerEdited("convert_type", spv::Op::OpCooperativeMatrixConvertUseEXT, [](Module& m, Instruction& i) {
    for (auto& g : m.globals)  // a float 8x8 type: component change is not allowed on ConvertUse
      if (g.opcode == spv::Op::OpTypeCooperativeMatrixKHR && g.resultId != i.typeId && m.globals.size()) {
        auto& comp = g.operands[0];
        for (auto& t : m.globals)
          if (t.resultId == comp && t.opcode == spv::Op::OpTypeFloat && t.Operand(0) == 32) { i.typeId = g.resultId; return; }
      }
  }, &id);
  ExpectFailure(r, convertUse, id, "");
}

TEST_CASE("EXT operations in a SPIR-V 1.2 module are rejected", "[lower][malformed]") {
  auto words = passtest::LoadShader("reduce", "spirv1.3");
  words[1] = 0x00010200;
  const auto result = coopmat::LowerModule(words, {});
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.error, ContainsSubstring("SPIR-V 1.3"));
}
