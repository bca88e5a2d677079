#include "report.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace selftest {

namespace {

// The table's columns: each operation title of plan.cpp under a short header.
struct Column {
  const char* operation;
  const char* header;
};
constexpr Column kColumns[] = {
    {"GetCoordinate", "coord"},
    {"PerElementOp (row, col)", "elem"},
    {"PerElementOp (2 operands)", "elem2"},
    {"Reduce row", "row"},
    {"Reduce col", "col"},
    {"Reduce rowcol", "rowcol"},
    {"Reduce 2x2", "2x2"},
    {"ConvertUse Acc -> A", "toA"},
    {"ConvertUse Acc -> B", "toB"},
    {"ConvertUse Acc -> A (transposed)", "toA^T"},
    {"ConvertUse Acc -> B (transposed)", "toB^T"},
    {"ConvertUse A -> Acc", "toAcc"},
    {"ConvertUse B -> Acc", "toAcc"},
    {"Kernel: GLA chunk", "gla"},
};

std::string Header(const std::string& operation) {
  for (const Column& c : kColumns)
    if (operation == c.operation) return c.header;
  return operation;
}

std::string Shorten(const std::string& text, size_t most) {
  return text.size() <= most ? text : text.substr(0, most) + " ...";
}

// One cell: every case of (matrix, column) passed ("ok"), some failed ("FAIL" or "FAIL n/m"),
// none ran ("skip"), or there was none ("-").
std::string Cell(const std::vector<const CaseResult*>& cases) {
  if (cases.empty()) return "-";
  size_t failed = 0, skipped = 0;
  for (const CaseResult* c : cases) {
    failed += c->outcome == Outcome::Fail;
    skipped += c->outcome == Outcome::Skip;
  }
  if (failed) return failed == cases.size() ? "FAIL" : "FAIL " + std::to_string(failed) + "/" + std::to_string(cases.size());
  if (skipped == cases.size()) return "skip";
  return "ok";
}

void PrintTable(std::FILE* out, const PassReport& pass) {
  std::vector<std::string> headers, matrices;
  std::map<std::pair<std::string, std::string>, std::vector<const CaseResult*>> cells;
  for (const Column& c : kColumns)
    if (std::find(headers.begin(), headers.end(), c.header) == headers.end()) headers.push_back(c.header);
  for (const CaseResult& r : pass.cases) {
    const std::string header = Header(r.operation);
    if (std::find(headers.begin(), headers.end(), header) == headers.end()) headers.push_back(header);
    if (std::find(matrices.begin(), matrices.end(), r.matrix) == matrices.end()) matrices.push_back(r.matrix);
    cells[{r.matrix, header}].push_back(&r);
  }
  size_t first = 6;
  for (const std::string& m : matrices) first = std::max(first, m.size());
  std::vector<size_t> widths;
  for (const std::string& h : headers) widths.push_back(std::max<size_t>(h.size(), 6));
  // One row: its cells padded to the columns, no trailing blanks.
  auto row = [&](const std::string& label, const std::function<std::string(size_t)>& cell) {
    std::string line = "  " + label + std::string(first - label.size(), ' ');
    for (size_t i = 0; i < headers.size(); ++i) {
      const std::string text = cell(i);
      line += " " + text + std::string(widths[i] - std::min(widths[i], text.size()), ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);
    std::fprintf(out, "%s\n", line.c_str());
  };
  row("matrix", [&](size_t i) { return headers[i]; });
  for (const std::string& m : matrices) row(m, [&](size_t i) { return Cell(cells[{m, headers[i]}]); });
}

// How many cases the layer lowered in registers and how many portably (and why), from its
// explain files.
void PrintRoutes(std::FILE* out, const PassReport& pass) {
  std::map<std::string, size_t> routes;
  for (const CaseResult& r : pass.cases) ++routes[r.route.empty() ? "not explained" : r.route];
  std::string text;
  for (const auto& [route, count] : routes) text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + route;
  if (!text.empty()) std::fprintf(out, "  routes: %s\n", text.c_str());
}

// What works around a failed operation: where the driver has the extension, whichever of its
// own implementation and the layer's passed; else the portable route where it passed there;
// else hiding the operation from applications.
void PrintWorkarounds(std::FILE* out, const DeviceReport& device) {
  std::map<std::string, std::set<std::string>> failedOn;  // feature -> routes it failed on
  std::set<std::string> routes;
  for (const PassReport& pass : device.passes) {
    routes.insert(pass.route);
    for (const CaseResult& r : pass.cases)
      if (r.outcome == Outcome::Fail) failedOn[r.feature].insert(pass.route);
  }
  const bool native = routes.count("native") > 0;
  const bool layerRan = routes.size() > (native ? 1u : 0u);
  // Where the driver has the extension the layer steps aside unless told otherwise.
  const std::string force = native ? "VK_COOPMAT_MAINTENANCE1_FORCE_ENABLE=1 " : "";
  for (const auto& [feature, failed] : failedOn) {
    const bool nativeFailed = failed.count("native") > 0;
    const bool layerFailed = failed.size() > (nativeFailed ? 1u : 0u);
    if (native && !nativeFailed)
      std::fprintf(out,
                   "  %s failed through the layer only: applications get the driver's own implementation, which passed "
                   "(the layer steps aside unless force_enable is set)\n",
                   feature.c_str());
    else if (nativeFailed && layerRan && !layerFailed)
      std::fprintf(out,
                   "  workaround for %s: %s(the driver's own implementation failed, the layer's passed: the layer then "
                   "emulates the extension)\n",
                   feature.c_str(), force.c_str());
    else if (failed.count("auto") && !failed.count("portable") && routes.count("portable"))
      std::fprintf(out, "  workaround for %s: %sVK_COOPMAT_MAINTENANCE1_LOWERING=portable (the portable route passed)\n",
                   feature.c_str(), force.c_str());
    else
      std::fprintf(out,
                   "  workaround for %s: %sVK_COOPMAT_MAINTENANCE1_DISABLED_FEATURES=%s (applications no longer see the "
                   "operation)\n",
                   feature.c_str(), force.c_str(), feature.c_str());
  }
  if (!failedOn.empty())
    std::fprintf(out, "  Please report it (README: \"Check it on your GPU\"), with the --json output attached.\n");
}

std::string JsonString(const std::string& s) {
  std::ostringstream o;
  o << '"';
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') o << '\\' << ch;
    else if (c == '\n') o << "\\n";
    else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      o << buffer;
    } else o << ch;
  }
  o << '"';
  return o.str();
}

const char* Name(Outcome outcome) {
  switch (outcome) {
    case Outcome::Pass: return "pass";
    case Outcome::Fail: return "fail";
    case Outcome::Skip: return "skip";
  }
  return "?";
}

template <typename Item, typename Write>
void JsonList(std::ostringstream& o, const std::vector<Item>& items, Write write) {
  o << '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) o << ',';
    write(items[i]);
  }
  o << ']';
}

}  // namespace

Totals Count(const Report& report) {
  Totals t;
  for (const DeviceReport& device : report.devices) {
    t.failed += !device.problem.empty();
    for (const PassReport& pass : device.passes) {
      t.failed += !pass.problem.empty();
      for (const CaseResult& r : pass.cases) {
        t.passed += r.outcome == Outcome::Pass;
        t.failed += r.outcome == Outcome::Fail;
        t.skipped += r.outcome == Outcome::Skip;
      }
    }
  }
  return t;
}

void PrintDevice(std::FILE* out, const DeviceReport& device) {
  std::fprintf(out, "device %u: %s\n  driver: %s; Vulkan %s\n", device.index, device.name.c_str(), device.driver.c_str(),
               device.apiVersion.c_str());
  if (!device.problem.empty()) {
    std::fprintf(out, "  FAIL: %s\n", device.problem.c_str());
    return;
  }
  if (device.driverHasExtension)
    std::fprintf(out,
                 "  the driver implements VK_EXT_cooperative_matrix_maintenance1 itself: lowering=native is its own "
                 "implementation, the others the layer's (force_enable)\n");
  for (const std::string& line : device.layoutLines) std::fprintf(out, "  %s\n", line.c_str());
  for (const std::string& type : device.unknownTypes) std::fprintf(out, "  not tested (no case has the type): %s\n", type.c_str());
  for (const PassReport& pass : device.passes) {
    std::fprintf(out, "  subgroup size %u, lowering=%s:\n", pass.subgroupSize, pass.route.c_str());
    if (!pass.problem.empty()) {
      std::fprintf(out, "  FAIL: %s\n", pass.problem.c_str());
      continue;
    }
    PrintTable(out, pass);
    PrintRoutes(out, pass);
  }
  for (const PassReport& pass : device.passes)
    for (const CaseResult& r : pass.cases)
      if (r.outcome == Outcome::Fail)
        std::fprintf(out, "  FAIL (subgroup size %u, lowering=%s) %s, %s: %s (%s): %s\n", pass.subgroupSize,
                     pass.route.c_str(), r.operation.c_str(), r.matrix.c_str(), r.name.c_str(),
                     r.route.empty() ? "route not explained" : r.route.c_str(), Shorten(r.detail, 400).c_str());
  PrintWorkarounds(out, device);
}

std::string SummaryLine(const Totals& totals) {
  return std::to_string(totals.passed) + " passed, " + std::to_string(totals.failed) + " failed, " +
         std::to_string(totals.skipped) + " skipped";
}

std::string ToJson(const Report& report) {
  std::ostringstream o;
  const Totals totals = Count(report);
  o << "{\"layer\":" << JsonString(report.layer) << ",\"passed\":" << totals.passed << ",\"failed\":" << totals.failed
    << ",\"skipped\":" << totals.skipped << ",\"devices\":";
  JsonList(o, report.devices, [&](const DeviceReport& d) {
    o << "{\"index\":" << d.index << ",\"name\":" << JsonString(d.name) << ",\"driver\":" << JsonString(d.driver)
      << ",\"apiVersion\":" << JsonString(d.apiVersion) << ",\"problem\":" << JsonString(d.problem)
      << ",\"driverHasExtension\":" << (d.driverHasExtension ? "true" : "false") << ",\"layouts\":";
    JsonList(o, d.layoutLines, [&](const std::string& line) { o << JsonString(line); });
    o << ",\"untestedTypes\":";
    JsonList(o, d.unknownTypes, [&](const std::string& line) { o << JsonString(line); });
    o << ",\"passes\":";
    JsonList(o, d.passes, [&](const PassReport& p) {
      o << "{\"subgroupSize\":" << p.subgroupSize << ",\"lowering\":" << JsonString(p.route)
        << ",\"problem\":" << JsonString(p.problem) << ",\"cases\":";
      JsonList(o, p.cases, [&](const CaseResult& r) {
        o << "{\"operation\":" << JsonString(r.operation) << ",\"matrix\":" << JsonString(r.matrix)
          << ",\"case\":" << JsonString(r.name) << ",\"result\":\"" << Name(r.outcome) << "\",\"detail\":" << JsonString(r.detail)
          << ",\"route\":" << JsonString(r.route) << '}';
      });
      o << '}';
    });
    o << '}';
  });
  o << "}\n";
  return o.str();
}

}  // namespace selftest
