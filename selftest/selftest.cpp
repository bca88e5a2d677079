// coopmat-selftest: checks VK_EXT_cooperative_matrix_maintenance1 through the installed
// layer on every device with VK_KHR_cooperative_matrix, with the execution suite's own
// cases and CPU references (tests/exec), at every shape and type the device lists, at every
// subgroup size the layer lowers for, on the register route (lowering=auto) and the
// portable one. docs/selftest.md says what it covers and how to read it.
#include "options.h"
#include "plan.h"
#include "report.h"
#include "routes.h"
#include "selftest_modules.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#ifdef _WIN32
#include <fcntl.h>
#include <io.h>
#include <process.h>
#define dup _dup
#define dup2 _dup2
#define fdopen _fdopen
#define isatty _isatty
#define fileno _fileno
#define open _open
constexpr const char* kNullDevice = "NUL";
#else
#include <fcntl.h>
#include <unistd.h>
constexpr const char* kNullDevice = "/dev/null";
#endif

namespace {

using namespace selftest;

constexpr const char* kLayer = "VK_LAYER_coopmat_maintenance1";
std::vector<uint32_t> FindEmbeddedModule(const std::string& name, const std::string& env) {
  for (const EmbeddedModule& m : kSelftestModules)
    if (env == "spirv1.6" && name == m.name) return std::vector<uint32_t>(m.words, m.words + m.count);
  return {};
}

std::string Version(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

// The layer as the loader lists it; empty when it is not installed.
std::string LayerDescription() {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  for (const VkLayerProperties& l : layers)
    if (std::strcmp(l.layerName, kLayer) == 0)
      return std::string(l.layerName) + " (" + l.description + "), built for Vulkan " + Version(l.specVersion);
  return "";
}

struct DeviceInfo {
  std::string name, driver, apiVersion;
  bool cooperativeMatrix = false;
  bool flexibleDimensions = false;  // VK_NV_cooperative_matrix2 (its flexible dimensions, if the feature is there)
};

// Every physical device, as a bare instance sees it.
std::vector<DeviceInfo> Devices() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "coopmat-selftest";
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  if (vkCreateInstance(&info, nullptr, &instance) != VK_SUCCESS) return {};
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> handles(count);
  vkEnumeratePhysicalDevices(instance, &count, handles.data());
  std::vector<DeviceInfo> out;
  for (VkPhysicalDevice handle : handles) {
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &driver};
    vkGetPhysicalDeviceProperties2(handle, &properties);
    DeviceInfo d;
    d.name = properties.properties.deviceName;
    d.driver = std::string(driver.driverName) + " " + driver.driverInfo;
    d.apiVersion = Version(properties.properties.apiVersion);
    uint32_t extensions = 0;
    vkEnumerateDeviceExtensionProperties(handle, nullptr, &extensions, nullptr);
    std::vector<VkExtensionProperties> list(extensions);
    vkEnumerateDeviceExtensionProperties(handle, nullptr, &extensions, list.data());
    for (const VkExtensionProperties& e : list) {
      d.cooperativeMatrix |= std::strcmp(e.extensionName, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0;
      d.flexibleDimensions |= std::strcmp(e.extensionName, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME) == 0;
    }
    out.push_back(d);
  }
  vkDestroyInstance(instance, nullptr);
  return out;
}

exec::EnvOptions EnvFor(const Options& o, uint32_t device, bool flexible, uint32_t subgroupSize, const std::string& route,
                        const std::vector<std::string>& layoutLines = {}, const std::string& dumpDir = "") {
  exec::EnvOptions e;
  // A real device's dispatch takes microseconds; a CPU driver compiles inside the fence wait,
  // which a 32- or 64-lane virtual device on a loaded machine took more than 30 s for.
  e.fenceTimeoutNs = 300'000'000'000ull;
  // The explain files say each case's route; a lowering served from the layer's cache has none.
  if (!dumpDir.empty()) e.layerSettings = {{"dump_dir", dumpDir}, {"shader_cache", "false"}};
  e.flex = flexible;
  e.knownLayoutLines = layoutLines;
  e.listedDevice = true;
  e.deviceIndex = static_cast<int>(device);
  e.subgroupSize = subgroupSize;
  // The driver's own implementation: the layer steps aside (and must say so). Every other
  // route goes through the layer, also where the driver has the extension itself.
  e.driverImplementation = route == kNativeRoute;
  e.layerSettings.push_back({"force_enable", e.driverImplementation ? "false" : "true"});
  if (e.driverImplementation) return e;
  e.layerSettings.push_back({"lowering", route});
  if (!o.builtinLayouts.empty() || !o.layoutsFile.empty()) e.layerSettings.push_back({"layout_probe", "false"});
  if (!o.builtinLayouts.empty()) e.layerSettings.push_back({"builtin_layouts", o.builtinLayouts});
  if (!o.layoutsFile.empty()) e.layerSettings.push_back({"layouts_file", o.layoutsFile});
  return e;
}

// The device's NV flexible-dimension configurations (VK_NV_cooperative_matrix2).
std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV> FlexibleConfigurations(const exec::Env& env) {
  auto get = env.instance().proc<PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV>(
      "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
  uint32_t count = 0;
  if (!get || get(env.device().physicalDevice(), &count, nullptr) != VK_SUCCESS) return {};
  std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV> out(
      count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV});
  if (get(env.device().physicalDevice(), &count, out.data()) < VK_SUCCESS) return {};
  out.resize(count);
  return out;
}

uint32_t FlexibleMaxDimension(const exec::Env& env) {
  VkPhysicalDeviceCooperativeMatrix2PropertiesNV nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &nv};
  vkGetPhysicalDeviceProperties2(env.device().physicalDevice(), &properties);
  return nv.cooperativeMatrixFlexibleDimensionsMaxDimension;
}

// The subgroup sizes the layer has layouts for (where it lowers in registers); the device's
// default where it has none.
std::vector<uint32_t> SubgroupSizes(const exec::Env& env) {
  std::set<uint32_t> sizes;
  for (const coopmat::LinearLayout& layout : env.layerLayouts()) sizes.insert(layout.key.subgroupSize);
  if (sizes.empty()) sizes.insert(env.subgroupSize());
  return {sizes.begin(), sizes.end()};
}

// The tool's own messages and progress. The layer logs every line it sends through
// VK_EXT_debug_utils to stderr as well (at the info level the self-test needs for the layout
// lines, hundreds of them); those reach the report through the messenger, so unless --verbose
// stderr itself goes to the null device and the tool keeps a copy of it.
std::FILE* gErr = stderr;

int ProcessId() {
#ifdef _WIN32
  return _getpid();
#else
  return getpid();
#endif
}
void QuietStderr() {
  std::fflush(stderr);
  const int copy = dup(fileno(stderr));
  const int null = open(kNullDevice, O_WRONLY);
  if (copy < 0 || null < 0) return;
  if (std::FILE* err = fdopen(copy, "w")) {
    gErr = err;
    dup2(null, fileno(stderr));
  }
}

class Progress {
 public:
  Progress() : on_(isatty(fileno(gErr))) {}
  void Show(const std::string& text) {
    if (!on_) return;
    std::fprintf(gErr, "\r%-100.100s", text.c_str());
    std::fflush(gErr);
  }
  void Clear() {
    if (!on_) return;
    std::fprintf(gErr, "\r%100s\r", "");
    std::fflush(gErr);
  }

 private:
  bool on_;
};

PassReport RunPass(const Options& o, const exec::Env& first, uint32_t device, uint32_t subgroupSize, const std::string& route,
                   const std::vector<PlannedCase>& plan, Progress& progress) {
  PassReport pass;
  pass.subgroupSize = subgroupSize;
  pass.route = route;
  const std::string passName = "device" + std::to_string(device) + "-subgroup" + std::to_string(subgroupSize) + "-" + route;
  std::error_code noTemp;
  const std::filesystem::path temp = o.dumpDir.empty() ? std::filesystem::temp_directory_path(noTemp) : "";
  if (noTemp) {
    pass.problem = "no temporary folder for the layer's explain files (" + noTemp.message() + "); --dump-dir DIR names one";
    return pass;
  }
  Routes routes(o.dumpDir.empty() ? temp / ("coopmat-selftest-" + std::to_string(ProcessId()) + "-" + passName)
                                  : std::filesystem::path(o.dumpDir) / passName,
                !o.dumpDir.empty());
  const exec::Env env(EnvFor(o, device, first.device().nvCoopmat2(), subgroupSize == first.subgroupSize() ? 0 : subgroupSize,
                             route, first.layoutLines(), routes.folder().string()));
  if (std::string problem = env.Problem(); !problem.empty()) {
    pass.problem = problem;
    return pass;
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    const PlannedCase& c = plan[i];
    progress.Show("device " + std::to_string(device) + ", subgroup size " + std::to_string(subgroupSize) + ", lowering=" +
                  route + ": " + std::to_string(i + 1) + "/" + std::to_string(plan.size()) + " " + c.name);
    CaseResult r{c.operation, c.matrix, c.name, c.feature};
    r.detail = c.run(env);
    r.route = route == kNativeRoute ? "the driver's own" : routes.Since();
    if (r.detail.rfind(exec::kNotRun, 0) == 0) r.outcome = Outcome::Skip;
    else if (!r.detail.empty()) r.outcome = Outcome::Fail;
    pass.cases.push_back(std::move(r));
  }
  progress.Clear();
  return pass;
}

DeviceReport TestDevice(const Options& o, uint32_t index, const DeviceInfo& info, Progress& progress) {
  DeviceReport d;
  d.index = index;
  d.name = info.name;
  d.driver = info.driver;
  d.apiVersion = info.apiVersion;
  // The first instance finds the device's layouts and so the subgroup sizes to test. Where only
  // the portable route was asked for, the layer's own lowering setting does not matter to it:
  // a layer set to lowering=portable outside the tool (the workaround the report suggests)
  // still runs that check, at the device's default size.
  const bool portableOnly = o.routeChosen && o.routes == std::vector<std::string>{"portable"};
  exec::EnvOptions discovery = EnvFor(o, index, o.flexible && info.flexibleDimensions, 0, "auto");
  if (portableOnly)
    std::erase_if(discovery.layerSettings, [](const auto& setting) { return setting.first == "lowering"; });
  const exec::Env first(discovery);
  if (std::string problem = first.Problem(); !problem.empty()) {
    d.problem = problem;
    return d;
  }
  d.layoutLines = first.layoutLines();
  // What --layouts or --builtin-layouts should check must have reached the layer: a file or
  // table with nothing for this device's types and sizes would leave every case portable.
  const std::string named = !o.layoutsFile.empty()      ? "layouts_file setting"
                            : !o.builtinLayouts.empty() ? "builtin_layouts setting"
                                                        : "";
  if (!named.empty() && !portableOnly && std::none_of(d.layoutLines.begin(), d.layoutLines.end(), [&](const std::string& line) {
        return line.rfind("layout: ", 0) == 0 && line.find(named) != std::string::npos;
      })) {
    d.problem = "the layer took no layout from " +
                (o.layoutsFile.empty() ? "the built-in " + o.builtinLayouts + " table" : o.layoutsFile) +
                " for this device's types and subgroup sizes: nothing of it would be checked";
    return d;
  }
  d.driverHasExtension = first.driverHasExtension();
  d.unknownTypes = UnknownTypes(first.matrices());
  std::vector<ListedMatrix> matrices = ListedMatrices(first.matrices());
  const auto flexible = first.device().nvCoopmat2() ? FlexibleConfigurations(first)
                                                    : std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV>{};
  const uint32_t maxFlexible = flexible.empty() ? 0 : FlexibleMaxDimension(first);
  for (const ListedMatrix& m : FlexibleMatrices(flexible, maxFlexible, matrices)) matrices.push_back(m);
  std::vector<PlannedCase> plan;
  std::vector<PlannedCase> all = Plan(matrices);
  for (PlannedCase& c : PlanKernels(first.matrices(), flexible, maxFlexible)) all.push_back(std::move(c));
  for (PlannedCase& c : all)
    if (o.filter.empty() || c.name.find(o.filter) != std::string::npos || c.operation.find(o.filter) != std::string::npos)
      plan.push_back(std::move(c));
  if (o.list) {
    for (const PlannedCase& c : plan) std::printf("  %-34s %-18s %s\n", c.operation.c_str(), c.matrix.c_str(), c.name.c_str());
    return d;
  }
  // The driver's own implementation first, where it has one: unless one route was asked
  // for, the report then compares it with the layer's.
  std::vector<std::string> routes = o.routes;
  if (d.driverHasExtension && !o.routeChosen) routes.insert(routes.begin(), kNativeRoute);
  for (uint32_t size : SubgroupSizes(first))
    for (const std::string& route : routes) {
      if (route == kNativeRoute && !d.driverHasExtension) {
        PassReport pass{size, route, "the driver does not implement VK_EXT_cooperative_matrix_maintenance1 itself"};
        d.passes.push_back(std::move(pass));
        continue;
      }
      d.passes.push_back(RunPass(o, first, index, size, route, plan, progress));
    }
  return d;
}

int Run(const Options& options) {
  exec::SetShaderSource(FindEmbeddedModule);
  Report report;
  report.layer = LayerDescription();
  if (report.layer.empty()) {
    std::fprintf(gErr, "coopmat-selftest: the layer %s is not installed (the loader does not list it)\n", kLayer);
    return 2;
  }
  std::printf("coopmat-selftest: %s\n", report.layer.c_str());
  const std::vector<DeviceInfo> devices = Devices();
  Progress progress;
  bool tested = false;
  for (uint32_t i = 0; i < devices.size(); ++i) {
    if (options.device >= 0 && static_cast<uint32_t>(options.device) != i) continue;
    if (!devices[i].cooperativeMatrix) {
      std::printf("device %u: %s: no VK_KHR_cooperative_matrix, not tested\n", i, devices[i].name.c_str());
      continue;
    }
    tested = true;
    report.devices.push_back(TestDevice(options, i, devices[i], progress));
    if (!options.list) PrintDevice(stdout, report.devices.back());
    std::fflush(stdout);
  }
  if (!tested) {
    std::fprintf(gErr, "coopmat-selftest: no device with VK_KHR_cooperative_matrix%s\n",
                 options.device >= 0 ? " at that index" : "");
    return 2;
  }
  const Totals totals = Count(report);
  if (!options.list) std::printf("%s\n", SummaryLine(totals).c_str());
  int status = options.list ? 0 : totals.failed ? 1 : 0;
  if (!options.list && totals.passed + totals.failed + totals.skipped == 0) {
    std::fprintf(gErr, "coopmat-selftest: no case ran%s\n",
                 options.filter.empty() ? "" : (" (--filter '" + options.filter + "' matches none)").c_str());
    status = 2;
  }
  if (!options.json.empty()) {
    std::ofstream json(options.json);
    json << ToJson(report);
    if (!json) {
      std::fprintf(gErr, "coopmat-selftest: cannot write %s\n", options.json.c_str());
      status = std::max(status, 2);
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, options)) return 2;
  if (!options.verbose) QuietStderr();
  // A report, never an abort with stderr on the null device.
  try {
    return Run(options);
  } catch (const std::exception& e) {
    std::fprintf(gErr, "coopmat-selftest: stopped: %s\n", e.what());
    return 2;
  }
}
