// The virtual device checks itself: KHR-only modules (load/store, element access and
// arithmetic, conversions, MulAdd) and the emulated subgroup operations, run through
// VK_LAYER_COOPMAT_TEST_virtual_device under the profile named by
// COOPMAT_VIRTUAL_PROFILE, against CPU references (tests/exec/reference.h) at every
// subgroup size and matrix configuration the profile lists. Under the lavapipe
// profile every output must also be bit-identical to lavapipe's own. Every dispatch
// must have been rewritten by the layer (its COOPMAT_VIRTUAL_LOG line), so a run
// that emulates nothing fails.
#include <catch2/catch_test_macros.hpp>
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <memory>
#include <string>

#include "compute.h"
#include "exec_util.h"
#include "ieee_float.h"
#include "profile.h"
#include "reference.h"
#include "vk_context.h"

namespace {

using coopmat::virt::Profile;
using exec::Matrix;
using exec::T;

constexpr const char* kVirtualLayer = "VK_LAYER_COOPMAT_TEST_virtual_device";

std::string EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

const Profile& TheProfile() {
  const exec::VirtualDevice& device = exec::TheVirtualDevice();
  INFO("COOPMAT_VIRTUAL_PROFILE: " << device.profile.error);
  REQUIRE(device.on);
  REQUIRE(device.profile.ok);
  return device.profile.profile;
}
bool IsControl() { return TheProfile().name == "lavapipe"; }

struct Stack {
  std::unique_ptr<cmtest::Instance> instance;
  std::unique_ptr<cmtest::Device> device;
};
std::map<bool, Stack>& Stacks() {
  static std::map<bool, Stack> stacks;
  return stacks;
}

// Devices and instances go before the program's exit: destroyed during static
// destruction, the instance crashed the process after every test had passed.
class CloseStacks : public Catch::EventListenerBase {
 public:
  using Catch::EventListenerBase::EventListenerBase;
  void testRunEnded(const Catch::TestRunStats&) override { Stacks().clear(); }
};
CATCH_REGISTER_LISTENER(CloseStacks)

// The virtual device (below no product layer), or lavapipe itself.
const Stack& Open(bool virtualDevice) {
  Stack& s = Stacks()[virtualDevice];
  if (!s.instance) {
    cmtest::InstanceOptions options;
    options.withLayer = false;
    if (virtualDevice) options.layersBelow = {kVirtualLayer};
    s.instance = std::make_unique<cmtest::Instance>(options);
    INFO("vkCreateInstance -> " << s.instance->createResult());
    REQUIRE(s.instance->ok());
    cmtest::DeviceOptions device;
    device.enableMaintenance1 = false;
    s.device = std::make_unique<cmtest::Device>(*s.instance, device);
    INFO("vkCreateDevice -> " << s.device->createResult());
    REQUIRE(s.device->ok());
  }
  return s;
}

// The virtual device's `fault` lines so far (fault_buffer.h).
std::vector<std::string> FaultLines() {
  std::vector<std::string> faults;
  for (const std::string& line : exec::VirtualLog())
    if (line.starts_with("fault")) faults.push_back(line);
  return faults;
}

size_t PipelineLines() {
  const std::vector<std::string> log = exec::VirtualLog();
  return static_cast<size_t>(std::count_if(log.begin(), log.end(), exec::IsRewrittenLine));
}

using exec::TestType;

constexpr uint32_t kSubgroupsPerGroup = 2, kGroups = 2, kMatrices = kSubgroupsPerGroup * kGroups;

// Runs shaders/virtual/<name>.spv with workgroups of two subgroups of `size`: through
// the virtual device (which must log that it rewrote the pipeline) and, under the
// control profile, on lavapipe itself too, whose output must be the same bytes (unless
// the shader's result is undefined: `defined` false).
// A correct program never makes a fault: a new `fault` line fails the run unless the case
// expects faults (`faultsExpected`) and checks them itself.
void Run(const std::string& name, uint32_t size, std::vector<cmtest::Bytes>& buffers,
         const std::vector<cmtest::SpecConstant>& more = {}, bool defined = true, bool faultsExpected = false,
         uint32_t groups = kGroups) {
  INFO("shader " << name << " at subgroup size " << size);
  cmtest::ComputeJob job;
  job.spirv = cmtest::ReadSpirv(EnvOr("COOPMAT_SHADER_DIR", "") + "/virtual/" + name + ".spv");
  REQUIRE_FALSE(job.spirv.empty());
  job.specialization = {{0, kSubgroupsPerGroup * size}};
  job.specialization.insert(job.specialization.end(), more.begin(), more.end());
  job.requiredSubgroupSize = size;
  job.groupCountX = groups;
  std::vector<cmtest::Bytes> native = buffers;
  const size_t before = PipelineLines(), faultsBefore = FaultLines().size();
  const cmtest::ComputeResult r = cmtest::RunCompute(*Open(true).device, job, buffers);
  INFO("virtual device: " << r.Describe());
  REQUIRE(r);
  REQUIRE(PipelineLines() == before + 1);
  if (!faultsExpected) CHECK(FaultLines().size() == faultsBefore);
  if (!IsControl() || !defined) return;
  const cmtest::ComputeResult n = cmtest::RunCompute(*Open(false).device, job, native);
  INFO("lavapipe: " << n.Describe());
  REQUIRE(n);
  for (size_t i = 0; i < buffers.size(); ++i) {
    INFO("buffer " << i << " differs from lavapipe's own result");
    CHECK(buffers[i] == native[i]);
  }
}

// The lowest test value of a type: -magnitude where the type has negative values.
double Low(T t, double magnitude) { return exec::IsFloat(t) || t == T::S8 || t == T::S32 ? -magnitude : 0; }

std::vector<Matrix> Random(T t, uint32_t rows, uint32_t cols, uint32_t seed, double lo, double hi, double step = 1.0) {
  std::vector<Matrix> ms;
  for (uint32_t i = 0; i < kMatrices; ++i) ms.push_back(exec::RandomMatrix(t, rows, cols, seed + i, lo, hi, step));
  return ms;
}

void CheckAll(const std::vector<Matrix>& got, const std::vector<Matrix>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("matrix " << i);
    CHECK(exec::Compare(got[i], want[i]) == "");
  }
}

struct Shape {
  const char* use;
  uint32_t componentType, useValue, rows, cols;
};
// The A, B and C types of every configuration the profile lists, once each.
std::vector<Shape> ProfileShapes() {
  std::vector<Shape> shapes;
  auto add = [&](const char* use, uint32_t type, uint32_t useValue, uint32_t rows, uint32_t cols) {
    for (const Shape& s : shapes)
      if (s.componentType == type && s.useValue == useValue && s.rows == rows && s.cols == cols) return;
    shapes.push_back({use, type, useValue, rows, cols});
  };
  for (const auto& m : TheProfile().matrices) {
    add("a", m.aType, coopmat::kUseA, m.m, m.k);
    add("b", m.bType, coopmat::kUseB, m.k, m.n);
    add("acc", m.cType, coopmat::kUseAccumulator, m.m, m.n);
  }
  return shapes;
}

std::string ShapeName(const Shape& s) {
  return std::string(s.use) + "_" + exec::Name(*TestType(s.componentType)) + "_" + std::to_string(s.rows) + "x" + std::to_string(s.cols);
}

}  // namespace

TEST_CASE("virtual: the device reports the profile", "[selfcheck]") {
  const Profile& p = TheProfile();
  const Stack& s = Open(true);
  VkPhysicalDeviceSubgroupSizeControlProperties sizes{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, &sizes};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, &subgroup};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &driver};
  vkGetPhysicalDeviceProperties2(s.instance->physicalDevice(), &props);
  CHECK(props.properties.vendorID == p.vendorId);
  CHECK(props.properties.deviceID == p.deviceId);
  CHECK(std::string(props.properties.deviceName) == p.deviceName);
  CHECK(props.properties.driverVersion == p.driverVersion);
  CHECK(props.properties.limits.maxComputeSharedMemorySize == p.sharedMemoryBytes);
  CHECK(driver.driverID == static_cast<VkDriverId>(p.driverId));
  CHECK(subgroup.subgroupSize == p.defaultSubgroupSize);
  CHECK(sizes.minSubgroupSize == p.subgroupSizes.front());
  CHECK(sizes.maxSubgroupSize == p.subgroupSizes.back());
  auto get = s.instance->proc<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>("vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
  REQUIRE(get);
  uint32_t count = 0;
  REQUIRE(get(s.instance->physicalDevice(), &count, nullptr) == VK_SUCCESS);
  std::vector<VkCooperativeMatrixPropertiesKHR> list(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
  REQUIRE(get(s.instance->physicalDevice(), &count, list.data()) == VK_SUCCESS);
  REQUIRE(count == p.matrices.size());
  for (uint32_t i = 0; i < count; ++i) {
    CHECK(list[i].MSize == p.matrices[i].m);
    CHECK(list[i].KSize == p.matrices[i].k);
    CHECK(static_cast<uint32_t>(list[i].AType) == p.matrices[i].aType);
    CHECK(static_cast<uint32_t>(list[i].ResultType) == p.matrices[i].resultType);
  }
  // NV coopmat2 only as flexible dimensions, where the profile has them: one flexible
  // configuration per listed one, the largest side the profile's.
  CHECK(cmtest::HasDeviceExtension(*s.instance, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME) == (p.flexibleMaxDimension > 0));
  if (p.flexibleMaxDimension > 0) {
    VkPhysicalDeviceCooperativeMatrix2FeaturesNV nvFeatures{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &nvFeatures};
    vkGetPhysicalDeviceFeatures2(s.instance->physicalDevice(), &features);
    CHECK(nvFeatures.cooperativeMatrixFlexibleDimensions == VK_TRUE);
    CHECK(nvFeatures.cooperativeMatrixReductions == VK_FALSE);  // no NV operation is emulated
    CHECK(nvFeatures.cooperativeMatrixWorkgroupScope == VK_FALSE);
    VkPhysicalDeviceCooperativeMatrix2PropertiesNV nvProps{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &nvProps};
    vkGetPhysicalDeviceProperties2(s.instance->physicalDevice(), &props2);
    CHECK(nvProps.cooperativeMatrixFlexibleDimensionsMaxDimension == p.flexibleMaxDimension);
    auto flexible = s.instance->proc<PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV>(
        "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
    REQUIRE(flexible);
    uint32_t n = 0;
    REQUIRE(flexible(s.instance->physicalDevice(), &n, nullptr) == VK_SUCCESS);
    std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV> granules(
        n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV});
    REQUIRE(flexible(s.instance->physicalDevice(), &n, granules.data()) == VK_SUCCESS);
    REQUIRE(n == p.matrices.size());
    for (uint32_t i = 0; i < n; ++i) {
      CHECK(granules[i].MGranularity == p.matrices[i].m);
      CHECK(granules[i].KGranularity == p.matrices[i].k);
      CHECK(static_cast<uint32_t>(granules[i].CType) == p.matrices[i].cType);
    }
  }
}

TEST_CASE("virtual: each element sits where the profile's layout puts it", "[selfcheck]") {
  for (uint32_t size : TheProfile().subgroupSizes)
    for (const Shape& shape : ProfileShapes()) {
      const T t = *TestType(shape.componentType);
      const auto layout = TheProfile().FindLayout({shape.componentType, shape.useValue, shape.rows, shape.cols, size});
      REQUIRE(layout);
      // Distinct values where the type has room (8-bit types repeat every 256, which
      // still tells rows apart at the shapes the profiles list).
      std::vector<Matrix> in;
      for (uint32_t g = 0; g < kMatrices; ++g) {
        Matrix m(t, shape.rows, shape.cols);
        for (uint32_t r = 0; r < shape.rows; ++r)
          for (uint32_t c = 0; c < shape.cols; ++c) m.at(r, c) = exec::Wrap(t, (r * shape.cols + c + 7 * g) % (t == T::F16 ? 2048 : 256));
        in.push_back(m);
      }
      const uint32_t slots = kMatrices * size * layout->Length();
      std::vector<cmtest::Bytes> buffers = {exec::Pack(in), cmtest::Bytes(slots * exec::Size(t))};
      Run("elements_" + ShapeName(shape), size, buffers);
      for (uint32_t g = 0; g < kMatrices; ++g)
        for (uint32_t lane = 0; lane < size; ++lane)
          for (uint32_t e = 0; e < layout->Length(); ++e) {
            const coopmat::virt::ElementCoord at = layout->At(lane, e);
            const size_t slot = (size_t(g) * size + lane) * layout->Length() + e;
            INFO("matrix " << g << " lane " << lane << " element " << e << " (" << at.row << ", " << at.col << ")");
            CHECK(exec::Load(t, buffers[1].data() + slot * exec::Size(t)) == in[g].at(at.row, at.col));
          }
    }
}

TEST_CASE("virtual: load and store in both memory layouts with padded strides", "[selfcheck]") {
  for (uint32_t size : TheProfile().subgroupSizes)
    for (const Shape& shape : ProfileShapes())
      for (bool rowFirst : {true, false}) {
        const T t = *TestType(shape.componentType);
        const uint32_t R = shape.rows, C = shape.cols;
        // LOAD_row: R x (C + 3) row-major in, column-major out; LOAD_col: (R + 5) x C column-major in, row-major out.
        const std::vector<Matrix> in = rowFirst ? Random(t, R, C + 3, 11, Low(t, 100), 100) : Random(t, R + 5, C, 23, Low(t, 100), 100);
        std::vector<Matrix> want;
        for (const Matrix& m : in) {
          Matrix w(t, R, C);
          for (uint32_t r = 0; r < R; ++r)
            for (uint32_t c = 0; c < C; ++c) w.at(r, c) = m.at(r, c);
          want.push_back(w);
        }
        std::vector<cmtest::Bytes> buffers = {exec::Pack(in, !rowFirst), cmtest::Bytes(exec::Pack(want).size())};
        Run(std::string("loadstore_") + (rowFirst ? "row_" : "col_") + ShapeName(shape), size, buffers);
        std::vector<Matrix> got;
        if (rowFirst) {
          // Column-major out: read it as the transposed matrices.
          for (const Matrix& m : exec::Unpack(buffers[1], t, C, R, kMatrices)) {
            Matrix g(t, R, C);
            for (uint32_t r = 0; r < R; ++r)
              for (uint32_t c = 0; c < C; ++c) g.at(r, c) = m.at(c, r);
            got.push_back(g);
          }
        } else {
          got = exec::Unpack(buffers[1], t, R, C, kMatrices);
        }
        CheckAll(got, want);
      }
}

TEST_CASE("virtual: element access, length and element-wise arithmetic", "[selfcheck]") {
  for (uint32_t size : TheProfile().subgroupSizes)
    for (const Shape& shape : ProfileShapes()) {
      const T t = *TestType(shape.componentType);
      if (exec::EncodedFormat(t)) continue;  // bfloat16 and fp8 matrices have no arithmetic
      const std::vector<Matrix> in = Random(t, shape.rows, shape.cols, 31, exec::IsFloat(t) ? -8 : 0, 8);
      std::vector<Matrix> want;
      for (const Matrix& m : in) {
        Matrix w = m;
        for (double& v : w.v) {
          v = exec::Wrap(t, exec::Wrap(t, v * 2) + 1);
          v = exec::Wrap(t, exec::Wrap(t, v + v) * 3);
          v = exec::Wrap(t, v - 5);
        }
        want.push_back(w);
      }
      const uint32_t invocations = kMatrices * size;
      std::vector<cmtest::Bytes> buffers = {exec::Pack(in), cmtest::Bytes(exec::Pack(in).size()), cmtest::Bytes(invocations * 4)};
      Run("elementwise_" + ShapeName(shape), size, buffers);
      CheckAll(exec::Unpack(buffers[1], t, shape.rows, shape.cols, kMatrices), want);
      const auto layout = TheProfile().FindLayout({shape.componentType, shape.useValue, shape.rows, shape.cols, size});
      REQUIRE(layout);
      for (uint32_t length : cmtest::FromBytes<uint32_t>(buffers[2])) CHECK(length == layout->Length());
    }
}

TEST_CASE("virtual: component-type conversions of accumulators", "[selfcheck]") {
  const std::vector<std::pair<uint32_t, uint32_t>> pairs = {
      {coopmat::kTypeF32, coopmat::kTypeF16}, {coopmat::kTypeF16, coopmat::kTypeF32}, {coopmat::kTypeS32, coopmat::kTypeF32},
      {coopmat::kTypeU32, coopmat::kTypeF32}, {coopmat::kTypeF32, coopmat::kTypeS32}, {coopmat::kTypeS32, coopmat::kTypeU32}};
  size_t ran = 0;
  for (uint32_t size : TheProfile().subgroupSizes)
    for (const Shape& shape : ProfileShapes()) {
      if (shape.useValue != coopmat::kUseAccumulator) continue;
      for (auto [from, to] : pairs) {
        const coopmat::LayoutKey fromKey{from, coopmat::kUseAccumulator, shape.rows, shape.cols, size};
        const coopmat::LayoutKey toKey{to, coopmat::kUseAccumulator, shape.rows, shape.cols, size};
        if (from != shape.componentType || !TheProfile().FindLayout(fromKey) || !TheProfile().FindLayout(toKey)) continue;
        const T a = *TestType(from), b = *TestType(to);
        const std::vector<Matrix> in = Random(a, shape.rows, shape.cols, 41, Low(a, 300), 300,
                                              exec::IsFloat(a) ? 0.25 : 1.0);
        std::vector<Matrix> want;
        for (const Matrix& m : in) want.push_back(exec::Convert(m, b, false));
        std::vector<cmtest::Bytes> buffers = {exec::Pack(in), cmtest::Bytes(exec::Pack(want).size())};
        Run(std::string("convert_") + exec::Name(a) + "_" + exec::Name(b) + "_" + std::to_string(shape.rows) + "x" +
                std::to_string(shape.cols),
            size, buffers);
        CheckAll(exec::Unpack(buffers[1], b, shape.rows, shape.cols, kMatrices), want);
        ++ran;
      }
    }
  // Every profile with two accumulator types converts between them (CDNA3's lists one).
  std::set<uint32_t> accumulators;
  for (const Shape& shape : ProfileShapes())
    if (shape.useValue == coopmat::kUseAccumulator) accumulators.insert(shape.componentType);
  if (accumulators.size() > 1) CHECK(ran > 0);
}

TEST_CASE("virtual: bfloat16 and fp8 A matrices convert from and to f16", "[selfcheck]") {
  size_t ran = 0;
  for (uint32_t size : TheProfile().subgroupSizes)
    for (const Shape& shape : ProfileShapes()) {
      const T t = *TestType(shape.componentType);
      if (!exec::EncodedFormat(t) || shape.useValue != coopmat::kUseA) continue;
      if (!TheProfile().FindLayout({coopmat::kTypeF16, coopmat::kUseA, shape.rows, shape.cols, size})) continue;
      // f16 -> t rounds (and overflows E4M3 past 448); t -> f16 is exact.
      const std::vector<Matrix> halves = Random(T::F16, shape.rows, shape.cols, 43, -500, 500, 1.0 / 64);
      const std::vector<Matrix> encoded = Random(t, shape.rows, shape.cols, 47, -300, 300, 0.25);
      for (bool toEncoded : {true, false}) {
        const std::vector<Matrix>& in = toEncoded ? halves : encoded;
        const T to = toEncoded ? t : T::F16;
        std::vector<Matrix> want;
        for (const Matrix& m : in) want.push_back(exec::Convert(m, to, false));
        std::vector<cmtest::Bytes> buffers = {exec::Pack(in), cmtest::Bytes(exec::Pack(want).size())};
        Run(std::string("convert_a_") + exec::Name(in[0].type) + "_" + exec::Name(to) + "_" + std::to_string(shape.rows) + "x" +
                std::to_string(shape.cols),
            size, buffers);
        // Bits, not values: an E4M3 overflow is a NaN, which compares unequal as a value.
        for (size_t i = 0; i < want.size(); ++i) {
          INFO("matrix " << i << " " << exec::Name(in[0].type) << " -> " << exec::Name(to));
          CHECK(exec::Pack({want[i]}) == cmtest::Bytes(buffers[1].begin() + i * exec::Pack({want[i]}).size(),
                                                       buffers[1].begin() + (i + 1) * exec::Pack({want[i]}).size()));
        }
        ++ran;
      }
    }
  if (TheProfile().ListsComponentType(coopmat::kTypeBF16)) CHECK(ran > 0);
}

namespace {
// binary32 inputs for the scalar conversions into `format`: every value of an 8-bit
// format (a sample of bfloat16's), the midpoints between neighbours (ties), one
// binary32 step either side of them, and the special cases.
std::vector<uint32_t> ConversionInputs(const coopmat::IeeeFormat& format) {
  auto toF32 = [&](uint32_t bits) {
    return static_cast<uint32_t>(coopmat::ConvertFloat(bits, format, coopmat::kBinary32, coopmat::FloatRounding::NearestEven).bits);
  };
  std::vector<uint32_t> in = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc12345u, 0x7f7fffffu,
                              0x00000001u, 0x80400000u, 0x477fe000u, 0x47700000u, 0x43e80000u, 0x43e80001u, 0x43f00000u,
                              0x49742400u, 0x3a800000u, 0x3a000000u, 0x3a400000u, 0x37800000u, 0x33800000u, 0x3f808000u,
                              0x3f818000u, 0x3f808001u, 0x00400000u, 0x007f8000u, 0x00008000u};
  const uint32_t width = format.Width(), step = width == 16 ? 97 : 1;
  for (uint32_t bits = 0; bits + step < (1u << (width - 1)); bits += step) {
    const uint32_t a = toF32(bits), b = toF32(bits + 1);
    float fa, fb;
    std::memcpy(&fa, &a, 4);
    std::memcpy(&fb, &b, 4);
    if (std::isnan(fa) || std::isnan(fb) || std::isinf(fb)) continue;
    const float mid = (fa + fb) / 2;  // exact: both have far fewer significant bits than binary32
    uint32_t m;
    std::memcpy(&m, &mid, 4);
    for (uint32_t v : {a, m, m - 1, m + 1}) {
      in.push_back(v);
      in.push_back(v | 0x80000000u);
    }
  }
  return in;
}
}  // namespace

namespace {
bool IsNan(uint64_t bits, const coopmat::IeeeFormat& format) {
  const uint64_t magnitude = bits & ((uint64_t{1} << (format.Width() - 1)) - 1);
  const uint64_t infinity = ((uint64_t{1} << format.exponentBits) - 1) << format.mantissaBits;
  return format.finiteOnly ? magnitude == (infinity | ((uint64_t{1} << format.mantissaBits) - 1)) : magnitude > infinity;
}
}  // namespace

TEST_CASE("virtual: bfloat16 and fp8 scalar conversions round to nearest even, keep NaN and subnormals", "[selfcheck]") {
  using coopmat::ConvertFloat;
  using coopmat::FloatRounding;
  size_t ran = 0;
  for (T t : {T::BF16, T::E4M3, T::E5M2}) {
    if (!TheProfile().ListsComponentType(exec::VkComponentType(t))) continue;
    const coopmat::IeeeFormat& format = *exec::EncodedFormat(t);
    const std::vector<uint32_t> in = ConversionInputs(format);
    const size_t n = in.size(), es = exec::Size(t);
    std::vector<cmtest::Bytes> buffers = {cmtest::ToBytes(in), cmtest::Bytes(n * es), cmtest::Bytes(n * 4), cmtest::Bytes(n * es),
                                          cmtest::Bytes(n * 2)};
    Run(std::string("convert_scalar_") + exec::Name(t), TheProfile().defaultSubgroupSize, buffers);
    auto read = [&](const cmtest::Bytes& bytes, size_t i, size_t size) {
      uint32_t v = 0;
      std::memcpy(&v, bytes.data() + i * size, size);
      return v;
    };
    for (size_t i = 0; i < n; ++i) {
      const uint64_t encoded = ConvertFloat(in[i], coopmat::kBinary32, format, FloatRounding::NearestEven).bits;
      const uint64_t back = ConvertFloat(encoded, format, coopmat::kBinary32, FloatRounding::NearestEven).bits;
      const uint64_t half = ConvertFloat(in[i], coopmat::kBinary32, coopmat::kBinary16, FloatRounding::NearestEven).bits;
      const uint64_t fromHalf = ConvertFloat(half, coopmat::kBinary16, format, FloatRounding::NearestEven).bits;
      const uint64_t toHalf = ConvertFloat(back, coopmat::kBinary32, coopmat::kBinary16, FloatRounding::NearestEven).bits;
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%08x", in[i]);
      INFO(exec::Name(t) << " input " << hex);
      CHECK(read(buffers[1], i, es) == encoded);
      CHECK(read(buffers[2], i, 4) == back);
      // The shader's own binary32 -> f16 conversion (lavapipe's) makes NaNs canonical: any NaN then.
      if (IsNan(fromHalf, format))
        CHECK(IsNan(read(buffers[3], i, es), format));
      else
        CHECK(read(buffers[3], i, es) == fromHalf);
      // Lavapipe's own binary32 -> f16 conversion makes NaNs canonical (Vulkan keeps no payload there).
      if (IsNan(toHalf, coopmat::kBinary16))
        CHECK(IsNan(read(buffers[4], i, 2), coopmat::kBinary16));
      else
        CHECK(read(buffers[4], i, 2) == toHalf);
    }
    ++ran;
  }
  size_t listed = 0;
  for (T t : {T::BF16, T::E4M3, T::E5M2}) listed += TheProfile().ListsComponentType(exec::VkComponentType(t));
  CHECK(ran == listed);
}

// Saturating configurations are listed (as the drivers list them) but not emulated: the
// rewrite refuses a saturating MulAdd by name.
TEST_CASE("virtual: MulAdd of every configuration the profile lists", "[selfcheck]") {
  size_t saturating = 0;
  for (uint32_t size : TheProfile().subgroupSizes)
    for (const auto& m : TheProfile().matrices) {
      if (m.saturating) {
        ++saturating;
        continue;
      }
      const T at = *TestType(m.aType), bt = *TestType(m.bType), ct = *TestType(m.cType);
      REQUIRE(m.cType == m.resultType);
      const std::vector<Matrix> a = Random(at, m.m, m.k, 51, Low(at, 4), 4, exec::IsFloat(at) ? 0.5 : 1.0);
      const std::vector<Matrix> b = Random(bt, m.k, m.n, 61, Low(bt, 4), 4, exec::IsFloat(bt) ? 0.5 : 1.0);
      const std::vector<Matrix> c = Random(ct, m.m, m.n, 71, Low(ct, 16), 16);
      std::vector<Matrix> want;
      for (uint32_t i = 0; i < kMatrices; ++i) want.push_back(exec::MulAdd(a[i], b[i], c[i]));
      std::vector<cmtest::Bytes> buffers = {exec::Pack(a), exec::Pack(b), exec::Pack(c), cmtest::Bytes(exec::Pack(c).size())};
      const std::string types = std::string(exec::Name(at)) + "_" + (at == bt ? "" : std::string(exec::Name(bt)) + "_") + exec::Name(ct);
      Run("muladd_" + types + "_" + std::to_string(m.m) + "x" + std::to_string(m.n) + "x" + std::to_string(m.k), size, buffers);
      CheckAll(exec::Unpack(buffers[3], ct, m.m, m.n, kMatrices), want);
    }
  if (saturating) WARN(saturating << " saturating configuration runs left out: the virtual device does not emulate saturation");
}

TEST_CASE("virtual: subgroup built-ins and operations across the virtual subgroup", "[selfcheck]") {
  for (uint32_t size : TheProfile().subgroupSizes) {
    const uint32_t invocations = kMatrices * size;
    std::vector<uint32_t> in(invocations);
    for (uint32_t i = 0; i < invocations; ++i) in[i] = (i * 2654435761u >> 7) % 997u;
    std::vector<cmtest::Bytes> buffers = {cmtest::ToBytes(in), cmtest::Bytes(invocations * 16 * 4)};
    Run("subgroup", size, buffers);
    const std::vector<uint32_t> out = cmtest::FromBytes<uint32_t>(buffers[1]);
    for (uint32_t i = 0; i < invocations; ++i) {
      const uint32_t base = i - i % size, lane = i % size, local = i % (kSubgroupsPerGroup * size);
      auto v = [&](uint32_t l) { return in[base + l]; };
      uint32_t sum = 0, lo = ~0u, hi = 0, inclusive = 0, exclusive = 0, ballot[2] = {0, 0};
      float fsum = 0;
      bool all = true, any = false;
      for (uint32_t l = 0; l < size; ++l) {
        sum += v(l);
        lo = std::min(lo, v(l));
        hi = std::max(hi, v(l));
        fsum += static_cast<float>(v(l) & 255u) * 0.5f;
        if (l <= lane) inclusive += v(l);
        if (l < lane) exclusive += v(l);
        if (v(l) & 1) ballot[l / 32] |= 1u << (l % 32);
        all = all && v(l) < 1000u;
        any = any || v(l) == 7u;
      }
      uint32_t cluster = 0;
      for (uint32_t l = lane & ~3u; l < (lane & ~3u) + 4; ++l) cluster += v(l);
      const uint32_t down = lane + 1 < size ? v(lane + 1) : 0;
      uint32_t fbits;
      std::memcpy(&fbits, &fsum, 4);
      const uint32_t want[16] = {size,
                                 lane | ((local / size) << 8) | (kSubgroupsPerGroup << 16),
                                 v((lane * 5 + 3) % size),
                                 v(lane ^ (5 % size)),
                                 v(3),
                                 ballot[0],
                                 ballot[1],
                                 lane == 0 ? 1u : 0u,
                                 sum,
                                 lo,
                                 hi,
                                 fbits,
                                 inclusive,
                                 exclusive,
                                 static_cast<uint32_t>(std::popcount(ballot[0]) + std::popcount(ballot[1])) | (all ? 0x100u : 0u) |
                                     (any ? 0x200u : 0u),
                                 cluster + down * 65536u};
      for (uint32_t k = 0; k < 16; ++k) {
        INFO("invocation " << i << " word " << k);
        CHECK(out[i * 16 + k] == want[k]);
      }
    }
  }
}

// Review dbb465e, finding 1: chunks of a 32- or 64-lane subgroup that reach different
// operations must not exchange values as if they had met at one. A shuffle in each branch
// of a lane-dependent `if` names lanes of the other branch: undefined, so poison in every
// lane at every size, and a fault wherever the two halves are different chunks. The same
// exchange reached by every lane is defined and faultless.
TEST_CASE("virtual: chunks at different operations are a fault", "[selfcheck][faults]") {
  for (uint32_t size : TheProfile().subgroupSizes) {
    const uint32_t invocations = kMatrices * size;
    std::vector<uint32_t> in(invocations);
    for (uint32_t i = 0; i < invocations; ++i) in[i] = i * 7 + 1;
    const bool chunked = size > TheProfile().LavapipeSubgroupSize();
    {
      std::vector<cmtest::Bytes> buffers = {cmtest::ToBytes(in), cmtest::Bytes(invocations * 4)};
      const size_t faultsBefore = FaultLines().size();
      Run("divergence", size, buffers, {}, false, true);
      for (uint32_t word : cmtest::FromBytes<uint32_t>(buffers[1])) CHECK(word == ~0u);
      const std::vector<std::string> faults = FaultLines();
      INFO("subgroup size " << size << (chunked ? ", chunks of " : ", one lavapipe subgroup of ")
                            << TheProfile().LavapipeSubgroupSize());
      CHECK((faults.size() > faultsBefore) == chunked);
      for (size_t i = faultsBefore; i < faults.size(); ++i) {
        INFO(faults[i]);
        CHECK(faults[i].find("met at different operations at OpGroupNonUniformShuffle") != std::string::npos);
      }
    }
    std::vector<cmtest::Bytes> buffers = {cmtest::ToBytes(in), cmtest::Bytes(invocations * 4)};
    const size_t faultsBefore = FaultLines().size();
    Run("divergence_uniform", size, buffers);
    const std::vector<uint32_t> out = cmtest::FromBytes<uint32_t>(buffers[1]);
    for (uint32_t i = 0; i < invocations; ++i) CHECK(out[i] == in[i ^ (size / 2)]);
    CHECK(FaultLines().size() == faultsBefore);
  }
}

// Review dbb465e, finding 2: copies of an element held by several invocations must agree
// where a matrix is stored (or gathered for MulAdd and relayouts). The invocations below
// `low` zero their copies; an element with copies on both sides must come out as poison,
// with a fault, as the profile's layout (read here by the virtual device's own code)
// predicts; the rest as zero or the input. Every copy zeroed is the control.
TEST_CASE("virtual: replicas that disagree are a fault", "[selfcheck][faults]") {
  size_t mixedRuns = 0;
  for (uint32_t size : TheProfile().subgroupSizes)
    for (const Shape& shape : ProfileShapes()) {
      const T t = *TestType(shape.componentType);
      if (exec::EncodedFormat(t)) continue;  // the shader is built for the arithmetic types
      const auto layout = TheProfile().FindLayout({shape.componentType, shape.useValue, shape.rows, shape.cols, size});
      REQUIRE(layout);
      for (uint32_t low : {size / 2, size}) {
        // Which side of `low` holds each element.
        std::vector<uint8_t> sides(shape.rows * shape.cols, 0);  // bit 0: a copy below, bit 1: one at or above
        for (uint32_t lane = 0; lane < size; ++lane)
          for (uint32_t e = 0; e < layout->Length(); ++e) {
            const coopmat::virt::ElementCoord at = layout->At(lane, e);
            sides[at.row * shape.cols + at.col] |= lane < low ? 1 : 2;
          }
        const bool mixed = std::count(sides.begin(), sides.end(), 3) > 0;
        mixedRuns += mixed;
        // No zero among the values: a zeroed copy of one would agree.
        const std::vector<Matrix> in = Random(t, shape.rows, shape.cols, 53, 1, 8);
        std::vector<cmtest::Bytes> buffers = {exec::Pack(in), cmtest::Bytes(exec::Pack(in).size())};
        const size_t faultsBefore = FaultLines().size();
        Run("replicas_" + ShapeName(shape), size, buffers, {{1, low}}, true, mixed);
        INFO("subgroup size " << size << ", copies below lane " << low << " zeroed, replicas " << layout->Replicas());
        const std::vector<Matrix> got = exec::Unpack(buffers[1], t, shape.rows, shape.cols, kMatrices);
        for (uint32_t g = 0; g < kMatrices; ++g)
          for (uint32_t r = 0; r < shape.rows; ++r)
            for (uint32_t c = 0; c < shape.cols; ++c) {
              INFO("matrix " << g << " (" << r << ", " << c << ")");
              const double value = got[g].at(r, c);
              switch (sides[r * shape.cols + c]) {
                case 1: CHECK(value == 0); break;
                case 2: CHECK(value == in[g].at(r, c)); break;
                default:  // poison: all bits set
                  if (exec::IsFloat(t)) CHECK(std::isnan(value));
                  else CHECK(value == exec::Wrap(t, -1));
              }
            }
        const std::vector<std::string> faults = FaultLines();
        CHECK((faults.size() > faultsBefore) == mixed);
        for (size_t i = faultsBefore; i < faults.size(); ++i) {
          INFO(faults[i]);
          CHECK((faults[i].find("replicas of a matrix element disagree at OpCooperativeMatrixStoreKHR") != std::string::npos ||
                 faults[i].find("more faults past the buffer's") != std::string::npos));
        }
      }
    }
  // GFX11's A and B copies sit in both halves of its subgroups: there the check must have had something to find.
  if (TheProfile().name.starts_with("radv-gfx11")) CHECK(mixedRuns > 0);
}

// Review dbb465e #3: a Workgroup-memory write read by another lane of the subgroup needs a
// barrier between them. The virtual device runs a lavapipe subgroup's lanes in step, so the
// race shows only across chunks: a lane reading a word its partner `x` lanes away wrote
// reads a stale word where the partner's chunk has not run yet (some lane of every subgroup
// of two chunks or more), and the right word with the barrier in place.
TEST_CASE("virtual: a missing subgroup barrier reads stale words across chunks", "[selfcheck][faults]") {
  uint32_t chunked = 0;  // sizes run as chunks of lavapipe subgroups: where the check can see anything
  for (uint32_t size : TheProfile().subgroupSizes) {
    const uint32_t chunk = std::min(size, TheProfile().LavapipeSubgroupSize());
    if (size == chunk) continue;  // one lavapipe subgroup: lanes in step, nothing to see
    ++chunked;
    const uint32_t invocations = kMatrices * size, x = chunk;
    std::vector<uint32_t> in(invocations);
    for (uint32_t i = 0; i < invocations; ++i) in[i] = i * 7 + 1;
    auto want = [&](uint32_t i) { return in[(i & ~(size - 1)) | ((i % size) ^ x)]; };
    INFO("subgroup size " << size << ", chunks of " << chunk << ", partner " << x << " lanes away");
    std::vector<cmtest::Bytes> buffers = {cmtest::ToBytes(in), cmtest::Bytes(invocations * 4)};
    Run("barrier_missing", size, buffers, {{1, x}}, false);
    std::vector<uint32_t> out = cmtest::FromBytes<uint32_t>(buffers[1]);
    uint32_t stale = 0;
    for (uint32_t i = 0; i < invocations; ++i) stale += out[i] != want(i);
    CHECK(stale > 0);
    buffers = {cmtest::ToBytes(in), cmtest::Bytes(invocations * 4)};
    Run("barrier_placed", size, buffers, {{1, x}});
    out = cmtest::FromBytes<uint32_t>(buffers[1]);
    for (uint32_t i = 0; i < invocations; ++i) CHECK(out[i] == want(i));
  }
  if (chunked == 0) SKIP("every subgroup size of this profile is one lavapipe subgroup: no chunks to be out of step");
}

// The chunks' order between meetings is drawn (Profile::chunkOrder), so over many workgroups
// the missing barrier must read stale words on both sides of a pair of partner chunks: the
// first chunk's lanes in some subgroup (it ran first), the second's in another (it did), at
// the entry and after a meeting alike. Lavapipe's own order never puts the second chunk first
// at the entry, nor the first after a meeting (the last to arrive runs on):
// virtual.selfcheck.radv-gfx11-wave32.chunk_order_fixed runs this case so and expects exactly
// those two checks to fail.
TEST_CASE("virtual: a missing subgroup barrier reads stale words in either chunk of a pair", "[selfcheck][faults]") {
  // Per subgroup the second chunk runs first with a chance of a quarter or more (draws below
  // C), and the first likewise, so 128 subgroups all missing one is a chance below 1e-15.
  constexpr uint32_t kManyGroups = 64;
  uint32_t chunked = 0;  // sizes run as chunks of lavapipe subgroups: where the check can see anything
  for (uint32_t size : TheProfile().subgroupSizes) {
    const uint32_t chunk = std::min(size, TheProfile().LavapipeSubgroupSize());
    if (size == chunk) continue;  // one lavapipe subgroup: lanes in step, nothing to see
    ++chunked;
    const uint32_t invocations = kManyGroups * kSubgroupsPerGroup * size, x = chunk;
    std::vector<uint32_t> in(invocations);
    for (uint32_t i = 0; i < invocations; ++i) in[i] = i * 7 + 1;
    auto want = [&](uint32_t i) { return in[(i & ~(size - 1)) | ((i % size) ^ x)]; };
    for (const std::string where : {"", "_after_meeting"}) {
      INFO("barrier_missing" << where << ", subgroup size " << size << ", chunks of " << chunk << ", partner " << x
                             << " lanes away, " << kManyGroups << " workgroups of " << kSubgroupsPerGroup << " subgroups");
      std::vector<cmtest::Bytes> buffers = {cmtest::ToBytes(in), cmtest::Bytes(invocations * 4)};
      Run("barrier_missing" + where, size, buffers, {{1, x}}, false, false, kManyGroups);
      std::vector<uint32_t> out = cmtest::FromBytes<uint32_t>(buffers[1]);
      uint32_t staleFirst = 0, staleSecond = 0;  // stale reads by lanes of a pair's first and second chunk
      for (uint32_t i = 0; i < invocations; ++i)
        if (out[i] != want(i)) ++((i % size) & x ? staleSecond : staleFirst);
      CHECK(staleFirst > 0);
      CHECK(staleSecond > 0);
      buffers = {cmtest::ToBytes(in), cmtest::Bytes(invocations * 4)};
      Run("barrier_placed" + where, size, buffers, {{1, x}}, true, false, kManyGroups);
      out = cmtest::FromBytes<uint32_t>(buffers[1]);
      uint32_t wrong = 0;
      for (uint32_t i = 0; i < invocations; ++i) wrong += out[i] != want(i);
      CHECK(wrong == 0);
    }
  }
  if (chunked == 0) SKIP("every subgroup size of this profile is one lavapipe subgroup: no chunks to be out of step");
}
