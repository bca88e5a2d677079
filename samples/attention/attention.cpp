// attention: a flash-attention forward pass written with
// VK_EXT_cooperative_matrix_maintenance1 (shaders/attention.comp), checked against a
// CPU reference and timed next to the two other ways to write it today:
//
//   1. maintenance1   coopMatReduceEXT / coopMatPerElementEXT / conversions /
//                     coopMatGetCoordinateEXT; on a driver without the extension,
//                     VK_LAYER_coopmat_maintenance1 lowers them to KHR SPIR-V
//   2. KHR+shared     VK_KHR_cooperative_matrix only: softmax and rescaling through
//                     shared memory, one row per invocation (attention_khr.comp)
//   3. NV native      the maintenance1 kernel spelled with GL_NV_cooperative_matrix2,
//                     run by the driver's own implementation where it has one
//   4. portable       way 1's shader through the layer on a second instance created
//                     with the layer setting lowering=portable (every operation
//                     through Workgroup scratch, as where the driver's layout is unknown;
//                     on a driver with the extension natively it repeats way 1)
//   5. spec tiles     way 1's kernel built with its tile sizes as specialization
//                     constants (TM, TN, TK, WARP) and given 8 at pipeline creation,
//                     as published kernels are: the layer lowers it per pipeline
//
// Every way is checked before it is timed; a wrong result is reported, not timed.
//
// With --tile 16 the tiles are 16x16 (Br = Bc = 16) and a workgroup is one subgroup of the
// device's size (16, 32 or 64): ways 1, 4 and 5 run, the KHR and NV spellings are 8x8 only.
//
//   attention [--seq N] [--dim D] [--heads H] [--batch B] [--no-causal] [--runs R] [--tile 8|16]
//             [--ways layer,khr,nv,portable,spec] [--k-transpose] [--no-layer] [--compile-times] [--check-only]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "half.h"
#include "vulkan_app.h"

namespace {

constexpr int kWays = 5;  // layer, khr, nv, portable, spec
// Largest error accepted: Q, K, V and P are f16, everything else f32. Near the measured
// errors (docs/performance.md; every way, profile and size the tests run): paths that
// store P as f16 reach 1.3e-4 in O, which is bounded by f16's unit roundoff 2^-11 = 4.9e-4
// times max |V| = 1; lse errors stay under 1e-6. One wrong element of V or P moves O by
// p * dV, about 0.02 * dV at 48 keys: 5e-4 sees that where the earlier 1e-2 did not.
constexpr double kOutputTolerance = 5e-4;  // max |O - reference|
constexpr double kLseTolerance = 1e-5;     // max |lse - reference|

struct Options {
  uint32_t seq = 256, dim = 64, heads = 4, batch = 1;
  uint32_t tile = 8;  // Br = Bc: 8 (the only KHR shape lavapipe has) or 16
  uint32_t subgroups = 1;  // query blocks per workgroup of the EXT kernel (16x16 tiles)
  bool causal = true;
  int runs = 15;
  bool checkOnly = false;
  bool layer = true;
  bool kTranspose = false;
  bool compileTimes = false;
  bool ways[kWays] = {true, true, true, true, true};
  bool waysGiven = false;  // --ways: the listed ways must run (an unavailable one fails)
};

struct Problem {
  Options options;
  std::vector<uint16_t> q, k, v;  // f16, [batch][head][seq][dim]
  std::vector<double> o, lse;     // the CPU reference
  size_t Elements() const { return size_t(options.batch) * options.heads * options.seq * options.dim; }
  size_t Rows() const { return size_t(options.batch) * options.heads * options.seq; }
  float Scale() const { return 1.0f / std::sqrt(static_cast<float>(options.dim)); }
};

void Usage() {
  std::fprintf(stderr,
               "usage: attention [--seq N] [--dim D] [--heads H] [--batch B] [--no-causal] [--runs R]\n"
               "                 [--tile 8|16] [--subgroups 1|2|4] [--ways layer,khr,nv,portable,spec] [--k-transpose]\n"
               "                 [--no-layer]\n"
               "                 [--compile-times] [--check-only]\n"
               "  --seq N        sequence length, a multiple of the tile edge (default 256)\n"
               "  --dim D        head dimension: 16, 32, 64 or 128 (default 64)\n"
               "  --heads H      heads (default 4)     --batch B   batch (default 1)\n"
               "  --no-causal    attend to every key (default: causal mask)\n"
               "  --runs R       timed dispatches per way; the median is reported (default 15)\n"
               "  --ways LIST    which ways to run, each required to be available (default: every way the\n"
               "                 device has of layer,khr,nv,portable,spec; portable = the layer with\n"
               "                 lowering=portable, on a second instance; spec = specialization-constant tiles)\n"
               "  --tile 16      16x16 tiles, one subgroup of the device's size (16, 32, 64) per workgroup;\n"
               "                 the KHR and NV ways are 8x8 only (default: 8)\n"
               "  --subgroups N  with --tile 16: ways 1 and 4 give each workgroup N query blocks, one per\n"
               "                 subgroup, sharing the key and value blocks in shared memory (default: 1)\n"
               "  --k-transpose  way 1 builds K^T with coopMatTransposeEXT instead of a column-major load\n"
               "  --no-layer     do not enable VK_LAYER_coopmat_maintenance1 (way 1 then needs a native driver)\n"
               "  --compile-times  also report the driver's compile time per way (Mesa's shader cache off; slow)\n"
               "  --check-only   check the results, skip the timing\n");
}

std::optional<Options> Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto number = [&](uint32_t& out) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      const unsigned long value = std::strtoul(argv[++i], &end, 10);
      out = static_cast<uint32_t>(value);
      return *end == '\0' && value > 0;
    };
    bool ok = true;
    if (arg == "--seq") ok = number(o.seq);
    else if (arg == "--dim") ok = number(o.dim);
    else if (arg == "--heads") ok = number(o.heads);
    else if (arg == "--batch") ok = number(o.batch);
    else if (arg == "--tile") ok = number(o.tile) && (o.tile == 8 || o.tile == 16);
    else if (arg == "--subgroups") ok = number(o.subgroups) && (o.subgroups == 1 || o.subgroups == 2 || o.subgroups == 4);
    else if (arg == "--runs") {
      uint32_t runs = 0;
      ok = number(runs);
      o.runs = static_cast<int>(runs);
    } else if (arg == "--no-causal") o.causal = false;
    else if (arg == "--check-only") o.checkOnly = true;
    else if (arg == "--no-layer") o.layer = false;
    else if (arg == "--k-transpose") o.kTranspose = true;
    else if (arg == "--compile-times") o.compileTimes = true;
    else if (arg == "--help" || arg == "-h") {
      Usage();
      std::exit(0);
    }
    else if (arg == "--ways" && i + 1 < argc) {
      const std::string list = argv[++i];
      o.waysGiven = true;
      for (int w = 0; w < kWays; ++w) o.ways[w] = false;
      size_t start = 0;
      while (start <= list.size()) {
        const size_t end = std::min(list.find(',', start), list.size());
        const std::string way = list.substr(start, end - start);
        if (way == "layer") o.ways[0] = true;
        else if (way == "khr") o.ways[1] = true;
        else if (way == "nv") o.ways[2] = true;
        else if (way == "portable") o.ways[3] = true;
        else if (way == "spec") o.ways[4] = true;
        else ok = false;
        start = end + 1;
      }
    } else ok = false;
    if (!ok) {
      Usage();
      return std::nullopt;
    }
  }
  if (o.subgroups > 1 && o.tile != 16) {
    std::fprintf(stderr, "attention: --subgroups needs --tile 16\n");
    return std::nullopt;
  }
  if (o.seq % (o.tile * o.subgroups) != 0 || (o.dim != 16 && o.dim != 32 && o.dim != 64 && o.dim != 128)) {
    std::fprintf(stderr, "attention: --seq must be a multiple of the tile edge (times --subgroups) and --dim one of 16, 32, 64, 128\n");
    return std::nullopt;
  }
  return o;
}

// Random Q, K, V in [-1, 1] (fixed seed) and the reference in double precision from
// the same f16 values.
Problem MakeProblem(const Options& options) {
  Problem p{options};
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto* m : {&p.q, &p.k, &p.v}) {
    m->resize(p.Elements());
    for (uint16_t& x : *m) x = sample::FloatToHalf(dist(rng));
  }
  const uint32_t n = options.seq, d = options.dim;
  p.o.assign(p.Elements(), 0.0);
  p.lse.assign(p.Rows(), 0.0);
  std::vector<double> scores(n);
  for (size_t head = 0; head < size_t(options.batch) * options.heads; ++head) {
    const size_t base = head * n * d;
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t keys = options.causal ? i + 1 : n;
      double max = -INFINITY;
      for (uint32_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (uint32_t c = 0; c < d; ++c)
          dot += double(sample::HalfToFloat(p.q[base + i * d + c])) * sample::HalfToFloat(p.k[base + j * d + c]);
        scores[j] = dot * p.Scale();
        max = std::max(max, scores[j]);
      }
      double sum = 0;
      for (uint32_t j = 0; j < keys; ++j) {
        scores[j] = std::exp(scores[j] - max);
        sum += scores[j];
      }
      for (uint32_t j = 0; j < keys; ++j) {
        for (uint32_t c = 0; c < d; ++c)
          p.o[base + i * d + c] += scores[j] / sum * sample::HalfToFloat(p.v[base + j * d + c]);
      }
      p.lse[head * n + i] = max + std::log(sum);
    }
  }
  return p;
}

struct Way {
  const char* name;
  const char* description;
  std::string shader;
  bool available;
  std::string why;  // when not available
  std::vector<std::pair<uint32_t, uint32_t>> specialization = {};
  uint32_t subgroups = 1;  // query blocks (subgroups) per workgroup
};

struct Outcome {
  std::string status;  // "ok", "WRONG", "FAILED", or why it was skipped
  double maxAbs = 0, relative = 0, lseError = 0;
  double medianUs = 0, minUs = 0;
  double moduleUs = 0;
  double compileUs = 0;  // vkCreateComputePipelines + the first dispatch's extra time
};

struct Buffers {
  sample::Buffer q, k, v, o, lse;
  Buffers(const sample::Context& context, const Problem& p)
      : q(context, p.Elements() * 2), k(context, p.Elements() * 2), v(context, p.Elements() * 2),
        o(context, p.Elements() * 4), lse(context, p.Rows() * 4) {
    std::memcpy(q.data(), p.q.data(), p.Elements() * 2);
    std::memcpy(k.data(), p.k.data(), p.Elements() * 2);
    std::memcpy(v.data(), p.v.data(), p.Elements() * 2);
  }
};

// Builds one way's kernel, runs it once and checks the result against the reference.
// Returns the kernel, ready to be timed, when the result is right.
std::unique_ptr<sample::Kernel> Prepare(const sample::Context& context, const Problem& p, Buffers& buffers,
                                        const Way& way, Outcome& out) {
  struct Push {
    uint32_t seqLen, causal;
    float scale;
  } push{p.options.seq, p.options.causal ? 1u : 0u, p.Scale()};
  try {
    const std::vector<uint32_t> spirv = sample::ReadSpirv(sample::ShaderDir() + "/" + way.shader + ".spv");
    auto kernel =
        std::make_unique<sample::Kernel>(context, spirv, sample::KernelOptions{.bindings = 5, .pushConstantBytes = sizeof(Push),
                                                                   .specialization = way.specialization});
    out.moduleUs = kernel->moduleMicroseconds();
    kernel->Record({&buffers.q, &buffers.k, &buffers.v, &buffers.o, &buffers.lse}, p.options.seq / p.options.tile / way.subgroups,
                  p.options.heads, p.options.batch, sample::AsBytes(push));

    // Check: fill the outputs with NaN so that anything left unwritten shows.
    std::fill_n(buffers.o.as<float>(), p.Elements(), NAN);
    std::fill_n(buffers.lse.as<float>(), p.Rows(), NAN);
    kernel->Run();
    const float* o = buffers.o.as<float>();
    const float* lse = buffers.lse.as<float>();
    double errorSquares = 0, referenceSquares = 0;
    for (size_t i = 0; i < p.Elements(); ++i) {
      const double error = std::fabs(double(o[i]) - p.o[i]);
      out.maxAbs = std::isnan(error) ? INFINITY : std::max(out.maxAbs, error);
      errorSquares += error * error;
      referenceSquares += p.o[i] * p.o[i];
    }
    for (size_t i = 0; i < p.Rows(); ++i) {
      const double error = std::fabs(double(lse[i]) - p.lse[i]);
      out.lseError = std::isnan(error) ? INFINITY : std::max(out.lseError, error);
    }
    out.relative = std::sqrt(errorSquares / referenceSquares);
    const bool ok = out.maxAbs <= kOutputTolerance && out.lseError <= kLseTolerance;
    out.status = ok ? "ok" : "WRONG";
    if (ok) return kernel;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attention: %s: %s\n", way.name, e.what());
    out.status = "FAILED";
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> parsed = Parse(argc, argv);
  if (!parsed) return 2;
  const Options& options = *parsed;
  try {
    sample::Context context({.appName = "attention", .layer = options.layer, .uncachedPipelines = options.compileTimes});
    // Way 4: the layer's portable path, on an instance of its own.
    std::unique_ptr<sample::Context> portable;
    if (options.layer && options.ways[3])
      portable = std::make_unique<sample::Context>(sample::ContextOptions{
          .appName = "attention", .uncachedPipelines = options.compileTimes, .lowering = "portable"});
    const std::string dim = "_d" + std::to_string(options.dim);
    const uint32_t tile = options.tile, warp = context.subgroupSize();
    const bool small = tile == 8;  // the shaders built for lavapipe's 8x8 tiles and 8 lanes
    // 16x16 tiles: one workgroup is one subgroup, built for 16, 32 and 64 lanes.
    const bool warpBuilt = small || warp == 16 || warp == 32 || warp == 64;
    const uint32_t groupBlocks = small ? 1 : options.subgroups;
    const std::string ext = small ? (options.kTranspose ? "attention_ext_kt" : "attention_ext")
                                  : "attention_ext_t16_w" + std::to_string(warp) +
                                        (groupBlocks > 1 ? "_s" + std::to_string(groupBlocks) : "");
    const bool extBuilt = warpBuilt && (small || !options.kTranspose);
    const std::string unbuilt = !warpBuilt ? "no 16x16 build for " + std::to_string(warp) + "-lane subgroups"
                                           : "no 16x16 build with --k-transpose";
    const std::string eightOnly = "8x8 tiles only";
    Way ways[kWays] = {
        {"maintenance1", options.layer ? "EXT shader through VK_LAYER_coopmat_maintenance1" : "EXT shader, native",
         ext + dim, context.maintenance1() && extBuilt,
         !extBuilt ? unbuilt : "VK_EXT_cooperative_matrix_maintenance1 not available", {}, groupBlocks},
        {"KHR+shared", "KHR-only shader, softmax through shared memory", "attention_khr" + dim, small, eightOnly},
        {"NV native", "NV_cooperative_matrix2 shader, the driver's own ops", "attention_nv" + dim,
         small && context.nvCoopmat2(), small ? "VK_NV_cooperative_matrix2 not available" : eightOnly},
        {"portable", "EXT shader through the layer with lowering=portable", ext + dim,
         extBuilt && portable && portable->maintenance1(),
         !extBuilt ? unbuilt : options.layer ? "the layer does not serve this driver" : "needs the layer", {}, groupBlocks},
        {"spec tiles", "way 1's kernel with specialization-constant tiles (TM, TN, TK) and subgroup size (WARP)",
         "attention_ext_spec" + dim, context.maintenance1(), "VK_EXT_cooperative_matrix_maintenance1 not available",
         {{3, tile}, {4, tile}, {5, tile}, {6, warp}}},
    };

    std::printf("device: %s (%s)\n", context.deviceName().c_str(), context.driverInfo().c_str());
    std::printf("attention: batch %u, heads %u, seq %u, head dim %u, %s, f16 Q/K/V, f32 O; %ux%u tiles, one subgroup "
                "of %u lanes per %u query rows, %u subgroups per workgroup in ways 1 and 4\n",
                options.batch, options.heads, options.seq, options.dim, options.causal ? "causal" : "not causal", tile,
                tile, small ? 8 : warp, tile, groupBlocks);
    // The environment overrides the lowering way 4 asks for (as opbench says too).
    if (const char* env = std::getenv("VK_COOPMAT_MAINTENANCE1_LOWERING"); env && options.layer)
      std::printf("note: VK_COOPMAT_MAINTENANCE1_LOWERING=%s applies to ways 1 and 4 alike\n", env);
    std::printf("tolerance: max |O - ref| <= %.0e, max |lse - ref| <= %.0e (reference in double from the same f16 "
                "inputs)\n\n",
                kOutputTolerance, kLseTolerance);

    const Problem problem = MakeProblem(options);
    Buffers buffers(context, problem);
    std::unique_ptr<Buffers> portableBuffers = portable ? std::make_unique<Buffers>(*portable, problem) : nullptr;
    Outcome outcomes[kWays];
    std::unique_ptr<sample::Kernel> kernels[kWays];
    bool failed = false;
    for (int w = 0; w < kWays; ++w) {
      if (!options.ways[w]) {
        outcomes[w].status = "not run";
      } else if (!ways[w].available) {
        outcomes[w].status = "n/a: " + ways[w].why;
        failed |= options.waysGiven;  // asked for by name: not running it is a failure
      } else {
        kernels[w] = w == 3 ? Prepare(*portable, problem, *portableBuffers, ways[w], outcomes[w])
                            : Prepare(context, problem, buffers, ways[w], outcomes[w]);
        failed |= !kernels[w];
      }
    }
    // Time the correct ways in turn, so that a change in the machine's load hits them alike.
    if (!options.checkOnly) {
      std::vector<double> times[kWays];
      for (int run = -2; run < options.runs; ++run) {  // two warm-up rounds
        for (int w = 0; w < kWays; ++w) {
          if (!kernels[w]) continue;
          const double us = kernels[w]->Run();
          if (run >= 0) times[w].push_back(us);
        }
      }
      for (int w = 0; w < kWays; ++w) {
        if (!kernels[w]) continue;
        outcomes[w].medianUs = sample::Median(times[w]);
        outcomes[w].minUs = *std::min_element(times[w].begin(), times[w].end());
        // lavapipe compiles to machine code at the first dispatch: count that as compilation.
        outcomes[w].compileUs = kernels[w]->pipelineMicroseconds() +
                                std::max(0.0, kernels[w]->firstRunMicroseconds() - outcomes[w].medianUs);
      }
    }

    std::printf("%-2s %-13s %-6s %10s %10s %10s", "", "way", "check", "max|err|", "rel err", "lse err");
    if (!options.checkOnly) std::printf(" %11s %9s %8s", "median ms", "vs way 1", "min ms");
    std::printf(" %9s", "module ms");
    if (options.compileTimes) std::printf(" %10s", "compile ms");
    std::printf("  %s\n", "what");
    for (int w = 0; w < kWays; ++w) {
      const Outcome& o = outcomes[w];
      std::printf("%d. %-13s ", w + 1, ways[w].name);
      if (o.status != "ok" && o.status != "WRONG") {
        std::printf("%s\n", o.status.c_str());
        continue;
      }
      std::printf("%-6s %10.2e %10.2e %10.2e", o.status.c_str(), o.maxAbs, o.relative, o.lseError);
      if (!options.checkOnly) {
        if (o.medianUs > 0) std::printf(" %11.3f", o.medianUs / 1000);
        else std::printf(" %11s", "-");
        if (o.medianUs > 0 && outcomes[0].medianUs > 0) std::printf(" %8.2fx", o.medianUs / outcomes[0].medianUs);
        else std::printf(" %9s", "-");
        if (o.minUs > 0) std::printf(" %8.3f", o.minUs / 1000);
        else std::printf(" %8s", "-");
      }
      std::printf(" %9.2f", o.moduleUs / 1000);
      if (options.compileTimes) std::printf(" %10.1f", o.compileUs / 1000);
      std::printf("  %s\n", ways[w].description);
    }
    if (!options.checkOnly)
      std::printf("\nmedian of %d dispatches per way, the ways taking turns (host clock around submit + wait); \"vs way 1\" = time / time of way 1\n"
                  "module ms = vkCreateShaderModule (the layer rewrites the module here)\n",
                  options.runs);
    if (options.compileTimes)
      std::printf("compile ms = vkCreateComputePipelines + the first dispatch's extra time (lavapipe JIT-compiles at "
                  "first use), with Mesa's shader cache off\n");
    std::printf("%s\n", failed ? "RESULT: FAILED" : "RESULT: ok");
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attention: %s\n", e.what());
    return 1;
  }
}
