// Random GF(2)-linear register layouts: what a driver the built-in tables do not
// describe may use. The register-path tests run the emitted code against them
// (tests/passes/test_random_layouts.cpp) and the lower fuzz target lowers whole
// modules with them (tests/fuzz/fuzz_common.h), so that code that only works for
// the surveyed tables fails.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "coopmat/layout.h"

namespace testsupport {

// A random layout of this key (rows, cols and subgroupSize powers of two) with
// 2^replicaBits copies of every element, which needs
// log2(rows) + log2(cols) + replicaBits >= log2(subgroupSize) and replicaBits <=
// log2(subgroupSize). The replica lane bits map to nothing, the other lane and index
// bits onto the row and column bits by a random bit permutation or, when
// !permutation, a random invertible GF(2) map (so single input bits may set several
// coordinate bits).
inline coopmat::LinearLayout RandomLayout(std::mt19937& random, coopmat::LayoutKey key, uint32_t replicaBits,
                                          bool permutation) {
  const auto log2 = [](uint32_t v) { return static_cast<uint32_t>(std::countr_zero(v)); };
  const uint32_t R = log2(key.rows), C = log2(key.cols), Ls = log2(key.subgroupSize);
  const uint32_t Is = R + C + replicaBits - Ls;
  coopmat::LinearLayout l;
  l.key = key;
  l.length = 1u << Is;
  const uint32_t n = R + C;
  // Columns of an invertible n x n matrix over GF(2), as coordinate-bit masks.
  std::vector<uint32_t> images;
  for (;;) {
    images.clear();
    if (permutation) {
      for (uint32_t j = 0; j < n; ++j) images.push_back(1u << j);
      std::shuffle(images.begin(), images.end(), random);
    } else {
      for (uint32_t j = 0; j < n; ++j) images.push_back(static_cast<uint32_t>(random()) & ((1u << n) - 1));
    }
    // Rank check by elimination.
    std::vector<uint32_t> pivot(32, 0);  // by highest set bit
    uint32_t rank = 0;
    for (uint32_t v : images) {
      while (v && pivot[31 - std::countl_zero(v)]) v ^= pivot[31 - std::countl_zero(v)];
      if (v) {
        pivot[31 - std::countl_zero(v)] = v;
        ++rank;
      }
    }
    if (rank == n) break;
  }
  auto toImage = [&](uint32_t m) { return coopmat::BitImage{m & ((1u << R) - 1), m >> R}; };
  std::vector<uint32_t> lanes(Ls);
  for (uint32_t k = 0; k < Ls; ++k) lanes[k] = k;
  std::shuffle(lanes.begin(), lanes.end(), random);
  std::vector<bool> replica(Ls, false);
  for (uint32_t k = 0; k < replicaBits; ++k) replica[lanes[k]] = true;
  size_t next = 0;
  for (uint32_t k = 0; k < Ls; ++k) l.laneBits.push_back(replica[k] ? coopmat::BitImage{} : toImage(images[next++]));
  for (uint32_t k = 0; k < Is; ++k) l.indexBits.push_back(toImage(images[next++]));
  return l;
}

}  // namespace testsupport
