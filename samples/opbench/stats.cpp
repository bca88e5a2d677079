// opbench --stats: for every case of cases.txt and every way (the layer with its
// default settings, the driver's own NV operation, the KHR store-to-shared
// workaround), creates the pipeline at each subgroup size (every power of two in
// [minSubgroupSize, maxSubgroupSize], and 0 = no required size, the driver's pick)
// with VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR and prints the driver's
// statistics as CSV. Nothing is dispatched. With --modules DIR it does the same
// for every .spv module under DIR (the execution tests' modules), with the spec
// constants those modules take.
//
// The native way runs on its own instance, without the layer, created with the
// driconf option radv_cooperative_matrix2_nv=true in the environment (RADV exposes
// its VK_NV_cooperative_matrix2 lowering only then; other drivers ignore it).
#include "stats.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cases.h"
#include "pipeline_stats.h"
#include "vulkan_app.h"

namespace opbench {
namespace {

struct StatsOptions {
  std::string filter;
  std::vector<uint32_t> sizes;  // empty: every supported size and 0
  std::string modules;          // --modules DIR
};

// A matrix type as the KHR list names it: (component type, use, rows, cols).
struct MatrixType {
  uint32_t component, use, rows, cols;
  auto operator<=>(const MatrixType&) const = default;
};
constexpr uint32_t kUseA = 0, kUseB = 1, kUseAcc = 2;

std::set<MatrixType> ListedTypes(const sample::Context& context) {
  std::set<MatrixType> out;
  for (const VkCooperativeMatrixPropertiesKHR& p : context.khrProperties()) {
    if (p.scope != VK_SCOPE_SUBGROUP_KHR) continue;
    out.insert({static_cast<uint32_t>(p.AType), kUseA, p.MSize, p.KSize});
    out.insert({static_cast<uint32_t>(p.BType), kUseB, p.KSize, p.NSize});
    out.insert({static_cast<uint32_t>(p.CType), kUseAcc, p.MSize, p.NSize});
    out.insert({static_cast<uint32_t>(p.ResultType), kUseAcc, p.MSize, p.NSize});
  }
  return out;
}

// Whether shaders on `context` may use the type: listed, or under NV flexible
// dimensions a multiple of a listed shape of its component type and use.
bool Usable(const sample::Context& context, const MatrixType& type) {
  const std::set<MatrixType> listed = ListedTypes(context);
  if (listed.count(type)) return true;
  if (!context.flexibleDimensions()) return false;
  return std::any_of(listed.begin(), listed.end(), [&](const MatrixType& l) {
    return l.component == type.component && l.use == type.use && type.rows % l.rows == 0 && type.cols % l.cols == 0;
  });
}

MatrixType TypeOf(const Matrix& m) {
  const uint32_t use = m.use == "a" ? kUseA : m.use == "b" ? kUseB : kUseAcc;
  return {static_cast<uint32_t>(Info(m.type).component), use, m.rows, m.cols};
}

std::vector<uint32_t> SizesToMeasure(const sample::Context& context, const StatsOptions& options) {
  if (!options.sizes.empty()) return options.sizes;
  if (!context.subgroupSizeControl()) return {0};
  std::vector<uint32_t> sizes;
  for (uint32_t s = context.minSubgroupSize(); s && s <= context.maxSubgroupSize(); s *= 2) sizes.push_back(s);
  sizes.push_back(0);
  return sizes;
}

// Hashes identify a build; they are not figures.
bool IsHash(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("hash") != std::string::npos;
}

// The CSV: a key (its header given), the requested and actual subgroup size, a
// status, then the statistics of the first pipeline created, in the driver's order.
// Rows measured before that pipeline wait for the header.
class Table {
 public:
  explicit Table(std::string keyHeader) : keyHeader_(std::move(keyHeader)) {}

  void Row(const std::string& key, uint32_t requested, const sample::PipelineStats& stats, const std::string& status) {
    pending_.push_back({key, requested, stats, status});
    if (!headerPrinted_ && stats.ok()) {
      for (const auto& [name, value] : stats.values)
        if (!IsHash(name)) columns_.push_back(name);
      PrintHeader();
    }
    if (headerPrinted_) PrintPending();
  }
  void Finish() {
    if (!headerPrinted_) PrintHeader();
    PrintPending();
  }

 private:
  struct Line {
    std::string key;
    uint32_t requested;
    sample::PipelineStats stats;
    std::string status;
  };
  void PrintHeader() {
    std::printf("%s,requested_subgroup,subgroup,status", keyHeader_.c_str());
    for (const std::string& c : columns_) std::printf(",%s", c.c_str());
    std::printf("\n");
    headerPrinted_ = true;
  }
  void PrintPending() {
    for (const Line& line : pending_) {
      std::printf("%s,%u,%u,%s", line.key.c_str(), line.requested, line.stats.subgroupSize, line.status.c_str());
      for (const std::string& c : columns_) {
        const double v = line.stats.Get(c);
        if (v < 0) std::printf(",");
        else std::printf(",%g", v);
      }
      std::printf("\n");
    }
    pending_.clear();
    std::fflush(stdout);
  }

  std::string keyHeader_;
  std::vector<std::string> columns_;
  std::vector<Line> pending_;
  bool headerPrinted_ = false;
};

std::string Status(const sample::PipelineStats& stats) {
  if (stats.module != VK_SUCCESS) return "module_failed(" + std::to_string(stats.module) + ")";
  if (stats.pipeline != VK_SUCCESS) return "pipeline_failed(" + std::to_string(stats.pipeline) + ")";
  return "ok";
}

// ---------------------------------------------------------------------------
// opbench's cases

// flexLayer (may be null): the layer on an instance with NV flexible dimensions, for
// the layer and workaround ways of shapes the driver lists only under them.
int MeasureCases(const sample::Context& layer, const sample::Context* flexLayer, const sample::Context& native,
                 const StatsOptions& options) {
  const std::vector<Case> cases = ReadCases(sample::ShaderDir() + "/cases.txt");
  Table table("op,shape,type,way");
  int failures = 0;
  for (const Case& c : cases) {
    if (!Selected(c, options.filter)) continue;
    for (int w = 0; w < kListedWays; ++w) {
      if (!c.has[w]) continue;
      const sample::Context& app = flexLayer && !CaseUsable(layer, c) ? *flexLayer : layer;
      const sample::Context& on = w == kNative ? native : app;
      const std::string key = c.op + "," + c.source.Shape() + "," + c.TypeLabel() + "," + kWayNames[w];
      // A case's NV variant the driver cannot build is a row too: the checker compares the
      // layer with it and must tell a reference that vanished from one never there.
      if (w == kNative && (!native.nvCoopmat2() || !CaseUsable(on, c))) {
        sample::PipelineStats none;
        none.pipeline = VK_ERROR_FEATURE_NOT_PRESENT;  // no statistics: not the table's header
        table.Row(key, 0, none, "unavailable");
        continue;
      }
      if (w == kLayer && !app.maintenance1()) continue;
      if (!CaseUsable(on, c)) continue;
      const std::vector<uint32_t> spirv =
          sample::ReadSpirv(sample::ShaderDir() + "/" + c.Name() + "_" + kWayNames[w] + ".spv");
      for (uint32_t size : SizesToMeasure(on, options)) {
        sample::StatsPipelineOptions pipeline;
        pipeline.requiredSubgroupSize = size;
        // One subgroup per workgroup at a required size; at the driver's pick, the
        // device's default subgroup size.
        pipeline.specialization = {{0, size ? size : on.subgroupSize()}};
        const sample::PipelineStats stats = sample::CompileForStatistics(on, spirv, pipeline);
        if (!stats.ok()) ++failures;
        table.Row(key, size, stats, Status(stats));
      }
    }
  }
  table.Finish();
  return failures;
}

// ---------------------------------------------------------------------------
// Any module (the execution tests'): the matrix types and interface it declares

// What a module needs from the pipeline, read from its SPIR-V.
struct ModuleNeeds {
  std::vector<MatrixType> matrices;  // with spec-constant dimensions as specialized
  uint32_t bindings = 0;
  bool pushConstants = false;
  bool nvCoopmat2 = false;  // declares SPV_NV_cooperative_matrix2 (a native NV module, not the layer's)
  std::string problem;  // a dimension or type this reader cannot resolve
};

constexpr uint32_t kOpExtension = 10, kOpTypeInt = 21, kOpTypeFloat = 22, kOpConstant = 43, kOpSpecConstant = 50,
                   kOpSpecConstantOp = 52, kOpVariable = 59, kOpDecorate = 71, kOpTypeCooperativeMatrixKHR = 4456;
constexpr uint32_t kDecorationSpecId = 1, kDecorationBinding = 33, kStorageClassPushConstant = 9;

// VkComponentTypeKHR of a scalar type: OpTypeInt (width, signedness) or OpTypeFloat (width, encoding).
std::optional<uint32_t> ComponentType(const std::vector<uint32_t>& type) {
  if (type[0] == kOpTypeInt) {
    const bool s = type[2] != 0;
    switch (type[1]) {
      case 8: return s ? VK_COMPONENT_TYPE_SINT8_KHR : VK_COMPONENT_TYPE_UINT8_KHR;
      case 16: return s ? VK_COMPONENT_TYPE_SINT16_KHR : VK_COMPONENT_TYPE_UINT16_KHR;
      case 32: return s ? VK_COMPONENT_TYPE_SINT32_KHR : VK_COMPONENT_TYPE_UINT32_KHR;
      case 64: return s ? VK_COMPONENT_TYPE_SINT64_KHR : VK_COMPONENT_TYPE_UINT64_KHR;
    }
    return std::nullopt;
  }
  if (type.size() > 2) {  // an FP encoding
    constexpr uint32_t kBFloat16KHR = 0, kFloat8E4M3EXT = 4214, kFloat8E5M2EXT = 4215;
    if (type[2] == kBFloat16KHR) return VK_COMPONENT_TYPE_BFLOAT16_KHR;
    if (type[2] == kFloat8E4M3EXT) return VK_COMPONENT_TYPE_FLOAT8_E4M3_EXT;
    if (type[2] == kFloat8E5M2EXT) return VK_COMPONENT_TYPE_FLOAT8_E5M2_EXT;
    return std::nullopt;
  }
  switch (type[1]) {
    case 16: return VK_COMPONENT_TYPE_FLOAT16_KHR;
    case 32: return VK_COMPONENT_TYPE_FLOAT32_KHR;
    case 64: return VK_COMPONENT_TYPE_FLOAT64_KHR;
  }
  return std::nullopt;
}

ModuleNeeds ReadNeeds(const std::vector<uint32_t>& spirv, const std::map<uint32_t, uint32_t>& specialization) {
  ModuleNeeds needs;
  std::map<uint32_t, std::vector<uint32_t>> defs;  // result id -> opcode, operands after the result id
  std::map<uint32_t, uint32_t> specIds;            // result id -> SpecId
  std::vector<std::vector<uint32_t>> matrices;
  for (size_t i = 5; i < spirv.size();) {
    const uint32_t count = spirv[i] >> 16, op = spirv[i] & 0xffff;
    if (count == 0 || i + count > spirv.size()) {
      needs.problem = "malformed SPIR-V";
      return needs;
    }
    const uint32_t* w = &spirv[i];
    if (op == kOpExtension && count >= 2 &&
        std::string(reinterpret_cast<const char*>(w + 1), (count - 1) * 4).c_str() == std::string("SPV_NV_cooperative_matrix2"))
      needs.nvCoopmat2 = true;
    if (op == kOpDecorate && count >= 4 && w[2] == kDecorationSpecId) specIds[w[1]] = w[3];
    if (op == kOpDecorate && count >= 4 && w[2] == kDecorationBinding) needs.bindings = std::max(needs.bindings, w[3] + 1);
    if (op == kOpVariable && count >= 4 && w[3] == kStorageClassPushConstant) needs.pushConstants = true;
    if ((op == kOpTypeInt || op == kOpTypeFloat) && count >= 3) defs[w[1]] = std::vector<uint32_t>({op}), defs[w[1]].insert(defs[w[1]].end(), w + 2, w + count);
    if ((op == kOpConstant || op == kOpSpecConstant || op == kOpSpecConstantOp) && count >= 4)
      defs[w[2]] = std::vector<uint32_t>({op}), defs[w[2]].insert(defs[w[2]].end(), w + 3, w + count);
    if (op == kOpTypeCooperativeMatrixKHR && count == 7) matrices.push_back({w[2], w[4], w[5], w[6]});
    i += count;
  }
  // The value of an integer constant, spec constants as specialized; a few spec
  // constant operations (the tests' "R/2").
  std::function<std::optional<uint32_t>(uint32_t, int)> value = [&](uint32_t id, int depth) -> std::optional<uint32_t> {
    const auto def = defs.find(id);
    if (def == defs.end() || depth > 8) return std::nullopt;
    const std::vector<uint32_t>& d = def->second;
    if (d[0] == kOpConstant) return d[1];
    if (d[0] == kOpSpecConstant) {
      const auto spec = specIds.find(id);
      if (spec != specIds.end())
        if (const auto given = specialization.find(spec->second); given != specialization.end()) return given->second;
      return d[1];
    }
    if (d[0] == kOpSpecConstantOp && d.size() == 4) {
      const auto a = value(d[2], depth + 1), b = value(d[3], depth + 1);
      if (!a || !b) return std::nullopt;
      switch (d[1]) {
        case 128: return *a + *b;
        case 130: return *a - *b;
        case 132: return *a * *b;
        case 134: return *b ? std::optional<uint32_t>(*a / *b) : std::nullopt;
      }
    }
    return std::nullopt;
  };
  for (const std::vector<uint32_t>& m : matrices) {
    const auto component = defs.count(m[0]) ? ComponentType(defs[m[0]]) : std::nullopt;
    const auto rows = value(m[1], 0), cols = value(m[2], 0), use = value(m[3], 0);
    if (!component || !rows || !cols || !use) {
      needs.problem = "a cooperative matrix type this reader cannot resolve";
      return needs;
    }
    needs.matrices.push_back({*component, *use, *rows, *cols});
  }
  return needs;
}

std::string Describe(const MatrixType& t) {
  return "component " + std::to_string(t.component) + " use " + std::to_string(t.use) + " " + std::to_string(t.rows) +
         "x" + std::to_string(t.cols);
}

// Every module under the folder, at every size; modules whose matrix types the
// device does not list, or native NV coopmat2 modules on a device without it, are
// reported as skipped (a driver may reject them).
int MeasureModules(const sample::Context& layer, const StatsOptions& options) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(options.modules))
    if (entry.path().extension() == ".spv") paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  Table table("module");
  int failures = 0, measured = 0, skipped = 0;
  for (const std::filesystem::path& path : paths) {
    const std::string name = std::filesystem::relative(path, options.modules).string();
    if (!options.filter.empty() && name.find(options.filter) == std::string::npos) continue;
    const std::vector<uint32_t> spirv = sample::ReadSpirv(path.string());
    for (uint32_t size : SizesToMeasure(layer, options)) {
      const uint32_t local = size ? size : layer.subgroupSize();
      // The tests' spec constants: 0 local size (one subgroup), 1 and 2 the
      // dimensions where they are spec constants (the device's 16x16 tile).
      const std::map<uint32_t, uint32_t> specialization = {{0, local}, {1, 16}, {2, 16}};
      const ModuleNeeds needs = ReadNeeds(spirv, specialization);
      std::string unusable = needs.problem;
      if (unusable.empty() && needs.nvCoopmat2 && !layer.nvCoopmat2()) unusable = "needs VK_NV_cooperative_matrix2";
      for (const MatrixType& t : needs.matrices)
        if (unusable.empty() && !Usable(layer, t)) unusable = "not listed: " + Describe(t);
      if (!unusable.empty()) {
        if (size == 0) {
          ++skipped;
          std::fprintf(stderr, "skipped %s: %s\n", name.c_str(), unusable.c_str());
        }
        continue;
      }
      sample::StatsPipelineOptions pipeline;
      pipeline.requiredSubgroupSize = size;
      for (const auto& [id, v] : specialization) pipeline.specialization.push_back({id, v});
      pipeline.bindings = std::max(needs.bindings, 1u);
      pipeline.pushConstantBytes = needs.pushConstants ? 128 : 0;
      const sample::PipelineStats stats = sample::CompileForStatistics(layer, spirv, pipeline);
      ++measured;
      if (!stats.ok()) ++failures;
      table.Row(name, size, stats, Status(stats));
    }
  }
  table.Finish();
  std::fprintf(stderr, "modules: %d pipelines created or attempted, %d failed, %d modules skipped (types not listed)\n",
               measured, failures, skipped);
  if (measured == 0) {
    std::fprintf(stderr, "no module could be measured\n");
    return 1;
  }
  return failures;
}

bool ParseSizes(const std::string& text, std::vector<uint32_t>& sizes) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos) return false;
    sizes.push_back(static_cast<uint32_t>(std::stoul(item)));
    start = end + 1;
  }
  return !sizes.empty();
}

void StatsUsage() {
  std::fprintf(stderr,
               "usage: opbench --stats [--filter LIST] [--sizes S,S,...] [--modules DIR]\n"
               "  prints CSV: op,shape,type,way,requested_subgroup,subgroup,status,<the driver's statistics>\n"
               "  --sizes    required subgroup sizes to measure, 0 = none (default: every power of two in\n"
               "             [minSubgroupSize, maxSubgroupSize], then 0)\n"
               "  --modules  every .spv under DIR through the layer instead of opbench's cases (CSV key: module)\n"
               "  exit status: 1 when a pipeline failed to be created\n");
}

}  // namespace

bool CaseUsable(const sample::Context& context, const Case& c) {
  return Usable(context, TypeOf(c.source)) && Usable(context, TypeOf(c.result));
}

int RunStatistics(int argc, char** argv) {
  StatsOptions options;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool hasValue = i + 1 < argc;
    if (arg == "--filter" && hasValue) options.filter = argv[++i];
    else if (arg == "--modules" && hasValue) options.modules = argv[++i];
    else if (arg == "--sizes" && hasValue && ParseSizes(argv[i + 1], options.sizes)) ++i;
    else {
      StatsUsage();
      return 2;
    }
  }
  try {
    sample::Context layer({.appName = "opbench-stats", .uncachedPipelines = true, .pipelineStatistics = true});
    std::fprintf(stderr, "device: %s (%s); subgroup size %u, [%u, %u]\n", layer.deviceName().c_str(),
                 layer.driverInfo().c_str(), layer.subgroupSize(), layer.minSubgroupSize(), layer.maxSubgroupSize());
    if (!layer.pipelineStatistics())
      std::fprintf(stderr, "note: no VK_KHR_pipeline_executable_properties: creation is checked, no figures\n");
    int failures = 0;
    if (!options.modules.empty()) {
      failures = MeasureModules(layer, options);
    } else {
      sample::Context native({.appName = "opbench-stats",
                              .layer = false,
                              .uncachedPipelines = true,
                              .pipelineStatistics = true,
                              .driverEnvironment = {{"radv_cooperative_matrix2_nv", "true"}}});
      if (!native.nvCoopmat2()) std::fprintf(stderr, "note: the driver has no VK_NV_cooperative_matrix2: no nv way\n");
      // RADV lists 16x16 only. Its 2x2 reduce's result is 16x16 only from 32x32, which
      // exists under NV flexible dimensions: the layer measures such shapes as an app
      // that enables them (the driconf option on its instance too), the rest as before.
      std::unique_ptr<sample::Context> flexLayer;
      if (!layer.flexibleDimensions() && native.flexibleDimensions())
        flexLayer = std::make_unique<sample::Context>(
            sample::ContextOptions{.appName = "opbench-stats",
                                   .uncachedPipelines = true,
                                   .pipelineStatistics = true,
                                   .driverEnvironment = {{"radv_cooperative_matrix2_nv", "true"}}});
      failures = MeasureCases(layer, flexLayer.get(), native, options);
    }
    if (failures) std::fprintf(stderr, "RESULT: FAILED (%d pipelines not created)\n", failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opbench --stats: %s\n", e.what());
    return 1;
  }
}

}  // namespace opbench
