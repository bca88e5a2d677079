// What the lowerings consume: bit roles, owners, reduction recipes (simulated
// on the CPU against a plain sum), relayout maps, and the text form.
#include <coopmat/layout.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <random>
#include <set>

using namespace coopmat;
using Catch::Matchers::ContainsSubstring;

namespace {

std::vector<LinearLayout> AllBuiltins() {
  std::vector<LinearLayout> all;
  for (DriverFamily family :
       {DriverFamily::Lavapipe, DriverFamily::RadvGfx11, DriverFamily::RadvGfx12, DriverFamily::CdnaMfma})
    for (uint32_t S : {8u, 32u, 64u})
      for (LinearLayout& l : BuiltinLayouts(family, S)) all.push_back(std::move(l));
  return all;
}

LinearLayout Builtin(DriverFamily family, LayoutKey key) {
  auto l = BuiltinLayout(family, key);
  REQUIRE(l);
  return *l;
}

// Two hand-made layouts the drivers do not produce, for the general paths:
// a lane bit that moves row and column at once, and an index bit that
// replicates within a lane.
LinearLayout MixedBitLayout() {
  return {{kTypeF32, kUseAccumulator, 4, 4, 4}, 4, {{1, 1}, {0, 2}}, {{0, 1}, {2, 0}}};
}
LinearLayout IndexReplicaLayout() {
  return {{kTypeF32, kUseAccumulator, 2, 2, 2}, 4, {{0, 1}}, {{1, 0}, {0, 0}}};
}

// Runs a recipe the way a lowering would emit it, on uint32 values (wrapping
// sums, so the check is exact) and returns per-slot results.
std::vector<uint32_t> RunRecipe(const LinearLayout& l, const ReductionRecipe& recipe, std::vector<uint32_t> v) {
  const uint32_t S = l.key.subgroupSize, len = l.length;
  for (const ReduceStep& step : recipe.Steps()) {
    std::vector<uint32_t> next(v.size());
    for (uint32_t L = 0; L < S; ++L)
      for (uint32_t e = 0; e < len; ++e)
        next[L * len + e] = v[L * len + e] + v[(L ^ step.laneXor) * len + (e ^ step.indexXor)];
    v = std::move(next);
  }
  return v;
}

// Checks the recipe for reduceMask on random data against a plain sum over
// each group of elements (rowBits/colBits: the coordinate bits that vary in a group).
void CheckReduction(const LinearLayout& l, uint32_t reduceMask, uint32_t rowBits, uint32_t colBits, uint32_t seed) {
  std::mt19937 rng(seed);
  const uint32_t R = l.key.rows, C = l.key.cols;
  std::vector<uint32_t> matrix(size_t{R} * C);
  for (uint32_t& x : matrix) x = rng();
  std::vector<uint32_t> slots(size_t{l.key.subgroupSize} * l.length);
  for (uint32_t L = 0; L < l.key.subgroupSize; ++L)
    for (uint32_t e = 0; e < l.length; ++e) {
      Coord c = l.CoordinateOf(L, e);
      slots[L * l.length + e] = matrix[c.row * C + c.col];  // replicas hold equal values
    }
  ReductionRecipe recipe = RecipeForReduce(l, reduceMask);
  std::vector<uint32_t> result = RunRecipe(l, recipe, slots);
  bool allMatch = true;
  for (uint32_t L = 0; L < l.key.subgroupSize; ++L)
    for (uint32_t e = 0; e < l.length; ++e) {
      Coord c = l.CoordinateOf(L, e);
      uint32_t expected = 0;
      for (uint32_t r = 0; r < R; ++r)
        for (uint32_t col = 0; col < C; ++col)
          if (((r ^ c.row) & ~rowBits) == 0 && ((col ^ c.col) & ~colBits) == 0) expected += matrix[r * C + col];
      if (result[L * l.length + e] != expected) allMatch = false;
    }
  CHECK(allMatch);
  // Index steps come first and are pure; the drivers' layouts need no mixed step.
  for (uint32_t x : recipe.indexXors) CHECK(x != 0);
  for (uint32_t x : recipe.laneXors) CHECK(x != 0);
}

}  // namespace

TEST_CASE("bit roles and replica moves", "[layout][roles]") {
  LinearLayout acc32 = Builtin(DriverFamily::RadvGfx11, {kTypeF32, kUseAccumulator, 16, 16, 32});
  CHECK(acc32.LaneBitsAlongRow() == 0xF);
  CHECK(acc32.LaneBitsAlongColumn() == 0x10);
  CHECK(acc32.IndexBitsAlongRow() == 0);
  CHECK(acc32.IndexBitsAlongColumn() == 0x7);
  CHECK(acc32.ReplicaLaneBits() == 0);
  CHECK(acc32.ReplicaMoves().empty());

  LinearLayout a64 = Builtin(DriverFamily::RadvGfx11, {kTypeF16, kUseA, 16, 16, 64});
  CHECK(a64.ReplicaLaneBits() == 0x30);
  CHECK(a64.IndexBitsAlongRow() == 0xF);
  CHECK(a64.LaneBitsAlongColumn() == 0xF);
  CHECK(a64.ReplicaMoves() == std::vector<Slot>{{16, 0}, {32, 0}});
  CHECK(a64.Replicas() == 4);

  LinearLayout lvpB = Builtin(DriverFamily::Lavapipe, {kTypeF16, kUseB, 16, 16, 8});
  CHECK(lvpB.LaneBitsAlongColumn() == 0x7);
  CHECK(lvpB.IndexBitsAlongRow() == 0xF);  // e0-2 -> c0-2, e3 -> c3: a row of two tiles
  CHECK(lvpB.IndexBitsAlongColumn() == 0x10);

  LinearLayout mixed = MixedBitLayout();
  REQUIRE(ValidateLayout(mixed).empty());
  CHECK(mixed.LaneBitsAlongRow() == 0x2);
  CHECK(mixed.LaneBitsAlongColumn() == 0);  // lane bit 0 moves both ways: in no mask
  CHECK(IndexReplicaLayout().ReplicaMoves() == std::vector<Slot>{{0, 2}});
  CHECK(IndexReplicaLayout().Replicas() == 2);
}

TEST_CASE("owners invert the map for every built-in, replicas included", "[layout][owners]") {
  for (const LinearLayout& l : AllBuiltins()) {
    INFO(ToString(l.key));
    const uint32_t replicas = l.Replicas();
    bool allMatch = true;
    std::set<std::pair<uint32_t, uint32_t>> seen;
    for (uint32_t row = 0; row < l.key.rows; ++row)
      for (uint32_t col = 0; col < l.key.cols; ++col) {
        std::vector<Slot> owners = l.Owners(row, col);
        if (owners.size() != replicas || !(owners[0] == l.Owner(row, col))) allMatch = false;
        if ((owners[0].lane & l.ReplicaLaneBits()) != 0) allMatch = false;  // canonical: replica bits clear
        for (const Slot& s : owners) {
          if (!(l.CoordinateOf(s.lane, s.index) == Coord{row, col})) allMatch = false;
          if (!seen.insert({s.lane, s.index}).second) allMatch = false;
        }
      }
    CHECK(allMatch);
    CHECK(seen.size() == size_t{l.key.subgroupSize} * l.length);
  }
}

TEST_CASE("reduction recipes equal a plain sum on every layout", "[layout][reduce]") {
  std::vector<LinearLayout> layouts = AllBuiltins();
  layouts.push_back(MixedBitLayout());
  layouts.push_back(IndexReplicaLayout());
  uint32_t seed = 1;
  for (const LinearLayout& l : layouts) {
    INFO(ToString(l.key) << " " << FormatLayout(l));
    const uint32_t allRows = l.key.rows - 1, allCols = l.key.cols - 1;
    CheckReduction(l, kReduceRow, 0, allCols, seed++);
    CheckReduction(l, kReduceColumn, allRows, 0, seed++);
    CheckReduction(l, kReduceRow | kReduceColumn, allRows, allCols, seed++);
    if (l.key.rows >= 2 && l.key.cols >= 2) CheckReduction(l, kReduce2x2, 1, 1, seed++);
    const bool handMade = l.key.rows == 4 && l.key.cols == 4 && l.key.subgroupSize == 4;
    if (!handMade)
      for (uint32_t mask : {kReduceRow, kReduceColumn, kReduceRow | kReduceColumn, kReduce2x2})
        CHECK(RecipeForReduce(l, mask).mixed.empty());
  }
  // The column reduction of the hand-made layout needs the general step.
  ReductionRecipe column = RecipeForReduce(MixedBitLayout(), kReduceColumn);
  CHECK(column.mixed == std::vector<ReduceStep>{{1, 1}});
  CHECK(column.indexXors == std::vector<uint32_t>{2});
}

TEST_CASE("reduction recipes are the fast paths layouts.md describes", "[layout][reduce]") {
  // GFX11 accumulator (section 3.1): a row is 4 XOR shuffles inside each
  // 16-lane group; a column combines the registers, then shuffles by 16 (and 32).
  for (uint32_t S : {32u, 64u}) {
    INFO("wave" << S);
    LinearLayout acc = Builtin(DriverFamily::RadvGfx11, {kTypeF32, kUseAccumulator, 16, 16, S});
    ReductionRecipe row = RecipeForReduce(acc, kReduceRow);
    CHECK(row.indexXors.empty());
    CHECK(row.laneXors == std::vector<uint32_t>{1, 2, 4, 8});
    ReductionRecipe column = RecipeForReduce(acc, kReduceColumn);
    CHECK(column.indexXors == (S == 32 ? std::vector<uint32_t>{1, 2, 4} : std::vector<uint32_t>{1, 2}));
    CHECK(column.laneXors == (S == 32 ? std::vector<uint32_t>{16} : std::vector<uint32_t>{16, 32}));
    // Replicated A: a row lives in one lane; the replica lanes are skipped.
    LinearLayout a = Builtin(DriverFamily::RadvGfx11, {kTypeF16, kUseA, 16, 16, S});
    ReductionRecipe aRow = RecipeForReduce(a, kReduceRow);
    CHECK(aRow.indexXors == std::vector<uint32_t>{1, 2, 4, 8});
    CHECK(aRow.laneXors.empty());
    CHECK(RecipeForReduce(a, kReduceColumn).laneXors == std::vector<uint32_t>{1, 2, 4, 8});
  }
  // lavapipe 8x8 accumulator: a row is spread over the lanes, a column is one lane.
  LinearLayout lvp = Builtin(DriverFamily::Lavapipe, {kTypeF32, kUseAccumulator, 8, 8, 8});
  CHECK(RecipeForReduce(lvp, kReduceRow).laneXors == std::vector<uint32_t>{1, 2, 4});
  CHECK(RecipeForReduce(lvp, kReduceColumn).indexXors == std::vector<uint32_t>{1, 2, 4});
  ReductionRecipe quad = RecipeForReduce(lvp, kReduce2x2);
  CHECK(quad.indexXors == std::vector<uint32_t>{1});
  CHECK(quad.laneXors == std::vector<uint32_t>{1});
}

TEST_CASE("relayout maps between uses", "[layout][relayout]") {
  SECTION("every pair of same-shape built-ins gathers the right element") {
    std::vector<LinearLayout> all = AllBuiltins();
    size_t pairs = 0;
    for (const LinearLayout& from : all)
      for (const LinearLayout& to : all) {
        if (from.key.componentType != to.key.componentType && from.key.use == to.key.use) continue;
        auto r = DescribeRelayout(from, to);
        if (from.key.rows != to.key.rows || from.key.cols != to.key.cols ||
            from.key.subgroupSize != to.key.subgroupSize) {
          CHECK_FALSE(r.has_value());
          continue;
        }
        REQUIRE(r.has_value());
        ++pairs;
        bool allMatch = true;
        for (uint32_t L = 0; L < to.key.subgroupSize; ++L)
          for (uint32_t e = 0; e < to.length; ++e) {
            Slot s = r->Source(L, e);
            if (s.lane >= from.key.subgroupSize || s.index >= from.length ||
                !(from.CoordinateOf(s.lane, s.index) == to.CoordinateOf(L, e)))
              allMatch = false;
          }
        INFO(ToString(from.key) << " -> " << ToString(to.key) << ": " << r->Describe());
        CHECK(allMatch);
        CHECK(r->identical == (from.laneBits == to.laneBits && from.indexBits == to.indexBits));
      }
    CHECK(pairs > 100);
  }
  SECTION("GFX12 B <-> accumulator is a copy, A a bit permutation") {
    LinearLayout acc = Builtin(DriverFamily::RadvGfx12, {kTypeF32, kUseAccumulator, 16, 16, 32});
    LinearLayout b = Builtin(DriverFamily::RadvGfx12, {kTypeF16, kUseB, 16, 16, 32});
    LinearLayout a = Builtin(DriverFamily::RadvGfx12, {kTypeF16, kUseA, 16, 16, 32});
    CHECK(DescribeRelayout(acc, b)->Describe() == "copy");
    Relayout toA = *DescribeRelayout(acc, a);
    CHECK_FALSE(toA.identical);
    CHECK_FALSE(toA.sameLane);
    CHECK(toA.bitPermutation);
    // A (h, base+e) against the accumulator (base+e, h): the transpose swaps
    // the lane bits for rows with the index bits, and L3/L4 trade places.
    CHECK(toA.Describe() == "L0<-e0 L1<-e1 L2<-e2 L3<-L4 L4<-L3 e0<-L0 e1<-L1 e2<-L2");
  }
  SECTION("lavapipe accumulator -> B transposes lane and index bits") {
    LinearLayout acc = Builtin(DriverFamily::Lavapipe, {kTypeF32, kUseAccumulator, 8, 8, 8});
    LinearLayout b = Builtin(DriverFamily::Lavapipe, {kTypeF16, kUseB, 8, 8, 8});
    Relayout r = *DescribeRelayout(acc, b);
    CHECK(r.bitPermutation);
    CHECK_FALSE(r.sameLane);
    CHECK(r.Describe() == "L0<-e0 L1<-e1 L2<-e2 e0<-L0 e1<-L1 e2<-L2");
    CHECK(DescribeRelayout(acc, Builtin(DriverFamily::Lavapipe, {kTypeF16, kUseA, 8, 8, 8}))->identical);
  }
  SECTION("GFX11 accumulator -> replicated A: replica lanes read the same source") {
    LinearLayout acc = Builtin(DriverFamily::RadvGfx11, {kTypeF32, kUseAccumulator, 16, 16, 32});
    LinearLayout a = Builtin(DriverFamily::RadvGfx11, {kTypeF16, kUseA, 16, 16, 32});
    Relayout r = *DescribeRelayout(acc, a);
    CHECK(r.laneBitSources[4] == Slot{0, 0});
    CHECK_FALSE(r.bitPermutation);
    CHECK_THAT(r.Describe(), ContainsSubstring("L4<-0"));
  }
  SECTION("a register-only permutation (tile order swapped) stays in each lane") {
    LinearLayout acc = Builtin(DriverFamily::Lavapipe, {kTypeF32, kUseAccumulator, 16, 16, 8});
    LinearLayout swapped = acc;
    std::swap(swapped.indexBits[3], swapped.indexBits[4]);  // column-major tile order
    Relayout r = *DescribeRelayout(acc, swapped);
    CHECK(r.sameLane);
    CHECK(r.bitPermutation);
    CHECK(r.Describe() == "e3<-e4 e4<-e3");
    CHECK(r.Source(5, 8) == Slot{5, 16});
  }
  SECTION("shapes or subgroup sizes that differ have no relayout") {
    LinearLayout acc32 = Builtin(DriverFamily::RadvGfx11, {kTypeF32, kUseAccumulator, 16, 16, 32});
    LinearLayout acc64 = Builtin(DriverFamily::RadvGfx11, {kTypeF32, kUseAccumulator, 16, 16, 64});
    CHECK_FALSE(DescribeRelayout(acc32, acc64).has_value());
  }
}

TEST_CASE("text form round-trips and is stable", "[layout][text]") {
  for (const LinearLayout& l : AllBuiltins()) {
    ParseResult one = ParseLayouts(FormatLayout(l));
    INFO(FormatLayout(l) << " " << one.error);
    REQUIRE(one.ok);
    REQUIRE(one.layouts.size() == 1);
    CHECK(one.layouts[0] == l);
  }
  // A file holds one device's layouts: one family's table at a time.
  for (DriverFamily family : {DriverFamily::Lavapipe, DriverFamily::RadvGfx11, DriverFamily::RadvGfx12, DriverFamily::CdnaMfma}) {
    INFO(ToString(family));
    std::string all = "# built-in layouts\n\n";
    std::vector<LinearLayout> layouts;
    for (uint32_t S : {8u, 32u, 64u})
      for (LinearLayout& l : BuiltinLayouts(family, S)) {
        all += FormatLayout(l) + "\n";
        layouts.push_back(std::move(l));
      }
    ParseResult many = ParseLayouts(all);
    REQUIRE(many.ok);
    CHECK(many.layouts == layouts);
  }

  CHECK(FormatLayout(Builtin(DriverFamily::RadvGfx11, {kTypeF32, kUseAccumulator, 16, 16, 32})) ==
        "layout type=f32 use=Acc rows=16 cols=16 subgroup=32 length=8 lane=c0,c1,c2,c3,r0 index=r1,r2,r3");
  CHECK(FormatLayout(MixedBitLayout()) ==
        "layout type=f32 use=Acc rows=4 cols=4 subgroup=4 length=4 lane=r0+c0,c1 index=c0,r1");
  LinearLayout f64x4 = Builtin(DriverFamily::CdnaMfma, {kTypeF64, kUseAccumulator, 16, 4, 64});
  CHECK(FormatLayout(f64x4) == "layout type=f64 use=Acc rows=16 cols=4 subgroup=64 length=1 "
                               "lane=c0,c1,r2,r3,r0,r1 index=-");
  // Unknown component types travel as numbers; fields may come in any order, with extra spaces.
  ParseResult other = ParseLayouts("  layout  use=B type=1000672004 rows=8 cols=8 subgroup=8 length=8 "
                                   "lane=r0,r1,r2 index=c0,c1,c2\r\n");
  REQUIRE(other.ok);
  CHECK(other.layouts[0].key == LayoutKey{1000672004, kUseB, 8, 8, 8});
  CHECK(FormatLayout(other.layouts[0]).find("type=1000672004 use=B") != std::string::npos);
  CHECK(ParseLayouts("").ok);
}

TEST_CASE("malformed layout text is rejected with a message", "[layout][text][malformed]") {
  const std::string good = "layout type=f16 use=A rows=8 cols=8 subgroup=8 length=8 lane=c0,c1,c2 index=r0,r1,r2";
  REQUIRE(ParseLayouts(good).ok);
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };
  const std::pair<std::string, std::string> cases[] = {
      {"layouts type=f16", "starting with 'layout'"},
      {replace("layout ", "lay "), "starting with 'layout'"},
      {replace(" length=8", ""), "missing field 'length'"},
      {good + " rows=8", "field 'rows' repeated"},
      {good + " stride=8", "unknown field 'stride'"},
      {good + " junk", "is not name=value"},
      {replace("rows=8", "rows=abc"), "field 'rows' is not a number"},
      {replace("rows=8", "rows=-8"), "field 'rows' is not a number"},
      {replace("rows=8", "rows=99999999999"), "field 'rows' is not a number"},
      {replace("rows=8", "rows=12"), "rows 12 is not a power of two"},
      {replace("rows=8", "rows=0"), "rows 0 is not a power of two"},
      {replace("use=A", "use=C"), "use 'C' is not A, B or Acc"},
      {replace("type=f16", "type=f99"), "unknown component type 'f99'"},
      {replace("c0,c1,c2", "x0,c1,c2"), "bad image term 'x0'"},
      {replace("c0,c1,c2", "c,c1,c2"), "bad image term 'c'"},
      {replace("c0,c1,c2", "c0,,c2"), "bad image term ''"},
      {replace("c0,c1,c2", "c0+c0,c1,c2"), "'c0' repeated"},
      {replace("c0,c1,c2", "c0,c1,c2+r99"), "bad image term 'r99'"},
      {replace("c0,c1,c2", "c0,c1"), "needs 3 lane bit images, got 2"},
      {replace("length=8", "length=16"), "needs 4 index bit images, got 3"},
      {replace("c0,c1,c2", "c0,c1,c1"), "is held by no slot"},
      {replace("c0,c1,c2", "c0,c1,r3"), "lane bit 2 moves outside the matrix"},
      {replace("index=r0,r1,r2", "index=-"), "needs 3 index bit images, got 0"},
  };
  for (const auto& [text, message] : cases) {
    ParseResult r = ParseLayouts("# header\n" + text + "\n");
    INFO(text);
    CHECK_FALSE(r.ok);
    CHECK(r.layouts.empty());
    CHECK_THAT(r.error, ContainsSubstring("line 2: ") && ContainsSubstring(message));
  }
  // A bad line after good ones discards the good ones too.
  ParseResult mixed = ParseLayouts(good + "\n" + good + "\nlayout\n");
  CHECK_FALSE(mixed.ok);
  CHECK(mixed.layouts.empty());
  CHECK_THAT(mixed.error, ContainsSubstring("line 3: missing field"));
  // One layout per key: a repeat is dropped; a different one for the same key is an error
  // (the lowering would take whichever came first; review of 2026-12-07).
  ParseResult repeated = ParseLayouts(good + "\n" + good + "\n");
  REQUIRE(repeated.ok);
  CHECK(repeated.layouts.size() == 1);
  const std::string transposed = replace("lane=c0,c1,c2 index=r0,r1,r2", "lane=r0,r1,r2 index=c0,c1,c2");
  for (const std::string& text : {good + "\n" + transposed + "\n", transposed + "\n" + good + "\n"}) {
    ParseResult conflicting = ParseLayouts(text);
    INFO(text);
    CHECK_FALSE(conflicting.ok);
    CHECK(conflicting.layouts.empty());
    CHECK_THAT(conflicting.error, ContainsSubstring("line 2: a second, different layout for f16 A 8x8 subgroup 8"));
  }
}
