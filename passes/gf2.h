// Gaussian elimination over GF(2) on bit vectors packed into 64-bit words, shared
// by the layout model (fitting, inverses, relayouts) and the register path's
// gather planner. Each row remembers which input combination produced it.
#pragma once

#include <bit>
#include <cstdint>
#include <map>
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

}  // namespace coopmat::gf2
