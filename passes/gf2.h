// Gaussian elimination over GF(2) on bit vectors packed into 64-bit words, shared
// by the layout model (fitting, inverses, relayouts) and the register path's
// gather planner, and the small linear-map helpers they share. Each row remembers
// which input combination produced it.
#pragma once

#include <bit>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace coopmat::gf2 {

struct Elimination {
  struct Row {
    uint64_t image = 0;
    uint64_t input = 0;
  };
  std::map<uint32_t, Row> pivot;  // keyed by the highest bit of the image
  std::vector<uint64_t> kernel;   // input combinations with image 0

  // Adds one input vector; returns false when its image was already spanned.
  bool Add(uint64_t image, uint64_t input) {
    for (auto it = pivot.rbegin(); it != pivot.rend() && image != 0; ++it)
      if (image >> it->first & 1) {
        image ^= it->second.image;
        input ^= it->second.input;
      }
    if (image == 0) {
      kernel.push_back(input);
      return false;
    }
    pivot[63 - static_cast<uint32_t>(std::countl_zero(image))] = {image, input};
    return true;
  }
  // Clears every pivot bit from the other rows (reduced row echelon form).
  // After it, pivot[b] maps to a vector whose only pivot bit is b; when the map is
  // onto, that vector is exactly bit b, so pivot inputs are preimages.
  void Reduce() {
    for (auto& [bit, row] : pivot)
      for (auto& [other, otherRow] : pivot)
        if (other != bit && (otherRow.image >> bit & 1)) {
          otherRow.image ^= row.image;
          otherRow.input ^= row.input;
        }
  }
  uint32_t Rank() const { return static_cast<uint32_t>(pivot.size()); }
  // A preimage of target when it is in the image (after Reduce(); linear in target,
  // reads pivot bits only, so replica/kernel bits come out zero).
  uint64_t Preimage(uint64_t target) const {
    uint64_t input = 0;
    for (const auto& [bit, row] : pivot)
      if (target >> bit & 1) input ^= row.input;
    return input;
  }
  // Whether image is outside the span of the rows added so far.
  bool Independent(uint64_t image) const {
    for (auto it = pivot.rbegin(); it != pivot.rend() && image != 0; ++it)
      if (image >> it->first & 1) image ^= it->second.image;
    return image != 0;
  }
};

// Eliminates the map whose input bit i has image images[i].
inline Elimination Eliminate(const std::vector<uint64_t>& images) {
  Elimination e;
  for (size_t i = 0; i < images.size(); ++i) e.Add(images[i], uint64_t{1} << i);
  e.Reduce();
  return e;
}

// log2 of a power of two.
inline uint32_t Log2(uint32_t v) { return static_cast<uint32_t>(std::countr_zero(v)); }

// Applies a linear map given by per-bit images to x.
inline uint64_t Apply(const std::vector<uint32_t>& images, uint64_t x) {
  uint64_t out = 0;
  for (size_t k = 0; k < images.size(); ++k)
    if (x >> k & 1) out ^= images[k];
  return out;
}

// Projection of an index onto the representatives of the cosets of span(xors):
// clears the pivot bits of a reduced basis. Linear.
struct Projection {
  std::vector<std::pair<uint32_t, uint32_t>> basis;  // (pivot bit, vector), reduced
  explicit Projection(const std::vector<uint32_t>& xors) {
    for (uint32_t u : xors) {
      for (const auto& [p, v] : basis)
        if (u >> p & 1) u ^= v;
      if (!u) continue;
      const uint32_t p = 31 - static_cast<uint32_t>(std::countl_zero(u));
      for (auto& [q, v] : basis)
        if (v >> p & 1) v ^= u;
      basis.push_back({p, u});
    }
  }
  uint32_t operator()(uint32_t i) const {
    for (const auto& [p, v] : basis)
      if (i >> p & 1) i ^= v;
    return i;
  }
};

}  // namespace coopmat::gf2
