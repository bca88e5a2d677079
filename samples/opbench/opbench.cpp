// opbench: what each VK_EXT_cooperative_matrix_maintenance1 operation costs, one at a
// time. For every case in cases.txt (operation, shape, type) a kernel loads a matrix,
// applies the operation and stores the result, over enough workgroups to dwarf the
// dispatch cost. It runs
//
//   layer       the maintenance1 shader; on a driver without the extension
//               VK_LAYER_coopmat_maintenance1 lowers it to KHR SPIR-V, the way it
//               chooses by default (the register path where it knows the driver's
//               layout, as on lavapipe)
//   portable    the same shader through the layer on a second instance created
//               with the layer setting lowering=portable (every operation through
//               Workgroup scratch, as on a driver whose layout is unknown; on a
//               driver with the extension natively the layer steps aside and this
//               repeats "layer")
//   native      the GL_NV_cooperative_matrix2 spelling, the driver's own operation
//   workaround  KHR only: store to shared memory, do the work there, load back
//
// and reports each one's time minus that of the load+store-only baseline, after
// checking its output against a CPU reference (a wrong output is reported as WRONG
// and not timed). It also reports the layer's rewrite time per module
// (coopmat::LowerModule, timed directly, with the options the layer uses) and the
// driver's pipeline creation time.
//
//   opbench [--matrices N] [--runs R] [--filter TEXT] [--csv] [--check-only] [--no-portable]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "coopmat/layout.h"
#include "coopmat/lower.h"
#include "half.h"
#include "vulkan_app.h"
#include "cases.h"
#include "stats.h"

namespace {

using namespace opbench;

// ---------------------------------------------------------------------------
// Component values

// bfloat16: the high half of an f32 (truncated; the benchmark's values are exact).
double Bf16ToDouble(uint16_t bits) {
  const uint32_t word = uint32_t{bits} << 16;
  float f;
  std::memcpy(&f, &word, 4);
  return f;
}
uint16_t DoubleToBf16(double v) {
  const float f = static_cast<float>(v);
  uint32_t word;
  std::memcpy(&word, &f, 4);
  return static_cast<uint16_t>(word >> 16);
}
// fp8 E4M3 (bias 7, no infinities) and E5M2 (bias 15); NaN codes decode as 0.
double Fp8ToDouble(uint8_t bits, bool e4m3) {
  const int mantissaBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const int exponent = (bits & 0x7f) >> mantissaBits, mantissa = bits & ((1 << mantissaBits) - 1);
  if ((e4m3 && (bits & 0x7f) == 0x7f) || (!e4m3 && exponent == 31)) return 0;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, 1 - bias - mantissaBits)
                                         : std::ldexp((1 << mantissaBits) + mantissa, exponent - bias - mantissaBits);
  return bits & 0x80 ? -magnitude : magnitude;
}
uint8_t DoubleToFp8(double v, bool e4m3) {  // the nearest finite code
  uint8_t best = 0;
  for (int code = 0; code < 256; ++code)
    if (std::fabs(Fp8ToDouble(static_cast<uint8_t>(code), e4m3) - v) < std::fabs(Fp8ToDouble(best, e4m3) - v)) best = static_cast<uint8_t>(code);
  return best;
}

// Reads / writes element i of a tightly packed array of type t. Every value the
// benchmark uses is a small integer, exact in every type.
double Load(Type t, const void* data, size_t i) {
  switch (t) {
    case Type::F16: return sample::HalfToFloat(static_cast<const uint16_t*>(data)[i]);
    case Type::F32: return static_cast<const float*>(data)[i];
    case Type::U8: return static_cast<const uint8_t*>(data)[i];
    case Type::S8: return static_cast<const int8_t*>(data)[i];
    case Type::U32: return static_cast<const uint32_t*>(data)[i];
    case Type::S32: return static_cast<const int32_t*>(data)[i];
    case Type::BF16: return Bf16ToDouble(static_cast<const uint16_t*>(data)[i]);
    case Type::E4M3: return Fp8ToDouble(static_cast<const uint8_t*>(data)[i], true);
    case Type::E5M2: return Fp8ToDouble(static_cast<const uint8_t*>(data)[i], false);
  }
  return 0;
}

void Store(Type t, void* data, size_t i, double v) {
  switch (t) {
    case Type::F16: static_cast<uint16_t*>(data)[i] = sample::FloatToHalf(static_cast<float>(v)); break;
    case Type::F32: static_cast<float*>(data)[i] = static_cast<float>(v); break;
    case Type::U8: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(v); break;
    case Type::S8: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v); break;
    case Type::U32: static_cast<uint32_t*>(data)[i] = static_cast<uint32_t>(v); break;
    case Type::S32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v); break;
    case Type::BF16: static_cast<uint16_t*>(data)[i] = DoubleToBf16(v); break;
    case Type::E4M3: static_cast<uint8_t*>(data)[i] = DoubleToFp8(v, true); break;
    case Type::E5M2: static_cast<uint8_t*>(data)[i] = DoubleToFp8(v, false); break;
  }
}

// ---------------------------------------------------------------------------
// The CPU reference

// Wraps a value the way the component type's arithmetic does (u8/s8 only matter here).
double Wrap(Type t, double v) {
  if (t == Type::U8) return static_cast<uint8_t>(static_cast<int>(v));
  if (t == Type::S8) return static_cast<int8_t>(static_cast<int>(v));
  return v;
}

// Expected result of one matrix: `in` is row-major source, returns row-major result.
std::vector<double> Reference(const Case& c, const double* in) {
  const uint32_t R = c.source.rows, C = c.source.cols, R2 = c.result.rows, C2 = c.result.cols;
  std::vector<double> out(size_t(R2) * C2, 0.0);
  auto at = [&](uint32_t r, uint32_t col) { return in[size_t(r) * C + col]; };
  for (uint32_t r = 0; r < R2; ++r) {
    for (uint32_t col = 0; col < C2; ++col) {
      double v = 0;
      if (c.op == "getcoord" || c.op == "perelem") {
        v = Wrap(c.source.type, at(r, col) * 2 + ((r * 3 + col) & 7));
      } else if (c.op == "reduce_row") {
        for (uint32_t k = 0; k < C; ++k) v += at(r, k);
      } else if (c.op == "reduce_col") {
        for (uint32_t k = 0; k < R; ++k) v += at(k, col);
      } else if (c.op == "reduce_rowcol") {
        for (size_t k = 0; k < size_t(R) * C; ++k) v += in[k];
      } else if (c.op == "reduce_2x2") {
        v = at(2 * r, 2 * col) + at(2 * r, 2 * col + 1) + at(2 * r + 1, 2 * col) + at(2 * r + 1, 2 * col + 1);
      } else if (c.op == "transpose") {
        v = at(col, r);
      } else {  // convert
        v = at(r, col);
      }
      out[size_t(r) * C2 + col] = v;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Running one case

struct Options {
  uint32_t matrices = 8192;
  int runs = 15;
  bool csv = false;
  bool checkOnly = false;
  bool portable = true;
  std::string filter;
  bool require[4] = {false, false, false, false};  // --require: these ways must run wherever a case has them
};

struct WayResult {
  std::string status;  // "" not present, "ok", "WRONG", "FAILED", "n/a"
  double us = 0;       // fastest of the timed dispatches
  std::vector<double> runs;  // every timed dispatch's us, one per round (all ways take a turn each round)
  double moduleUs = 0;
  double compileUs = 0;  // vkCreateComputePipelines + what the first dispatch took beyond a normal one
};

struct CaseResult {
  WayResult base;
  WayResult ways[kWays];
  double rewriteUs = 0;          // coopmat::LowerModule on the layer's module, the layer's default options
  double rewritePortableUs = 0;  // the same without register layouts (lowering=portable)
  uint32_t opsLowered = 0, opsInRegisters = 0;
};

struct Variant {
  std::unique_ptr<sample::Kernel> kernel;
  WayResult* result;  // its timed dispatches go to result->runs
};

// The options VK_LAYER_coopmat_maintenance1 lowers with on this device: its matrix
// types and flexible dimensions, and with `registers` the register layouts. The
// layer probes those at vkCreateDevice and, on lavapipe with NV flexible dimensions,
// adds its built-in table's larger shapes; here they come from that same table
// (coopmat::BuiltinLayouts(Lavapipe, subgroup size), restricted the way the layer
// restricts them: the types and Uses the KHR list names, and without flexible
// dimensions only the listed shapes). On any other driver: no layouts.
coopmat::LowerOptions LayerLowerOptions(const sample::Context& context, bool registers) {
  coopmat::LowerOptions options;
  options.minSubgroupSize = context.subgroupSize();
  for (const VkCooperativeMatrixPropertiesKHR& p : context.khrProperties()) {
    if (p.scope == VK_SCOPE_SUBGROUP_KHR)
      options.AddMatrixProperties(p.MSize, p.NSize, p.KSize, p.AType, p.BType, p.CType, p.ResultType);
  }
  options.flexibleDimensions = context.flexibleDimensions();
  if (!registers || context.driverId() != VK_DRIVER_ID_MESA_LLVMPIPE) return options;
  for (const coopmat::LinearLayout& layout : coopmat::BuiltinLayouts(coopmat::DriverFamily::Lavapipe, context.subgroupSize())) {
    const coopmat::LayoutKey& k = layout.key;
    const bool listed = std::any_of(options.supportedMatrixTypes.begin(), options.supportedMatrixTypes.end(), [&](const auto& s) {
      return s.componentType == k.componentType && s.use == k.use &&
             (options.flexibleDimensions || (s.rows == k.rows && s.cols == k.cols));
    });
    if (listed) options.layouts.push_back(layout);
  }
  return options;
}

// The buffers of one case on one device.
struct CaseBuffers {
  sample::Buffer in, out, baseOut;
};

CaseResult RunCase(const sample::Context& context, const sample::Context* portable, const Options& options, const Case& c) {
  CaseResult out;
  const bool shapeOk = context.flexibleDimensions() || (c.source.Shape() == "8x8" && c.result.Shape() == "8x8");
  bool available[kWays] = {context.maintenance1(), context.nvCoopmat2(), true, portable && portable->maintenance1()};
  const uint32_t G = options.matrices;

  // Input: small integers, exact in every type (0..7, or -4..3 for signed integers).
  std::mt19937 rng(42);
  const bool signedInt = c.source.type == Type::S8 || c.source.type == Type::S32;
  std::uniform_int_distribution<int> dist(signedInt ? -4 : 0, signedInt ? 3 : 7);
  std::vector<double> input(size_t(G) * c.source.Elements());
  for (double& v : input) v = dist(rng);

  const size_t outElements = size_t(G) * c.result.Elements();
  auto makeBuffers = [&](const sample::Context& on) {
    auto buffers = std::make_unique<CaseBuffers>(CaseBuffers{
        sample::Buffer(on, input.size() * Info(c.source.type).size), sample::Buffer(on, outElements * Info(c.result.type).size),
        sample::Buffer(on, input.size() * Info(c.source.type).size)});
    for (size_t i = 0; i < input.size(); ++i) Store(c.source.type, buffers->in.data(), i, input[i]);
    return buffers;
  };
  const std::unique_ptr<CaseBuffers> buffers = makeBuffers(context);
  const std::unique_ptr<CaseBuffers> portableBuffers =
      c.has[kPortable] && available[kPortable] && shapeOk ? makeBuffers(*portable) : nullptr;

  std::vector<double> expected;
  expected.reserve(outElements);
  for (uint32_t g = 0; g < G; ++g) {
    const std::vector<double> one = Reference(c, input.data() + size_t(g) * c.source.Elements());
    expected.insert(expected.end(), one.begin(), one.end());
  }

  // Builds, runs once and checks one variant; returns it when its output is right.
  auto prepare = [&](const sample::Context& on, const std::string& shader, WayResult& result, sample::Buffer& input_,
                     sample::Buffer& output, Type outType, const std::vector<double>& want) -> std::unique_ptr<sample::Kernel> {
    try {
      const std::vector<uint32_t> spirv = sample::ReadSpirv(sample::ShaderDir() + "/" + shader + ".spv");
      auto kernel = std::make_unique<sample::Kernel>(on, spirv, sample::KernelOptions{.bindings = 2});
      result.moduleUs = kernel->moduleMicroseconds();
      kernel->Record({&input_, &output}, G);
      std::memset(output.data(), 0xA5, output.size());  // a pattern no correct result has
      kernel->Run();
      for (size_t i = 0; i < want.size(); ++i) {
        if (Load(outType, output.data(), i) != want[i]) {
          result.status = "WRONG";
          return nullptr;
        }
      }
      result.status = "ok";
      return kernel;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "opbench: %s: %s\n", shader.c_str(), e.what());
      result.status = "FAILED";
      return nullptr;
    }
  };

  std::vector<Variant> variants;
  if (auto base = prepare(context, "base_" + c.source.Name(), out.base, buffers->in, buffers->baseOut, c.source.type, input))
    variants.push_back({std::move(base), &out.base});
  for (int w = 0; w < kWays; ++w) {
    if (!c.has[w]) continue;
    if (!available[w] || !shapeOk) {
      out.ways[w].status = "n/a";
      continue;
    }
    const std::string shader = c.Name() + "_" + kWayNames[w];
    const bool onPortable = w == kPortable;
    CaseBuffers& b = onPortable ? *portableBuffers : *buffers;
    if (auto kernel = prepare(onPortable ? *portable : context, shader, out.ways[w], b.in, b.out, c.result.type, expected))
      variants.push_back({std::move(kernel), &out.ways[w]});
    if (w == kLayer || w == kPortable) {
      // The rewrite alone, as the layer runs it at vkCreateShaderModule (median of 5).
      const std::vector<uint32_t> spirv = sample::ReadSpirv(sample::ShaderDir() + "/" + shader + ".spv");
      const coopmat::LowerOptions lowerOptions = LayerLowerOptions(context, w == kLayer);
      std::vector<double> times;
      for (int i = 0; i < 5; ++i) {
        const coopmat::LowerResult lowered = coopmat::LowerModule(spirv, lowerOptions);
        times.push_back(lowered.stats.microseconds);
        if (w == kLayer) {
          out.opsLowered = lowered.stats.OpsLowered();
          out.opsInRegisters = lowered.stats.registerPath;
        }
      }
      (w == kLayer ? out.rewriteUs : out.rewritePortableUs) = sample::Median(times);
    }
  }

  // Time the baseline and every correct variant in turn, so that a change in the
  // machine's load hits them all alike. (The portable way runs on its own device
  // with its own copy of the buffers; lavapipe runs both on the same CPUs.)
  if (!options.checkOnly && out.base.status == "ok") {
    for (int warmup = 0; warmup < 2; ++warmup)
      for (Variant& v : variants) v.kernel->Run();
    // Each round starts at the next variant: a variant's time can depend on what ran
    // before it (lavapipe: the ways share one output buffer, the baseline writes a larger
    // one of its own), and in a fixed order one variant would always follow the baseline.
    for (int run = 0; run < options.runs; ++run)
      for (size_t i = 0; i < variants.size(); ++i) {
        Variant& v = variants[(i + static_cast<size_t>(run)) % variants.size()];
        v.result->runs.push_back(v.kernel->Run());
      }
    // The fastest run: the cost of the kernel with the least interference from
    // whatever else the machine runs (the median moves with the load).
    for (Variant& v : variants) v.result->us = *std::min_element(v.result->runs.begin(), v.result->runs.end());
  }
  // lavapipe compiles to machine code at the first dispatch: count that as compilation.
  for (Variant& v : variants)
    v.result->compileUs = v.kernel->pipelineMicroseconds() +
                          std::max(0.0, v.kernel->firstRunMicroseconds() - v.result->us);
  return out;
}

// ---------------------------------------------------------------------------
// Output

// The added time of a way as text: microseconds, or its status when it has none.
std::string Added(const CaseResult& r, int w, bool timed) {
  const WayResult& way = r.ways[w];
  if (way.status.empty()) return "";
  if (way.status != "ok") return way.status;
  if (!timed || r.base.us == 0) return "ok";
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", way.us - r.base.us);
  return text;
}

std::string Ratio(const CaseResult& r, int numerator, int denominator) {
  const WayResult &n = r.ways[numerator], &d = r.ways[denominator];
  if (n.status != "ok" || d.status != "ok" || n.us == 0) return "-";
  const double dn = n.us - r.base.us, dd = d.us - r.base.us;
  // An added time within 5% of the baseline is lost in the run-to-run noise.
  if (dd < 0.05 * r.base.us) return "(~0)";
  char text[32];
  std::snprintf(text, sizeof(text), "%.2fx", dn / dd);
  return text;
}

// A way's whole time over another's (base included), e.g. "0.98x".
// Whole times compared round by round: the median of the rounds' ratios. Each round's two
// dispatches ran moments apart, so a change in the machine's load cancels; the ratio of the
// two fastest dispatches instead moved by +-15 % from run to run on one row, whichever
// way happened to catch a quiet moment.
double PairedRatio(const CaseResult& r, int numerator, int denominator) {
  const WayResult &n = r.ways[numerator], &d = r.ways[denominator];
  if (n.status != "ok" || d.status != "ok" || n.runs.empty() || n.runs.size() != d.runs.size()) return 0;
  std::vector<double> ratios;
  for (size_t i = 0; i < n.runs.size(); ++i)
    if (d.runs[i] > 0) ratios.push_back(n.runs[i] / d.runs[i]);
  return ratios.empty() ? 0 : sample::Median(ratios);
}

std::string TimeRatio(const CaseResult& r, int numerator, int denominator) {
  const double ratio = PairedRatio(r, numerator, denominator);
  if (ratio == 0) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.2fx", ratio);
  return text;
}

void Usage() {
  std::fprintf(stderr,
               "usage: opbench [--matrices N] [--runs R] [--filter TEXT] [--csv] [--check-only] [--no-portable]\n"
               "  --matrices N  matrices (= workgroups of one subgroup) per dispatch (default 8192)\n"
               "  --runs R      timed dispatches per kernel, interleaved; the fastest counts (default 15)\n"
               "  --filter LIST only cases whose name contains one of the comma-separated items\n"
               "                (names: <op>_<use>_<type>_<RxC>[_to_<use>_<type>], e.g. reduce_row,acc_f16_8x8)\n"
               "  --csv         print op,shape,type,layer_us,native_us,workaround_us,portable_us,base_us,\n"
               "                layer_over_native\n"
               "                (added us per dispatch, and the load+store baseline's us; layer = the layer's\n"
               "                default lowering)\n"
               "  --check-only  check every variant against the CPU reference, time nothing\n"
               "  --no-portable skip the second instance with the layer setting lowering=portable\n"
               "  --require LIST ways (layer,nv,khr,portable) that must run wherever a case has them; an\n"
               "                unavailable one fails the run (the tests require the layer's ways)\n"
               "  opbench --stats --help: the driver's static statistics per case, way and subgroup size\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--stats") == 0) return opbench::RunStatistics(argc - 2, argv + 2);
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool hasValue = i + 1 < argc;
    if (arg == "--matrices" && hasValue) options.matrices = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    else if (arg == "--runs" && hasValue) options.runs = std::atoi(argv[++i]);
    else if (arg == "--filter" && hasValue) options.filter = argv[++i];
    else if (arg == "--csv") options.csv = true;
    else if (arg == "--check-only") options.checkOnly = true;
    else if (arg == "--no-portable") options.portable = false;
    else if (arg == "--require" && hasValue) {
      std::string list = argv[++i];
      std::replace(list.begin(), list.end(), ',', ' ');
      std::istringstream words(list);
      for (std::string way; words >> way;) {
        const int w = way == "layer" ? kLayer : way == "nv" ? kNative : way == "khr" ? kWorkaround : way == "portable" ? kPortable : -1;
        if (w < 0) {
          Usage();
          return 2;
        }
        options.require[w] = true;
      }
    }
    else if (arg == "--help" || arg == "-h") {
      Usage();
      return 0;
    } else {
      Usage();
      return 2;
    }
  }
  if (options.matrices == 0 || options.runs <= 0) {
    Usage();
    return 2;
  }

  try {
    const std::vector<Case> cases = ReadCases(sample::ShaderDir() + "/cases.txt");
    sample::Context context({.appName = "opbench", .uncachedPipelines = !options.checkOnly});
    // The layer's portable path: a second instance whose layer runs with lowering=portable.
    std::unique_ptr<sample::Context> portable;
    if (options.portable)
      portable = std::make_unique<sample::Context>(
          sample::ContextOptions{.appName = "opbench", .uncachedPipelines = !options.checkOnly, .lowering = "portable"});
    FILE* info = options.csv ? stderr : stdout;
    std::fprintf(info, "device: %s (%s)\n", context.deviceName().c_str(), context.driverInfo().c_str());
    std::fprintf(info, "ways: layer=%s layer portable=%s native NV=%s workaround=yes; shapes beyond 8x8: %s\n",
                 context.maintenance1() ? "yes (its default lowering)" : "no",
                 portable && portable->maintenance1() ? "yes (second instance, lowering=portable)" : "no",
                 context.nvCoopmat2() ? "yes" : "no",
                 context.flexibleDimensions() ? "yes (NV flexible dimensions)" : "no");
    if (const char* env = std::getenv("VK_COOPMAT_MAINTENANCE1_LOWERING"))
      std::fprintf(info, "note: VK_COOPMAT_MAINTENANCE1_LOWERING=%s applies to both instances\n", env);
    const size_t layouts = LayerLowerOptions(context, true).layouts.size();
    std::fprintf(info, "rewrite timing: LowerModule with the device's matrix types%s\n",
                 layouts ? (" and " + std::to_string(layouts) + " lavapipe register layouts (coopmat::BuiltinLayouts)").c_str()
                         : " (no register layouts known to opbench for this driver)");
    std::fprintf(info, "%u matrices per dispatch, one subgroup each; %s\n\n", options.matrices,
                 options.checkOnly ? "checking only"
                                   : ("fastest of " + std::to_string(options.runs) +
                                      " interleaved dispatches per kernel; added = way - load+store baseline")
                                         .c_str());

    const bool timed = !options.checkOnly;
    const char* header =
        "%-14s %-6s %-14s %8s | %9s %9s %9s %10s | %7s %8s %8s %8s | %7s %7s %7s | %7s %7s %7s %7s\n";
    if (options.csv) std::printf("op,shape,type,layer_us,native_us,workaround_us,portable_us,base_us,layer_over_native\n");
    else
      std::printf(header, "op", "shape", "type", "base us", "layer", "portable", "native", "workaround", "L/N",
                  "l/native", "l/workar", "p/workar", "rewr L", "rewr P", "module", "pipe L", "pipe P", "pipe N",
                  "pipe W");
    bool failed = false;
    std::vector<std::string> notes;
    for (const Case& c : cases) {
      if (!Selected(c, options.filter)) continue;
      if (!CaseUsable(context, c)) {  // e.g. bfloat16 and fp8 on lavapipe: not listed, invalid to compile
        notes.push_back(c.Name() + ": skipped, the driver does not list its matrix types");
        continue;
      }
      const CaseResult r = RunCase(context, portable.get(), options, c);
      for (int w = 0; w < kWays; ++w)
        if (options.require[w] && r.ways[w].status == "n/a") {
          failed = true;
          notes.push_back(c.Name() + (w == kPortable ? "_portable" : std::string("_") + kWayNames[w]) +
                          ": required (--require) but not available");
        }
      for (int w : {kLayer, kWorkaround, kPortable}) {
        const std::string& s = r.ways[w].status;
        if (s == "WRONG" || s == "FAILED") {
          failed = true;
          notes.push_back(c.Name() + "_" + kWayNames[w] + (w == kPortable ? " (portable)" : "") + ": " + s);
        }
      }
      if (r.base.status != "ok") {
        failed = true;
        notes.push_back("base_" + c.source.Name() + ": " + r.base.status);
      }
      if (r.ways[kNative].status == "WRONG") notes.push_back(c.Name() + "_nv: WRONG (the driver's own operation)");
      if (options.csv) {
        char base[32] = "";
        if (timed && r.base.status == "ok") std::snprintf(base, sizeof(base), "%.1f", r.base.us);
        char ratio[32] = "";
        if (const double paired = PairedRatio(r, kLayer, kNative); timed && paired > 0)
          std::snprintf(ratio, sizeof(ratio), "%.3f", paired);
        std::printf("%s,%s,%s,%s,%s,%s,%s,%s,%s\n", c.op.c_str(), c.source.Shape().c_str(), c.TypeLabel().c_str(),
                    Added(r, kLayer, timed).c_str(), Added(r, kNative, timed).c_str(),
                    Added(r, kWorkaround, timed).c_str(), Added(r, kPortable, timed).c_str(), base, ratio);
      } else {
        auto ms = [](const WayResult& w) {
          char text[16];
          if (w.compileUs > 0) std::snprintf(text, sizeof(text), "%.1f", w.compileUs / 1000);
          else std::snprintf(text, sizeof(text), "-");
          return std::string(text);
        };
        char base[16], rewrite[16], rewriteP[16], module[16];
        std::snprintf(base, sizeof(base), "%.0f", r.base.us);
        std::snprintf(rewrite, sizeof(rewrite), "%.0f%s", r.rewriteUs, r.opsInRegisters ? "r" : "");
        std::snprintf(rewriteP, sizeof(rewriteP), "%.0f", r.rewritePortableUs);
        std::snprintf(module, sizeof(module), "%.0f", r.ways[kLayer].moduleUs);
        std::printf(header, c.op.c_str(), c.source.Shape().c_str(), c.TypeLabel().c_str(), timed ? base : "-",
                    Added(r, kLayer, timed).c_str(), Added(r, kPortable, timed).c_str(), Added(r, kNative, timed).c_str(),
                    Added(r, kWorkaround, timed).c_str(), timed ? TimeRatio(r, kLayer, kNative).c_str() : "-",
                    timed ? Ratio(r, kLayer, kNative).c_str() : "-",
                    timed ? Ratio(r, kLayer, kWorkaround).c_str() : "-",
                    timed ? Ratio(r, kPortable, kWorkaround).c_str() : "-", rewrite, rewriteP, module,
                    ms(r.ways[kLayer]).c_str(), ms(r.ways[kPortable]).c_str(), ms(r.ways[kNative]).c_str(),
                    ms(r.ways[kWorkaround]).c_str());
      }
      std::fflush(stdout);
    }
    if (!options.csv) {
      std::printf("\nlayer / portable / native / workaround: time added to the load+store baseline, us per dispatch\n"
                  "  (layer: the layer's default lowering; portable: the layer with lowering=portable; blank: the way\n"
                  "  does not exist; WRONG: output differs from the CPU reference, not timed)\n"
                  "L/N: the layer's whole time (baseline included) / the native way's, the median of the rounds' ratios\n"
                  "l/native, l/workar, p/workar: added time / the other's ((~0): the other adds < 5%% of the baseline)\n"
                  "rewr L / rewr P: coopmat::LowerModule, us (median of 5), with the layer's options and register\n"
                  "  layouts / without them ('r': some operation took the register path); module: vkCreateShaderModule\n"
                  "  through the layer (default lowering), us\n"
                  "pipe L/P/N/W: driver compile time, ms, of the layer's (rewritten), its portable, the native and the\n"
                  "  workaround module: vkCreateComputePipelines + the first dispatch's extra time (lavapipe JIT-compiles\n"
                  "  at first use)\n");
    }
    for (const std::string& note : notes) std::fprintf(info, "%s\n", note.c_str());
    std::fprintf(info, "%s\n", failed ? "RESULT: FAILED (a layer or workaround variant is wrong)" : "RESULT: ok");
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opbench: %s\n", e.what());
    return 1;
  }
}
