// Register layouts of cooperative matrices: which (row, col) a subgroup
// invocation holds at each composite index. KHR leaves this to the driver; the
// maintenance1 register lowerings need it, and the layer learns it by probing.
//
// Every surveyed layout is linear over GF(2) (docs: layouts.md section 9): the
// coordinate is the XOR of one (rowMask, colMask) image per set bit of the lane
// id and of the element index. A lane bit with image (0, 0) is replication.
// Plain data and pure functions, no Vulkan calls, safe from many threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace coopmat {

// SPIR-V CooperativeMatrixUse values.
inline constexpr uint32_t kUseA = 0;
inline constexpr uint32_t kUseB = 1;
inline constexpr uint32_t kUseAccumulator = 2;

// VkComponentTypeKHR values the built-in tables and the text format name.
inline constexpr uint32_t kTypeF16 = 0;
inline constexpr uint32_t kTypeF32 = 1;
inline constexpr uint32_t kTypeF64 = 2;
inline constexpr uint32_t kTypeS8 = 3;
inline constexpr uint32_t kTypeS16 = 4;
inline constexpr uint32_t kTypeS32 = 5;
inline constexpr uint32_t kTypeS64 = 6;
inline constexpr uint32_t kTypeU8 = 7;
inline constexpr uint32_t kTypeU16 = 8;
inline constexpr uint32_t kTypeU32 = 9;
inline constexpr uint32_t kTypeU64 = 10;
inline constexpr uint32_t kTypeBF16 = 1000141000;
inline constexpr uint32_t kTypeE4M3 = 1000491002;
inline constexpr uint32_t kTypeE5M2 = 1000491003;

// One matrix type as a pipeline runs it: the layout may change with any field.
struct LayoutKey {
  uint32_t componentType = 0;  // VkComponentTypeKHR
  uint32_t use = 0;            // kUseA, kUseB or kUseAccumulator
  uint32_t rows = 0;
  uint32_t cols = 0;
  uint32_t subgroupSize = 0;
  bool operator==(const LayoutKey&) const = default;
};
std::string ToString(const LayoutKey& key);  // "f32 Acc 16x16 subgroup 32"
// The names the text form uses for component types ("f16", "bf16", "e4m3", ...):
// the name, or the number when it has none; the type of a name, or nullopt.
std::string ComponentTypeName(uint32_t componentType);
std::optional<uint32_t> ComponentTypeByName(std::string_view name);

struct Coord {
  uint32_t row = 0;
  uint32_t col = 0;
  bool operator==(const Coord&) const = default;
};

// A point of the register space: invocation id and composite index. Also used
// as an XOR offset in that space (a "move").
struct Slot {
  uint32_t lane = 0;
  uint32_t index = 0;
  bool operator==(const Slot&) const = default;
};

// What one input bit XORs into the coordinate.
struct BitImage {
  uint32_t rowMask = 0;
  uint32_t colMask = 0;
  bool IsZero() const { return rowMask == 0 && colMask == 0; }
  bool operator==(const BitImage&) const = default;
};

struct LinearLayout {
  LayoutKey key;
  uint32_t length = 0;              // OpCooperativeMatrixLengthKHR
  std::vector<BitImage> laneBits;   // log2(subgroupSize) images, bit 0 first
  std::vector<BitImage> indexBits;  // log2(length) images, bit 0 first
  bool operator==(const LinearLayout&) const = default;

  // Linear, so CoordinateOf(l, i) == CoordinateOf(l, 0) ^ CoordinateOf(0, i):
  // a lowering folds the constant index part and emits bit moves for the lane.
  Coord CoordinateOf(uint32_t lane, uint32_t index) const;

  // Number of slots holding each element (1 when not replicated).
  uint32_t Replicas() const;

  // Bit masks by role. "Along a row" = changes the column only; "along a
  // column" = changes the row only; replica lane bits change nothing. Bits
  // changing both (none of the surveyed layouts has any) are in no mask.
  uint32_t LaneBitsAlongRow() const;
  uint32_t LaneBitsAlongColumn() const;
  uint32_t ReplicaLaneBits() const;
  uint32_t IndexBitsAlongRow() const;  // span the columns of a fixed row in one lane
  uint32_t IndexBitsAlongColumn() const;

  // Owners of (row, col); requires a valid layout and an in-range coordinate.
  // Owner() is the canonical one; Owners() lists every replica, canonical first.
  Slot Owner(uint32_t row, uint32_t col) const;
  std::vector<Slot> Owners(uint32_t row, uint32_t col) const;
  // Basis of the moves that keep the coordinate (replication), as XOR offsets.
  std::vector<Slot> ReplicaMoves() const;
};

// Empty when the layout is usable: dims powers of two, basis sizes match
// log2(subgroupSize) and log2(length), masks in range, and every element is
// covered (then linearity makes the replication uniform). Otherwise says why.
std::string ValidateLayout(const LinearLayout& layout);

// ---- Reductions -----------------------------------------------------------

// An all-reduce over a set of elements, as XOR butterflies: after every step
//   v[e] = op(v[e], ShuffleXor(v[e ^ indexXor], laneXor))
// each slot holds the combination of all distinct elements sharing its kept
// coordinate bits. Steps are in cost order: in-register combines (laneXor 0),
// then pure lane shuffles (indexXor 0), then mixed steps (never needed by the
// surveyed layouts). Replicas are excluded, so nothing is counted twice.
struct ReduceStep {
  uint32_t laneXor = 0;
  uint32_t indexXor = 0;
  bool operator==(const ReduceStep&) const = default;
};
struct ReductionRecipe {
  std::vector<uint32_t> indexXors;   // in-register: v[e] = op(v[e], v[e ^ x])
  std::vector<uint32_t> laneXors;    // then: v[e] = op(v[e], ShuffleXor(v[e], x))
  std::vector<ReduceStep> mixed;     // then: the general step above
  std::vector<ReduceStep> Steps() const;  // all of them in that order
};

// reduceMask uses the SPIR-V CooperativeMatrixReduce bits: Row 0x1 (combine
// across the columns of each row), Column 0x2, 2x2 0x4 (alone). Requires a
// valid layout; 2x2 needs rows and cols >= 2.
inline constexpr uint32_t kReduceRow = 0x1;
inline constexpr uint32_t kReduceColumn = 0x2;
inline constexpr uint32_t kReduce2x2 = 0x4;
ReductionRecipe RecipeForReduce(const LinearLayout& layout, uint32_t reduceMask);
// General form: combine over every element that differs only in the given
// row bits and col bits.
ReductionRecipe RecipeOverBits(const LinearLayout& layout, uint32_t rowBits, uint32_t colBits);

// ---- Conversions between layouts (ConvertUse, same shape) ------------------

// Gather map from one layout to another of the same rows, cols and subgroup
// size: destination slot d reads the source slot Source(d). It is linear, so it
// is given per destination bit (XOR offsets in the source's slot space).
struct Relayout {
  bool identical = false;         // same map and length: a plain copy
  bool sameLane = false;          // every slot reads from its own lane: registers only
  bool bitPermutation = false;    // each destination bit reads exactly one source bit
  std::vector<Slot> laneBitSources;   // per destination lane bit
  std::vector<Slot> indexBitSources;  // per destination index bit
  Slot Source(uint32_t lane, uint32_t index) const;
  std::string Describe() const;  // "copy", or moves like "L4<-e2 e0<-L0"
};
// Both layouts must be valid; returns nullopt when rows, cols or subgroupSize differ.
std::optional<Relayout> DescribeRelayout(const LinearLayout& from, const LinearLayout& to);

// ---- Fitting a probe ------------------------------------------------------

struct FitResult {
  bool ok = false;
  LinearLayout layout;  // when ok
  std::string error;    // when !ok: what is wrong, naming a slot or element
};
// observed[lane * length + index] is the (row, col) that slot holds, read back
// from a probe; length = observed.size() / key.subgroupSize.
FitResult FitLinearLayout(const LayoutKey& key, std::span<const Coord> observed);

// ---- Text form --------------------------------------------------------------
// One line per layout, stable and human-readable, e.g.
//   layout type=f32 use=Acc rows=16 cols=16 subgroup=32 length=8 lane=c0,c1,c2,c3,r0 index=r1,r2,r3
// An image is "0", or terms r<bit>/c<bit> joined by '+'; an empty basis is "-".
// Types are written by name when known (f16, bf16, e4m3, u32, ...), else as
// their number; the parser accepts either.

std::string FormatLayout(const LinearLayout& layout);

struct ParseResult {
  bool ok = false;
  std::vector<LinearLayout> layouts;
  std::string error;  // "line N: ..." when !ok
};
// Reads any number of lines; blank lines and lines starting with '#' are
// skipped. Every layout must pass ValidateLayout.
ParseResult ParseLayouts(std::string_view text);
// One layout per key, as the lowering takes the first: adds `layout` to `layouts` unless an
// equal one is there (a repeat is dropped). Where a different layout has its key, adds
// nothing and returns that one's index.
std::optional<size_t> AddDistinctLayout(std::vector<LinearLayout>& layouts, const LinearLayout& layout);
// ParseLayouts of a file; error "cannot be read" where it cannot be opened or is a folder.
ParseResult ReadLayouts(const std::string& path);

// ---- Built-in expected layouts ---------------------------------------------

enum class DriverFamily {
  Lavapipe,   // lavapipe.md section 3, subgroup 8, incl. flexible shapes
  RadvGfx11,  // layouts.md section 3 (also AMDVLK GFX11)
  RadvGfx12,  // layouts.md section 4.1, current "C layout" for all uses
  CdnaMfma,   // layouts.md section 5.2 / seed 004 accumulators, subgroup 64
  NvidiaMma,  // PTX mma fragments as NAK (NVK) lays out KHR matrices, subgroup 32; not run on hardware
};
const char* ToString(DriverFamily family);
// The family ToString names so; nullopt for any other text.
std::optional<DriverFamily> DriverFamilyByName(std::string_view name);
// Every family's name, ", "-separated, for messages.
std::string DriverFamilyNames();

// The layout the family's published formula gives for key, or nullopt when it
// has none for that shape, use or subgroup size. Built by enumerating the
// formula and fitting it. Lavapipe and RADV layouts do not depend on the
// component type (the probe still checks every type); MFMA's f64 ones do.
// MFMA multi-block results are modelled as the blocks stacked vertically:
// row = M * block + i (so 16x16 four-block is a 64x16 matrix).
std::optional<LinearLayout> BuiltinLayout(DriverFamily family, const LayoutKey& key);

// The driver versions (VkPhysicalDeviceProperties::driverVersion; Mesa's is
// VK_MAKE_VERSION(major, minor, patch)) a family's table was read from. The layer
// uses a built-in table only where its probe cannot run, and only inside this
// range: a driver outside it may lay matrices out otherwise (RADV's GFX12 A/B did).
struct DriverVersionRange {
  uint32_t first = 1;  // empty by default: first > last
  uint32_t last = 0;
  bool Contains(uint32_t version) const { return first <= version && version <= last; }
};
DriverVersionRange BuiltinDriverRange(DriverFamily family);
std::string DriverVersionString(uint32_t driverVersion);  // "26.1.6"

// Which layouts the register path may rely on after the layer's probe: the probed
// ones whenever any fitted (a built-in table that disagrees is only reported); when
// the probe read nothing at all (it could not run: Mesa's drm-shim, a failing
// dispatch), the family's table for `keys`, only inside its driver-version range;
// when the probe read slots that fit no linear layout, none (that is evidence
// against any table). Pure policy, so that it is tested without a device.
struct LayoutChoice {
  std::vector<LinearLayout> layouts;
  bool builtin = false;  // layouts came from the family's table
  std::string refusal;   // a table exists for these keys but is not used: why
};
// anyVersion: the user named the family (the layer's builtin_layouts setting): no version check.
LayoutChoice ChooseLayouts(const std::vector<LinearLayout>& probed, bool probeReadSlots, std::optional<DriverFamily> family,
                           uint32_t driverVersion, const std::vector<LayoutKey>& keys, bool anyVersion = false);

// The configurations the family advertises (lavapipe: plus flexible shapes up
// to 32x32) at this subgroup size; empty when it runs no such size.
std::vector<LinearLayout> BuiltinLayouts(DriverFamily family, uint32_t subgroupSize);

// Under NV flexible dimensions: the probed layouts plus the family's table shapes the
// probe does not cover (it probes each listed tile), where the table can be trusted:
// every probed layout equals the table's; only inside the table's driver-version range
// (anyVersion: the user named the family); and at each subgroup size only for the
// component types and Uses whose probed layout fitted at that size (a key whose slots
// fit nothing there stays portable, with its larger shapes). Review 130c39d finding 3.
std::vector<LinearLayout> WithBuiltinShapes(const std::vector<LinearLayout>& probed, DriverFamily family,
                                            const std::vector<uint32_t>& subgroupSizes, uint32_t driverVersion,
                                            bool anyVersion = false);

}  // namespace coopmat
