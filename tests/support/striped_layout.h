// A made-up register layout for tests, which no driver has: element k of the
// row-major order is element k % length of lane k / length. Valid (ValidateLayout)
// for power-of-two shapes and subgroup sizes; tests use it to give the lowering
// layouts at subgroup sizes the device does not run.
#pragma once

#include <bit>

#include "coopmat/layout.h"

namespace cmtest {

inline coopmat::LinearLayout StripedLayout(const coopmat::LayoutKey& key) {
  auto log2 = [](uint32_t v) { return static_cast<uint32_t>(std::countr_zero(v)); };
  const uint32_t colBits = log2(key.cols), laneBits = log2(key.subgroupSize);
  const uint32_t lengthBits = colBits + log2(key.rows) - laneBits;
  auto image = [&](uint32_t bit) {
    return bit < colBits ? coopmat::BitImage{0, 1u << bit} : coopmat::BitImage{1u << (bit - colBits), 0};
  };
  coopmat::LinearLayout l;
  l.key = key;
  l.length = 1u << lengthBits;
  for (uint32_t j = 0; j < lengthBits; ++j) l.indexBits.push_back(image(j));
  for (uint32_t j = 0; j < laneBits; ++j) l.laneBits.push_back(image(lengthBits + j));
  return l;
}

}  // namespace cmtest
