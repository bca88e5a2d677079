// The fourth review's (dbb465e) product findings, through the real loader.
#include <catch2/catch_test_macros.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "layer_test_util.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;

namespace {

// Info messages say where the layouts came from; no lowered-code disk cache.
InstanceOptions LoggingLayouts() {
  return ThroughTheLayer({StringSetting("log_level", "debug"), StringSetting("shader_cache", "false")});
}

std::vector<std::filesystem::path> LayoutFiles(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.path().filename().string().rfind("layouts-", 0) == 0) files.push_back(entry.path());
  return files;
}

// A device of this build on lavapipe; true when it took its layouts from the layout file
// (no probe).
bool DeviceReadLayoutFile(const std::filesystem::path& file) {
  Instance instance(LoggingLayouts());
  Device device(instance);
  REQUIRE(device.ok());
  return AnyMessageContains(instance, " from " + file.string());
}

void MakeUnusedFor(const std::filesystem::path& file, std::chrono::hours age) {
  std::filesystem::last_write_time(file, std::filesystem::file_time_type::clock::now() - age);
}

bool RecentlyUsed(const std::filesystem::path& file) {
  return std::filesystem::last_write_time(file) > std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
}

}  // namespace

// Finding 6: writing a layout file deleted every other build's, so two builds used in
// turn (a distribution's package and a developer's sharing ~/.cache) each probed again
// at every start; files of this build for old drivers were never removed. Now a layout
// file goes when nothing has used it for 30 days, and reading one marks it used. The
// other build is stood for by a copy of this build's file under its name.
TEST_CASE("review dbb465e 6: two builds used in turn probe once each; unused layout files age out",
          "[layer][review4][cache]") {
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");  // lowering=portable runs no probe
  const std::filesystem::path home = TempPath("review4-layout-files");
  std::filesystem::remove_all(home);
  ScopedEnv cache("XDG_CACHE_HOME", home.string());
  const std::filesystem::path folder = home / "coopmat-maintenance1";

  CHECK_FALSE(DeviceReadLayoutFile(folder / "none"));  // probes and writes this build's file
  const std::vector<std::filesystem::path> written = LayoutFiles(folder);
  REQUIRE(written.size() == 1);
  const std::filesystem::path ours = written[0];
  const std::string name = ours.filename().string();
  const std::string buildSuffix = name.substr(name.rfind('-'));  // "-<build>.txt"
  const std::filesystem::path otherBuild = folder / (name.substr(0, name.rfind('-')) + "-0ther0build.txt");
  const std::filesystem::path otherBuildUnused = folder / (name.substr(0, name.rfind('-')) + "-0ld0build.txt");
  const std::filesystem::path otherDevice = folder / ("layouts-another-gpu" + buildSuffix);
  const std::filesystem::path oldDriver = folder / ("layouts-an-old-driver-version" + buildSuffix);
  for (const auto& copy : {otherBuild, otherBuildUnused, otherDevice, oldDriver}) std::filesystem::copy_file(ours, copy);
  MakeUnusedFor(otherBuildUnused, std::chrono::hours(24 * 31));
  MakeUnusedFor(oldDriver, std::chrono::hours(24 * 31));

  // This build's turn again, its file gone (as the other build's write removed it before).
  std::filesystem::remove(ours);
  CHECK_FALSE(DeviceReadLayoutFile(ours));  // probes once more and writes
  CHECK(std::filesystem::exists(ours));
  CHECK(std::filesystem::exists(otherBuild));  // the other build's turn will not probe
  CHECK(std::filesystem::exists(otherDevice));
  CHECK_FALSE(std::filesystem::exists(otherBuildUnused));
  CHECK_FALSE(std::filesystem::exists(oldDriver));

  // Read, not written: still marked as in use.
  MakeUnusedFor(ours, std::chrono::hours(24 * 20));
  CHECK(DeviceReadLayoutFile(ours));
  CHECK(RecentlyUsed(ours));
  std::filesystem::remove_all(home);
}
