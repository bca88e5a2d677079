#include "options.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "coopmat/layout.h"

namespace selftest {
namespace {

constexpr const char* kUsage =
    "usage: coopmat-selftest [--device N] [--json FILE] [--lowering auto|portable|registers|native]\n"
    "                        [--builtin-layouts FAMILY] [--layouts FILE] [--shapes all|listed] [--filter TEXT]\n"
    "                        [--list] [--dump-dir DIR] [--verbose]\n"
    "Runs every VK_EXT_cooperative_matrix_maintenance1 operation through the installed layer on each device\n"
    "with VK_KHR_cooperative_matrix, at every shape and type it lists, and compares each result with a CPU\n"
    "reference. Where the driver implements the extension itself, every case also runs on the driver's own\n"
    "implementation (lowering=native), so the two can be compared. Exit status: 0 all passed, 1 a failure, 2\n"
    "nothing could be tested or bad arguments.\n"
    "  --device N             only device N (vkEnumeratePhysicalDevices order, as listed)\n"
    "  --json FILE            also write the whole report as JSON (attach it to a bug report)\n"
    "  --lowering ROUTE       only that route (default: auto and portable, and native where the driver has the\n"
    "                         extension; registers: as auto, conversions in registers even where the round trip\n"
    "                         is cheaper; native: only the driver's own implementation)\n"
    "  --builtin-layouts F    use the layer's built-in table of family F (lavapipe, radv-gfx11, radv-gfx12,\n"
    "                         cdna-mfma, nvidia-mma) instead of the probed layouts: checks a table on a device\n"
    "  --layouts FILE         use the layouts in FILE (the text form coopmat-info --layouts writes) instead\n"
    "  --shapes listed        only the shapes the device lists (default all: also NV flexible dimensions, twice\n"
    "                         their granularity in rows, columns and both, where the device has them)\n"
    "  --filter TEXT          only cases whose name or operation contains TEXT\n"
    "  --list                 list the cases for each device and run none\n"
    "  --dump-dir DIR         keep what the layer dumps for every case (original, lowered, GLSL, explain) in DIR\n"
    "  --verbose              let the layer and the driver write to stderr (the layer's lines are in the report anyway)\n";

bool Bad(const std::string& message) {
  std::fprintf(stderr, "coopmat-selftest: %s\n%s", message.c_str(), kUsage);
  return false;
}

// A layouts file the layer can use: readable, not a folder, in the text form (the layer
// would warn and lower portably, and every case would pass without a layout read).
std::string LayoutsFileProblem(const std::string& path) {
  const coopmat::ParseResult parsed = coopmat::ReadLayouts(path);
  if (!parsed.ok) return "--layouts " + path + ": " + parsed.error;
  if (parsed.layouts.empty()) return "--layouts " + path + ": no layout in it";
  return "";
}

}  // namespace

bool ParseOptions(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--device" && value(v)) {
      int n = -1;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < 0)
        return Bad("--device needs a device index (0, 1, ...), not '" + v + "'");
      o.device = n;
    } else if (arg == "--json" && value(v)) {
      // Found out now, not after the whole run.
      if (!std::ofstream(v)) return Bad("--json " + v + ": cannot be written");
      o.json = v;
    } else if (arg == "--lowering" && value(v) && (v == "auto" || v == "portable" || v == "registers" || v == kNativeRoute)) {
      o.routes = {v};
      o.routeChosen = true;
    } else if (arg == "--builtin-layouts" && value(v)) {
      if (!coopmat::DriverFamilyByName(v))
        return Bad("--builtin-layouts: no family '" + v + "' (" + coopmat::DriverFamilyNames() + ")");
      o.builtinLayouts = v;
    } else if (arg == "--layouts" && value(v)) {
      if (const std::string problem = LayoutsFileProblem(v); !problem.empty()) return Bad(problem);
      o.layoutsFile = v;
    } else if (arg == "--shapes" && value(v) && (v == "all" || v == "listed")) {
      o.flexible = v == "all";
    } else if (arg == "--filter" && value(v)) {
      o.filter = v;
    } else if (arg == "--list") {
      o.list = true;
    } else if (arg == "--dump-dir" && value(v)) {
      std::error_code ec;
      std::filesystem::create_directories(v, ec);
      if (!std::filesystem::is_directory(v, ec)) return Bad("--dump-dir " + v + ": cannot be made a folder");
      o.dumpDir = v;
    } else if (arg == "--verbose") {
      o.verbose = true;
    } else {
      return Bad("unknown or incomplete argument '" + arg + "'");
    }
  }
  return true;
}

}  // namespace selftest
