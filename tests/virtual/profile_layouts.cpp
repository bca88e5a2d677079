// Prints a driver family's built-in layouts (coopmat/layout.h) at the given subgroup
// sizes as profile `layout` lines: how tests/virtual/profiles got their tables.
//   coopmat-virtual-layouts <lavapipe|radv-gfx11|radv-gfx12|cdna-mfma|nvidia-mma> <size>...
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "coopmat/layout.h"

int main(int argc, char** argv) {
  using coopmat::DriverFamily;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <family> <subgroup size>...\n", argv[0]);
    return 2;
  }
  for (DriverFamily family : {DriverFamily::Lavapipe, DriverFamily::RadvGfx11, DriverFamily::RadvGfx12, DriverFamily::CdnaMfma,
                              DriverFamily::NvidiaMma}) {
    if (std::strcmp(argv[1], coopmat::ToString(family)) != 0) continue;
    for (int i = 2; i < argc; ++i)
      for (const coopmat::LinearLayout& layout : coopmat::BuiltinLayouts(family, static_cast<uint32_t>(std::atoi(argv[i]))))
        std::printf("%s\n", coopmat::FormatLayout(layout).c_str());
    return 0;
  }
  std::fprintf(stderr, "unknown family '%s'\n", argv[1]);
  return 2;
}
