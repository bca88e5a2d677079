// Regression tests for the third review (review-130c39d.md) in passes/. Each case
// fails on the code before its fix.
#include <catch2/catch_test_macros.hpp>

#include "coopmat/layout.h"
#include "coopmat/lower.h"
#include "test_support.h"

namespace {

// As `coopmat-lower --builtin-layouts radv-gfx11:32 --builtin-layouts radv-gfx11:64
// --subgroup-sizes 32,64 --flexible-dimensions 64 --max-shared-memory 65536` lowers.
coopmat::LowerOptions RadvGfx11BothWaveSizes() {
  coopmat::LowerOptions options;
  for (uint32_t size : {32u, 64u}) {
    const auto layouts = coopmat::BuiltinLayouts(coopmat::DriverFamily::RadvGfx11, size);
    options.layouts.insert(options.layouts.end(), layouts.begin(), layouts.end());
    coopmat::ApplyMeasuredCosts(coopmat::DriverFamily::RadvGfx11, options);
  }
  options.subgroupSizes = {32, 64};
  options.flexibleDimensions = true;
  options.flexibleMaxDimension = 64;
  options.maxSharedMemoryBytes = 65536;
  return options;
}

}  // namespace

// Finding 1: the per-size switch's default (a SubgroupSize outside the list) lowered
// the 2x2 reduce of a 32x32 f32 through the scratch, which sized every slice for it:
// 4096 bytes per subgroup instead of the 1536 the 16x16 f32 -> f16 round trip needs.
TEST_CASE("review 130c39d finding 1: the unlisted-size default never enlarges the scratch", "[review3][register]") {
  const auto result = coopmat::LowerModule(passtest::LoadShader("reduce_beside_round_trip", "spirv1.6"), RadvGfx11BothWaveSizes());
  INFO(result.error);
  REQUIRE(result.ok);
  CHECK(coopmat::ValidateModule(result.words).empty());
  CHECK(result.stats.reduce == 1);
  CHECK(result.stats.registerPath == 1);  // the reduce; the conversion is the round trip
  CHECK(result.stats.scratchBytesPerSubgroup > 0);
  CHECK(result.stats.scratchBytesPerSubgroup <= 1536);
}
