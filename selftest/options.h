// coopmat-selftest's command line: what to run, checked before anything runs (a file that
// cannot be read, a family that does not exist or a folder that cannot be made is a bad
// argument, not a run that quietly tests less).
#pragma once

#include <string>
#include <vector>

namespace selftest {

// The pass that runs the driver's own implementation, where it has one.
inline constexpr const char* kNativeRoute = "native";

struct Options {
  int device = -1;                  // --device N: only that one
  std::string json;                 // --json FILE
  std::string builtinLayouts;       // --builtin-layouts FAMILY
  std::string layoutsFile;          // --layouts FILE
  std::vector<std::string> routes = {"auto", "portable"};  // and "native" first where the driver has the extension
  bool routeChosen = false;         // --lowering named one
  std::string filter;               // --filter TEXT: cases whose name or operation contains it
  bool flexible = true;             // --shapes all: also NV flexible dimensions where the device has them
  bool list = false;                // --list: print the plan, run nothing
  bool verbose = false;             // --verbose: the layer's and driver's own stderr lines too
  std::string dumpDir;              // --dump-dir DIR: keep the layer's dumps there (else a temporary folder)
};

// Fills `options` from the arguments; false after printing why (with the usage) to stderr.
// --help prints the usage and exits 0.
bool ParseOptions(int argc, char** argv, Options& options);

}  // namespace selftest
