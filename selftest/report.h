// What the self-test found, and how it is written: a table per device and pass for people,
// JSON for bug reports.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace selftest {

enum class Outcome { Pass, Fail, Skip };

struct CaseResult {
  std::string operation, matrix, name, feature;
  Outcome outcome = Outcome::Pass;
  std::string detail;  // the first mismatches, or why it did not run
  std::string route;   // what the layer's explain files said: "registers", "portable (<why>)", ...
};

// One run of the plan: one subgroup size, one lowering route.
struct PassReport {
  uint32_t subgroupSize = 0;
  std::string route;    // "auto" (registers where the layer has layouts), "portable", "registers" or
                        // "native" (the driver's own implementation, the layer stepping aside)
  std::string problem;  // why the pass could not run at all (then it counts as one failure)
  std::vector<CaseResult> cases;
};

struct DeviceReport {
  uint32_t index = 0;
  std::string name, driver, apiVersion;
  std::string problem;  // why the device was not tested (no VK_KHR_cooperative_matrix, ...)
  bool driverHasExtension = false;        // the driver implements the extension itself (a "native" pass ran)
  std::vector<std::string> layoutLines;   // the layer's "layout: ..." lines (probed, cached or a table)
  std::vector<std::string> unknownTypes;  // listed types the cases do not have
  std::vector<PassReport> passes;
};

struct Report {
  std::string layer;  // the layer's name, description and versions as the loader lists them
  std::vector<DeviceReport> devices;
};

struct Totals {
  size_t passed = 0, failed = 0, skipped = 0;
};
Totals Count(const Report& report);

// The device's header, layouts, a table per pass (rows: matrices; columns: operations) and
// its failures with the first mismatch and the setting that works around them.
void PrintDevice(std::FILE* out, const DeviceReport& device);
// "N passed, N failed, N skipped".
std::string SummaryLine(const Totals& totals);
// The whole report as JSON (what --json writes).
std::string ToJson(const Report& report);

}  // namespace selftest
