// The execution suite's main: Catch2's session, the suite's tally (exec_util.h) at the end, and
// an exit status that does not call a case passed that tested nothing on the device.
//
// ctest runs each case in a process of its own (catch_discover_tests). A case that passed having
// dispatched nothing (the bfloat16 and fp8 cases on lavapipe, which lists neither type) checked
// nothing it claims to, so a run in which no case dispatched anything ends as skipped: Catch2's
// exit 4, which catch_discover_tests registers as ctest's SKIP_RETURN_CODE. The cases that by
// design dispatch nothing say so with a tag, pass as they are, and fail if they do dispatch:
//   [cpu]          no device at all (the CPU reference, offline lowering); the portable twin
//                  leaves them out (tests/CMakeLists.txt), the lowering cannot change them
//   [no-dispatch]  a device that must refuse or fail the work (the harness's failure report,
//                  a specialization the layer refuses)
// With COOPMAT_EXEC_CASE_TALLY=<dir> (the lavapipe suite's ctest cases) each run writes one line
// per case into <dir>, which scripts/test's summary adds up (exec_tally.py suite-summary).
#include "exec_util.h"

#include <catch2/catch_session.hpp>
#include <catch2/catch_test_case_info.hpp>
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

bool HasTag(const Catch::TestCaseInfo& info, const char* tag) {
  for (const Catch::Tag& t : info.tags)
    if (t.original == Catch::StringRef(tag)) return true;
  return false;
}

struct CaseOutcome {
  std::string name;
  std::string outcome;  // dispatched, nothing, by-design, skipped, failed, mistagged
  exec::TallyTotals counts;
};

struct RunRecord {
  std::vector<CaseOutcome> cases;
  exec::TallyTotals atStart;
  bool byDesign = false;
};
RunRecord& TheRecord() {
  static RunRecord record;
  return record;
}

class CaseTally : public Catch::EventListenerBase {
 public:
  using Catch::EventListenerBase::EventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    TheRecord().atStart = exec::CurrentTallyTotals();
    TheRecord().byDesign = HasTag(info, "cpu") || HasTag(info, "no-dispatch");
  }
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    const exec::TallyTotals now = exec::CurrentTallyTotals();
    CaseOutcome c{stats.testInfo->name, "", {now.ran - TheRecord().atStart.ran, now.notRun - TheRecord().atStart.notRun}};
    if (stats.totals.testCases.failed > 0)
      c.outcome = "failed";
    else if (stats.totals.testCases.skipped > 0)
      c.outcome = "skipped";
    else if (TheRecord().byDesign)
      c.outcome = c.counts.ran > 0 ? "mistagged" : "by-design";
    else
      c.outcome = c.counts.ran > 0 ? "dispatched" : "nothing";
    if (c.outcome == "nothing") std::printf("exec tally: dispatched nothing: %s\n", c.name.c_str());
    if (c.outcome == "mistagged")
      std::printf("exec: '%s' is tagged [cpu] or [no-dispatch] but dispatched %zu times\n", c.name.c_str(), c.counts.ran);
    TheRecord().cases.push_back(c);
  }
  void testRunEnded(const Catch::TestRunStats&) override { exec::PrintRunTally(); }
};
CATCH_REGISTER_LISTENER(CaseTally)

// "<lowering>\t<outcome>\t<dispatches>\t<runs not run>\t<case>" per case, one file per run
// (named by a hash of its cases, so that running a case again replaces its line).
void WriteCaseTally(const char* dir) {
  const char* lowering = std::getenv("VK_COOPMAT_MAINTENANCE1_LOWERING");
  const std::string mode = lowering && *lowering ? lowering : "auto";
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the lowering and the cases' names
  std::string text;
  for (const CaseOutcome& c : TheRecord().cases) {
    text += mode + "\t" + c.outcome + "\t" + std::to_string(c.counts.ran) + "\t" + std::to_string(c.counts.notRun) + "\t" +
            c.name + "\n";
    for (char ch : mode + "\n" + c.name + "\n") h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  }
  char file[32];
  std::snprintf(file, sizeof(file), "%016llx.txt", static_cast<unsigned long long>(h));
  std::filesystem::create_directories(dir);
  std::ofstream(std::filesystem::path(dir) / file) << text;
}

}  // namespace

int main(int argc, char* argv[]) {
  int status = Catch::Session().run(argc, argv);
  const std::vector<CaseOutcome>& cases = TheRecord().cases;
  size_t claimed = 0, ran = 0;
  for (const CaseOutcome& c : cases) {
    if (c.outcome == "mistagged") status = status ? status : 1;
    claimed += c.outcome == "nothing" || c.outcome == "dispatched";
    ran += c.counts.ran;
  }
  if (status == 0 && claimed > 0 && ran == 0) {
    std::printf("exec: no test case dispatched anything: skipped (exit 4), not passed\n");
    status = 4;
  }
  if (const char* dir = std::getenv("COOPMAT_EXEC_CASE_TALLY"); dir && *dir && !cases.empty()) WriteCaseTally(dir);
  return status;
}
