// Built-in layouts against the published formulas, typed in again here from
// layouts.md, lavapipe.md and seed 004 (not taken from the model), and fitting.
#include <coopmat/layout.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <map>
#include <random>

using namespace coopmat;
using Catch::Matchers::ContainsSubstring;

namespace {

constexpr DriverFamily kFamilies[] = {DriverFamily::Lavapipe, DriverFamily::RadvGfx11, DriverFamily::RadvGfx12,
                                      DriverFamily::CdnaMfma, DriverFamily::NvidiaMma};
constexpr uint32_t kSubgroupSizes[] = {4, 8, 16, 32, 64, 128};

struct Expectation {
  uint32_t length = 0;
  uint32_t replicas = 1;
  Coord (*at)(const LayoutKey&, uint32_t L, uint32_t e) = nullptr;
};

// ---- lavapipe.md section 3 -------------------------------------------------------
Coord LavapipeAOrAcc(const LayoutKey& k, uint32_t L, uint32_t e) {
  uint32_t t = e >> 3, j = e & 7, tr = t / (k.cols / 8), tc = t % (k.cols / 8);
  return {8 * tr + j, 8 * tc + L};
}
Coord LavapipeB(const LayoutKey& k, uint32_t L, uint32_t e) {
  uint32_t t = e >> 3, j = e & 7, tr = t / (k.cols / 8), tc = t % (k.cols / 8);
  return {8 * tr + L, 8 * tc + j};
}

// ---- layouts.md section 3 (GFX11) and 4.1 (GFX12), h = L & 15, g = L >> 4 -----------
Coord Gfx11A(const LayoutKey&, uint32_t L, uint32_t e) { return {L & 15, e}; }
Coord Gfx11B(const LayoutKey&, uint32_t L, uint32_t e) { return {e, L & 15}; }
Coord Gfx11Acc(const LayoutKey& k, uint32_t L, uint32_t e) { return {(k.subgroupSize / 16) * e + (L >> 4), L & 15}; }
// Section 0's form of base(L): 8g in wave32, {0, 8, 4, 12}[g] in wave64.
uint32_t Gfx12Base(uint32_t S, uint32_t L) {
  static const uint32_t wave64[] = {0, 8, 4, 12};
  return S == 32 ? 8 * (L >> 4) : wave64[L >> 4];
}
Coord Gfx12A(const LayoutKey& k, uint32_t L, uint32_t e) { return {L & 15, Gfx12Base(k.subgroupSize, L) + e}; }
Coord Gfx12BOrAcc(const LayoutKey& k, uint32_t L, uint32_t e) { return {Gfx12Base(k.subgroupSize, L) + e, L & 15}; }
// NV flexible dimensions on RADV (Mesa's nir_lower_cooperative_matrix.c split at
// granularity 16): 16x16 matrices in row-major tile order, index = tile * (16x16
// length) + index in the tile. GFX11's A and B hold 16 elements per tile.
template <Coord (*Tile)(const LayoutKey&, uint32_t, uint32_t), bool sixteenPerTile>
Coord RadvTiles(const LayoutKey& k, uint32_t L, uint32_t e) {
  const uint32_t tileLength = sixteenPerTile ? 16 : 256 / k.subgroupSize, t = e / tileLength;
  const Coord c = Tile(k, L, e % tileLength);
  return {16 * (t / (k.cols / 16)) + c.row, 16 * (t % (k.cols / 16)) + c.col};
}

// ---- seed 004, register -> element; blocks stacked as row = M*b + i ----------------
Coord Mfma32x32(const LayoutKey&, uint32_t L, uint32_t G) {
  uint32_t i = (8 * (G / 4)) % 32 + 4 * (L / 32) + G % 4, j = L % 32, b = G / 16;
  return {32 * b + i, j};
}
Coord Mfma16x16(const LayoutKey&, uint32_t L, uint32_t G) {
  uint32_t i = 4 * (L / 16) + G % 4, j = L % 16, b = G / 4;
  return {16 * b + i, j};
}
Coord Mfma4x4(const LayoutKey&, uint32_t L, uint32_t G) {
  uint32_t i = G % 4, j = L % 4, b = L / 4;
  return {4 * b + i, j};
}
Coord MfmaF64x16(const LayoutKey&, uint32_t L, uint32_t k) { return {4 * k + L / 16, L % 16}; }
Coord MfmaF64x4(const LayoutKey&, uint32_t L, uint32_t) {
  uint32_t i = L / 16, j = L % 4, b = (L % 16) / 4;
  return {4 * b + i, j};
}

// ---- PTX ISA "Matrix Fragments for mma.m16n8k16 / m16n8k32", groupID = L >> 2,
// threadID_in_group = L % 4; KHR matrices wider than one n8 tile as NAK combines them:
// 16-bit B and all accumulators by tile = i / 4 over N, 8-bit 32x16 B by i bit 2 over K
// and i bit 3 over N (two 32x8 operands, elements 0-7 the first: nak_nir_lower_cmat.c's
// lower_cmat_muladd splits a 16x16 result into two 16x8 multiplies so).
Coord MmaA16(const LayoutKey&, uint32_t L, uint32_t i) {
  const uint32_t group = L >> 2, thread = L % 4;
  return {group + (i % 4 >= 2 ? 8 : 0), thread * 2 + (i % 2) + (i >= 4 ? 8 : 0)};
}
Coord MmaB16(const LayoutKey&, uint32_t L, uint32_t i) {
  const uint32_t group = L >> 2, thread = L % 4, tile = i / 4, j = i % 4;
  return {thread * 2 + (j % 2) + (j >= 2 ? 8 : 0), 8 * tile + group};
}
Coord MmaAcc(const LayoutKey&, uint32_t L, uint32_t i) {
  const uint32_t group = L >> 2, thread = L % 4, tile = i / 4, j = i % 4;
  return {group + (j >= 2 ? 8 : 0), 8 * tile + thread * 2 + (j % 2)};
}
Coord MmaA8(const LayoutKey&, uint32_t L, uint32_t i) {
  const uint32_t group = L >> 2, thread = L % 4;
  const bool low = i < 4 || (i >= 8 && i < 12);
  return {group + (low ? 0 : 8), thread * 4 + (i % 4) + (i >= 8 ? 16 : 0)};
}
Coord MmaB8x8(const LayoutKey&, uint32_t L, uint32_t i) {  // 32x8: one n8 tile
  const uint32_t group = L >> 2, thread = L % 4;
  return {thread * 4 + (i % 4) + (i >= 4 ? 16 : 0), group};
}
Coord MmaB8x16(const LayoutKey&, uint32_t L, uint32_t i) {  // 32x16: two 32x8 tiles, one after the other
  const uint32_t group = L >> 2, thread = L % 4, tile = i / 8, j = i % 8;
  return {thread * 4 + (j % 4) + (j >= 4 ? 16 : 0), 8 * tile + group};
}

Expectation Expected(DriverFamily family, const LayoutKey& k) {
  const uint32_t S = k.subgroupSize;
  switch (family) {
    case DriverFamily::Lavapipe:
      return {k.rows * k.cols / 8, 1, k.use == kUseB ? LavapipeB : LavapipeAOrAcc};
    case DriverFamily::RadvGfx11: {
      const uint32_t tiles = k.rows / 16 * (k.cols / 16);
      if (k.use == kUseA) return {16 * tiles, S / 16, RadvTiles<Gfx11A, true>};
      if (k.use == kUseB) return {16 * tiles, S / 16, RadvTiles<Gfx11B, true>};
      return {256 / S * tiles, 1, RadvTiles<Gfx11Acc, false>};
    }
    case DriverFamily::RadvGfx12:
      return {k.rows * k.cols / S, 1, k.use == kUseA ? RadvTiles<Gfx12A, false> : RadvTiles<Gfx12BOrAcc, false>};
    case DriverFamily::CdnaMfma:
      if (k.componentType == kTypeF64) return k.cols == 16 ? Expectation{4, 1, MfmaF64x16} : Expectation{1, 1, MfmaF64x4};
      if (k.cols == 32) return {k.rows * 32 / 64, 1, Mfma32x32};
      if (k.cols == 16) return {k.rows * 16 / 64, 1, Mfma16x16};
      return {4, 1, Mfma4x4};
    case DriverFamily::NvidiaMma: {
      const bool narrow = k.componentType == kTypeU8 || k.componentType == kTypeS8;
      const uint32_t length = k.rows * k.cols / 32;
      if (k.use == kUseAccumulator) return {length, 1, MmaAcc};
      if (k.use == kUseA) return narrow ? Expectation{16, 1, MmaA8} : Expectation{length, 1, MmaA16};
      if (narrow) return k.cols == 8 ? Expectation{8, 1, MmaB8x8} : Expectation{16, 1, MmaB8x16};
      return {length, 1, MmaB16};
    }
  }
  return {};
}

std::vector<Coord> Enumerate(const LayoutKey& key, uint32_t length, Coord (*at)(const LayoutKey&, uint32_t, uint32_t)) {
  std::vector<Coord> observed;
  for (uint32_t L = 0; L < key.subgroupSize; ++L)
    for (uint32_t e = 0; e < length; ++e) observed.push_back(at(key, L, e));
  return observed;
}

}  // namespace

TEST_CASE("built-in layouts match the published formulas slot by slot", "[layout][builtin]") {
  size_t total = 0;
  for (DriverFamily family : kFamilies)
    for (uint32_t S : kSubgroupSizes) {
      for (const LinearLayout& l : BuiltinLayouts(family, S)) {
        ++total;
        INFO(ToString(family) << " " << ToString(l.key));
        REQUIRE(ValidateLayout(l).empty());
        Expectation want = Expected(family, l.key);
        REQUIRE(l.length == want.length);
        CHECK(l.Replicas() == want.replicas);
        std::map<std::pair<uint32_t, uint32_t>, uint32_t> held;
        bool allMatch = true;
        for (uint32_t L = 0; L < S; ++L)
          for (uint32_t e = 0; e < l.length; ++e) {
            Coord got = l.CoordinateOf(L, e), expected = want.at(l.key, L, e);
            if (!(got == expected)) {
              UNSCOPED_INFO("lane " << L << " index " << e << ": got (" << got.row << ", " << got.col
                                    << ") expected (" << expected.row << ", " << expected.col << ")");
              allMatch = false;
            }
            ++held[{expected.row, expected.col}];
          }
        CHECK(allMatch);
        // Full coverage with the expected replication, from the formula alone.
        CHECK(held.size() == size_t{l.key.rows} * l.key.cols);
        CHECK(std::all_of(held.begin(), held.end(), [&](const auto& h) { return h.second == want.replicas; }));
      }
    }
  // lavapipe 90, GFX11 2 x 13 and GFX12 2 x 17 types and Uses in 9 shapes each
  // (16, 32 and 64 a side), MFMA 2 x 5 + 2, NVIDIA mma 24.
  CHECK(total == 90 + 26 * 9 + 34 * 9 + 12 + 24);
}

TEST_CASE("built-in lists cover only the subgroup sizes a family runs", "[layout][builtin]") {
  CHECK(BuiltinLayouts(DriverFamily::Lavapipe, 8).size() == 90);
  CHECK(BuiltinLayouts(DriverFamily::Lavapipe, 16).empty());
  CHECK(BuiltinLayouts(DriverFamily::RadvGfx11, 8).empty());
  CHECK(BuiltinLayouts(DriverFamily::RadvGfx11, 32).size() == 13 * 9);
  CHECK(BuiltinLayouts(DriverFamily::RadvGfx12, 64).size() == 17 * 9);
  CHECK(BuiltinLayouts(DriverFamily::CdnaMfma, 32).empty());
  CHECK(BuiltinLayouts(DriverFamily::NvidiaMma, 32).size() == 24);
  CHECK(BuiltinLayouts(DriverFamily::NvidiaMma, 64).empty());
  // Lookups by key: type-independent where the driver is, shapes it cannot hold rejected.
  CHECK(BuiltinLayout(DriverFamily::RadvGfx11, {kTypeU16, kUseAccumulator, 16, 16, 32}).has_value());
  CHECK(BuiltinLayout(DriverFamily::RadvGfx11, {kTypeF16, kUseA, 16, 32, 32}).has_value());  // NV flexible
  CHECK(BuiltinLayout(DriverFamily::RadvGfx12, {kTypeF32, kUseAccumulator, 128, 256, 64}).has_value());
  CHECK_FALSE(BuiltinLayout(DriverFamily::RadvGfx12, {kTypeF32, kUseAccumulator, 48, 16, 32}).has_value());  // not linear
  CHECK_FALSE(BuiltinLayout(DriverFamily::RadvGfx11, {kTypeF16, kUseB, 8, 16, 32}).has_value());  // below the granularity
  CHECK_FALSE(BuiltinLayout(DriverFamily::Lavapipe, {kTypeF16, kUseA, 24, 16, 8}).has_value());  // not linear
  CHECK(BuiltinLayout(DriverFamily::Lavapipe, {kTypeF16, kUseB, 64, 128, 8}).has_value());
  CHECK_FALSE(BuiltinLayout(DriverFamily::CdnaMfma, {kTypeF32, kUseA, 16, 16, 64}).has_value());
  CHECK_FALSE(BuiltinLayout(DriverFamily::CdnaMfma, {kTypeF64, kUseAccumulator, 32, 32, 64}).has_value());
}

TEST_CASE("MFMA accumulators follow the seed's element -> lane/accVGPR formulas", "[layout][builtin][mfma]") {
  for (const LinearLayout& l : BuiltinLayouts(DriverFamily::CdnaMfma, 64)) {
    INFO(ToString(l.key));
    const bool f64 = l.key.componentType == kTypeF64;
    const uint32_t M = l.key.cols;  // every tile is square: M = N = cols, blocks stacked in rows
    bool allMatch = true;
    for (uint32_t row = 0; row < l.key.rows; ++row)
      for (uint32_t j = 0; j < l.key.cols; ++j) {
        const uint32_t b = row / M, i = row % M;
        Slot want;
        if (f64 && M == 16) want = {16 * (i % 4) + j, i / 4};
        else if (f64) want = {16 * i + 4 * b + j, 0};
        else if (M == 32) want = {(32 * (i / 4)) % 64 + j, 16 * b + 4 * (i / 8) + i % 4};
        else if (M == 16) want = {16 * (i / 4) + j, 4 * b + i % 4};
        else want = {4 * b + j, i};
        std::vector<Slot> owners = l.Owners(row, j);
        if (owners.size() != 1 || !(owners[0] == want) || !(l.Owner(row, j) == want)) {
          UNSCOPED_INFO("element (" << row << ", " << j << ") expected lane " << want.lane << " register "
                                    << want.index);
          allMatch = false;
        }
      }
    CHECK(allMatch);
  }
  // layouts.md 5.4 item 2: register pair v[3:2] (pair 1) at lane 16 holds D[5][0].
  auto f64 = BuiltinLayout(DriverFamily::CdnaMfma, {kTypeF64, kUseAccumulator, 16, 16, 64});
  REQUIRE(f64);
  CHECK(f64->CoordinateOf(16, 1) == Coord{5, 0});
}

TEST_CASE("fitted bases equal the table in layouts.md section 9", "[layout][builtin]") {
  auto basis = [](DriverFamily family, LayoutKey key) {
    auto l = BuiltinLayout(family, key);
    REQUIRE(l);
    std::string text = FormatLayout(*l);
    return text.substr(text.find(" lane="));
  };
  // GFX11 accumulator w32: L0-3 -> c0-3, L4 -> r0, e0-2 -> r1-3.
  CHECK(basis(DriverFamily::RadvGfx11, {kTypeF32, kUseAccumulator, 16, 16, 32}) == " lane=c0,c1,c2,c3,r0 index=r1,r2,r3");
  // w64: L5 -> r1, e0-1 -> r2-3.
  CHECK(basis(DriverFamily::RadvGfx11, {kTypeF32, kUseAccumulator, 16, 16, 64}) ==
        " lane=c0,c1,c2,c3,r0,r1 index=r2,r3");
  // GFX11 A: L0-3 -> r0-3, L4 (and L5) -> nothing, e0-3 -> c0-3.
  CHECK(basis(DriverFamily::RadvGfx11, {kTypeF16, kUseA, 16, 16, 32}) == " lane=r0,r1,r2,r3,0 index=c0,c1,c2,c3");
  CHECK(basis(DriverFamily::RadvGfx11, {kTypeF16, kUseA, 16, 16, 64}) == " lane=r0,r1,r2,r3,0,0 index=c0,c1,c2,c3");
  // GFX12 accumulator/B w32: L4 -> r3, e0-2 -> r0-2; w64: L4 -> r3, L5 -> r2, e0-1 -> r0-1.
  CHECK(basis(DriverFamily::RadvGfx12, {kTypeF32, kUseAccumulator, 16, 16, 32}) == " lane=c0,c1,c2,c3,r3 index=r0,r1,r2");
  CHECK(basis(DriverFamily::RadvGfx12, {kTypeF16, kUseB, 16, 16, 64}) == " lane=c0,c1,c2,c3,r3,r2 index=r0,r1");
  // RADV under NV flexible dimensions: the 16x16 basis, then the tile's column
  // bits, then its row bits, in the index.
  CHECK(basis(DriverFamily::RadvGfx11, {kTypeF32, kUseAccumulator, 32, 32, 32}) ==
        " lane=c0,c1,c2,c3,r0 index=r1,r2,r3,c4,r4");
  CHECK(basis(DriverFamily::RadvGfx11, {kTypeF16, kUseA, 16, 32, 32}) == " lane=r0,r1,r2,r3,0 index=c0,c1,c2,c3,c4");
  CHECK(basis(DriverFamily::RadvGfx12, {kTypeF16, kUseB, 32, 16, 64}) == " lane=c0,c1,c2,c3,r3,r2 index=r0,r1,r4");
  // MFMA 16x16 accumulator: L0-3 -> c0-3, L4-5 -> r2-3, e0-1 -> r0-1.
  CHECK(basis(DriverFamily::CdnaMfma, {kTypeF32, kUseAccumulator, 16, 16, 64}) == " lane=c0,c1,c2,c3,r2,r3 index=r0,r1");
  // lavapipe A/accumulator: L0-2 -> c0-2, e0-2 -> r0-2; 16x16 adds e3 -> c3, e4 -> r3.
  CHECK(basis(DriverFamily::Lavapipe, {kTypeF16, kUseA, 8, 8, 8}) == " lane=c0,c1,c2 index=r0,r1,r2");
  CHECK(basis(DriverFamily::Lavapipe, {kTypeF32, kUseAccumulator, 16, 16, 8}) == " lane=c0,c1,c2 index=r0,r1,r2,c3,r3");
}

// The RADV tables' larger shapes against their own 16x16 entries: Mesa splits an
// NV flexible-dimension matrix into 16x16 matrices (row-major tile order, index =
// tile * 16x16 length + index in the tile), each with the 16x16 layout.
TEST_CASE("RADV's flexible shapes are row-major tiles of its 16x16 layouts", "[layout][builtin]") {
  size_t checked = 0;
  for (DriverFamily family : {DriverFamily::RadvGfx11, DriverFamily::RadvGfx12})
    for (uint32_t S : {32u, 64u})
      for (const LinearLayout& l : BuiltinLayouts(family, S)) {
        if (l.key.rows == 16 && l.key.cols == 16) continue;
        INFO(ToString(family) << " " << ToString(l.key));
        const auto tile = BuiltinLayout(family, {l.key.componentType, l.key.use, 16, 16, S});
        REQUIRE(tile);
        const uint32_t tilesPerRow = l.key.cols / 16;
        REQUIRE(l.length == tile->length * (l.key.rows / 16) * tilesPerRow);
        CHECK(l.Replicas() == tile->Replicas());
        bool allMatch = true;
        for (uint32_t L = 0; L < S; ++L)
          for (uint32_t e = 0; e < l.length; ++e) {
            const uint32_t t = e / tile->length;
            const Coord in = tile->CoordinateOf(L, e % tile->length);
            allMatch &= l.CoordinateOf(L, e) == Coord{16 * (t / tilesPerRow) + in.row, 16 * (t % tilesPerRow) + in.col};
          }
        CHECK(allMatch);
        ++checked;
      }
  CHECK(checked == 2 * (13 + 17) * 8);
  // One slot worked by hand from Mesa's code: GFX12 wave32, 32x32 accumulator, lane
  // 17 index 9 is tile 1 (columns 16-31), its index 1: row base(17) + 1 = 9, column 17.
  CHECK(BuiltinLayout(DriverFamily::RadvGfx12, {kTypeF32, kUseAccumulator, 32, 32, 32})->CoordinateOf(17, 9) == Coord{9, 17});
  // GFX11 wave64, 32x32 A: lane 35 index 40 is tile 2 (rows 16-31, columns 0-15), its
  // index 8: (16 + (35 & 15), 8), replicated in lanes 3, 19 and 51.
  CHECK(BuiltinLayout(DriverFamily::RadvGfx11, {kTypeF16, kUseA, 32, 32, 64})->CoordinateOf(35, 40) == Coord{19, 8});
}

TEST_CASE("fitting reproduces every built-in from its slots and from the test's formulas", "[layout][fit]") {
  for (DriverFamily family : kFamilies)
    for (uint32_t S : {8u, 32u, 64u})
      for (const LinearLayout& l : BuiltinLayouts(family, S)) {
        INFO(ToString(family) << " " << ToString(l.key));
        std::vector<Coord> observed;
        for (uint32_t L = 0; L < S; ++L)
          for (uint32_t e = 0; e < l.length; ++e) observed.push_back(l.CoordinateOf(L, e));
        FitResult fromSlots = FitLinearLayout(l.key, observed);
        REQUIRE(fromSlots.ok);
        CHECK(fromSlots.layout == l);
        Expectation want = Expected(family, l.key);
        FitResult fromFormula = FitLinearLayout(l.key, Enumerate(l.key, want.length, want.at));
        REQUIRE(fromFormula.ok);
        CHECK(fromFormula.layout == l);
      }
}

TEST_CASE("fitting rejects what is not a linear layout, with a reason", "[layout][fit][malformed]") {
  const LayoutKey lvp{kTypeF32, kUseAccumulator, 8, 8, 8};
  const std::vector<Coord> good = Enumerate(lvp, 8, LavapipeAOrAcc);
  REQUIRE(FitLinearLayout(lvp, good).ok);

  SECTION("a random permutation of the elements") {
    std::vector<Coord> shuffled = good;
    std::mt19937 rng(1234);
    std::shuffle(shuffled.begin() + 1, shuffled.end(), rng);  // keep (0, 0) at slot 0
    FitResult r = FitLinearLayout(lvp, shuffled);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, ContainsSubstring("not linear") && ContainsSubstring("fitted"));
  }
  SECTION("an affine map (the whole layout shifted by one row)") {
    std::vector<Coord> shifted = good;
    for (Coord& c : shifted) c.row ^= 1;
    FitResult r = FitLinearLayout(lvp, shifted);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, ContainsSubstring("lane 0 index 0 holds (1, 0)"));
  }
  SECTION("inconsistent replication") {
    const LayoutKey a{kTypeF16, kUseA, 16, 16, 32};
    std::vector<Coord> observed = Enumerate(a, 16, Gfx11A);
    REQUIRE(FitLinearLayout(a, observed).ok);
    observed[16 * 16 + 3] = {0, 4};  // lane 16 index 3: one replica of (0, 3) now holds (0, 4)
    FitResult r = FitLinearLayout(a, observed);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, ContainsSubstring("element (0, 3) is held by 1 slots, expected 2"));
  }
  SECTION("a coordinate outside the matrix") {
    std::vector<Coord> observed = good;
    observed[5 * 8 + 2] = {8, 0};
    FitResult r = FitLinearLayout(lvp, observed);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, ContainsSubstring("lane 5 index 2 holds (8, 0), outside the 8x8 matrix"));
  }
  SECTION("slots that cannot cover the matrix evenly") {
    std::vector<Coord> observed(8 * 3);  // length 3
    FitResult r = FitLinearLayout(lvp, observed);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, ContainsSubstring("not a multiple of the 64 elements"));
    r = FitLinearLayout(lvp, std::vector<Coord>(7));
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, ContainsSubstring("not a nonzero multiple of the subgroup size"));
    CHECK_FALSE(FitLinearLayout(lvp, {}).ok);
  }
  SECTION("a full cover that is not a power of two (lavapipe 24x16)") {
    const LayoutKey tall{kTypeF32, kUseAccumulator, 24, 16, 8};
    FitResult r = FitLinearLayout(tall, Enumerate(tall, 24 * 16 / 8, LavapipeAOrAcc));
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, ContainsSubstring("not linear: rows 24 is not a power of two"));
  }
  SECTION("the key itself") {
    CHECK_THAT(FitLinearLayout({kTypeF32, 3, 8, 8, 8}, good).error, ContainsSubstring("use 3"));
    CHECK_THAT(FitLinearLayout({kTypeF32, kUseA, 8, 8, 0}, good).error, ContainsSubstring("nonzero"));
  }
}

// Issue 15 / review 2 finding 2: the layer's choice between what its probe read and a
// built-in table.
TEST_CASE("probed layouts win over tables; a table stands in only where nothing was read, inside its versions",
          "[layer-policy][builtin]") {
  const uint32_t mesa2616 = 26u << 22 | 1u << 12 | 6u, mesa2630 = 26u << 22 | 3u << 12, mesa2510 = 25u << 22 | 1u << 12;
  const std::vector<LayoutKey> keys = {{kTypeF16, kUseA, 16, 16, 32}, {kTypeF16, kUseB, 16, 16, 32}, {kTypeF32, kUseAccumulator, 16, 16, 32}};
  // A probe that contradicts the table (the early GFX12 B order of layouts.md 4.2:
  // k = 4g + e + (e & 4) in wave32) wins.
  const LinearLayout table = *BuiltinLayout(DriverFamily::RadvGfx12, keys[1]);
  const auto early = ParseLayouts("layout type=f16 use=B rows=16 cols=16 subgroup=32 length=8 lane=c0,c1,c2,c3,r2 index=r0,r1,r3\n");
  REQUIRE(early.ok);
  REQUIRE_FALSE(early.layouts[0] == table);
  LayoutChoice choice = ChooseLayouts(early.layouts, true, DriverFamily::RadvGfx12, mesa2616, keys);
  CHECK_FALSE(choice.builtin);
  REQUIRE(choice.layouts.size() == 1);
  CHECK(choice.layouts[0] == early.layouts[0]);
  // Nothing read: the table, inside its range only.
  choice = ChooseLayouts({}, false, DriverFamily::RadvGfx12, mesa2616, keys);
  CHECK(choice.builtin);
  CHECK(choice.layouts.size() == 3);
  for (uint32_t outside : {mesa2630, mesa2510}) {
    choice = ChooseLayouts({}, false, DriverFamily::RadvGfx12, outside, keys);
    CHECK(choice.layouts.empty());
    CHECK_THAT(choice.refusal, ContainsSubstring("read from driver versions 25.2.0 to 26.2.1023"));
  }
  CHECK(ChooseLayouts({}, false, DriverFamily::RadvGfx11, mesa2510, keys).builtin);  // GFX11's one layout since 23.3
  // Slots read that fit nothing: no table either.
  choice = ChooseLayouts({}, true, DriverFamily::RadvGfx12, mesa2616, keys);
  CHECK(choice.layouts.empty());
  CHECK_THAT(choice.refusal, ContainsSubstring("not trusted"));
  // Unknown families and the hypothetical NVIDIA table are never used unprobed.
  CHECK(ChooseLayouts({}, false, std::nullopt, mesa2616, keys).layouts.empty());
  CHECK(ChooseLayouts({}, false, DriverFamily::NvidiaMma, mesa2616, keys).layouts.empty());
  CHECK(DriverVersionString(mesa2616) == "26.1.6");
}

// Review 130c39d finding 3: the table's shapes beyond the probed tiles (NV flexible
// dimensions) only where the table can be trusted: inside its driver versions, and at
// each subgroup size only for types whose probed layout fitted there.
TEST_CASE("table shapes beyond the probe only inside the driver range and where the probe fitted", "[layout][builtin]") {
  const DriverFamily radv = DriverFamily::RadvGfx11;
  const uint32_t inRange = 24u << 22 | 1u << 12, outOfRange = 27u << 22;  // Mesa 24.1.0, 27.0.0
  // The probe fitted f16 A at wave32 and wave64; f32 Acc at wave32 only (at wave64 its
  // slots fit nothing).
  std::vector<LinearLayout> probed;
  for (const LayoutKey& key : {LayoutKey{kTypeF16, kUseA, 16, 16, 32}, LayoutKey{kTypeF16, kUseA, 16, 16, 64},
                               LayoutKey{kTypeF32, kUseAccumulator, 16, 16, 32}})
    probed.push_back(*BuiltinLayout(radv, key));
  auto has = [](const std::vector<LinearLayout>& layouts, const LayoutKey& key) {
    return std::any_of(layouts.begin(), layouts.end(), [&](const LinearLayout& l) { return l.key == key; });
  };
  const std::vector<LinearLayout> extended = WithBuiltinShapes(probed, radv, {32, 64}, inRange);
  CHECK(has(extended, {kTypeF16, kUseA, 32, 32, 32}));
  CHECK(has(extended, {kTypeF16, kUseA, 32, 32, 64}));
  CHECK(has(extended, {kTypeF32, kUseAccumulator, 32, 32, 32}));
  CHECK_FALSE(has(extended, {kTypeF32, kUseAccumulator, 16, 16, 64}));  // the probe's "fit nothing" stands
  CHECK_FALSE(has(extended, {kTypeF32, kUseAccumulator, 32, 32, 64}));
  // Outside the versions the table was read from: the probed layouts alone, unless the
  // user named the family (the builtin_layouts setting).
  CHECK(WithBuiltinShapes(probed, radv, {32, 64}, outOfRange).size() == probed.size());
  CHECK(WithBuiltinShapes(probed, radv, {32, 64}, outOfRange, true).size() == extended.size());
  // A probed layout the table disagrees with: nothing from the table.
  std::vector<LinearLayout> differing = probed;
  differing[0] = *BuiltinLayout(radv, {kTypeF16, kUseB, 16, 16, 32});
  differing[0].key.use = kUseA;
  CHECK(WithBuiltinShapes(differing, radv, {32, 64}, inRange).size() == differing.size());
}
