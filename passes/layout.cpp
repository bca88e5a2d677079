// The GF(2)-linear layout model: evaluation, inversion, reduction recipes,
// relayout maps, fitting a probe and the text form. See coopmat/layout.h.
#include "coopmat/layout.h"
#include "gf2.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

namespace coopmat {
namespace {

using gf2::Log2;

// Packed vectors: a slot is lane bits then index bits; a coordinate is row
// bits then col bits. Both fit in 64 bits because ValidateLayout caps them.
struct Packing {
  uint32_t laneBits, indexBits, rowBits, colBits;
  explicit Packing(const LinearLayout& l)
      : laneBits(Log2(l.key.subgroupSize)), indexBits(Log2(l.length)), rowBits(Log2(l.key.rows)),
        colBits(Log2(l.key.cols)) {}
  uint32_t InputBits() const { return laneBits + indexBits; }
  uint32_t OutputBits() const { return rowBits + colBits; }
  uint64_t Out(BitImage b) const { return b.rowMask | (uint64_t{b.colMask} << rowBits); }
  BitImage Out(uint64_t v) const {
    return {static_cast<uint32_t>(v & ((uint64_t{1} << rowBits) - 1)), static_cast<uint32_t>(v >> rowBits)};
  }
  uint64_t In(Slot s) const { return s.lane | (uint64_t{s.index} << laneBits); }
  Slot In(uint64_t v) const {
    return {static_cast<uint32_t>(v & ((uint64_t{1} << laneBits) - 1)), static_cast<uint32_t>(v >> laneBits)};
  }
};

// Images of the input bits, packed, lane bits first.
std::vector<uint64_t> InputImages(const LinearLayout& l, const Packing& p) {
  std::vector<uint64_t> images;
  for (const BitImage& b : l.laneBits) images.push_back(p.Out(b));
  for (const BitImage& b : l.indexBits) images.push_back(p.Out(b));
  return images;
}

// Linear layouts need power-of-two dimensions; the caps keep a slot in 30 bits
// and a coordinate in 40, so packed vectors fit in 64 bits.
std::string DimensionError(const LayoutKey& k, uint64_t length) {
  const struct {
    const char* name;
    uint64_t value, max;
  } dims[] = {{"rows", k.rows, 1u << 20}, {"cols", k.cols, 1u << 20}, {"subgroup size", k.subgroupSize, 1u << 10},
              {"length", length, 1u << 20}};
  for (const auto& d : dims) {
    if (d.value == 0 || (d.value & (d.value - 1)) != 0)
      return std::string(d.name) + " " + std::to_string(d.value) + " is not a power of two";
    if (d.value > d.max) return std::string(d.name) + " " + std::to_string(d.value) + " is too large";
  }
  return {};
}

std::string CoordText(uint32_t row, uint32_t col) {
  return "(" + std::to_string(row) + ", " + std::to_string(col) + ")";
}

uint32_t MaskOfImages(const std::vector<BitImage>& bits, bool (*pick)(const BitImage&)) {
  uint32_t mask = 0;
  for (size_t i = 0; i < bits.size(); ++i)
    if (pick(bits[i])) mask |= 1u << i;
  return mask;
}
bool ChangesColOnly(const BitImage& b) { return b.rowMask == 0 && b.colMask != 0; }
bool ChangesRowOnly(const BitImage& b) { return b.colMask == 0 && b.rowMask != 0; }
bool ChangesNothing(const BitImage& b) { return b.IsZero(); }

}  // namespace

// ---- LayoutKey ----------------------------------------------------------------

namespace {
struct TypeName {
  uint32_t type;
  const char* name;
};
constexpr TypeName kTypeNames[] = {
    {kTypeF16, "f16"},   {kTypeF32, "f32"},   {kTypeF64, "f64"},   {kTypeS8, "s8"},
    {kTypeS16, "s16"},   {kTypeS32, "s32"},   {kTypeS64, "s64"},   {kTypeU8, "u8"},
    {kTypeU16, "u16"},   {kTypeU32, "u32"},   {kTypeU64, "u64"},   {kTypeBF16, "bf16"},
    {kTypeE4M3, "e4m3"}, {kTypeE5M2, "e5m2"},
};
constexpr const char* kUseNames[] = {"A", "B", "Acc"};

std::string UseText(uint32_t use) { return use < 3 ? kUseNames[use] : std::to_string(use); }
}  // namespace

std::string ComponentTypeName(uint32_t componentType) {
  for (const TypeName& t : kTypeNames)
    if (t.type == componentType) return t.name;
  return std::to_string(componentType);
}

std::optional<uint32_t> ComponentTypeByName(std::string_view name) {
  for (const TypeName& t : kTypeNames)
    if (name == t.name) return t.type;
  return std::nullopt;
}

std::string ToString(const LayoutKey& key) {
  return ComponentTypeName(key.componentType) + " " + UseText(key.use) + " " + std::to_string(key.rows) + "x" +
         std::to_string(key.cols) + " subgroup " + std::to_string(key.subgroupSize);
}

// ---- LinearLayout -------------------------------------------------------------

Coord LinearLayout::CoordinateOf(uint32_t lane, uint32_t index) const {
  Coord c;
  for (size_t i = 0; i < laneBits.size(); ++i)
    if (lane >> i & 1) {
      c.row ^= laneBits[i].rowMask;
      c.col ^= laneBits[i].colMask;
    }
  for (size_t i = 0; i < indexBits.size(); ++i)
    if (index >> i & 1) {
      c.row ^= indexBits[i].rowMask;
      c.col ^= indexBits[i].colMask;
    }
  return c;
}

uint32_t LinearLayout::Replicas() const {
  Packing p(*this);
  return 1u << (p.InputBits() - gf2::Eliminate(InputImages(*this, p)).Rank());
}

uint32_t LinearLayout::LaneBitsAlongRow() const { return MaskOfImages(laneBits, ChangesColOnly); }
uint32_t LinearLayout::LaneBitsAlongColumn() const { return MaskOfImages(laneBits, ChangesRowOnly); }
uint32_t LinearLayout::ReplicaLaneBits() const { return MaskOfImages(laneBits, ChangesNothing); }
uint32_t LinearLayout::IndexBitsAlongRow() const { return MaskOfImages(indexBits, ChangesColOnly); }
uint32_t LinearLayout::IndexBitsAlongColumn() const { return MaskOfImages(indexBits, ChangesRowOnly); }

Slot LinearLayout::Owner(uint32_t row, uint32_t col) const {
  Packing p(*this);
  return p.In(gf2::Eliminate(InputImages(*this, p)).Preimage(p.Out(BitImage{row, col})));
}

std::vector<Slot> LinearLayout::Owners(uint32_t row, uint32_t col) const {
  Packing p(*this);
  gf2::Elimination e = gf2::Eliminate(InputImages(*this, p));
  uint64_t base = e.Preimage(p.Out(BitImage{row, col}));
  std::vector<Slot> owners;
  for (uint64_t combo = 0; combo < (uint64_t{1} << e.kernel.size()); ++combo) {
    uint64_t v = base;
    for (size_t k = 0; k < e.kernel.size(); ++k)
      if (combo >> k & 1) v ^= e.kernel[k];
    owners.push_back(p.In(v));
  }
  return owners;
}

std::vector<Slot> LinearLayout::ReplicaMoves() const {
  Packing p(*this);
  std::vector<Slot> moves;
  for (uint64_t v : gf2::Eliminate(InputImages(*this, p)).kernel) moves.push_back(p.In(v));
  return moves;
}

std::string ValidateLayout(const LinearLayout& l) {
  const LayoutKey& k = l.key;
  if (k.use > kUseAccumulator) return "use " + std::to_string(k.use) + " is not A (0), B (1) or Accumulator (2)";
  if (std::string error = DimensionError(k, l.length); !error.empty()) return error;
  Packing p(l);
  if (l.laneBits.size() != p.laneBits)
    return "subgroup size " + std::to_string(k.subgroupSize) + " needs " + std::to_string(p.laneBits) +
           " lane bit images, got " + std::to_string(l.laneBits.size());
  if (l.indexBits.size() != p.indexBits)
    return "length " + std::to_string(l.length) + " needs " + std::to_string(p.indexBits) +
           " index bit images, got " + std::to_string(l.indexBits.size());
  auto inRange = [&](const BitImage& b) { return b.rowMask < k.rows && b.colMask < k.cols; };
  for (size_t i = 0; i < l.laneBits.size(); ++i)
    if (!inRange(l.laneBits[i])) return "lane bit " + std::to_string(i) + " moves outside the matrix";
  for (size_t i = 0; i < l.indexBits.size(); ++i)
    if (!inRange(l.indexBits[i])) return "index bit " + std::to_string(i) + " moves outside the matrix";
  gf2::Elimination e = gf2::Eliminate(InputImages(l, p));
  if (e.Rank() < p.OutputBits()) {
    // The lowest coordinate bit that is not a pivot is a missing element.
    uint32_t bit = 0;
    while (e.pivot.count(bit)) ++bit;
    BitImage missing = p.Out(uint64_t{1} << bit);
    return "covers only " + std::to_string(uint64_t{1} << e.Rank()) + " of the " +
           std::to_string(uint64_t{k.rows} * k.cols) + " elements; " + CoordText(missing.rowMask, missing.colMask) +
           " is held by no slot";
  }
  return {};
}

// ---- Reductions -----------------------------------------------------------------

std::vector<ReduceStep> ReductionRecipe::Steps() const {
  std::vector<ReduceStep> steps;
  for (uint32_t x : indexXors) steps.push_back({0, x});
  for (uint32_t x : laneXors) steps.push_back({x, 0});
  steps.insert(steps.end(), mixed.begin(), mixed.end());
  return steps;
}

ReductionRecipe RecipeOverBits(const LinearLayout& l, uint32_t rowBits, uint32_t colBits) {
  Packing p(l);
  const uint64_t reduced = p.Out(BitImage{rowBits & (l.key.rows - 1), colBits & (l.key.cols - 1)});
  const std::vector<uint64_t> images = InputImages(l, p);

  // Moves that stay within a reduced group: the null space of the kept bits.
  std::vector<uint64_t> keptImages;
  for (uint64_t image : images) keptImages.push_back(image & ~reduced);
  gf2::Elimination inGroup;
  for (size_t i = 0; i < keptImages.size(); ++i) inGroup.Add(keptImages[i], uint64_t{1} << i);

  // Cheapest first: single index bits, single lane bits, then general moves.
  std::vector<uint64_t> candidates;
  for (uint32_t i = 0; i < p.indexBits; ++i) candidates.push_back(uint64_t{1} << (p.laneBits + i));
  for (uint32_t i = 0; i < p.laneBits; ++i) candidates.push_back(uint64_t{1} << i);
  candidates.insert(candidates.end(), inGroup.kernel.begin(), inGroup.kernel.end());

  // Keep a move only if it reaches an element the chosen ones do not: that
  // skips replicas, so each distinct element is combined exactly once.
  ReductionRecipe recipe;
  gf2::Elimination chosen;
  for (uint64_t move : candidates) {
    uint64_t image = 0;
    for (uint32_t b = 0; b < p.InputBits(); ++b)
      if (move >> b & 1) image ^= images[b];
    if ((image & ~reduced) != 0 || !chosen.Add(image, move)) continue;
    Slot s = p.In(move);
    if (s.lane == 0)
      recipe.indexXors.push_back(s.index);
    else if (s.index == 0)
      recipe.laneXors.push_back(s.lane);
    else
      recipe.mixed.push_back({s.lane, s.index});
    if (chosen.Rank() == static_cast<uint32_t>(std::popcount(reduced))) break;
  }
  return recipe;
}

ReductionRecipe RecipeForReduce(const LinearLayout& l, uint32_t reduceMask) {
  const uint32_t allRows = l.key.rows - 1, allCols = l.key.cols - 1;
  if (reduceMask & kReduce2x2) return RecipeOverBits(l, 1, 1);
  return RecipeOverBits(l, (reduceMask & kReduceColumn) ? allRows : 0, (reduceMask & kReduceRow) ? allCols : 0);
}

// ---- Relayout -------------------------------------------------------------------

Slot Relayout::Source(uint32_t lane, uint32_t index) const {
  Slot s;
  for (size_t i = 0; i < laneBitSources.size(); ++i)
    if (lane >> i & 1) {
      s.lane ^= laneBitSources[i].lane;
      s.index ^= laneBitSources[i].index;
    }
  for (size_t i = 0; i < indexBitSources.size(); ++i)
    if (index >> i & 1) {
      s.lane ^= indexBitSources[i].lane;
      s.index ^= indexBitSources[i].index;
    }
  return s;
}

std::string Relayout::Describe() const {
  if (identical) return "copy";
  auto bitsText = [](Slot s) {
    std::string text;
    for (uint32_t b = 0; b < 32; ++b) {
      if (s.lane >> b & 1) text += (text.empty() ? "L" : "+L") + std::to_string(b);
    }
    for (uint32_t b = 0; b < 32; ++b) {
      if (s.index >> b & 1) text += (text.empty() ? "e" : "+e") + std::to_string(b);
    }
    return text.empty() ? std::string("0") : text;
  };
  std::string text;
  auto add = [&](const char* prefix, size_t bit, Slot source, Slot self) {
    if (source == self) return;
    if (!text.empty()) text += ' ';
    text += prefix + std::to_string(bit) + "<-" + bitsText(source);
  };
  for (size_t i = 0; i < laneBitSources.size(); ++i) add("L", i, laneBitSources[i], Slot{1u << i, 0});
  for (size_t i = 0; i < indexBitSources.size(); ++i) add("e", i, indexBitSources[i], Slot{0, 1u << i});
  return text.empty() ? "registers in place" : text;
}

std::optional<Relayout> DescribeRelayout(const LinearLayout& from, const LinearLayout& to) {
  if (from.key.rows != to.key.rows || from.key.cols != to.key.cols || from.key.subgroupSize != to.key.subgroupSize)
    return std::nullopt;
  Packing pf(from);
  gf2::Elimination e = gf2::Eliminate(InputImages(from, pf));
  Relayout r;
  r.identical = from.length == to.length && from.laneBits == to.laneBits && from.indexBits == to.indexBits;
  auto sourceOf = [&](const BitImage& b) { return pf.In(e.Preimage(pf.Out(b))); };
  for (const BitImage& b : to.laneBits) r.laneBitSources.push_back(sourceOf(b));
  for (const BitImage& b : to.indexBits) r.indexBitSources.push_back(sourceOf(b));

  r.sameLane = true;
  r.bitPermutation = true;
  for (size_t i = 0; i < r.laneBitSources.size(); ++i) {
    const Slot& s = r.laneBitSources[i];
    if (s.lane != (1u << i) || s.index != 0) r.sameLane = false;
    if (std::popcount(s.lane) + std::popcount(s.index) != 1) r.bitPermutation = false;
  }
  for (const Slot& s : r.indexBitSources) {
    if (s.lane != 0) r.sameLane = false;
    if (std::popcount(s.lane) + std::popcount(s.index) != 1) r.bitPermutation = false;
  }
  return r;
}

// ---- Fitting --------------------------------------------------------------------

FitResult FitLinearLayout(const LayoutKey& key, std::span<const Coord> observed) {
  FitResult result;
  auto fail = [&](std::string message) {
    result.error = ToString(key) + ": " + std::move(message);
    return result;
  };
  const uint32_t S = key.subgroupSize;
  if (key.use > kUseAccumulator) return fail("use " + std::to_string(key.use) + " is not 0, 1 or 2");
  if (S == 0 || key.rows == 0 || key.cols == 0) return fail("rows, cols and subgroup size must be nonzero");
  if (observed.empty() || observed.size() % S != 0)
    return fail("got " + std::to_string(observed.size()) + " coordinates, not a nonzero multiple of the subgroup size");
  const uint64_t length = observed.size() / S;
  auto slotText = [&](uint64_t i) { return "lane " + std::to_string(i / length) + " index " + std::to_string(i % length); };

  for (size_t i = 0; i < observed.size(); ++i)
    if (observed[i].row >= key.rows || observed[i].col >= key.cols)
      return fail(slotText(i) + " holds " + CoordText(observed[i].row, observed[i].col) + ", outside the " +
                  std::to_string(key.rows) + "x" + std::to_string(key.cols) + " matrix");
  const uint64_t elements = uint64_t{key.rows} * key.cols;
  if (observed.size() % elements != 0)
    return fail(std::to_string(observed.size()) + " slots (length " + std::to_string(length) +
                " x subgroup) is not a multiple of the " + std::to_string(elements) + " elements");
  const uint64_t replicas = observed.size() / elements;
  std::vector<uint32_t> count(elements, 0);
  for (const Coord& c : observed) ++count[uint64_t{c.row} * key.cols + c.col];
  for (uint64_t i = 0; i < elements; ++i)
    if (count[i] != replicas)
      return fail("element " + CoordText(static_cast<uint32_t>(i / key.cols), static_cast<uint32_t>(i % key.cols)) +
                  " is held by " + std::to_string(count[i]) + " slots, expected " + std::to_string(replicas) +
                  " (replication must be uniform)");

  if (std::string error = DimensionError(key, length); !error.empty()) return fail("not linear: " + error);

  // A linear map sends slot 0 to element 0 and is fixed by the images of the
  // slots at powers of two.
  if (!(observed[0] == Coord{}))
    return fail("not linear: lane 0 index 0 holds " + CoordText(observed[0].row, observed[0].col) +
                ", a linear layout has (0, 0) there");
  LinearLayout& l = result.layout;
  l.key = key;
  l.length = static_cast<uint32_t>(length);
  for (uint64_t lane = 1; lane < S; lane <<= 1) l.laneBits.push_back({observed[lane * length].row, observed[lane * length].col});
  for (uint64_t index = 1; index < length; index <<= 1) l.indexBits.push_back({observed[index].row, observed[index].col});
  for (size_t i = 0; i < observed.size(); ++i) {
    Coord predicted = l.CoordinateOf(static_cast<uint32_t>(i / length), static_cast<uint32_t>(i % length));
    if (!(predicted == observed[i]))
      return fail("not linear: " + slotText(i) + " holds " + CoordText(observed[i].row, observed[i].col) +
                  " but the bits fitted at powers of two give " + CoordText(predicted.row, predicted.col));
  }
  if (std::string error = ValidateLayout(l); !error.empty()) return fail(error);
  result.ok = true;
  return result;
}

// ---- Text form --------------------------------------------------------------------

namespace {

std::string ImageText(const BitImage& b) {
  std::string text;
  for (uint32_t i = 0; i < 32; ++i)
    if (b.rowMask >> i & 1) text += (text.empty() ? "r" : "+r") + std::to_string(i);
  for (uint32_t i = 0; i < 32; ++i)
    if (b.colMask >> i & 1) text += (text.empty() ? "c" : "+c") + std::to_string(i);
  return text.empty() ? "0" : text;
}

std::string BasisText(const std::vector<BitImage>& basis) {
  if (basis.empty()) return "-";
  std::string text;
  for (const BitImage& b : basis) text += (text.empty() ? "" : ",") + ImageText(b);
  return text;
}

bool ParseNumber(std::string_view s, uint32_t& value) {
  if (s.empty() || s.size() > 10) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size();
}

// Returns an error message, empty on success.
std::string ParseImage(std::string_view s, BitImage& image) {
  image = {};
  if (s == "0") return {};
  while (true) {
    size_t plus = s.find('+');
    std::string_view term = s.substr(0, plus);
    uint32_t bit = 0;
    if (term.size() < 2 || (term[0] != 'r' && term[0] != 'c') || !ParseNumber(term.substr(1), bit) || bit >= 32)
      return "bad image term '" + std::string(term) + "' (want r<bit> or c<bit>, joined by '+', or 0)";
    uint32_t& mask = term[0] == 'r' ? image.rowMask : image.colMask;
    if (mask >> bit & 1) return "image term '" + std::string(term) + "' repeated";
    mask |= 1u << bit;
    if (plus == std::string_view::npos) return {};
    s.remove_prefix(plus + 1);
  }
}

std::string ParseBasis(std::string_view s, std::vector<BitImage>& basis) {
  basis.clear();
  if (s == "-") return {};
  while (true) {
    size_t comma = s.find(',');
    BitImage image;
    if (std::string error = ParseImage(s.substr(0, comma), image); !error.empty()) return error;
    basis.push_back(image);
    if (comma == std::string_view::npos) return {};
    s.remove_prefix(comma + 1);
  }
}

std::string ParseLine(std::string_view line, LinearLayout& l) {
  std::vector<std::string_view> tokens;
  for (size_t pos = 0; pos < line.size();) {
    if (line[pos] == ' ' || line[pos] == '\t' || line[pos] == '\r') {
      ++pos;
      continue;
    }
    size_t end = line.find_first_of(" \t\r", pos);
    if (end == std::string_view::npos) end = line.size();
    tokens.push_back(line.substr(pos, end - pos));
    pos = end;
  }
  if (tokens.empty() || tokens[0] != "layout") return "expected a line starting with 'layout'";
  static constexpr const char* kFields[] = {"type", "use", "rows", "cols", "subgroup", "length", "lane", "index"};
  std::map<std::string_view, std::string_view> fields;
  for (size_t i = 1; i < tokens.size(); ++i) {
    size_t eq = tokens[i].find('=');
    if (eq == std::string_view::npos) return "field '" + std::string(tokens[i]) + "' is not name=value";
    std::string_view name = tokens[i].substr(0, eq);
    bool known = false;
    for (const char* f : kFields) known |= name == f;
    if (!known) return "unknown field '" + std::string(name) + "'";
    if (!fields.emplace(name, tokens[i].substr(eq + 1)).second) return "field '" + std::string(name) + "' repeated";
  }
  for (const char* f : kFields)
    if (!fields.count(f)) return "missing field '" + std::string(f) + "'";

  std::string_view type = fields["type"];
  const std::optional<uint32_t> named = ComponentTypeByName(type);
  if (named) l.key.componentType = *named;
  if (!named && !ParseNumber(type, l.key.componentType))
    return "unknown component type '" + std::string(type) + "'";
  std::string_view use = fields["use"];
  bool useFound = false;
  for (uint32_t u = 0; u < 3; ++u)
    if (use == kUseNames[u]) {
      l.key.use = u;
      useFound = true;
    }
  if (!useFound) return "use '" + std::string(use) + "' is not A, B or Acc";
  const std::pair<const char*, uint32_t*> numbers[] = {
      {"rows", &l.key.rows}, {"cols", &l.key.cols}, {"subgroup", &l.key.subgroupSize}, {"length", &l.length}};
  for (const auto& [name, target] : numbers)
    if (!ParseNumber(fields[name], *target))
      return "field '" + std::string(name) + "' is not a number: '" + std::string(fields[name]) + "'";
  if (std::string error = ParseBasis(fields["lane"], l.laneBits); !error.empty()) return "lane: " + error;
  if (std::string error = ParseBasis(fields["index"], l.indexBits); !error.empty()) return "index: " + error;
  return ValidateLayout(l);
}

}  // namespace

std::string FormatLayout(const LinearLayout& l) {
  return "layout type=" + ComponentTypeName(l.key.componentType) + " use=" + UseText(l.key.use) +
         " rows=" + std::to_string(l.key.rows) + " cols=" + std::to_string(l.key.cols) +
         " subgroup=" + std::to_string(l.key.subgroupSize) + " length=" + std::to_string(l.length) +
         " lane=" + BasisText(l.laneBits) + " index=" + BasisText(l.indexBits);
}

ParseResult ParseLayouts(std::string_view text) {
  ParseResult result;
  // A UTF-8 byte order mark (Windows editors write one) is not part of the first line.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  size_t lineNumber = 0;
  while (!text.empty()) {
    ++lineNumber;
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#') continue;
    LinearLayout l;
    if (std::string error = ParseLine(line, l); !error.empty()) {
      result.error = "line " + std::to_string(lineNumber) + ": " + error;
      result.layouts.clear();
      return result;
    }
    // A second, different layout for a key would be silently ignored or win by line order
    // (review of 2026-12-07).
    if (AddDistinctLayout(result.layouts, l)) {
      result.error = "line " + std::to_string(lineNumber) + ": a second, different layout for " + ToString(l.key);
      result.layouts.clear();
      return result;
    }
  }
  result.ok = true;
  return result;
}

std::optional<size_t> AddDistinctLayout(std::vector<LinearLayout>& layouts, const LinearLayout& layout) {
  const auto same = std::find_if(layouts.begin(), layouts.end(), [&](const LinearLayout& l) { return l.key == layout.key; });
  if (same == layouts.end()) layouts.push_back(layout);
  else if (!(*same == layout)) return static_cast<size_t>(same - layouts.begin());
  return std::nullopt;
}

ParseResult ReadLayouts(const std::string& path) {
  // A folder opens as a stream that reads nothing.
  std::error_code notFolder;
  std::ifstream file(path);
  if (!file || std::filesystem::is_directory(path, notFolder)) {
    ParseResult unread;
    unread.error = "cannot be read";
    return unread;
  }
  std::stringstream text;
  text << file.rdbuf();
  return ParseLayouts(text.str());
}

}  // namespace coopmat
