#include "element_layout.h"

#include <charconv>
#include <map>

namespace coopmat::virt {
namespace {

bool IsPow2(uint32_t v) { return v && !(v & (v - 1)); }

uint32_t Log2(uint32_t v) {
  uint32_t n = 0;
  while (v > 1) {
    v >>= 1;
    ++n;
  }
  return n;
}

std::optional<uint32_t> Number(std::string_view text) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

// "0", or r<bit>/c<bit> terms joined by '+'.
std::optional<ElementCoord> Image(std::string_view text) {
  ElementCoord image;
  if (text == "0") return image;
  for (std::string_view term : Split(text, '+')) {
    if (term.size() < 2 || (term[0] != 'r' && term[0] != 'c')) return std::nullopt;
    auto bit = Number(term.substr(1));
    if (!bit || *bit >= 16) return std::nullopt;
    (term[0] == 'r' ? image.row : image.col) ^= 1u << *bit;
  }
  return image;
}

std::optional<std::vector<ElementCoord>> Images(std::string_view text) {
  std::vector<ElementCoord> images;
  if (text == "-") return images;
  for (std::string_view part : Split(text, ',')) {
    auto image = Image(part);
    if (!image) return std::nullopt;
    images.push_back(*image);
  }
  return images;
}

std::optional<uint32_t> UseByName(std::string_view name) {
  if (name == "A") return kUseA;
  if (name == "B") return kUseB;
  if (name == "Acc") return kUseAccumulator;
  return std::nullopt;
}

}  // namespace

std::optional<ElementLayout> ElementLayout::Parse(std::string_view line, std::string& error) {
  std::map<std::string_view, std::string_view> fields;
  for (std::string_view word : Split(line, ' ')) {
    if (word.empty() || word == "layout") continue;
    const size_t eq = word.find('=');
    if (eq == std::string_view::npos) {
      error = "'" + std::string(word) + "' is not key=value";
      return std::nullopt;
    }
    fields[word.substr(0, eq)] = word.substr(eq + 1);
  }
  for (const char* needed : {"type", "use", "rows", "cols", "subgroup", "length", "lane", "index"})
    if (!fields.count(needed)) {
      error = std::string("no ") + needed + "=";
      return std::nullopt;
    }
  ElementLayout l;
  auto type = ComponentTypeByName(fields["type"]);
  auto use = UseByName(fields["use"]);
  auto rows = Number(fields["rows"]), cols = Number(fields["cols"]), size = Number(fields["subgroup"]),
       length = Number(fields["length"]);
  auto lane = Images(fields["lane"]), index = Images(fields["index"]);
  if (!type || !use || !rows || !cols || !size || !length || !lane || !index) {
    error = "a field does not read as its kind";
    return std::nullopt;
  }
  if (!IsPow2(*rows) || !IsPow2(*cols) || !IsPow2(*size) || !IsPow2(*length)) {
    error = "rows, cols, subgroup and length must be powers of two";
    return std::nullopt;
  }
  if (lane->size() != Log2(*size) || index->size() != Log2(*length)) {
    error = "lane= needs one image per subgroup bit and index= one per length bit";
    return std::nullopt;
  }
  l.key_ = {*type, *use, *rows, *cols, *size};
  l.tileRows_ = *rows;
  l.tileCols_ = *cols;
  l.tileLength_ = *length;
  l.lane_ = std::move(*lane);
  l.index_ = std::move(*index);
  // Every element held equally often (and at least once), inside the matrix.
  std::vector<uint32_t> held(size_t(*rows) * *cols, 0);
  for (uint32_t L = 0; L < *size; ++L)
    for (uint32_t e = 0; e < *length; ++e) {
      const ElementCoord at = l.At(L, e);
      if (at.row >= *rows || at.col >= *cols) {
        error = "lane " + std::to_string(L) + " element " + std::to_string(e) + " lies outside the matrix";
        return std::nullopt;
      }
      ++held[size_t(at.row) * *cols + at.col];
    }
  const uint32_t replicas = *size * *length / (*rows * *cols);
  for (uint32_t count : held)
    if (count != replicas || replicas == 0) {
      error = "the map does not hold every element equally often";
      return std::nullopt;
    }
  return l;
}

ElementLayout ElementLayout::Tiled(uint32_t rows, uint32_t cols) const {
  ElementLayout l = *this;
  l.key_.rows = rows;
  l.key_.cols = cols;
  return l;
}

ElementCoord ElementLayout::IndexPart(uint32_t e) const {
  ElementCoord part;
  const uint32_t inTile = e % tileLength_;
  for (size_t bit = 0; bit < index_.size(); ++bit)
    if (inTile >> bit & 1) {
      part.row ^= index_[bit].row;
      part.col ^= index_[bit].col;
    }
  return part;
}

ElementCoord ElementLayout::TileCorner(uint32_t e) const {
  const uint32_t tile = e / tileLength_, across = key_.cols / tileCols_;
  return {tileRows_ * (tile / across), tileCols_ * (tile % across)};
}

ElementCoord ElementLayout::At(uint32_t lane, uint32_t e) const {
  ElementCoord at = IndexPart(e);
  for (size_t bit = 0; bit < lane_.size(); ++bit)
    if (lane >> bit & 1) {
      at.row ^= lane_[bit].row;
      at.col ^= lane_[bit].col;
    }
  const ElementCoord corner = TileCorner(e);
  return {corner.row + at.row, corner.col + at.col};
}

bool ElementLayout::SameMap(const ElementLayout& other) const {
  if (key_.rows != other.key_.rows || key_.cols != other.key_.cols || key_.subgroupSize != other.key_.subgroupSize ||
      Length() != other.Length())
    return false;
  for (uint32_t L = 0; L < key_.subgroupSize; ++L)
    for (uint32_t e = 0; e < Length(); ++e)
      if (At(L, e) != other.At(L, e)) return false;
  return true;
}

}  // namespace coopmat::virt
