// Regression tests for the layout probe's review findings (review-901d75a.md) and
// issue 15: the probe runs whatever the app enabled, under validation (4), at every
// subgroup size a pipeline may run with, its cache writes do not collide
// between threads (14), an absurd driver shape is refused before any size wraps
// (24), and a driver without vkGetPhysicalDeviceProperties2 is survived (27).
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "layer_test_util.h"
#include "vk_context.h"

using namespace cmtest;
using namespace layertest;
using Catch::Matchers::ContainsSubstring;

namespace {

std::vector<std::filesystem::path> LayoutCacheFiles(const std::filesystem::path& cacheHome) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cacheHome / "coopmat-maintenance1", ec))
    if (entry.is_regular_file()) files.push_back(entry.path());
  return files;
}

std::vector<std::string> Texts(const Instance& instance, const std::string& needle) {
  std::vector<std::string> out;
  for (const Message& m : instance.messages())
    if (m.text.find(needle) != std::string::npos) out.push_back(m.text);
  return out;
}

// Validation messages other than the layer's notice about lavapipe's KHR list.
std::vector<std::string> Problems(const Instance& instance) {
  std::vector<std::string> out;
  for (const std::string& p : instance.problems())
    if (p.find("mandatory combination") == std::string::npos) out.push_back(p);
  return out;
}

template <typename T> T* Find(VkPhysicalDeviceFeatures2& features, VkStructureType type) {
  for (auto* s = static_cast<VkBaseOutStructure*>(features.pNext); s; s = s->pNext)
    if (s->sType == type) return reinterpret_cast<T*>(s);
  return nullptr;
}

// Switches off the small-type features and full subgroups (a device that enables
// only cooperative matrices); float16 back on when `float16`.
void WithoutSmallTypes(VkPhysicalDeviceFeatures2& features, bool float16) {
  auto* v11 = Find<VkPhysicalDeviceVulkan11Features>(features, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  auto* v12 = Find<VkPhysicalDeviceVulkan12Features>(features, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  auto* v13 = Find<VkPhysicalDeviceVulkan13Features>(features, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES);
  REQUIRE((v11 && v12 && v13));
  v11->storageBuffer16BitAccess = float16;
  v11->uniformAndStorageBuffer16BitAccess = VK_FALSE;
  v11->storagePushConstant16 = VK_FALSE;
  v11->storageInputOutput16 = VK_FALSE;
  v12->shaderFloat16 = float16;
  v12->shaderInt8 = VK_FALSE;
  v12->storageBuffer8BitAccess = VK_FALSE;
  v12->uniformAndStorageBuffer8BitAccess = VK_FALSE;
  v12->storagePushConstant8 = VK_FALSE;
  v13->computeFullSubgroups = VK_FALSE;
}

std::vector<uint32_t> Shader(const std::string& name) {
  std::vector<uint32_t> words = ReadSpirv(std::string(COOPMAT_LAYER_SHADER_DIR) + "/" + name);
  REQUIRE(!words.empty());
  return words;
}

VkResult CreateModule(VkDevice device, const std::vector<uint32_t>& words) {
  VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  info.codeSize = words.size() * 4;
  info.pCode = words.data();
  VkShaderModule module = VK_NULL_HANDLE;
  const VkResult result = vkCreateShaderModule(device, &info, nullptr, &module);
  if (module) vkDestroyShaderModule(device, module, nullptr);
  return result;
}

// One device created and destroyed over the fake driver (whose behaviour the caller
// set in the environment first) with a fresh layout cache, the probe on and the
// layer's info messages kept: what the probe-policy tests read.
class ProbeOverFakeDriver {
 public:
  explicit ProbeOverFakeDriver(const std::string& cacheName, const DeviceOptions& options = {})
      : cache_(FreshDirectory(cacheName)), cacheHome_("XDG_CACHE_HOME", cache_.string()) {
    REQUIRE(instance_.ok());
    Device device(instance_, options);
    REQUIRE(device.ok());
  }
  ~ProbeOverFakeDriver() { std::filesystem::remove_all(cache_); }
  const Instance& instance() const { return instance_; }
  const std::filesystem::path& cache() const { return cache_; }

 private:
  static std::filesystem::path FreshDirectory(const std::string& name) {
    std::filesystem::path path = TempPath(name);
    std::filesystem::remove_all(path);
    return path;
  }
  static InstanceOptions BelowLayer() {
    InstanceOptions options;
    options.layersBelow = {kFakeDriverLayer};
    return options;
  }
  ScopedEnv onPath_ = FakeDriverOnPath();
  std::filesystem::path cache_;
  ScopedEnv cacheHome_;
  ScopedEnv probing_{"VK_COOPMAT_MAINTENANCE1_LOWERING", "auto"};
  ScopedEnv verbose_{"VK_COOPMAT_MAINTENANCE1_LOG_LEVEL", "info"};
  Instance instance_{BelowLayer()};
};

}  // namespace

// Issue 15: the probe runs whatever the app enabled. The layer turns on, in its own
// copy of the create info, what its probe needs and the device supports; validation
// below the layer sees a device that has them (review 4's invalid-usage concern).
TEST_CASE("the probe runs whatever features the app enabled: the layer enables what it needs, under validation below",
          "[layer][review][probe]") {
  const bool float16 = GENERATE(false, true);
  INFO((float16 ? "float16 and 16-bit storage enabled" : "no small-type feature"));
  const std::filesystem::path cache = TempPath(float16 ? "probe-f16" : "probe-none");
  std::filesystem::remove_all(cache);
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");
  ScopedEnv verbose("VK_COOPMAT_MAINTENANCE1_LOG_LEVEL", "info");
  Instance instance(InstanceOptions{.validation = Validation::BelowLayer});
  REQUIRE(instance.ok());
  DeviceOptions options;
  options.editFeatures = [&](VkPhysicalDeviceFeatures2& features) { WithoutSmallTypes(features, float16); };
  {
    Device device(instance, options);
    REQUIRE(device.ok());
    CHECK(CreateModule(device.handle(), Shader("get_coordinate.spirv1.6.spv")) == VK_SUCCESS);
  }
  const std::vector<std::string> problems = Problems(instance);
  INFO((problems.empty() ? std::string() : problems.front()));
  CHECK(problems.empty());  // every probe module's features are on in the device that went down
  // The layer says what it turned on; the app's f16 features only when it left them off.
  const std::vector<std::string> enabled = Texts(instance, "the layer enabled");
  REQUIRE(enabled.size() == 1);
  CHECK_THAT(enabled[0], ContainsSubstring("shaderInt8") && ContainsSubstring("storageBuffer8BitAccess") &&
                             ContainsSubstring("computeFullSubgroups"));
  CHECK((enabled[0].find("shaderFloat16") == std::string::npos) == float16);
  // Every type lavapipe lists is probed, whatever the app enabled.
  CHECK(Texts(instance, "not probed").empty());
  for (const char* type : {"layout type=f16", "layout type=u8", "layout type=s8", "layout type=f32"}) {
    INFO(type);
    CHECK(!Texts(instance, type).empty());
  }
  // A complete probe serves every app on this device: cached.
  CHECK(LayoutCacheFiles(cache).size() == 1);
  std::filesystem::remove_all(cache);
}

// Issue 15: on a device whose pipelines run at several subgroup sizes, an app that
// enables neither subgroupSizeControl nor computeFullSubgroups still gets a probe at
// every size (each with that size required). The fake driver reports sizes 8 to 16 on
// lavapipe, which runs only 8: the probe at 16 cannot compile there, is said by name,
// and no built-in table stands in for what the probe saw.
TEST_CASE("the probe requires each subgroup size though the app enabled no subgroup size control",
          "[layer][probe]") {
  ScopedEnv sizes("FAKE_DRIVER_SUBGROUP_SIZES", "8,16");
  const std::filesystem::path log = TempPath("probe-sizes.log");
  std::filesystem::remove(log);
  ScopedEnv fakeLog("FAKE_DRIVER_LOG", log.string());
  DeviceOptions options;
  options.editFeatures = [](VkPhysicalDeviceFeatures2& features) {
    auto* v13 = Find<VkPhysicalDeviceVulkan13Features>(features, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES);
    REQUIRE(v13);
    v13->subgroupSizeControl = VK_FALSE;
    v13->computeFullSubgroups = VK_FALSE;
  };
  const ProbeOverFakeDriver run("probe-sizes", options);
  const Instance& instance = run.instance();
  std::vector<std::string> lines;
  {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  REQUIRE(!lines.empty());
  // The device the driver got has both features (the app's create info had neither).
  CHECK_THAT(lines[0], ContainsSubstring("subgroupSizeControl=1") && ContainsSubstring("computeFullSubgroups=1"));
  // Probe pipelines at both sizes, each with its size required and full subgroups.
  size_t at8 = 0, at16 = 0, unsized = 0;
  for (const std::string& line : lines) {
    if (line.rfind("pipeline ", 0) != 0) continue;
    CHECK_THAT(line, ContainsSubstring("fullSubgroups=1"));
    at8 += line.find("requiredSubgroupSize=8 ") != std::string::npos;
    at16 += line.find("requiredSubgroupSize=16 ") != std::string::npos;
    unsized += line.find("requiredSubgroupSize=0 ") != std::string::npos;
  }
  CHECK(at8 >= 4);   // lavapipe's A, B and accumulator types
  CHECK(at8 == at16);
  CHECK(unsized == 0);
  // Size 8 is probed on the real driver; size 16 is refused by name, and what the
  // probe read is what the layer uses: no built-in table.
  CHECK(!Texts(instance, "subgroup=8 ").empty());
  CHECK(Texts(instance, "subgroup=16 ").empty());
  CHECK(!Texts(instance, "subgroup 16: cannot create the probe pipeline").empty());
  CHECK(Texts(instance, "built-in").empty());
  CHECK(LayoutCacheFiles(run.cache()).empty());  // an incomplete probe is not cached
  std::filesystem::remove(log);
}

// Issue 15 / review 2 finding 2: where the probe reads nothing, a family's built-in
// table stands in only for the driver versions it was read from. The fake driver
// makes lavapipe report sizes 4 to 8 and refuse every probe pipeline, and a chosen
// driverVersion.
TEST_CASE("a built-in table is used only inside the driver versions it was read from", "[layer][probe]") {
  ScopedEnv sizes("FAKE_DRIVER_SUBGROUP_SIZES", "4,8,0");
  const bool inside = GENERATE(true, false);
  const uint32_t version = inside ? (26u << 22 | 1u << 12 | 6u) : (26u << 22 | 3u << 12);
  INFO("driver " << (version >> 22) << "." << ((version >> 12) & 0x3ff) << "." << (version & 0xfff));
  ScopedEnv driverVersion("FAKE_DRIVER_VERSION", std::to_string(version));
  const ProbeOverFakeDriver run(inside ? "probe-range-in" : "probe-range-out");
  const Instance& instance = run.instance();
  CHECK(Texts(instance, "using the built-in lavapipe table (driver 26.1.6)").size() == (inside ? 1u : 0u));
  CHECK(Texts(instance, "table was read from driver versions 26.1.0 to 26.2.1023, not 26.3.0").size() == (inside ? 0u : 1u));
  CHECK(LayoutCacheFiles(run.cache()).empty());  // neither is cached
}

// builtin_layouts (compile-only lanes, e.g. NVK on the drm-shim): the named table
// where the probe reads nothing, whatever the driver version; an unknown name is a
// warning.
TEST_CASE("builtin_layouts names the table used where the probe reads nothing", "[layer][probe][settings]") {
  ScopedEnv sizes("FAKE_DRIVER_SUBGROUP_SIZES", "4,8,0");
  ScopedEnv driverVersion("FAKE_DRIVER_VERSION", std::to_string(26u << 22 | 3u << 12));  // outside lavapipe's range
  const bool named = GENERATE(true, false);
  ScopedEnv setting("VK_COOPMAT_MAINTENANCE1_BUILTIN_LAYOUTS", named ? "lavapipe" : "not-a-family");
  const ProbeOverFakeDriver run(named ? "probe-named" : "probe-badname");
  const Instance& instance = run.instance();
  CHECK(Texts(instance, "using the built-in lavapipe table").size() == (named ? 1u : 0u));
  CHECK(Texts(instance, "# built-in lavapipe table, named by the builtin_layouts setting").empty() == !named);
  if (!named) {
    CHECK(!Texts(instance, "invalid value 'not-a-family' for setting 'builtin_layouts'").empty());
    CHECK(!Texts(instance, "table was read from driver versions").empty());  // the ordinary policy
  }
}

// Where the probe fitted, NV flexible dimensions' other shapes come from the recognised
// family's table, inside the driver versions it was read from, or at any version where
// builtin_layouts names that table; naming another family lifted the check too (review
// of 2026-12-07). lavapipe reports 26.3.0 here, outside its table's range.
TEST_CASE("flexible shapes from the table only in its driver range, unless builtin_layouts names that table",
          "[layer][probe][settings]") {
  ScopedEnv driverVersion("FAKE_DRIVER_VERSION", std::to_string(26u << 22 | 3u << 12));
  const std::string named = GENERATE(std::string(), std::string("nvidia-mma"), std::string("lavapipe"));
  INFO("builtin_layouts='" << named << "'");
  ScopedEnv setting("VK_COOPMAT_MAINTENANCE1_BUILTIN_LAYOUTS", named);
  const ProbeOverFakeDriver run("probe-flex-range", DeviceOptions{.enableNvCoopmat2 = true});
  const Instance& instance = run.instance();
  CHECK(!Texts(instance, "# probed").empty());  // the probe fitted: no table stands in for it
  CHECK(Texts(instance, "# built-in lavapipe table, a shape of NV flexible dimensions").empty() == (named != "lavapipe"));
}

// layouts_file that cannot serve: a warning and the portable path, never a guess. A
// folder read as an empty file and said nothing; a file with two different layouts for
// one key was taken, and the lowering used whichever came first (review of 2026-12-07).
TEST_CASE("a layouts_file that is missing, a folder or ambiguous is a warning and no layouts", "[layer][probe][settings]") {
  const std::filesystem::path folder = TempPath("layouts-file");
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder / "a-folder");
  const std::string good = "layout type=f32 use=Acc rows=8 cols=8 subgroup=8 length=8 lane=c0,c1,c2 index=r0,r1,r2\n";
  const std::string transposed = "layout type=f32 use=Acc rows=8 cols=8 subgroup=8 length=8 lane=r0,r1,r2 index=c0,c1,c2\n";
  std::ofstream(folder / "ambiguous.txt") << good << transposed;
  std::ofstream(folder / "repeated.txt") << good << good;
  const auto [name, warning] = GENERATE(std::pair<std::string, std::string>{"missing.txt", "cannot be read"},
                                        std::pair<std::string, std::string>{"a-folder", "cannot be read"},
                                        std::pair<std::string, std::string>{"ambiguous.txt", "line 2: a second, different layout"},
                                        std::pair<std::string, std::string>{"repeated.txt", ""});
  INFO(name);
  const std::string path = (folder / name).string();
  ScopedEnv layouts("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");  // also in the portable run of the suite
  ScopedEnv noProbe("VK_COOPMAT_MAINTENANCE1_LAYOUT_PROBE", "false");
  ScopedEnv file("VK_COOPMAT_MAINTENANCE1_LAYOUTS_FILE", path);
  ScopedEnv verbose("VK_COOPMAT_MAINTENANCE1_LOG_LEVEL", "info");
  Instance instance;
  REQUIRE(instance.ok());
  { Device device(instance); REQUIRE(device.ok()); }
  const std::vector<std::string> warned = Texts(instance, "layouts_file " + path + ": ");
  if (warning.empty()) {
    CHECK(warned.empty());
    CHECK(Texts(instance, "1 from the layouts_file " + path).size() == 1);  // the repeat is dropped
  } else {
    REQUIRE(warned.size() == 1);
    CHECK(warned[0].find(warning) != std::string::npos);
    CHECK(warned[0].find("operations use the portable path") != std::string::npos);
  }
  std::filesystem::remove_all(folder);
}

// layouts_file takes effect only with layout_probe=false and before builtin_layouts; set
// alone it was ignored without a word (review of 2026-12-07): now a warning says what the
// layer took instead.
TEST_CASE("a layouts_file the layer does not read is a warning naming what it used", "[layer][probe][settings]") {
  const std::filesystem::path path = TempPath("layouts-file-ignored.txt");
  std::ofstream(path) << "layout type=f32 use=Acc rows=8 cols=8 subgroup=8 length=8 lane=c0,c1,c2 index=r0,r1,r2\n";
  const bool probing = GENERATE(true, false);
  INFO("layout_probe=" << probing);
  ScopedEnv lowering("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");  // also in the portable run of the suite
  ScopedEnv probe("VK_COOPMAT_MAINTENANCE1_LAYOUT_PROBE", probing ? "true" : "false");
  ScopedEnv table("VK_COOPMAT_MAINTENANCE1_BUILTIN_LAYOUTS", probing ? "" : "lavapipe");
  ScopedEnv file("VK_COOPMAT_MAINTENANCE1_LAYOUTS_FILE", path.string());
  ScopedEnv verbose("VK_COOPMAT_MAINTENANCE1_LOG_LEVEL", "info");
  Instance instance;
  REQUIRE(instance.ok());
  { Device device(instance); REQUIRE(device.ok()); }
  const std::string quoted = "layouts_file '" + path.string() + "'";
  if (probing) {
    CHECK(Texts(instance, quoted + " is read only with layout_probe=false").size() == 1);
    CHECK(!Texts(instance, "# probed").empty());
    CHECK(Texts(instance, "from the layouts_file").empty());
  } else {
    CHECK(Texts(instance, "builtin_layouts 'lavapipe' and " + quoted + " both set").size() == 1);
    CHECK(Texts(instance, "1 from the layouts_file " + path.string()).size() == 1);
    CHECK(Texts(instance, "the built-in lavapipe table").empty());
  }
  std::filesystem::remove(path);
}

TEST_CASE("review 14: devices created at once on one GPU write the layout cache without colliding",
          "[layer][review][probe][threads]") {
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");
  const std::filesystem::path cache = TempPath("probe-threads");
  std::filesystem::remove_all(cache);
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
  Instance instance;
  REQUIRE(instance.ok());
  { Device first(instance); }  // learns the cache file's name
  const std::vector<std::filesystem::path> files = LayoutCacheFiles(cache);
  REQUIRE(files.size() == 1);
  const std::string name = files[0].string();

  SECTION("a stale temporary file of this process does not block the write") {
    // Another thread's write in progress (or one that crashed) at this process's name:
    // the per-process name of finding 14 collided with it and the cache was never written.
    std::filesystem::remove(files[0]);
    std::filesystem::create_directory(name + ".tmp." + std::to_string(getpid()));
    { Device again(instance); }
    CHECK(LayoutCacheFiles(cache).size() == 1);
    CHECK(std::filesystem::is_regular_file(files[0]));
    CHECK(Texts(instance, "cannot write the cache").empty());
  }
  SECTION("eight threads creating devices from an empty cache, five times") {
    for (int round = 0; round < 5; ++round) {
      std::filesystem::remove(files[0]);
      std::vector<std::thread> threads;
      std::vector<VkResult> results(8, VK_ERROR_UNKNOWN);
      for (size_t t = 0; t < results.size(); ++t)
        threads.emplace_back([&, t] {
          Device device(instance);
          results[t] = device.createResult();
        });
      for (std::thread& t : threads) t.join();
      CHECK(std::all_of(results.begin(), results.end(), [](VkResult r) { return r == VK_SUCCESS; }));
      CHECK(std::filesystem::is_regular_file(files[0]));
      // No temporary file is left behind and none of the writes failed.
      CHECK(LayoutCacheFiles(cache).size() == 1);
    }
    CHECK(Texts(instance, "cannot write the cache").empty());
  }
  std::filesystem::remove_all(cache);
}

TEST_CASE("review 24: a driver listing a 65536x65536 type is refused before the probe sizes wrap",
          "[layer][review][probe][malformed]") {
  auto path = FakeDriverOnPath();
  ScopedEnv absurd("FAKE_DRIVER_KHR_ABSURD", "1");
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");
  const std::filesystem::path cache = TempPath("probe-absurd");
  std::filesystem::remove_all(cache);
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
  InstanceOptions options;
  options.layersBelow = {kFakeDriverLayer};
  Instance instance(options);
  REQUIRE(instance.ok());
  REQUIRE(KhrProperties(instance).size() == 1);
  REQUIRE(KhrProperties(instance)[0].MSize == 65536);
  {
    Device device(instance);
    REQUIRE(device.ok());  // the probe only costs the register path
  }
  // Before the fix the host buffers' 32-bit sizes wrapped and the fill loop wrote
  // past them (AddressSanitizer in the malformed run); now the shape is refused.
  CHECK(!Texts(instance, "too large to probe").empty());
  CHECK(LayoutCacheFiles(cache).empty());  // a failed probe is never cached
  std::filesystem::remove_all(cache);
}

TEST_CASE("review 27: a driver without vkGetPhysicalDeviceProperties2 gets a device and lowered modules",
          "[layer][review][malformed]") {
  auto path = FakeDriverOnPath();
  ScopedEnv hidden("FAKE_DRIVER_NO_PROPERTIES2", "1");
  ScopedEnv probing("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto");  // the probe identifies the device
  const std::filesystem::path cache = TempPath("probe-noprops2");
  std::filesystem::remove_all(cache);
  ScopedEnv cacheHome("XDG_CACHE_HOME", cache.string());
  InstanceOptions options;
  options.layersBelow = {kFakeDriverLayer};
  options.apiVersion = VK_API_VERSION_1_0;  // no vkGetPhysicalDeviceProperties2 and no KHR extension
  Instance instance(options);
  REQUIRE(instance.ok());
  DeviceOptions deviceOptions;
  deviceOptions.enableNvCoopmat2 = true;  // the flexible-dimensions branch reads Properties2 too
  Device device(instance, deviceOptions);
  REQUIRE(device.ok());
  CHECK(CreateModule(device.handle(), Shader("get_coordinate.spirv1.6.spv")) == VK_SUCCESS);
  std::filesystem::remove_all(cache);
}
