// Built-in expected layouts per driver family. Each one is the published
// formula (docs: layouts.md, lavapipe.md, seed 004) enumerated over every slot
// and fitted, so a formula that is not linear or not a full cover fails here
// instead of being typed in as a basis that might not match it.
#include <algorithm>
#include <functional>

#include "coopmat/layout.h"

namespace coopmat {
namespace {

struct Formula {
  uint32_t length = 0;
  std::function<Coord(const LayoutKey& key, uint32_t lane, uint32_t index)> at;
};

bool IsPow2(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

// lavapipe.md section 3: the 8x8 tile. Each lane holds one column of an
// A/Accumulator tile and one row of a B tile.
std::optional<Formula> LavapipeFormula(const LayoutKey& k) {
  if (k.subgroupSize != 8 || k.rows != 8 || k.cols != 8) return std::nullopt;
  if (k.use == kUseB) return Formula{8, [](const LayoutKey&, uint32_t L, uint32_t e) { return Coord{L, e}; }};
  return Formula{8, [](const LayoutKey&, uint32_t L, uint32_t e) { return Coord{e, L}; }};
}

// layouts.md section 3.1: A/B replicated in every 16-lane group, the
// accumulator spread over the groups.
std::optional<Formula> Gfx11Formula(const LayoutKey& k) {
  if ((k.subgroupSize != 32 && k.subgroupSize != 64) || k.rows != 16 || k.cols != 16) return std::nullopt;
  switch (k.use) {
    case kUseA:
      return Formula{16, [](const LayoutKey&, uint32_t L, uint32_t e) { return Coord{L & 15, e}; }};
    case kUseB:
      return Formula{16, [](const LayoutKey&, uint32_t L, uint32_t e) { return Coord{e, L & 15}; }};
    default:
      return Formula{256 / k.subgroupSize, [](const LayoutKey& key, uint32_t L, uint32_t e) {
                       return Coord{(key.subgroupSize / 16) * e + (L >> 4), L & 15};
                     }};
  }
}

// layouts.md section 4.1: one "C layout" for all uses, base(L) a bit reversal of
// the 16-lane group number.
uint32_t Gfx12Base(uint32_t subgroupSize, uint32_t L) {
  return subgroupSize == 32 ? 8 * (L >> 4) : 8 * ((L >> 4) & 1) + 4 * (L >> 5);
}
std::optional<Formula> Gfx12Formula(const LayoutKey& k) {
  if ((k.subgroupSize != 32 && k.subgroupSize != 64) || k.rows != 16 || k.cols != 16) return std::nullopt;
  const uint32_t length = 256 / k.subgroupSize;
  if (k.use == kUseA)
    return Formula{length, [](const LayoutKey& key, uint32_t L, uint32_t e) {
                     return Coord{L & 15, Gfx12Base(key.subgroupSize, L) + e};
                   }};
  return Formula{length, [](const LayoutKey& key, uint32_t L, uint32_t e) {
                   return Coord{Gfx12Base(key.subgroupSize, L) + e, L & 15};
                 }};
}

// Seed 004 register -> element formulas (layouts.md section 5.2), with index =
// accVGPR G (or f64 register pair k) and multi-block results stacked: row =
// M * b + i. Accumulator only, wave64 only.
std::optional<Formula> MfmaFormula(const LayoutKey& k) {
  if (k.subgroupSize != 64 || k.use != kUseAccumulator) return std::nullopt;
  const bool f64 = k.componentType == kTypeF64;
  if (!f64 && k.componentType != kTypeF32 && k.componentType != kTypeS32) return std::nullopt;
  using At = Coord (*)(const LayoutKey&, uint32_t, uint32_t);
  // 32x32: i = (8 floor(G/4)) mod 32 + 4 floor(L/32) + G mod 4, j = L mod 32, b = floor(G/16).
  At mfma32 = [](const LayoutKey&, uint32_t L, uint32_t G) {
    return Coord{32 * (G / 16) + (8 * (G / 4)) % 32 + 4 * (L / 32) + G % 4, L % 32};
  };
  // 16x16: i = 4 floor(L/16) + G mod 4, j = L mod 16, b = floor(G/4).
  At mfma16 = [](const LayoutKey&, uint32_t L, uint32_t G) { return Coord{16 * (G / 4) + 4 * (L / 16) + G % 4, L % 16}; };
  // 4x4, 16 blocks: i = G, j = L mod 4, b = floor(L/4).
  At mfma4 = [](const LayoutKey&, uint32_t L, uint32_t G) { return Coord{4 * (L / 4) + G, L % 4}; };
  // f64 16x16: i = 4k + floor(L/16), j = L mod 16.
  At f64x16 = [](const LayoutKey&, uint32_t L, uint32_t G) { return Coord{4 * G + L / 16, L % 16}; };
  // f64 4x4, 4 blocks: i = floor(L/16), j = L mod 4, b = floor((L mod 16)/4).
  At f64x4 = [](const LayoutKey&, uint32_t L, uint32_t) { return Coord{4 * ((L % 16) / 4) + L / 16, L % 4}; };
  const struct {
    bool f64;
    uint32_t rows, cols, length;
    At at;
  } shapes[] = {
      {false, 32, 32, 16, mfma32}, {false, 64, 32, 32, mfma32}, {false, 16, 16, 4, mfma16},
      {false, 64, 16, 16, mfma16}, {false, 64, 4, 4, mfma4},    {true, 16, 16, 4, f64x16},
      {true, 16, 4, 1, f64x4},
  };
  for (const auto& s : shapes)
    if (s.f64 == f64 && s.rows == k.rows && s.cols == k.cols) return Formula{s.length, s.at};
  return std::nullopt;
}

// PTX mma.sync fragments (m16n8k8/k16/k32) as NAK (NVK's compiler) lays out KHR
// matrices, read from its cooperative-matrix lowering: g = lane / 4, t = lane % 4;
// wider B and accumulators are n8 tiles side by side. f16: A 16x16 and 16x8, B
// 16x16, 16x8 and 8x8, accumulators 16x16 and 16x8; 8-bit: A 16x32, B 32x16 and
// 32x8, accumulators 16x16 and 16x8. Subgroup 32 only. Not verified on hardware.
bool Narrow(uint32_t type) { return type == kTypeU8 || type == kTypeS8 || type == kTypeE4M3 || type == kTypeE5M2; }
std::optional<Formula> NvidiaMmaFormula(const LayoutKey& k) {
  if (k.subgroupSize != 32) return std::nullopt;
  const uint32_t length = k.rows * k.cols / 32;
  if (k.use == kUseAccumulator) {
    if (k.rows != 16 || (k.cols != 16 && k.cols != 8)) return std::nullopt;
    return Formula{length, [](const LayoutKey&, uint32_t L, uint32_t i) {
                     return Coord{(L >> 2) + 8 * ((i >> 1) & 1), 2 * (L & 3) + (i & 1) + 8 * (i >> 2)};
                   }};
  }
  if (!Narrow(k.componentType)) {
    if (k.use == kUseA) {
      if (k.rows != 16 || (k.cols != 16 && k.cols != 8)) return std::nullopt;
      return Formula{length, [](const LayoutKey&, uint32_t L, uint32_t i) {
                       return Coord{(L >> 2) + 8 * ((i >> 1) & 1), 2 * (L & 3) + (i & 1) + 8 * (i >> 2)};
                     }};
    }
    if (!((k.rows == 16 && (k.cols == 16 || k.cols == 8)) || (k.rows == 8 && k.cols == 8))) return std::nullopt;
    return Formula{length, [](const LayoutKey&, uint32_t L, uint32_t i) {
                     return Coord{2 * (L & 3) + (i & 1) + 8 * ((i >> 1) & 1), (L >> 2) + 8 * (i >> 2)};
                   }};
  }
  if (k.use == kUseA) {
    if (k.rows != 16 || k.cols != 32) return std::nullopt;
    return Formula{16, [](const LayoutKey&, uint32_t L, uint32_t i) {
                     return Coord{(L >> 2) + 8 * ((i >> 2) & 1), 4 * (L & 3) + (i & 3) + 16 * (i >> 3)};
                   }};
  }
  if (k.rows != 32 || (k.cols != 16 && k.cols != 8)) return std::nullopt;
  if (k.cols == 8)
    return Formula{8, [](const LayoutKey&, uint32_t L, uint32_t i) {
                     return Coord{4 * (L & 3) + (i & 3) + 16 * (i >> 2), L >> 2};
                   }};
  // 32x16: two 32x8 B operands, elements 0-7 the first (NAK passes them to two 16x8
  // multiplies in that order), so index bit 2 moves K by 16 and bit 3 N by 8.
  return Formula{16, [](const LayoutKey&, uint32_t L, uint32_t i) {
                   return Coord{4 * (L & 3) + (i & 3) + 16 * ((i >> 2) & 1), (L >> 2) + 8 * (i >> 3)};
                 }};
}

std::optional<Formula> NativeFormula(DriverFamily family, const LayoutKey& key) {
  switch (family) {
    case DriverFamily::Lavapipe: return LavapipeFormula(key);
    case DriverFamily::RadvGfx11: return Gfx11Formula(key);
    case DriverFamily::RadvGfx12: return Gfx12Formula(key);
    case DriverFamily::CdnaMfma: return MfmaFormula(key);
    case DriverFamily::NvidiaMma: return NvidiaMmaFormula(key);
  }
  return std::nullopt;
}

// The native square tile of a family whose driver takes NV flexible dimensions by
// Mesa's split (nir_lower_cooperative_matrix_flexible_dimensions, granularity 8 on
// lavapipe, 16 on RADV: radv_shader.c), 0 for the others.
uint32_t FlexibleTile(DriverFamily family) {
  switch (family) {
    case DriverFamily::Lavapipe: return 8;
    case DriverFamily::RadvGfx11:
    case DriverFamily::RadvGfx12: return 16;
    default: return 0;
  }
}

// Mesa's split, read in src/compiler/nir/nir_lower_cooperative_matrix.c
// (split_cmat_load_store, split_cmat_extract, split_cmat_length) with RADV's caller
// in src/amd/vulkan/radv_shader.c and its 16x16 lowering (radv_nir_lower_cooperative_
// matrix.c asserts 16x16 on GFX11.7+), at sailfishos-mirror/mesa 0182ac0b and
// 1301eef2 (Mesa main of the GFX11.7 era): an R x C matrix is (R/tile) x (C/tile) native matrices in
// row-major tile order, and element index e is t * (tile length) + (its index in
// tile t). Tile counts that are not powers of two (lavapipe's 24x16) are not linear.
std::optional<Formula> FindFormula(DriverFamily family, const LayoutKey& key) {
  const uint32_t tile = FlexibleTile(family);
  if (!tile || (key.rows == tile && key.cols == tile)) return NativeFormula(family, key);
  if (key.rows % tile || key.cols % tile || key.rows > 1024 || key.cols > 1024) return std::nullopt;
  if (!IsPow2(key.rows / tile) || !IsPow2(key.cols / tile)) return std::nullopt;
  const LayoutKey tileKey{key.componentType, key.use, tile, tile, key.subgroupSize};
  const std::optional<Formula> native = NativeFormula(family, tileKey);
  if (!native) return std::nullopt;
  const uint32_t tilesPerRow = key.cols / tile;
  return Formula{native->length * (key.rows / tile) * tilesPerRow,
                 [native, tileKey, tilesPerRow](const LayoutKey&, uint32_t L, uint32_t e) {
                   const uint32_t t = e / native->length;
                   const Coord c = native->at(tileKey, L, e % native->length);
                   return Coord{tileKey.rows * (t / tilesPerRow) + c.row, tileKey.cols * (t % tilesPerRow) + c.col};
                 }};
}

struct Config {
  uint32_t use;
  std::vector<uint32_t> types;
};

}  // namespace

const char* ToString(DriverFamily family) {
  switch (family) {
    case DriverFamily::Lavapipe: return "lavapipe";
    case DriverFamily::RadvGfx11: return "radv-gfx11";
    case DriverFamily::RadvGfx12: return "radv-gfx12";
    case DriverFamily::CdnaMfma: return "cdna-mfma";
    case DriverFamily::NvidiaMma: return "nvidia-mma";
  }
  return "unknown";
}

namespace {
constexpr DriverFamily kFamilies[] = {DriverFamily::Lavapipe, DriverFamily::RadvGfx11, DriverFamily::RadvGfx12,
                                      DriverFamily::CdnaMfma, DriverFamily::NvidiaMma};
}  // namespace

std::optional<DriverFamily> DriverFamilyByName(std::string_view name) {
  for (DriverFamily family : kFamilies)
    if (name == ToString(family)) return family;
  return std::nullopt;
}

std::string DriverFamilyNames() {
  std::string names;
  for (DriverFamily family : kFamilies) names += (names.empty() ? "" : ", ") + std::string(ToString(family));
  return names;
}

namespace {
constexpr uint32_t MesaVersion(uint32_t major, uint32_t minor, uint32_t patch) { return major << 22 | minor << 12 | patch; }
}  // namespace

DriverVersionRange BuiltinDriverRange(DriverFamily family) {
  // Mesa 26.3 implements the extension for RADV and lavapipe, so the layer steps
  // aside there: the ranges end with 26.2. lavapipe: observed on 26.1.6
  // (lavapipe.md), so 26.1 and 26.2. GFX11: read from RADV's source, one layout
  // since its KHR support (23.3).
  // GFX12: the early A/B order (layouts.md 4.2) was 25.1-era development and the
  // release that switched to the C layout is not known: 25.2 and later only.
  switch (family) {
    case DriverFamily::Lavapipe: return {MesaVersion(26, 1, 0), MesaVersion(26, 2, 1023)};
    case DriverFamily::RadvGfx11: return {MesaVersion(23, 3, 0), MesaVersion(26, 2, 1023)};
    case DriverFamily::RadvGfx12: return {MesaVersion(25, 2, 0), MesaVersion(26, 2, 1023)};
    case DriverFamily::CdnaMfma:   // no Vulkan driver exposes these (layouts.md 5.1)
    case DriverFamily::NvidiaMma:  // NAK's layout, never run here (no NVIDIA GPU): only by the builtin_layouts setting
      return {};
  }
  return {};
}

std::string DriverVersionString(uint32_t v) {
  return std::to_string(v >> 22) + "." + std::to_string((v >> 12) & 0x3ff) + "." + std::to_string(v & 0xfff);
}

std::optional<LinearLayout> BuiltinLayout(DriverFamily family, const LayoutKey& key) {
  std::optional<Formula> formula = FindFormula(family, key);
  if (!formula) return std::nullopt;
  std::vector<Coord> observed;
  observed.reserve(size_t{key.subgroupSize} * formula->length);
  for (uint32_t lane = 0; lane < key.subgroupSize; ++lane)
    for (uint32_t index = 0; index < formula->length; ++index) observed.push_back(formula->at(key, lane, index));
  FitResult fit = FitLinearLayout(key, observed);
  if (!fit.ok) return std::nullopt;  // a formula that does not fit is a bug; the tests catch it
  return fit.layout;
}

LayoutChoice ChooseLayouts(const std::vector<LinearLayout>& probed, bool probeReadSlots, std::optional<DriverFamily> family,
                           uint32_t driverVersion, const std::vector<LayoutKey>& keys, bool anyVersion) {
  LayoutChoice choice;
  if (!probed.empty()) {
    choice.layouts = probed;
    return choice;
  }
  if (!family) return choice;
  std::vector<LinearLayout> table;
  for (const LayoutKey& key : keys)
    if (std::optional<LinearLayout> layout = BuiltinLayout(*family, key)) table.push_back(std::move(*layout));
  if (table.empty()) return choice;
  if (probeReadSlots) {
    choice.refusal = "the probe read slots that fit no linear layout, so the built-in " + std::string(ToString(*family)) +
                     " table is not trusted either";
    return choice;
  }
  const DriverVersionRange range = BuiltinDriverRange(*family);
  if (!anyVersion && range.first > range.last) {
    choice.refusal = "the built-in " + std::string(ToString(*family)) +
                     " table is never used unprobed (the layer's builtin_layouts setting names it for compile-only lanes)";
    return choice;
  }
  if (!anyVersion && !range.Contains(driverVersion)) {
    choice.refusal = "the built-in " + std::string(ToString(*family)) + " table was read from driver versions " +
                     DriverVersionString(range.first) + " to " + DriverVersionString(range.last) + ", not " +
                     DriverVersionString(driverVersion);
    return choice;
  }
  choice.layouts = std::move(table);
  choice.builtin = true;
  return choice;
}

std::vector<LinearLayout> BuiltinLayouts(DriverFamily family, uint32_t subgroupSize) {
  std::vector<Config> configs;
  std::vector<std::pair<uint32_t, uint32_t>> shapes;
  const std::vector<uint32_t> gfx11Inputs = {kTypeF16, kTypeBF16, kTypeU8, kTypeS8};
  const std::vector<uint32_t> amdAccumulators = {kTypeF16, kTypeF32, kTypeBF16, kTypeU32, kTypeS32};
  // RADV lists 16x16 only; with radv_cooperative_matrix2_nv it takes NV flexible
  // dimensions at granularity 16, split into 16x16 tiles (FindFormula). Up to four
  // tiles a side, as lavapipe's below.
  std::vector<std::pair<uint32_t, uint32_t>> radvShapes;
  for (uint32_t rows : {16u, 32u, 64u})
    for (uint32_t cols : {16u, 32u, 64u}) radvShapes.push_back({rows, cols});
  switch (family) {
    case DriverFamily::Lavapipe:
      // The four advertised 8x8 configurations, and flexible shapes (granularity 8).
      configs = {{kUseA, {kTypeF16, kTypeU8, kTypeS8}},
                 {kUseB, {kTypeF16, kTypeU8, kTypeS8}},
                 {kUseAccumulator, {kTypeF16, kTypeF32, kTypeU32, kTypeS32}}};
      for (uint32_t rows : {8u, 16u, 32u})
        for (uint32_t cols : {8u, 16u, 32u}) shapes.push_back({rows, cols});
      break;
    case DriverFamily::RadvGfx11:
      configs = {{kUseA, gfx11Inputs}, {kUseB, gfx11Inputs}, {kUseAccumulator, amdAccumulators}};
      shapes = radvShapes;
      break;
    case DriverFamily::RadvGfx12: {
      std::vector<uint32_t> inputs = gfx11Inputs;
      inputs.insert(inputs.end(), {kTypeE4M3, kTypeE5M2});
      configs = {{kUseA, inputs}, {kUseB, inputs}, {kUseAccumulator, amdAccumulators}};
      shapes = radvShapes;
      break;
    }
    case DriverFamily::CdnaMfma:
      configs = {{kUseAccumulator, {kTypeF32, kTypeS32, kTypeF64}}};
      shapes = {{32, 32}, {64, 32}, {16, 16}, {64, 16}, {64, 4}, {16, 4}};
      break;
    case DriverFamily::NvidiaMma:
      configs = {{kUseA, {kTypeF16, kTypeBF16, kTypeU8, kTypeS8}},
                 {kUseB, {kTypeF16, kTypeBF16, kTypeU8, kTypeS8}},
                 {kUseAccumulator, {kTypeF16, kTypeF32, kTypeU32, kTypeS32}}};
      shapes = {{16, 16}, {16, 8}, {8, 8}, {16, 32}, {32, 16}, {32, 8}};
      break;
  }
  std::vector<LinearLayout> layouts;
  for (const Config& config : configs)
    for (uint32_t type : config.types)
      for (auto [rows, cols] : shapes)
        if (auto layout = BuiltinLayout(family, LayoutKey{type, config.use, rows, cols, subgroupSize}))
          layouts.push_back(std::move(*layout));
  return layouts;
}

std::vector<LinearLayout> WithBuiltinShapes(const std::vector<LinearLayout>& probed, DriverFamily family,
                                            const std::vector<uint32_t>& subgroupSizes, uint32_t driverVersion,
                                            bool anyVersion) {
  const bool agrees = std::all_of(probed.begin(), probed.end(), [&](const LinearLayout& layout) {
    const std::optional<LinearLayout> expected = BuiltinLayout(family, layout.key);
    return expected && *expected == layout;
  });
  if (probed.empty() || !agrees || (!anyVersion && !BuiltinDriverRange(family).Contains(driverVersion))) return probed;
  std::vector<LinearLayout> layouts = probed;
  for (uint32_t size : subgroupSizes)
    for (const LinearLayout& builtin : BuiltinLayouts(family, size)) {
      const bool known = std::any_of(layouts.begin(), layouts.end(), [&](const LinearLayout& l) { return l.key == builtin.key; });
      const bool fittedHere = std::any_of(probed.begin(), probed.end(), [&](const LinearLayout& l) {
        return l.key.subgroupSize == size && l.key.componentType == builtin.key.componentType && l.key.use == builtin.key.use;
      });
      if (!known && fittedHere) layouts.push_back(builtin);
    }
  return layouts;
}

}  // namespace coopmat
