// How a virtual device profile lays one matrix type out, read and applied by the
// virtual device's own code. The product has a layout model of its own
// (coopmat/layout.h); the virtual device does not use it, so that a lane never checks
// the product against the product's own belief about a GPU.
//
// A layout line (the text form the profiles share with coopmat-lower):
//   layout type=f16 use=A rows=16 cols=16 subgroup=32 length=16 lane=r0,r1,r2,r3,0 index=c0,c1,c2,c3
// Invocation L holds, at composite index e, the (row, col) whose bits are the XOR of the
// images of the set bits of L (`lane`, bit 0 first) and of e (`index`). An image is "0"
// or terms r<bit>/c<bit> joined by '+'; an empty list is "-".
//
// A flexible (VK_NV_cooperative_matrix2) shape is made of such a layout's tiles, as
// Mesa splits a larger matrix: tile t = e / tileLength in row-major tile order, holding
// rows tileRows * (t / tilesAcross) on and columns tileCols * (t % tilesAcross) on, the
// element at e % tileLength in the tile's layout. 48 = three 16-tiles is such a shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coopmat/layout.h"  // LayoutKey and the component type names only (plain data)

namespace coopmat::virt {

struct ElementCoord {
  uint32_t row = 0, col = 0;
  bool operator==(const ElementCoord&) const = default;
};

class ElementLayout {
 public:
  // The line's layout; nullopt with `error` set when the line is malformed or the map
  // does not hold every element equally often.
  static std::optional<ElementLayout> Parse(std::string_view line, std::string& error);
  // A rows x cols matrix of this layout's tiles (both multiples of the tile's sides).
  ElementLayout Tiled(uint32_t rows, uint32_t cols) const;

  const LayoutKey& Key() const { return key_; }
  uint32_t Length() const { return tileLength_ * Tiles(); }
  uint32_t Tiles() const { return (key_.rows / tileRows_) * (key_.cols / tileCols_); }
  uint32_t TileLength() const { return tileLength_; }
  uint32_t TileRows() const { return tileRows_; }
  uint32_t TileCols() const { return tileCols_; }
  // Invocations holding each element.
  uint32_t Replicas() const { return key_.subgroupSize * Length() / (key_.rows * key_.cols); }
  ElementCoord At(uint32_t lane, uint32_t e) const;
  // What lane bit `bit` XORs into the coordinate inside a tile.
  ElementCoord LaneImage(uint32_t bit) const { return lane_[bit]; }
  // The tile part and the in-tile index part of element e (At = LanePart ^ this, plus the tile's corner).
  ElementCoord IndexPart(uint32_t e) const;
  ElementCoord TileCorner(uint32_t e) const;
  // Whether two layouts put every element of every lane at the same coordinate.
  bool SameMap(const ElementLayout& other) const;

 private:
  ElementLayout() = default;
  LayoutKey key_;
  uint32_t tileRows_ = 0, tileCols_ = 0, tileLength_ = 0;
  std::vector<ElementCoord> lane_, index_;  // images per bit
};

}  // namespace coopmat::virt
