// The register path (LowerOptions::layouts): which operations take it, that its
// output needs no Workgroup scratch and no barrier and validates, where it falls
// back to the portable path, and its conversion gathers', exchanges' and
// reductions' emitted code run on every built-in layout (emitted_run.h).
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <algorithm>
#include <bit>
#include <map>
#include <random>
#include <set>

#include "coopmat/inspect.h"
#include "coopmat/lower.h"
#include "register.h"
#include "striped_layout.h"
#include "emitted_run.h"
#include "subgroup_eval.h"
#include "test_support.h"

using coopmat::BitImage;
using coopmat::LinearLayout;
using coopmat::ir::Instruction;
using coopmat::ir::Module;
using passtest::EmitFixture;
using passtest::SubgroupEvaluator;

namespace {

std::vector<LinearLayout> Builtin(coopmat::DriverFamily family, uint32_t subgroupSize) {
  return coopmat::BuiltinLayouts(family, subgroupSize);
}

coopmat::LowerResult LowerWith(const std::vector<uint32_t>& words, std::vector<LinearLayout> layouts) {
  coopmat::LowerOptions options;
  options.layouts = std::move(layouts);
  auto result = coopmat::LowerModule(words, options);
  INFO(result.error);
  REQUIRE(result.ok);
  return result;
}

// The module's 32-bit OpConstant values by id.
std::map<uint32_t, uint32_t> ConstantValues(const Module& m) {
  std::map<uint32_t, uint32_t> constants;
  for (const auto& g : m.globals)
    if (g.opcode == spv::Op::OpConstant && !g.operands.empty()) constants[g.resultId] = g.operands[0];
  return constants;
}

// The layout operands (RowMajorKHR, ColumnMajorKHR) of the module's matrix stores.
std::multiset<uint32_t> StoreLayouts(const Module& m) {
  const std::map<uint32_t, uint32_t> constants = ConstantValues(m);
  std::multiset<uint32_t> layouts;
  passtest::ForEachFunctionInstruction(m, [&](const Instruction& i) {
    if (i.opcode == spv::Op::OpCooperativeMatrixStoreKHR) layouts.insert(constants.at(i.Operand(2)));
  });
  return layouts;
}

size_t SubgroupBarriers(const Module& m) {
  std::map<uint32_t, uint32_t> constants = ConstantValues(m);
  size_t count = 0;
  passtest::ForEachFunctionInstruction(m, [&](const Instruction& i) {
    if (i.opcode == spv::Op::OpControlBarrier && constants[i.Operand(0)] == static_cast<uint32_t>(spv::Scope::Subgroup)) ++count;
  });
  return count;
}

void CheckNoExtensionLeft(const Module& m) {
  for (spv::Op op : {spv::Op::OpCooperativeMatrixConvertUseEXT, spv::Op::OpCooperativeMatrixGetCoordinateEXT,
                     spv::Op::OpCooperativeMatrixReduceEXT, spv::Op::OpCooperativeMatrixPerElementOpEXT})
    CHECK(passtest::CountOpcode(m, op) == 0);
  CHECK_FALSE(passtest::HasCapability(m, spv::Capability::CooperativeMatrixConversionsEXT));
  CHECK_FALSE(passtest::HasCapability(m, spv::Capability::CooperativeMatrixGetCoordinateEXT));
  CHECK_FALSE(passtest::HasExtension(m, "SPV_EXT_cooperative_matrix_maintenance1"));
  CHECK_FALSE(passtest::HasDecoration(m, spv::Decoration::CooperativeMatrixTransposeEXT));
}

size_t Shuffles(const Module& m) {
  return passtest::CountOpcode(m, spv::Op::OpGroupNonUniformShuffle) + passtest::CountOpcode(m, spv::Op::OpGroupNonUniformShuffleXor);
}

}  // namespace

TEST_CASE("register path: with the driver's layouts every operation is lowered without scratch or barriers", "[register]") {
  const std::string name = GENERATE("getcoord", "per_element", "reduce", "convert_type", "convert_mixed", "local_size_id",
                                    "register16");
  const std::string env = GENERATE("spirv1.3", "spirv1.5", "spirv1.6");
  INFO(name << " " << env);
  const auto input = passtest::LoadShader(name, env);
  const Module before = passtest::ParseOrFail(input);
  const auto result = LowerWith(input, Builtin(coopmat::DriverFamily::Lavapipe, 8));
  const Module after = passtest::ParseOrFail(result.words);
  const std::string validation = coopmat::ValidateModule(result.words);
  INFO(validation);
  CHECK(validation.empty());
  CheckNoExtensionLeft(after);

  const auto& s = result.stats;
  CHECK(s.OpsLowered() > 0);
  CHECK(s.registerPath == s.OpsLowered());
  CHECK(s.scratchBytesPerSubgroup == 0);
  CHECK(passtest::FindScratchVariable(after) == 0);
  CHECK(SubgroupBarriers(after) == 0);
  // No memory round trip: the module's own matrix loads and stores only.
  CHECK(passtest::CountOpcode(after, spv::Op::OpCooperativeMatrixLoadKHR) ==
        passtest::CountOpcode(before, spv::Op::OpCooperativeMatrixLoadKHR));
  CHECK(passtest::CountOpcode(after, spv::Op::OpCooperativeMatrixStoreKHR) ==
        passtest::CountOpcode(before, spv::Op::OpCooperativeMatrixStoreKHR));
  // Lanes meet only through shuffles, and only where an operation moves data.
  const bool movesData = s.reduce + s.convert + s.convertUse > 0;
  if (name == "getcoord" || name == "per_element") {
    CHECK(Shuffles(after) == 0);
    CHECK_FALSE(passtest::HasCapability(after, spv::Capability::GroupNonUniformShuffle));
  }
  if (name == "reduce" || name == "register16") CHECK(Shuffles(after) > 0);
  CHECK(passtest::HasCapability(after, spv::Capability::GroupNonUniformShuffle) == (Shuffles(after) > 0));
  if (!movesData) CHECK(Shuffles(after) == 0);
  CHECK(passtest::HasCapability(after, spv::Capability::GroupNonUniform));
}

TEST_CASE("register path: AMD and MFMA layouts lower the 16x16 shader to valid SPIR-V", "[register]") {
  const auto [family, size] = GENERATE(std::pair{coopmat::DriverFamily::RadvGfx11, 32u}, std::pair{coopmat::DriverFamily::RadvGfx11, 64u},
                                       std::pair{coopmat::DriverFamily::RadvGfx12, 32u}, std::pair{coopmat::DriverFamily::RadvGfx12, 64u});
  const std::string env = GENERATE("spirv1.3", "spirv1.6");
  INFO(coopmat::ToString(family) << " subgroup " << size << " " << env);
  const auto result = LowerWith(passtest::LoadShader("register16", env), Builtin(family, size));
  const std::string validation = coopmat::ValidateModule(result.words);
  INFO(validation);
  CHECK(validation.empty());
  CHECK(result.stats.registerPath == result.stats.OpsLowered());
  CHECK(passtest::FindScratchVariable(passtest::ParseOrFail(result.words)) == 0);
}

TEST_CASE("register path: types without an exact layout keep the portable path, in the same module", "[register]") {
  const std::string env = GENERATE("spirv1.3", "spirv1.6");
  INFO(env);
  const auto lavapipe = Builtin(coopmat::DriverFamily::Lavapipe, 8);

  SECTION("specialization-constant dimensions never match a layout") {
    for (const char* name : {"spec_dims", "reduce_spec"}) {
      INFO(name);
      const auto result = LowerWith(passtest::LoadShader(name, env), lavapipe);
      CHECK(result.stats.registerPath == 0);
      CHECK(passtest::FindScratchVariable(passtest::ParseOrFail(result.words)) != 0);
      CHECK(coopmat::ValidateModule(result.words).empty());
    }
  }
  SECTION("one type without a layout: its operation is portable, the others stay in registers") {
    std::vector<LinearLayout> layouts;
    for (const auto& l : lavapipe)
      if (!(l.key.componentType == coopmat::kTypeF16 && l.key.use == coopmat::kUseA)) layouts.push_back(l);
    const auto result = LowerWith(passtest::LoadShader("getcoord", env), layouts);
    CHECK(result.stats.getCoordinate == 4);
    CHECK(result.stats.registerPath == 3);
    const Module m = passtest::ParseOrFail(result.words);
    CHECK(passtest::FindScratchVariable(m) != 0);
    CHECK(SubgroupBarriers(m) > 0);
    CHECK(coopmat::ValidateModule(result.words).empty());
  }
  SECTION("layouts of two subgroup sizes: register code for each, chosen by SubgroupSize") {
    auto layouts = lavapipe;
    for (auto l : lavapipe) {
      l.key.subgroupSize = 16;
      l.laneBits.push_back({});  // a replica lane bit: still a valid layout
      layouts.push_back(l);
    }
    const auto result = LowerWith(passtest::LoadShader("getcoord", env), layouts);
    CHECK(result.stats.getCoordinate == 4);
    CHECK(result.stats.registerPath == 4);  // each operation counted once
    const Module m = passtest::ParseOrFail(result.words);
    CHECK(passtest::FindScratchVariable(m) == 0);
    CHECK(passtest::CountOpcode(m, spv::Op::OpSwitch) == 4);
    CHECK(coopmat::ValidateModule(result.words).empty());
  }
  SECTION("a subgroup size the pipeline may run with but no layout covers keeps the portable path") {
    coopmat::LowerOptions options;
    options.layouts = lavapipe;
    options.subgroupSizes = {8, 16};
    const auto result = coopmat::LowerModule(passtest::LoadShader("getcoord", env), options);
    REQUIRE(result.ok);
    CHECK(result.stats.registerPath == 0);
    CHECK(passtest::FindScratchVariable(passtest::ParseOrFail(result.words)) != 0);
    options.subgroupSizes = {8};  // only the size the layouts have
    CHECK(coopmat::LowerModule(passtest::LoadShader("getcoord", env), options).stats.registerPath == 4);
  }
  SECTION("a shape the layouts do not list (result 24x8, 8x248)") {
    const auto result = LowerWith(passtest::LoadShader("coordinates_large", env), lavapipe);
    CHECK(result.stats.registerPath < result.stats.OpsLowered());
    CHECK(coopmat::ValidateModule(result.words).empty());
  }
  SECTION("no layouts: nothing changes") {
    const auto input = passtest::LoadShader("reduce", env);
    CHECK(LowerWith(input, {}).words == coopmat::LowerModule(input, {}).words);
    CHECK(LowerWith(input, {}).stats.registerPath == 0);
  }
}

TEST_CASE("register path: GetCoordinate is bit arithmetic on the lane id", "[register]") {
  const auto result = LowerWith(passtest::LoadShader("getcoord", "spirv1.6"), Builtin(coopmat::DriverFamily::Lavapipe, 8));
  const Module m = passtest::ParseOrFail(result.words);
  CHECK(passtest::CountOpcode(m, spv::Op::OpLoopMerge) == 4);  // the shader's own loops only
  CHECK(passtest::CountOpcode(m, spv::Op::OpCooperativeMatrixLoadKHR) == 0);
  CHECK(passtest::CountOpcode(m, spv::Op::OpBitwiseAnd) >= 4);
  CHECK(passtest::CountOpcode(m, spv::Op::OpAccessChain) == passtest::CountOpcode(passtest::ParseOrFail(passtest::LoadShader("getcoord", "spirv1.6")), spv::Op::OpAccessChain));
}

// ---- The plans' emitted code, run on a simulated subgroup -------------------------

TEST_CASE("register path: conversion gathers move every element to its place on every built-in layout", "[register]") {
  const auto [family, size] = GENERATE(std::pair{coopmat::DriverFamily::Lavapipe, 8u}, std::pair{coopmat::DriverFamily::RadvGfx11, 32u},
                                       std::pair{coopmat::DriverFamily::RadvGfx11, 64u}, std::pair{coopmat::DriverFamily::RadvGfx12, 32u},
                                       std::pair{coopmat::DriverFamily::RadvGfx12, 64u});
  INFO(coopmat::ToString(family) << " subgroup " << size);
  // One component type per use is enough: the built-in layouts do not depend on it.
  std::vector<LinearLayout> layouts;
  for (const auto& l : Builtin(family, size))
    if (l.key.componentType == (l.key.use == coopmat::kUseAccumulator ? coopmat::kTypeF32 : coopmat::kTypeF16)) layouts.push_back(l);
  coopmat::LowerOptions options;
  size_t planned = 0;
  for (const auto& from : layouts)
    for (const auto& to : layouts)
      for (bool transpose : {false, true}) {
        if (from.key.use == to.key.use) continue;
        if (from.key.use != coopmat::kUseAccumulator && to.key.use != coopmat::kUseAccumulator) continue;
        if (transpose && from.key.use != coopmat::kUseAccumulator) continue;
        const uint32_t rows = transpose ? to.key.cols : to.key.rows, cols = transpose ? to.key.rows : to.key.cols;
        if (rows != from.key.rows || cols != from.key.cols) continue;
        INFO(coopmat::ToString(from.key) << " -> " << coopmat::ToString(to.key) << (transpose ? " transposed" : ""));
        // PlanRegisterMove needs no context beyond the layouts.
        coopmat::ir::Module module;
        coopmat::TypeManager types(module);
        coopmat::LowerStats stats;
        coopmat::Context context(module, types, options, stats);
        const auto plan = coopmat::PlanRegisterMove(context, &from, &to, transpose);
        REQUIRE(plan);  // every built-in pair has a one-shuffle-per-element plan
        ++planned;
        if ((planned - 1) % passtest::ExhaustiveStride() != 0) continue;  // under ASan, every 32nd (test_support.h)
        // 32-bit values, and 16-bit ones two per shuffle or (native 16-bit shuffles) one.
        passtest::CheckMove(*plan, from, to, transpose, coopmat::kTypeU32);
        passtest::CheckMove(*plan, from, to, transpose, coopmat::kTypeF16);
        passtest::CheckMove(*plan, from, to, transpose, coopmat::kTypeF16, false, true);
      }
  CHECK(planned > 0);
}

// The emitted code of every register reduction, run on every lane: each result
// element holds the wrapping sum of its group of source elements.
TEST_CASE("register path: reductions combine each group once and place it on every built-in accumulator layout", "[register]") {
  const auto [family, size] = GENERATE(std::pair{coopmat::DriverFamily::Lavapipe, 8u}, std::pair{coopmat::DriverFamily::RadvGfx11, 32u},
                                       std::pair{coopmat::DriverFamily::RadvGfx11, 64u}, std::pair{coopmat::DriverFamily::RadvGfx12, 32u},
                                       std::pair{coopmat::DriverFamily::RadvGfx12, 64u}, std::pair{coopmat::DriverFamily::CdnaMfma, 64u});
  INFO(coopmat::ToString(family) << " subgroup " << size);
  std::vector<LinearLayout> accs;
  for (const auto& l : Builtin(family, size))
    if (l.key.use == coopmat::kUseAccumulator) accs.push_back(l);
  REQUIRE(!accs.empty());
  std::mt19937 random(7);
  size_t cases = 0, checked = 0, scattered = 0;
  std::set<uint32_t> componentTypes;
  for (const auto& source : accs) {
    if (source.key.componentType == coopmat::kTypeF64) continue;  // the layer lowers no 64-bit matrix
    const bool sixteenBits = passtest::ComponentBits(source.key.componentType) == 16;
    for (uint32_t mask : {coopmat::kReduceRow, coopmat::kReduceColumn, coopmat::kReduceRow | coopmat::kReduceColumn, coopmat::kReduce2x2})
      for (const auto& result : accs) {
        if (result.key.componentType != source.key.componentType) continue;
        const bool fits = mask == coopmat::kReduceRow    ? result.key.rows == source.key.rows
                          : mask == coopmat::kReduceColumn ? result.key.cols == source.key.cols
                          : mask == coopmat::kReduce2x2    ? result.key.rows * 2 == source.key.rows && result.key.cols * 2 == source.key.cols
                                                           : &result == &source;
        if (!fits) continue;
        INFO(coopmat::ToString(source.key) << " mask " << mask << " -> " << coopmat::ToString(result.key));
        componentTypes.insert(source.key.componentType);
        if (mask == coopmat::kReduce2x2) {
          const auto recipe = coopmat::RecipeForReduce(source, mask);
          std::vector<coopmat::BitImage> targets;
          for (const auto& i : result.laneBits) targets.push_back({i.rowMask << 1, i.colMask << 1});
          for (const auto& i : result.indexBits) targets.push_back({i.rowMask << 1, i.colMask << 1});
          scattered += coopmat::PlanReduceScatter(source, recipe, (source.key.rows - 1) & ~1u, (source.key.cols - 1) & ~1u, result,
                                                  targets)
                           .has_value();
        }
        for (bool extendedTypes : {false, true}) {
          if (extendedTypes && !sixteenBits) continue;
          if (cases++ % passtest::ExhaustiveStride() != 0) continue;  // under ASan, every 32nd (test_support.h)
          INFO("16-bit shuffles " << extendedTypes);
          // Every built-in accumulator layout reduces in registers.
          REQUIRE(passtest::CheckReduce(source, result, mask, random, extendedTypes));
          ++checked;
        }
      }
  }
  CHECK(checked > 0);
  // Every family has a 2x2 that scatters, and a 16-bit accumulator (two values a shuffle).
  CHECK(scattered > 0);
  if (family != coopmat::DriverFamily::CdnaMfma) CHECK(componentTypes.count(coopmat::kTypeF16));
}

TEST_CASE("register path: the 2x2 reduce on lavapipe scatters instead of all-reducing and placing", "[register]") {
  // 16x16 -> 8x8: 8 exchange + 8 placement shuffles (the all-reduce took 16 + 8);
  // 32x32 -> 16x16: 32 + 32 (was 64 + 32).
  const auto [n, expected] = GENERATE(std::pair{16u, size_t{16}}, std::pair{32u, size_t{64}});
  const LinearLayout* source = nullptr;
  const LinearLayout* result = nullptr;
  const auto layouts = Builtin(coopmat::DriverFamily::Lavapipe, 8);
  for (const auto& l : layouts) {
    if (l.key.use != coopmat::kUseAccumulator || l.key.componentType != coopmat::kTypeF32) continue;
    if (l.key.rows == n && l.key.cols == n) source = &l;
    if (l.key.rows == n / 2 && l.key.cols == n / 2) result = &l;
  }
  REQUIRE(source);
  REQUIRE(result);
  std::mt19937 random(11);
  const auto run = passtest::CheckReduce(*source, *result, coopmat::kReduce2x2, random);  // each result its group's sum
  REQUIRE(run);
  CHECK(run->shuffles == expected);
}

// As in test_ir.cpp: without options.validate, so that the check can fail.
TEST_CASE("register path: random corruption never crashes, and an input that still validates lowers to one that validates",
          "[register][malformed]") {
  std::mt19937 random(4321);
  coopmat::LowerOptions options;
  size_t stillValid = 0;
  options.layouts = Builtin(coopmat::DriverFamily::Lavapipe, 8);
  for (const char* name : {"reduce", "per_element", "getcoord", "convert_type", "register16"}) {
    const auto original = passtest::LoadShader(name, "spirv1.5");
    for (int round = 0; round < 100; ++round) {
      auto words = original;
      const int flips = 1 + static_cast<int>(random() % 4);
      for (int f = 0; f < flips; ++f) {
        const size_t at = 5 + random() % (words.size() - 5);
        if (random() % 2) words[at] ^= 1u << (random() % 32);
        else words[at] = static_cast<uint32_t>(random() % 64);  // small values: plausible ids and literals
      }
      INFO(name << " round " << round);
      stillValid += passtest::CheckCorruptedInput(words, options);
    }
  }
  CHECK(stillValid > 0);  // the property was checked at all
}

// XorBits is the lane part of every register coordinate: the arithmetic it emits must
// give the layout's row and column for every lane of every built-in layout (GFX12's
// reversed lane bits take the OpBitReverse form, the others masks and shifts).
TEST_CASE("register coordinates: the emitted lane arithmetic matches every built-in layout", "[register]") {
  size_t reversedRuns = 0;
  for (auto family : {coopmat::DriverFamily::Lavapipe, coopmat::DriverFamily::RadvGfx11, coopmat::DriverFamily::RadvGfx12,
                      coopmat::DriverFamily::CdnaMfma})
    for (uint32_t size : {8u, 16u, 32u, 64u})
      for (const LinearLayout& layout : Builtin(family, size))
        for (bool column : {false, true}) {
          INFO(coopmat::ToString(layout.key) << (column ? " column" : " row"));
          std::vector<uint32_t> images;
          for (const BitImage& image : layout.laneBits) images.push_back(column ? image.colMask : image.rowMask);
          // Any uint, and a lane id below the subgroup size (masks the range makes
          // redundant are left out then).
          for (uint32_t valueBits : {~0u, size - 1}) {
            INFO("value bits " << valueBits);
            EmitFixture f;
            const uint32_t x = f.module.TakeId();
            f.types.SetTypeOf(x, f.types.Uint());
            coopmat::Builder b(f.context, f.function, 0, 1);
            const uint32_t result = coopmat::XorBits(b, x, images, valueBits);
            for (const Instruction& inst : f.Emitted()) reversedRuns += inst.opcode == spv::Op::OpBitReverse;
            SubgroupEvaluator eval(f.types, size);
            eval.SetLaneIds(x);
            eval.Run(f.Emitted());
            for (uint32_t lane = 0; lane < size; ++lane) {
              uint32_t want = 0;
              for (size_t k = 0; k < images.size(); ++k)
                if (lane >> k & 1) want ^= images[k];
              INFO("lane " << lane);
              REQUIRE(eval.Get(result)[lane].at(0) == want);
            }
          }
        }
  CHECK(reversedRuns > 0);  // GFX12's row maps take the OpBitReverse form
}

// Register moves as exchange stages (ExchangePlan): the emitted code, run for every
// lane of the subgroup, must bring each destination element its coordinate on every
// built-in layout pair of every family and size, for 8-, 16- and 32-bit values, with
// only constant single-bit XOR shuffles, as many as the plan says, whether exchanges
// across lane bits 0-3 send one element of each pair or both (AMD's folded DPP).
TEST_CASE("register path: exchange stages bring every element to its place", "[register]") {
  size_t planned = 0, gfx11Wave32AccToA = 0, replicated = 0, dropped = 0, laneSwaps = 0, acrossHalves = 0;
  for (auto family : {coopmat::DriverFamily::Lavapipe, coopmat::DriverFamily::RadvGfx11, coopmat::DriverFamily::RadvGfx12,
                      coopmat::DriverFamily::CdnaMfma, coopmat::DriverFamily::NvidiaMma})
    for (uint32_t size : {8u, 32u, 64u}) {
      // One component type per use: the built-in layouts do not depend on it.
      std::vector<LinearLayout> layouts;
      for (const auto& l : Builtin(family, size))
        if (l.key.componentType == (l.key.use == coopmat::kUseAccumulator ? coopmat::kTypeF32 : coopmat::kTypeF16)) layouts.push_back(l);
      for (const auto& from : layouts)
        for (const auto& to : layouts)
          for (bool transpose : {false, true})
            for (uint32_t width : {8u, 16u, 32u})
              for (uint32_t folded : {0u, 0xFu}) {
              if (from.key.use == to.key.use || (transpose && from.key.use != coopmat::kUseAccumulator)) continue;
              const auto plan = coopmat::PlanExchanges(&from, &to, transpose, width, folded);
              if (!plan) continue;
              INFO(coopmat::ToString(family) << " " << size << ": " << coopmat::ToString(from.key) << " -> "
                                             << coopmat::ToString(to.key) << (transpose ? " transposed" : "") << ", " << width
                                             << "-bit values, folded lane bits " << folded);
              std::string stages;
              for (const auto& stage : plan->exchanges->stages)
                stages += std::string(" ") + "SRDL"[static_cast<int>(stage.kind)] + std::to_string(stage.laneBit) + "/" +
                          std::to_string(stage.kind == coopmat::ExchangeStage::Kind::LaneSwap ? stage.otherLaneBit : stage.indexBit);
              INFO("stages (Swap, Replicate, Drop lane bit / index bit; LaneSwap lane bits):" << stages);
              ++planned;
              for (const auto& stage : plan->exchanges->stages) {
                replicated += stage.kind == coopmat::ExchangeStage::Kind::Replicate;
                dropped += stage.kind == coopmat::ExchangeStage::Kind::Drop;
              }
              if (family == coopmat::DriverFamily::RadvGfx11 && size == 32 && !transpose &&
                  from.key.use == coopmat::kUseAccumulator && to.key.use == coopmat::kUseA)
                ++gfx11Wave32AccToA;
              if ((planned - 1) % passtest::ExhaustiveStride() != 0) continue;
              for (const auto& stage : plan->exchanges->stages)
                acrossHalves += stage.kind == coopmat::ExchangeStage::Kind::LaneSwap && (stage.laneBit == 5 || stage.otherLaneBit == 5);
              // Each value is its coordinate's number (row-major in the source's shape),
              // in `width`-bit digits, one run per digit.
              const uint32_t coordinates = from.key.rows * from.key.cols;
              // 16-bit values pair up in words; a result converted next may leave them in any pairs.
              for (bool pairedResult : {true, false})
              for (uint32_t shift = 0; shift < 32 && (shift == 0 || (coordinates - 1) >> shift); shift += width) {
                if (!pairedResult && width != 16) break;
                INFO("paired result " << pairedResult);
                EmitFixture f;
                Module& module = f.module;
                coopmat::TypeManager& types = f.types;
                coopmat::FunctionState fs{f.function};
                fs.lane = module.TakeId();
                const uint32_t type = width == 32 ? types.Uint() : types.Int(width, false);
                SubgroupEvaluator eval(types, size);
                eval.SetLaneIds(fs.lane);
                const uint32_t digit = width == 32 ? ~0u : (1u << width) - 1;
                auto number = [&](coopmat::Coord c) { return (c.row * from.key.cols + c.col) >> shift & digit; };
                std::vector<uint32_t> sources(from.length);
                for (uint32_t i = 0; i < from.length; ++i) {
                  sources[i] = module.TakeId();
                  types.SetTypeOf(sources[i], type);
                  std::vector<std::vector<uint32_t>> held(size);
                  for (uint32_t lane = 0; lane < size; ++lane) held[lane] = {number(from.CoordinateOf(lane, i))};
                  eval.Set(sources[i], held);
                }
                coopmat::Builder b(f.context, f.function, 0, 1);
                const uint32_t result = coopmat::EmitGather(b, fs, *plan, [&](uint32_t i) { return sources.at(i); }, type,
                                                            nullptr, types.Vector(type, to.length), 0, pairedResult);
                eval.Run(f.Emitted());
                const auto& out = eval.Get(result);
                for (uint32_t lane = 0; lane < size; ++lane) {
                  REQUIRE(out[lane].size() == to.length);
                  for (uint32_t e = 0; e < to.length; ++e) {
                    coopmat::Coord want = to.CoordinateOf(lane, e);
                    if (transpose) std::swap(want.row, want.col);
                    INFO("lane " << lane << " element " << e << " wants (" << want.row << ", " << want.col << ")");
                    REQUIRE(out[lane][e] == number(want));
                  }
                }
                size_t shuffles = 0;
                for (const Instruction& inst : f.Emitted()) {
                  REQUIRE(inst.opcode != spv::Op::OpGroupNonUniformShuffle);
                  if (inst.opcode != spv::Op::OpGroupNonUniformShuffleXor) continue;
                  ++shuffles;
                  const auto mask = types.ConstantValue(inst.operands.back());
                  REQUIRE(mask);
                  // One lane bit, or two for a lane swap (bit 5 crosses alone: LaneSwapExchanges).
                  CHECK(std::popcount(*mask) >= 1);
                  CHECK(std::popcount(*mask) <= 2);
                  if (std::popcount(*mask) == 2) {
                    CHECK((*mask & 32) == 0);
                    ++laneSwaps;
                  }
                }
                CHECK(shuffles == plan->exchanges->words);
              }
            }
    }
  CHECK(gfx11Wave32AccToA > 0);
  CHECK(replicated > 0);
  CHECK(dropped > 0);
  if (passtest::ExhaustiveStride() == 1) CHECK(laneSwaps > 0);  // counted in the evaluated cases
  CHECK(acrossHalves > 0);  // GFX12 wave64 A <-> Acc: lane bits 2 and 5 trade
  CHECK(planned > 100);
}

// GFX12 wave32 A f16 -> Acc f16 swaps lane bits 0-2 with the three index bits. The
// driver holds the source's pairs (2i, 2i + 1) in one register each, which the swap of
// index bit 0 cannot send whole: run first, as planned, every word is built anew and
// rebuilt once more later; run later, the first words are the source's own.
TEST_CASE("register path: commuting swaps run in the order that repacks 16-bit pairs least", "[register]") {
  const auto layouts = Builtin(coopmat::DriverFamily::RadvGfx12, 32);
  auto find = [&](uint32_t use) {
    for (const auto& l : layouts)
      if (l.key.use == use && l.key.componentType == coopmat::kTypeF16 && l.key.rows == 16 && l.key.cols == 16) return &l;
    return static_cast<const LinearLayout*>(nullptr);
  };
  const LinearLayout* from = find(coopmat::kUseA);
  const LinearLayout* to = find(coopmat::kUseAccumulator);
  REQUIRE(from);
  REQUIRE(to);
  const auto plan = coopmat::PlanExchanges(from, to, false, 16, 0xF);
  REQUIRE(plan);
  const auto& stages = plan->exchanges->stages;
  REQUIRE(stages.size() >= 3);
  REQUIRE(stages[0].kind == coopmat::ExchangeStage::Kind::Swap);
  REQUIRE(stages[0].indexBit == 0);  // as planned, the source's pair bit first
  for (bool pairedResult : {false, true}) {
    INFO("paired result " << pairedResult);
    EmitFixture f;
    coopmat::FunctionState fs{f.function};
    fs.lane = f.module.TakeId();
    const uint32_t type = f.types.Float(16);
    std::vector<uint32_t> sources(from->length);
    for (uint32_t& id : sources) {
      id = f.module.TakeId();
      f.types.SetTypeOf(id, type);
    }
    coopmat::Builder b(f.context, f.function, 0, 1);
    coopmat::EmitGather(b, fs, *plan, [&](uint32_t i) { return sources.at(i); }, type, nullptr, f.types.Vector(type, to->length), 0,
                        pairedResult);
    size_t built = 0, sourcePairs = 0;
    for (const Instruction& inst : f.Emitted()) {
      if (inst.opcode != spv::Op::OpCompositeConstruct || inst.typeId != f.types.Vector(type, 2)) continue;
      ++built;
      for (uint32_t i = 0; i + 1 < sources.size(); i += 2)
        sourcePairs += inst.operands == std::vector<uint32_t>{sources[i], sources[i + 1]};
    }
    // The 8 values in 4 words, then one rebuilding of the 4.
    CHECK(built == 4 + 4);
    // Converted next, the result's pairs are free: the first words are the source's.
    if (!pairedResult) CHECK(sourcePairs == 4);
  }
}

// As the layer lowers for RADV GFX11 at module time: wave32 and wave64 in one module,
// the measured costs applied, with no layout for B matrices at wave64 (a layout file
// that lacks them). The f16 Acc -> B move is an exchange at wave32 and the Workgroup
// round trip at wave64: each OpSwitch case has its own form, the module validates,
// and the report says which size takes which.
TEST_CASE("register path: a conversion with registers at one subgroup size only is lowered per size", "[register]") {
  coopmat::LowerOptions options;
  options.maxSharedMemoryBytes = 65536;
  for (uint32_t size : {32u, 64u})
    for (auto& l : Builtin(coopmat::DriverFamily::RadvGfx11, size))
      if (size == 32 || l.key.use != coopmat::kUseB) options.layouts.push_back(l);
  options.subgroupSizes = {32, 64};
  coopmat::ApplyMeasuredCosts(coopmat::DriverFamily::RadvGfx11, options);
  const auto result = coopmat::LowerModule(passtest::LoadShader("register16", "spirv1.6"), options);
  INFO(result.error);
  REQUIRE(result.ok);
  CHECK(coopmat::ValidateModule(result.words).empty());
  const Module m = passtest::ParseOrFail(result.words);
  CHECK(passtest::FindScratchVariable(m) != 0);                                      // wave64's round trip
  CHECK(passtest::CountOpcode(m, spv::Op::OpGroupNonUniformShuffleXor) > 0);         // wave32's exchange
  size_t mixed = 0;
  for (const auto& op : result.operations)
    mixed += op.portableReason.find("registers at subgroup size 32; the scratch at subgroup size 64") != std::string::npos;
  CHECK(mixed > 0);
}

// What decided each conversion's route is in its report, as the explain file shows it:
// the exchange plan's cost beside the round trip's measured one, for the moves taken
// (at most it) and declined (more). On GFX11 wave32 Acc f16 -> B is one replication
// (taken), Acc f16 -> A four stages (declined); their costs are the planner's own,
// computed here from the built-in layouts.
TEST_CASE("register path: the report names the exchange cost and the round trip's for every conversion it decided", "[register]") {
  coopmat::LowerOptions options;
  options.maxSharedMemoryBytes = 65536;
  options.layouts = Builtin(coopmat::DriverFamily::RadvGfx11, 32);
  options.subgroupSizes = {32};
  coopmat::ApplyMeasuredCosts(coopmat::DriverFamily::RadvGfx11, options);
  const uint32_t roundTrip = options.roundTripCost.at(32);
  auto layout = [&](uint32_t use) {
    for (const auto& l : options.layouts)
      if (l.key.componentType == coopmat::kTypeF16 && l.key.use == use && l.key.rows == 16) return &l;
    FAIL("no f16 16x16 layout");
    return static_cast<const LinearLayout*>(nullptr);
  };
  auto planCost = [&](uint32_t use) {
    const auto plan = coopmat::PlanExchanges(layout(coopmat::kUseAccumulator), layout(use), false, 16, options.foldedShuffleLaneBits);
    REQUIRE(plan);
    return plan->exchanges->cost;
  };
  const uint32_t toB = planCost(coopmat::kUseB), toA = planCost(coopmat::kUseA);
  REQUIRE(toB <= roundTrip);
  REQUIRE(toA > roundTrip);
  const auto result = coopmat::LowerModule(passtest::LoadShader("register16", "spirv1.6"), options);
  INFO(result.error);
  REQUIRE(result.ok);
  const std::string taken = "exchanges costing about " + std::to_string(toB) +
                            " instructions per lane, at most the Workgroup round trip's " + std::to_string(roundTrip) + " ";
  const std::string declined = "exchanges costing about " + std::to_string(toA) +
                               " instructions per lane, more than the Workgroup round trip's " + std::to_string(roundTrip) + " ";
  size_t takenSeen = 0, declinedSeen = 0;
  for (const auto& op : result.operations) {
    INFO(op.operation << ": " << (op.registerPath ? op.registerNote : op.portableReason));
    takenSeen += op.registerPath && op.registerNote.find(taken) != std::string::npos;
    declinedSeen += !op.registerPath && op.portableReason.find(declined) != std::string::npos;
    // Only conversions carry a note, and only a taken one sits on the register path.
    if (op.operation.find("Convert") == std::string::npos) CHECK(op.registerNote.empty());
    CHECK((op.registerNote.find("more than") == std::string::npos));
  }
  CHECK(takenSeen >= 1);     // Acc f16 -> B
  CHECK(declinedSeen >= 1);  // Acc f16 -> A
  const std::string text = coopmat::ExplainLowering(result, "test");
  CHECK(text.find("register path (" + taken) != std::string::npos);
}

// The round trip's scratch order follows the register layouts: GFX11 wave64's B holds
// a whole column per lane, so its moves from the accumulator (round trips at that size)
// go through a column-major scratch; without layouts the scratch stays row-major. Both
// lowerings validate (the execution suites run them on the virtual devices; the AMD lane
// asserts what the order saves).
TEST_CASE("round trip: the scratch order is the one with fewer accesses per lane where the layouts are known", "[register]") {
  // The layouts of the module's matrix stores (a transpose loads column-major, but only
  // the order choice stores so).
  auto storeLayouts = [](const std::vector<uint32_t>& words) { return StoreLayouts(passtest::ParseOrFail(words)); };
  const uint32_t rowMajor = static_cast<uint32_t>(spv::CooperativeMatrixLayout::RowMajorKHR);
  const uint32_t columnMajor = static_cast<uint32_t>(spv::CooperativeMatrixLayout::ColumnMajorKHR);
  const auto input = passtest::LoadShader("register16", "spirv1.6");
  const auto inputStores = storeLayouts(input);
  REQUIRE(inputStores.count(columnMajor) == 0);
  coopmat::LowerOptions options;
  options.maxSharedMemoryBytes = 65536;
  options.subgroupSizes = {64};
  options.layouts = Builtin(coopmat::DriverFamily::RadvGfx11, 64);
  coopmat::ApplyMeasuredCosts(coopmat::DriverFamily::RadvGfx11, options);
  const auto known = coopmat::LowerModule(input, options);
  INFO(known.error);
  REQUIRE(known.ok);
  CHECK(coopmat::ValidateModule(known.words).empty());
  CHECK(storeLayouts(known.words).count(columnMajor) >= 1);
  options.layouts.clear();
  const auto unknown = coopmat::LowerModule(input, options);
  INFO(unknown.error);
  REQUIRE(unknown.ok);
  CHECK(coopmat::ValidateModule(unknown.words).empty());
  const auto plain = storeLayouts(unknown.words);
  CHECK(plain.count(columnMajor) == 0);
  CHECK(plain.count(rowMajor) > inputStores.count(rowMajor));  // the round trips' own stores
}

TEST_CASE("round trip: 8-bit scalar conversions convert in place and read an 8-bit B one byte at a time", "[register]") {
  // GFX11 wave64 (layouts.md): B holds a column per lane, so a B loaded row-major reads its
  // bytes one by one, as ACO keeps them; a merged column would need repacking. Acc s32 ->
  // B s8 is stored row-major and loaded so, its transpose stored column-major and loaded
  // row-major.
  const auto input = passtest::LoadShader("convert_bytes16", "spirv1.6");
  coopmat::LowerOptions options;
  options.maxSharedMemoryBytes = 65536;
  options.subgroupSizes = {64};
  options.layouts = Builtin(coopmat::DriverFamily::RadvGfx11, 64);
  coopmat::ApplyMeasuredCosts(coopmat::DriverFamily::RadvGfx11, options);
  const auto result = coopmat::LowerModule(input, options);
  INFO(result.error);
  REQUIRE(result.ok);
  CHECK(coopmat::ValidateModule(result.words).empty());
  // The s32 source, which its bytes overwrite; and the u32 result, over whose end its bytes go.
  CHECK(result.stats.scratchBytesPerSubgroup == 16 * 16 * 4);
  const Module m = passtest::ParseOrFail(result.words);
  const std::map<uint32_t, uint32_t> constants = ConstantValues(m);
  std::map<uint32_t, const Instruction*> globals;
  for (const Instruction& i : m.globals) globals[i.resultId] = &i;
  const uint32_t rowMajor = static_cast<uint32_t>(spv::CooperativeMatrixLayout::RowMajorKHR);
  const uint32_t columnMajor = static_cast<uint32_t>(spv::CooperativeMatrixLayout::ColumnMajorKHR);
  std::multiset<uint32_t> byteBLoads;
  passtest::ForEachFunctionInstruction(m, [&](const Instruction& i) {
    if (i.opcode != spv::Op::OpCooperativeMatrixLoadKHR) return;
    const Instruction* type = globals.at(i.typeId);
    const Instruction* component = globals.at(type->Operand(0));
    if (component->Operand(0) == 8 && constants.at(type->Operand(4)) == 1) byteBLoads.insert(constants.at(i.Operand(1)));
  });
  CHECK(byteBLoads.count(rowMajor) == 2);  // the conversion and the transpose
  CHECK(byteBLoads.count(columnMajor) == 0);
  CHECK(StoreLayouts(m).count(columnMajor) == 1);  // the transpose's source (the module's own stores are row-major)
}

// ---- Review 4b565b7 finding 19: the per-size switch's default ------------------

namespace {

// Striped layouts of 8x8 matrices of these (component type, Use) pairs at each size.
std::vector<LinearLayout> StripedLayouts(const std::vector<std::pair<uint32_t, uint32_t>>& types,
                                         const std::vector<uint32_t>& sizes) {
  std::vector<LinearLayout> layouts;
  for (uint32_t size : sizes)
    for (auto [component, use] : types) {
      layouts.push_back(cmtest::StripedLayout({component, use, 8, 8, size}));
      REQUIRE(coopmat::ValidateLayout(layouts.back()).empty());
    }
  return layouts;
}

// What the default of each OpSwitch on the SubgroupSize built-in runs: the
// instructions of the blocks reachable from its label before the switch's merge.
std::vector<std::vector<Instruction>> SwitchDefaults(const Module& m) {
  uint32_t sizeVariable = 0;
  for (const Instruction& a : m.annotations)
    if (a.opcode == spv::Op::OpDecorate && a.Operand(1) == static_cast<uint32_t>(spv::Decoration::BuiltIn) &&
        a.Operand(2) == static_cast<uint32_t>(spv::BuiltIn::SubgroupSize))
      sizeVariable = a.Operand(0);
  std::vector<std::vector<Instruction>> defaults;
  for (const auto& f : m.functions) {
    std::map<uint32_t, const coopmat::ir::Block*> blocks;
    std::set<uint32_t> sizeLoads;
    for (const auto& block : f.blocks) {
      blocks[block.Label()] = &block;
      for (const Instruction& i : block.instructions)
        if (i.opcode == spv::Op::OpLoad && i.Operand(0) == sizeVariable) sizeLoads.insert(i.resultId);
    }
    for (const auto& block : f.blocks) {
      const Instruction& last = block.instructions.back();
      if (last.opcode != spv::Op::OpSwitch || !sizeLoads.count(last.Operand(0))) continue;
      const uint32_t merge = block.instructions[block.instructions.size() - 2].Operand(0);
      std::vector<Instruction> region;
      std::set<uint32_t> seen{merge};
      std::vector<uint32_t> stack{last.Operand(1)};
      while (!stack.empty()) {
        const uint32_t label = stack.back();
        stack.pop_back();
        if (!seen.insert(label).second) continue;
        for (const Instruction& i : blocks.at(label)->instructions) {
          region.push_back(i);
          for (uint32_t next : coopmat::Successors(i)) stack.push_back(next);
        }
      }
      defaults.push_back(std::move(region));
    }
  }
  return defaults;
}

size_t Count(const std::vector<Instruction>& region, spv::Op op) {
  return static_cast<size_t>(std::count_if(region.begin(), region.end(), [&](const Instruction& i) { return i.opcode == op; }));
}

// The all-bits-set constants of the module (by id).
std::set<uint32_t> AllOnesConstants(const Module& m) {
  std::set<uint32_t> ids;
  for (const Instruction& g : m.globals)
    if (g.opcode == spv::Op::OpConstant && g.operands.size() == 1 &&
        (g.operands[0] == 0xffffffffu || g.operands[0] == 0xffffu || g.operands[0] == 0xffu))
      ids.insert(g.resultId);
  return ids;
}

}  // namespace

// Register code at every listed size and no scratch in the function: a size outside
// the list gets a result with every bit set (here GetCoordinate's coordinates), not
// the largest size's code with the wrong layout, and no shared memory is added.
TEST_CASE("per-size switch: at an unlisted size a register-only function yields every bit set", "[register]") {
  coopmat::LowerOptions options;
  options.layouts = StripedLayouts({{coopmat::kTypeF16, coopmat::kUseA},
                                    {coopmat::kTypeU8, coopmat::kUseB},
                                    {coopmat::kTypeF32, coopmat::kUseAccumulator},
                                    {coopmat::kTypeS32, coopmat::kUseAccumulator}},
                                   {16, 32});
  options.subgroupSizes = {16, 32};
  const auto result = coopmat::LowerModule(passtest::LoadShader("getcoord", "spirv1.6"), options);
  INFO(result.error);
  REQUIRE(result.ok);
  CHECK(result.stats.registerPath == result.stats.OpsLowered());
  CHECK(coopmat::ValidateModule(result.words).empty());
  const Module m = passtest::ParseOrFail(result.words);
  CHECK(passtest::FindScratchVariable(m) == 0);
  const std::set<uint32_t> ones = AllOnesConstants(m);
  const auto defaults = SwitchDefaults(m);
  REQUIRE(defaults.size() == result.stats.getCoordinate);
  for (const auto& region : defaults) {
    // One (~0u, ~0u), stored for the merge to load; no lane arithmetic of either size.
    REQUIRE(Count(region, spv::Op::OpCompositeConstruct) == 1);
    for (const Instruction& i : region)
      if (i.opcode == spv::Op::OpCompositeConstruct)
        for (uint32_t part : i.operands) CHECK(ones.count(part));
    CHECK(Count(region, spv::Op::OpBitwiseAnd) + Count(region, spv::Op::OpShiftRightLogical) +
              Count(region, spv::Op::OpBitwiseXor) == 0);
  }
}

TEST_CASE("per-size switch: the unlisted size's in-place conversion tests that a lane has a group", "[register]") {
  // 8x8 u8 <-> u32: 16 groups of four elements, a whole number of rounds at the listed sizes
  // (4 and 16) but not at every size the default may run at (32, say): there a lane past the
  // last group must write nothing.
  coopmat::LowerOptions options;
  options.layouts = StripedLayouts({{coopmat::kTypeU8, coopmat::kUseB},
                                    {coopmat::kTypeU32, coopmat::kUseAccumulator},
                                    {coopmat::kTypeS8, coopmat::kUseA},
                                    {coopmat::kTypeS32, coopmat::kUseAccumulator}},
                                   {4, 16});
  options.subgroupSizes = {4, 16};
  options.minSubgroupSize = 4;
  const auto words = passtest::LoadShader("convert_mixed", "spirv1.6");
  const auto result = coopmat::LowerModule(words, options);
  INFO(result.error);
  REQUIRE(result.ok);
  CHECK(coopmat::ValidateModule(result.words).empty());
  const Module m = passtest::ParseOrFail(result.words);
  const std::map<uint32_t, uint32_t> constants = ConstantValues(m);
  // A lane's test: its group (round + lane, not a loop's counter) against the 16 groups.
  std::map<uint32_t, spv::Op> definedBy;
  passtest::ForEachFunctionInstruction(m, [&](const Instruction& i) {
    if (i.resultId) definedBy[i.resultId] = i.opcode;
  });
  auto laneTests = [&](const std::vector<Instruction>& region) {
    size_t n = 0;
    for (const Instruction& i : region) {
      if (i.opcode != spv::Op::OpULessThan) continue;
      const auto bound = constants.find(i.Operand(1));
      n += bound != constants.end() && bound->second == 16 && definedBy[i.Operand(0)] == spv::Op::OpIAdd;
    }
    return n;
  };
  size_t conversions = 0;
  for (const auto& region : SwitchDefaults(m)) {
    if (Count(region, spv::Op::OpControlBarrier) < 2) continue;  // not a conversion in the scratch
    ++conversions;
    CHECK(laneTests(region) >= 1);
  }
  CHECK(conversions >= 1);
  // The listed sizes' versions of those conversions need no test: every lane has a group.
  size_t everywhere = 0;
  for (const auto& f : m.functions)
    for (const auto& block : f.blocks) everywhere += laneTests(block.instructions);
  size_t inDefaults = 0;
  for (const auto& region : SwitchDefaults(m)) inDefaults += laneTests(region);
  CHECK(everywhere == inDefaults);
}

// A function with scratch (the conversions are round trips at size 4 and plain
// register copies at 16): the default converts through the scratch as the portable
// path does, at sizes of at least 4 (the slices are counted at 4), and below that
// yields every bit set.
TEST_CASE("per-size switch: at an unlisted size a conversion takes the portable round trip", "[register]") {
  coopmat::LowerOptions options;
  options.layouts = StripedLayouts({{coopmat::kTypeF16, coopmat::kUseA},
                                    {coopmat::kTypeF16, coopmat::kUseB},
                                    {coopmat::kTypeF16, coopmat::kUseAccumulator}},
                                   {16});
  options.subgroupSizes = {4, 16};
  options.minSubgroupSize = 4;
  const auto words = passtest::LoadShader("convert_use", "spirv1.6");
  const auto result = coopmat::LowerModule(words, options);
  INFO(result.error);
  REQUIRE(result.ok);
  CHECK(coopmat::ValidateModule(result.words).empty());
  const Module m = passtest::ParseOrFail(result.words);
  REQUIRE(passtest::FindScratchVariable(m) != 0);
  const auto defaults = SwitchDefaults(m);
  REQUIRE(defaults.size() == 4);  // the f16 Acc <-> A/B moves; the integer ones have no layouts at all
  const std::set<uint32_t> ones = AllOnesConstants(m);
  for (const auto& region : defaults) {
    CHECK(Count(region, spv::Op::OpCooperativeMatrixStoreKHR) == 1);  // the round trip
    CHECK(Count(region, spv::Op::OpCooperativeMatrixLoadKHR) == 1);
    CHECK(Count(region, spv::Op::OpGroupNonUniformShuffleXor) + Count(region, spv::Op::OpGroupNonUniformShuffle) == 0);
    // Guarded by SubgroupSize >= 4, else every bit set.
    bool guarded = false;
    for (const Instruction& i : region)
      if (i.opcode == spv::Op::OpUGreaterThanEqual) {
        for (const Instruction& g : m.globals)
          if (g.resultId == i.Operand(1)) guarded = g.opcode == spv::Op::OpConstant && g.Operand(0) == 4;
      }
    CHECK(guarded);
    size_t sentinels = 0;
    for (const Instruction& i : region)
      sentinels += i.opcode == spv::Op::OpCompositeConstruct && i.operands.size() == 1 && ones.count(i.Operand(0));
    CHECK(sentinels == 1);
  }
}
