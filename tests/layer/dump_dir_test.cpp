// dump_dir (review finding 20): every lowering a user may be debugging is in the
// folder under a name of its own, whole, however it was obtained: a refused
// pipeline-time lowering beside the module's own dump, one specialization file per
// specialization, files that concurrent lowerings of one module never leave
// half-written, and lowerings served from the memory or the disk cache.
#include <sys/inotify.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "coopmat/lower.h"
#include "layer_test_util.h"
#include "spec_tiles_pipelines.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;
using Catch::Matchers::ContainsSubstring;

namespace {

InstanceOptions Dumping(const std::string& dir, bool diskCache = false) {
  return ThroughTheLayer({StringSetting("dump_dir", dir), StringSetting("log_level", "debug"),
                          StringSetting("shader_cache", diskCache ? "true" : "false")});
}

// The files under `dir` whose names end with `ending`, sorted.
std::vector<std::filesystem::path> FilesEndingWith(const std::string& dir, const std::string& ending) {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() >= ending.size() && name.compare(name.size() - ending.size(), ending.size(), ending) == 0)
      found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// The message of the one pipeline-time lowering served from `source` ("memory
// cache"), and the dump it names.
std::filesystem::path DumpNamedByCacheHit(const Instance& instance, const std::string& source) {
  std::vector<std::string> lines;
  for (const Message& m : instance.messages())
    if (m.text.find("pipeline-time lowering") != std::string::npos && m.text.find("from the " + source) != std::string::npos)
      lines.push_back(m.text);
  REQUIRE(lines.size() == 1);
  INFO(lines[0]);
  const size_t at = lines[0].find("(dump: ");
  REQUIRE(at != std::string::npos);
  return lines[0].substr(at + 7, lines[0].size() - at - 8);
}

// The report of the one pipeline-time lowering dumped under `dir`.
std::filesystem::path PipelineReport(const std::string& dir) {
  std::vector<std::filesystem::path> found;
  for (const auto& path : FilesEndingWith(dir, ".txt"))
    if (path.filename().string().find(".pipeline-") != std::string::npos &&
        !path.filename().string().ends_with(".specialization.txt"))
      found.push_back(path);
  INFO("pipeline-time reports in " << dir);
  REQUIRE(found.size() == 1);
  return found[0];
}

// "1234abcd" of <hash>.pipeline-1234abcd.txt.
std::string VariantOf(const std::filesystem::path& report) {
  const std::string name = report.filename().string();
  const size_t at = name.find(".pipeline-") + std::string(".pipeline-").size();
  return name.substr(at, name.size() - at - std::string(".txt").size());
}

// What a cache hit with no dump of its own writes (spec_tiles at 16x16x16): the
// original, the lowered module that validates and its GLSL, the specialization, and
// a report that says where the code came from. Returns the report.
std::string CheckCachedDump(const std::string& dir, const std::vector<uint32_t>& original, const std::string& from) {
  const std::filesystem::path report = PipelineReport(dir);
  const std::string variant = ".pipeline-" + VariantOf(report);
  const std::string text = ReadText(report);
  CHECK_THAT(text, ContainsSubstring("pipeline-time lowering served from " + from));
  CHECK_THAT(text, ContainsSubstring("6 operations"));
  CHECK(ReadSpirv(DumpedFile(dir, ".original.spv").string()) == original);
  const std::vector<uint32_t> lowered = ReadSpirv(DumpedFile(dir, variant + ".lowered.spv").string());
  CHECK(coopmat::ValidateModule(lowered, 3).empty());
  CHECK_THAT(ReadText(DumpedFile(dir, variant + ".lowered.glsl")), ContainsSubstring("void main()"));
  CHECK(ReadText(DumpedFile(dir, variant + ".specialization.txt")) ==
        "--specialize 0=16\n--specialize 3=16\n--specialize 4=16\n--specialize 5=16\n--specialize 6=8\n");
  return text;
}

}  // namespace

TEST_CASE("dump_dir: a refused pipeline-time lowering is dumped as its own variant, one specialization file each",
          "[layer][dump][malformed]") {
  const std::string dir = TempPath("dump-refused-variants");
  std::filesystem::remove_all(dir);
  Instance instance(Dumping(dir));
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  VkShaderModule module = CreateModule(device, SpecTiles("spirv1.6"));
  // The module-time lowering's report (the stand-in the module handle holds).
  const std::filesystem::path moduleReport = DumpedFile(dir, ".txt");
  const std::string moduleText = ReadText(moduleReport);
  REQUIRE_THAT(moduleText, ContainsSubstring("vkCreateShaderModule"));
  {
    SpecTilesPipelines pipelines(device);
    CHECK(pipelines.Create(module, 8, 8, 16) == VK_ERROR_UNKNOWN);   // TK != TN
    CHECK(pipelines.Create(module, 16, 16, 8) == VK_ERROR_UNKNOWN);  // the other way round
  }
  vkDestroyShaderModule(device.handle(), module, nullptr);
  // Before: each refusal overwrote <hash>.txt and <hash>.specialization.txt.
  CHECK(ReadText(moduleReport) == moduleText);
  const auto reports = FilesEndingWith(dir, ".txt");
  std::vector<std::string> refusals, specializations;
  for (const auto& path : reports) {
    const std::string name = path.filename().string();
    if (name.find(".pipeline-") == std::string::npos) continue;
    (name.ends_with(".specialization.txt") ? specializations : refusals).push_back(ReadText(path));
  }
  REQUIRE(refusals.size() == 2);
  for (const std::string& text : refusals) {
    CHECK_THAT(text, ContainsSubstring("vkCreateComputePipelines"));
    CHECK_THAT(text, ContainsSubstring("do not match"));
  }
  REQUIRE(specializations.size() == 2);
  const std::string tk16 = "--specialize 0=16\n--specialize 3=8\n--specialize 4=8\n--specialize 5=16\n--specialize 6=8\n";
  const std::string tn16 = "--specialize 0=16\n--specialize 3=16\n--specialize 4=16\n--specialize 5=8\n--specialize 6=8\n";
  CHECK(((specializations[0] == tk16 && specializations[1] == tn16) ||
         (specializations[0] == tn16 && specializations[1] == tk16)));
  std::filesystem::remove_all(dir);
}

TEST_CASE("dump_dir: lowerings of one module on several threads never leave a reader a half-written file",
          "[layer][dump][threads]") {
  const std::string dir = TempPath("dump-concurrent");
  std::filesystem::remove_all(dir);
  Instance instance(Dumping(dir));
  Device device(instance);
  REQUIRE(device.ok());
  const std::vector<uint32_t> words = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/get_coordinate.spirv1.6.spv");
  REQUIRE(!words.empty());
  auto createAndDestroy = [&] {
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = words.size() * 4;
    info.pCode = words.data();
    VkShaderModule module = VK_NULL_HANDLE;
    const VkResult result = vkCreateShaderModule(device.handle(), &info, nullptr, &module);
    if (module) vkDestroyShaderModule(device.handle(), module, nullptr);
    return result;
  };
  REQUIRE(createAndDestroy() == VK_SUCCESS);
  // Every lowering of this module writes the same bytes to these two.
  const std::vector<std::filesystem::path> files = {DumpedFile(dir, ".original.spv"), DumpedFile(dir, ".lowered.spv")};
  std::vector<std::string> expected;
  for (const auto& file : files) expected.push_back(ReadText(file));
  REQUIRE(expected[0].size() == words.size() * 4);
  REQUIRE(!expected[1].empty());

  // Files that are only ever renamed into place are whole whenever they can be
  // opened; one written in place shows as a modification of its own name.
  const int watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  REQUIRE(watch >= 0);
  REQUIRE(inotify_add_watch(watch, dir.c_str(), IN_MODIFY | IN_CLOSE_WRITE) >= 0);
  std::atomic<bool> writing{true};
  std::atomic<int> failures{0}, partialReads{0}, reads{0};
  std::thread reader([&] {
    while (writing) {
      for (size_t i = 0; i < files.size(); ++i) {
        ++reads;
        if (ReadText(files[i]) != expected[i]) ++partialReads;
      }
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t)
    writers.emplace_back([&] {
      for (int i = 0; i < 25; ++i)
        if (createAndDestroy() != VK_SUCCESS) ++failures;
    });
  for (auto& writer : writers) writer.join();
  writing = false;
  reader.join();
  std::vector<std::string> writtenInPlace;
  alignas(inotify_event) char events[1 << 16];
  for (ssize_t n; (n = read(watch, events, sizeof(events))) > 0;)
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(events + at);
      const std::string name = event->len ? event->name : "";
      if (name.find(".tmp.") == std::string::npos) writtenInPlace.push_back(name);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  close(watch);
  INFO(reads << " reads while 100 lowerings wrote the dump; " << writtenInPlace.size() << " writes in place, the first "
             << (writtenInPlace.empty() ? "" : writtenInPlace[0]));
  CHECK(writtenInPlace.empty());
  CHECK(failures == 0);
  CHECK(partialReads == 0);
  CHECK(FilesEndingWith(dir, ".original.spv").size() == 1);  // and no temporary left behind
  CHECK(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()) == 5);
  CHECK(instance.problems().empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("dump_dir: a lowering from the memory cache names its dump, or writes one", "[layer][dump][cache]") {
  const std::string dir = TempPath("dump-memory-hit");
  std::filesystem::remove_all(dir);
  Instance instance(Dumping(dir));
  Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
  REQUIRE(device.ok());
  const std::vector<uint32_t> original = SpecTiles("spirv1.6");
  VkShaderModule module = CreateModule(device, original);
  SpecTilesPipelines pipelines(device);
  REQUIRE(pipelines.Create(module, 16, 16, 16) == VK_SUCCESS);  // lowered, and dumped with its report
  const std::filesystem::path report = PipelineReport(dir);
  const std::string reportText = ReadText(report);
  CHECK_THAT(reportText, ContainsSubstring("OpCooperativeMatrixReduceEXT"));

  instance.clearMessages();
  REQUIRE(pipelines.Create(module, 16, 16, 16) == VK_SUCCESS);  // from memory: the message names the dump
  CHECK(DumpNamedByCacheHit(instance, "memory cache") == report);
  CHECK(ReadText(report) == reportText);  // the lowering's own report stays

  std::filesystem::remove_all(dir);  // e.g. dump_dir emptied while the app runs
  instance.clearMessages();
  REQUIRE(pipelines.Create(module, 16, 16, 16) == VK_SUCCESS);
  CHECK(DumpNamedByCacheHit(instance, "memory cache") == report);
  CheckCachedDump(dir, original, "the memory cache");
  vkDestroyShaderModule(device.handle(), module, nullptr);
  CHECK(instance.problems().empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("dump_dir: a lowering from the disk cache is dumped, with the entry it came from", "[layer][dump][cache]") {
  const std::filesystem::path home = TempPath("dump-disk-hit");
  const std::string dir = TempPath("dump-disk-hit-dump"), freshDir = TempPath("dump-disk-hit-fresh");
  for (const auto& path : {home.string(), dir, freshDir}) std::filesystem::remove_all(path);
  ScopedEnv cache("XDG_CACHE_HOME", home.string());
  const std::vector<uint32_t> original = SpecTiles("spirv1.6");
  auto run = [&](const InstanceOptions& options, const char* expected) {
    Instance instance(options);
    Device device(instance, DeviceOptions{.enableNvCoopmat2 = true});
    REQUIRE(device.ok());
    VkShaderModule module = CreateModule(device, original);
    {
      SpecTilesPipelines pipelines(device);
      CHECK(pipelines.Create(module, 16, 16, 16) == VK_SUCCESS);
    }
    vkDestroyShaderModule(device.handle(), module, nullptr);
    CHECK(CountMessages(instance, expected) == 1);
    CHECK(instance.problems().empty());
  };
  run(ThroughTheLayer({StringSetting("log_level", "debug"), StringSetting("shader_cache", "true")}), "lowered in");                   // an earlier run, without dump_dir: the entry goes to disk
  run(Dumping(dir, true), "from the disk cache (dump: ");
  const std::string text = CheckCachedDump(dir, original, "the disk cache entry ");
  const size_t at = text.find("the disk cache entry ") + std::string("the disk cache entry ").size();
  const std::filesystem::path entry = text.substr(at, text.find("; ", at) - at);
  CHECK(entry.string().starts_with(home.string()));
  CHECK(std::filesystem::is_regular_file(entry));
  // The code dumped is what a fresh lowering of the same pipeline gives.
  run(Dumping(freshDir, false), "lowered in");
  CHECK(PipelineReport(freshDir).filename() == PipelineReport(dir).filename());
  CHECK(ReadText(DumpedFile(freshDir, ".pipeline-" + VariantOf(PipelineReport(dir)) + ".lowered.spv")) ==
        ReadText(DumpedFile(dir, ".pipeline-" + VariantOf(PipelineReport(dir)) + ".lowered.spv")));
  for (const auto& path : {home.string(), dir, freshDir}) std::filesystem::remove_all(path);
}
