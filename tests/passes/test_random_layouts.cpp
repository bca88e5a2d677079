// Layout-generic register code: the coordinate, gather and pair-exchange builders
// against random GF(2)-linear layouts (random lane/index -> row/column bit maps,
// bit permutations and general invertible maps, replicated lanes, every subgroup
// size from 4 to 64, 8/16/32-bit element types, A/B/Accumulator) and against the
// NVIDIA mma fragment and CDNA3 MFMA tables. The emitted SPIR-V is executed for
// every lane of a simulated subgroup (subgroup_eval.h) and compared with the
// layout's own map, so a builder that only works for the built-in tables fails.
//
// The seed is printed; COOPMAT_RANDOM_LAYOUT_SEED repeats a run.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>

#include "coopmat/layout.h"
#include "random_layout.h"
#include "emitted_run.h"
#include "register.h"
#include "subgroup_eval.h"
#include "test_support.h"

using coopmat::Coord;
using coopmat::LayoutKey;
using coopmat::LinearLayout;
using passtest::EmitFixture;
using passtest::SubgroupEvaluator;
using testsupport::RandomLayout;

namespace {

uint32_t Log2(uint32_t v) { return static_cast<uint32_t>(std::countr_zero(v)); }

uint32_t Seed() {
  static const uint32_t seed = [] {
    if (const char* text = std::getenv("COOPMAT_RANDOM_LAYOUT_SEED")) return static_cast<uint32_t>(std::stoul(text));
    return std::random_device{}();
  }();
  return seed;
}

uint32_t Apply(const std::vector<uint32_t>& images, uint32_t x) {
  uint32_t out = 0;
  for (size_t k = 0; k < images.size(); ++k)
    if (x >> k & 1) out ^= images[k];
  return out;
}

struct Shape {
  uint32_t rows, cols, subgroup, replicaBits;
};

// A shape whose element count and replication fit the subgroup: length >= 1.
Shape RandomShape(std::mt19937& random) {
  for (;;) {
    const uint32_t subgroup = 1u << (2 + random() % 5);  // 4 .. 64
    const uint32_t rows = 1u << (random() % 6), cols = 1u << (random() % 6);  // 1 .. 32
    const uint32_t Ls = Log2(subgroup), n = Log2(rows) + Log2(cols);
    const uint32_t replicaBits = random() % 3 == 0 ? static_cast<uint32_t>(random() % (Ls + 1)) : 0;
    if (n + replicaBits < Ls) continue;
    if (n + replicaBits - Ls > 8) continue;  // the register path's 256-element cap
    return {rows, cols, subgroup, replicaBits};
  }
}



// RegisterCoordinate's code, run for every lane and every index (a per-lane dynamic
// index, and every constant index), must give the layout's row and column.
void CheckCoordinates(const LinearLayout& layout) {
  const uint32_t size = layout.key.subgroupSize;
  for (bool column : {false, true}) {
    INFO(coopmat::ToString(layout.key) << (column ? " column" : " row") << "\n" << coopmat::FormatLayout(layout));
    EmitFixture f;
    coopmat::FunctionState fs{f.function};
    fs.lane = f.module.TakeId();
    const uint32_t index = f.module.TakeId();
    f.types.SetTypeOf(index, f.types.Uint());
    coopmat::Builder b(f.context, f.function, 0, 1);
    const uint32_t dynamic = coopmat::RegisterCoordinate(b, fs, layout, index, column);
    std::vector<uint32_t> constant;
    for (uint32_t e = 0; e < layout.length; ++e) constant.push_back(coopmat::RegisterCoordinate(b, fs, layout, b.U(e), column));
    for (uint32_t shift = 0; shift < layout.length; ++shift) {
      SubgroupEvaluator eval(f.types, size);
      std::vector<std::vector<uint32_t>> indices(size);
      for (uint32_t lane = 0; lane < size; ++lane) indices[lane] = {(lane * 5 + shift) % layout.length};
      eval.SetLaneIds(fs.lane);
      eval.Set(index, indices);
      eval.Run(f.Emitted());
      for (uint32_t lane = 0; lane < size; ++lane) {
        const uint32_t e = indices[lane][0];
        const Coord want = layout.CoordinateOf(lane, e);
        INFO("lane " << lane << " index " << e);
        REQUIRE(eval.Get(dynamic)[lane].at(0) == (column ? want.col : want.row));
        if (shift == 0)
          for (uint32_t k = 0; k < layout.length; ++k) {
            const Coord at = layout.CoordinateOf(lane, k);
            INFO("constant index " << k);
            REQUIRE(eval.Get(constant[k])[lane].at(0) == (column ? at.col : at.row));
          }
      }
    }
  }
}

std::vector<LinearLayout> VendorTables() {
  std::vector<LinearLayout> all;
  for (auto [family, size] : {std::pair{coopmat::DriverFamily::NvidiaMma, 32u}, std::pair{coopmat::DriverFamily::CdnaMfma, 64u}})
    for (auto& l : coopmat::BuiltinLayouts(family, size)) all.push_back(std::move(l));
  return all;
}

}  // namespace

TEST_CASE("XorBits: runs of single bits never take in a zero or multi-bit image", "[register][random]") {
  // The lists review finding 3 names; [1, 0, 8] is the NVIDIA mma column map of the index.
  const std::vector<std::vector<uint32_t>> lists = {{1, 0}, {2, 1, 0}, {1, 3}, {0, 0, 1, 0, 0}, {1, 0, 8}, {4, 2, 1, 6}, {2, 1, 5}};
  std::mt19937 random(Seed());
  std::vector<std::vector<uint32_t>> all = lists;
  for (int n = 0; n < 2000; ++n) {
    std::vector<uint32_t> images(1 + random() % 8);
    for (uint32_t& image : images) {
      const uint32_t kind = random() % 4;
      image = kind == 0 ? 0 : kind == 1 ? static_cast<uint32_t>(random() % 64) : 1u << (random() % 6);
    }
    all.push_back(images);
  }
  for (const auto& images : all) {
    const uint32_t width = static_cast<uint32_t>(images.size());
    for (uint32_t valueBits : {~0u, (1u << width) - 1}) {
      EmitFixture f;
      const uint32_t x = f.module.TakeId();
      f.types.SetTypeOf(x, f.types.Uint());
      coopmat::Builder b(f.context, f.function, 0, 1);
      const uint32_t result = coopmat::XorBits(b, x, images, valueBits);
      // Every shift amount the code uses is a constant below 32 (no undefined shifts).
      for (const auto& inst : f.Emitted())
        if (inst.opcode == spv::Op::OpShiftLeftLogical || inst.opcode == spv::Op::OpShiftRightLogical) {
          auto amount = f.types.ConstantValue(inst.Operand(1));
          REQUIRE(amount);
          REQUIRE(*amount < 32);
        }
      SubgroupEvaluator eval(f.types, 1u << width);
      std::vector<std::vector<uint32_t>> inputs(1u << width);
      for (uint32_t v = 0; v < (1u << width); ++v) inputs[v] = {v};
      eval.Set(x, inputs);
      eval.Run(f.Emitted());
      for (uint32_t v = 0; v < (1u << width); ++v) {
        std::string list;
        for (uint32_t image : images) list += std::to_string(image) + " ";
        INFO("images [ " << list << "] value bits " << valueBits << " x " << v);
        REQUIRE(eval.Get(result)[v].at(0) == Apply(images, v));
      }
    }
  }
  // [1, 0] keeps bit 0 and drops bit 1: one AND, nothing else.
  EmitFixture f;
  const uint32_t x = f.module.TakeId();
  f.types.SetTypeOf(x, f.types.Uint());
  coopmat::Builder b(f.context, f.function, 0, 1);
  const uint32_t result = coopmat::XorBits(b, x, {1, 0});
  REQUIRE(f.Emitted().size() == 2);  // the label and the AND
  const auto& inst = f.Emitted().back();
  CHECK(inst.resultId == result);
  CHECK(inst.opcode == spv::Op::OpBitwiseAnd);
  CHECK(inst.Operand(0) == x);
  CHECK(f.types.ConstantValue(inst.Operand(1)) == std::optional<uint32_t>(1));
}

TEST_CASE("random layouts: register coordinates match the layout's map at every lane and index", "[register][random]") {
  std::cout << "random layouts: seed " << Seed() << " (COOPMAT_RANDOM_LAYOUT_SEED repeats it)\n";
  std::mt19937 random(Seed() ^ 0x1);
  // 500 per run (a fresh seed each run; 1500 took 72 s of CI's two cores).
  const int count = 500 / static_cast<int>(passtest::ExhaustiveStride());
  for (int n = 0; n < count; ++n) {
    const Shape s = RandomShape(random);
    const uint32_t use = static_cast<uint32_t>(random() % 3);
    const LinearLayout layout = RandomLayout(random, {coopmat::kTypeF16, use, s.rows, s.cols, s.subgroup}, s.replicaBits, random() % 2 == 0);
    REQUIRE(coopmat::ValidateLayout(layout).empty());
    CheckCoordinates(layout);
  }
  const auto vendor = VendorTables();
  for (size_t i = 0; i < vendor.size(); i += passtest::ExhaustiveStride()) CheckCoordinates(vendor[i]);
}

TEST_CASE("random layouts: conversion gathers and exchange stages put every element in its place", "[register][random]") {
  std::mt19937 random(Seed() ^ 0x2);
  const uint32_t elements[] = {coopmat::kTypeU32, coopmat::kTypeF16, coopmat::kTypeU16, coopmat::kTypeU8, coopmat::kTypeBF16, coopmat::kTypeE4M3};
  size_t gathers = 0, exchanges = 0, attempts = 0, dynamicDest = 0, laneMaps = 0, sharedWords = 0, sharedConverted = 0;
  size_t narrowShuffles = 0;  // 16-bit values shuffled as such (shaderSubgroupExtendedTypes)
  auto tryMove = [&](const LinearLayout& from, const LinearLayout& to, bool transpose) {
    ++attempts;
    const uint32_t element = elements[random() % std::size(elements)];
    INFO(coopmat::ComponentTypeName(element) << " " << coopmat::FormatLayout(from) << " -> " << coopmat::FormatLayout(to)
                                             << (transpose ? " transposed" : ""));
    EmitFixture context;
    if (auto plan = coopmat::PlanRegisterMove(context.context, &from, &to, transpose)) {
      const bool convert = random() % 2 == 0, extendedTypes = random() % 2 == 0;
      if (passtest::CheckMove(*plan, from, to, transpose, element, convert, extendedTypes, &narrowShuffles)) {
        ++sharedWords;
        sharedConverted += convert;
      }
      ++gathers;
      dynamicDest += plan->DynamicDest();
      laneMaps += !plan->identityLanes;
    }
    if (auto plan = coopmat::PlanExchanges(&from, &to, transpose, passtest::ComponentBits(element))) {
      passtest::CheckMove(*plan, from, to, transpose, element, random() % 2 == 0, random() % 2 == 0, &narrowShuffles);
      ++exchanges;
    }
  };
  for (int n = 0; n < 1500 / static_cast<int>(passtest::ExhaustiveStride()); ++n) {
    const Shape s = RandomShape(random);
    const bool transpose = random() % 3 == 0;
    const LayoutKey fromKey{coopmat::kTypeF16, coopmat::kUseAccumulator, s.rows, s.cols, s.subgroup};
    const LayoutKey toKey{coopmat::kTypeF16, static_cast<uint32_t>(random() % 2), transpose ? s.cols : s.rows,
                          transpose ? s.rows : s.cols, s.subgroup};
    // Mostly bit permutations (every surveyed driver), some general maps; the
    // replication of each side drawn on its own.
    const uint32_t Ls = Log2(s.subgroup), n2 = Log2(s.rows) + Log2(s.cols);
    uint32_t toReplicas = random() % 2 ? static_cast<uint32_t>(random() % (Ls + 1)) : 0;
    if (n2 + toReplicas < Ls || n2 + toReplicas - Ls > 8) toReplicas = s.replicaBits;
    const LinearLayout from = RandomLayout(random, fromKey, s.replicaBits, random() % 4 != 0);
    const LinearLayout to = RandomLayout(random, toKey, toReplicas, random() % 4 != 0);
    tryMove(from, to, transpose);
  }
  // The vendor tables against each other and against random layouts of their shape.
  const auto vendor = VendorTables();
  for (const LinearLayout& from : vendor)
    for (const LinearLayout& to : vendor)
      for (bool transpose : {false, true}) {
        if (from.key.subgroupSize != to.key.subgroupSize || from.key.use == to.key.use) continue;
        if ((transpose ? to.key.cols : to.key.rows) != from.key.rows || (transpose ? to.key.rows : to.key.cols) != from.key.cols) continue;
        tryMove(from, to, transpose);
      }
  for (const LinearLayout& table : vendor) {
    const LinearLayout other = RandomLayout(random, {coopmat::kTypeF16, coopmat::kUseB, table.key.rows, table.key.cols, table.key.subgroupSize},
                                            0, true);
    tryMove(table, other, false);
    tryMove(other, table, false);
  }
  std::cout << "random layouts: " << attempts << " moves, " << gathers << " gathers (" << laneMaps << " with a lane map, "
            << dynamicDest << " with dynamic destinations, " << sharedWords << " moving 16-bit values two per shuffle, "
            << sharedConverted << " of them converting), " << exchanges << " exchange plans run, " << narrowShuffles
            << " shuffles of 16-bit values\n";
  // Every pair of one shape and subgroup size has a one-shuffle-per-element plan (gather_plan.cpp
  // refuses only others); each form is exercised.
  CHECK(gathers == attempts);
  CHECK(exchanges > 0);
  CHECK(laneMaps > 0);
  CHECK(dynamicDest > 0);
  CHECK(sharedWords > sharedConverted);
  CHECK(sharedConverted > 0);
  if (passtest::ExhaustiveStride() == 1) CHECK(narrowShuffles > 0);  // the draws are few under ASan
}

// The register reduction's emitted code on random accumulator layouts (general
// maps and replicated lanes, as a layouts file or the probe may give): each result
// element holds the wrapping sum of its group, whatever the layouts of both sides.
TEST_CASE("random layouts: register reductions give every result element its group's sum", "[register][random]") {
  INFO("COOPMAT_RANDOM_LAYOUT_SEED=" << Seed());
  std::mt19937 random(Seed() ^ 0x3);
  const uint32_t componentTypes[] = {coopmat::kTypeF32, coopmat::kTypeF16, coopmat::kTypeU8, coopmat::kTypeBF16};
  const uint32_t masks[] = {coopmat::kReduceRow, coopmat::kReduceColumn, coopmat::kReduceRow | coopmat::kReduceColumn, coopmat::kReduce2x2};
  std::map<uint32_t, size_t> run;  // by mask
  size_t attempts = 0, replicated = 0;
  for (int n = 0; n < 600 / static_cast<int>(passtest::ExhaustiveStride()); ++n) {
    const Shape s = RandomShape(random);
    const uint32_t mask = masks[random() % std::size(masks)];
    if (mask == coopmat::kReduce2x2 && (s.rows < 2 || s.cols < 2)) continue;
    const uint32_t component = componentTypes[random() % std::size(componentTypes)];
    const LayoutKey sourceKey{component, coopmat::kUseAccumulator, s.rows, s.cols, s.subgroup};
    const LinearLayout source = RandomLayout(random, sourceKey, s.replicaBits, random() % 4 != 0);
    // The result's shape: Row keeps the rows, Column the columns (the other drawn), 2x2 halves both.
    uint32_t rows = s.rows, cols = s.cols;
    if (mask == coopmat::kReduceRow) cols = 1u << (random() % 6);
    if (mask == coopmat::kReduceColumn) rows = 1u << (random() % 6);
    if (mask == coopmat::kReduce2x2) rows /= 2, cols /= 2;
    const uint32_t Ls = Log2(s.subgroup), bits = Log2(rows) + Log2(cols);
    const uint32_t resultReplicas = (bits < Ls ? Ls - bits : 0) + static_cast<uint32_t>(random() % 2);
    if (resultReplicas > Ls || bits + resultReplicas - Ls > 8) continue;
    // A result of the source's own type has its layout.
    const bool sameType = rows == s.rows && cols == s.cols;
    const LinearLayout result = mask == (coopmat::kReduceRow | coopmat::kReduceColumn) || sameType
                                    ? source
                                    : RandomLayout(random, {component, coopmat::kUseAccumulator, rows, cols, s.subgroup}, resultReplicas,
                                                   random() % 4 != 0);
    ++attempts;
    INFO(coopmat::FormatLayout(source) << " mask " << mask << " -> " << coopmat::FormatLayout(result));
    const bool extendedTypes = random() % 2 == 0;
    INFO("16-bit shuffles " << extendedTypes);
    if (!passtest::CheckReduce(source, result, mask, random, extendedTypes)) continue;
    ++run[mask];
    replicated += source.ReplicaLaneBits() != 0;
  }
  std::cout << "random layouts: " << attempts << " reductions, run in registers: " << run[coopmat::kReduceRow] << " row, "
            << run[coopmat::kReduceColumn] << " column, " << run[coopmat::kReduceRow | coopmat::kReduceColumn] << " row|column, "
            << run[coopmat::kReduce2x2] << " 2x2; " << replicated << " from replicated lanes\n";
  if (passtest::ExhaustiveStride() == 1) {  // the draws are few under ASan
    for (uint32_t mask : masks) CHECK(run[mask] > 0);
    CHECK(replicated > 0);
  }
}
