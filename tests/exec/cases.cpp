#include "cases.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <sstream>

#include "ieee_float.h"

namespace exec {

namespace {

std::string DimsName(uint32_t r, uint32_t c) { return std::to_string(r) + "x" + std::to_string(c); }

// Seeds differ per matrix, so every subgroup gets its own data.
std::vector<Matrix> RandomMatrices(size_t count, T t, uint32_t rows, uint32_t cols, uint32_t seed, double lo,
                                   double hi, double step = 1.0) {
  std::vector<Matrix> out;
  for (size_t i = 0; i < count; ++i)
    out.push_back(RandomMatrix(t, rows, cols, seed + 101 * static_cast<uint32_t>(i), lo, hi, step));
  return out;
}

// The widest range of values of t that the tests use for "any value" data.
struct Range {
  double lo, hi, step;
};
Range FullRange(T t) {
  switch (t) {
    case T::F16: return {-1000, 1000, 0.125};
    case T::F32: return {-1e6, 1e6, 1.0 / 64};
    case T::U8: return {0, 255, 1};
    case T::S8: return {-128, 127, 1};
    case T::U32: return {0, 4294967295.0, 1};
    case T::S32: return {-2147483648.0, 2147483647.0, 1};
    case T::BF16: return {-1000, 1000, 0.125};
    case T::E4M3: return {-448, 448, 0.125};
    case T::E5M2: return {-1000, 1000, 0.125};
  }
  return {0, 1, 1};
}

// Spec constants 1 and 2: the dimensions of a shader built with SPEC_DIMS (common.glsl).
void SpecializeDims(cmtest::ComputeJob& job, bool specDims, uint32_t rows, uint32_t cols) {
  if (!specDims) return;
  job.specialization.push_back({1, rows});
  job.specialization.push_back({2, cols});
}

// Collects per-matrix mismatch text.
void Note(std::ostringstream& s, size_t matrix, const std::string& what) {
  if (!what.empty()) s << " [matrix " << matrix << "] " << what;
}

}  // namespace

// ---------------------------------------------------------------------------
std::string GetCoordCase::Name() const {
  std::string name = std::string("getcoord_") + exec::Name(use) + "_" + exec::Name(type) + "_" +
                     (specDims ? std::string("spec") : DimsName(rows, cols));
  if (!suffix.empty()) name += "_" + suffix;
  return name;
}

std::string Run(const Env& env, const GetCoordCase& c, const std::string& targetEnv, const Grid& grid) {
  const size_t n = grid.matrices(), elems = size_t(c.rows) * c.cols;
  const Range range = FullRange(c.type);
  const std::vector<Matrix> in = RandomMatrices(n, c.type, c.rows, c.cols, 7, range.lo, range.hi, range.step);
  std::vector<uint32_t> bounds(2 * n * elems, 0xffffffffu);  // the least bits written, then the greatest
  std::fill(bounds.begin() + static_cast<ptrdiff_t>(n * elems), bounds.end(), 0u);
  std::vector<Bytes> buffers = {Pack(in, c.columnMajor), cmtest::ToBytes(bounds),
                                cmtest::ToBytes(std::vector<uint32_t>(n * elems, 0)),
                                cmtest::ToBytes(std::vector<uint32_t>{0, 0, static_cast<uint32_t>(n * elems)})};
  cmtest::ComputeJob job;
  job.spirv = LoadShader(c.Name(), targetEnv);
  job.specialization.push_back({3, c.columnMajor ? 1u : 0u});
  SpecializeDims(job, c.specDims, c.rows, c.cols);
  if (std::string e = Dispatch(env, job, grid, buffers); !e.empty()) return e;

  const std::vector<uint32_t> bits = cmtest::FromBytes<uint32_t>(buffers[1]);
  const std::vector<uint32_t> count = cmtest::FromBytes<uint32_t>(buffers[2]);
  const std::vector<uint32_t> errors = cmtest::FromBytes<uint32_t>(buffers[3]);
  // Every element once per invocation that holds it; where the device's layout is unknown
  // (Replicas 0: the self-test on a type the layer has no layout line for), as often as
  // element (0, 0).
  uint32_t replicas = env.Replicas(c.use, c.type, c.rows, c.cols);
  if (replicas == 0) replicas = std::max(count[0], 1u);
  std::ostringstream s;
  if (errors[0]) s << " " << errors[0] << " coordinates out of range;";
  if (errors[1]) s << " " << errors[1] << " application shared-memory words damaged;";
  for (size_t k = 0; k < n; ++k) {
    size_t wrongCount = 0, wrongValue = 0;
    std::ostringstream first;
    for (uint32_t r = 0; r < c.rows; ++r)
      for (uint32_t col = 0; col < c.cols; ++col) {
        const size_t i = k * elems + size_t(r) * c.cols + col;
        const uint32_t least = bits[i], greatest = bits[n * elems + i], want = Bits(c.type, in[k].at(r, col));
        if (count[i] != replicas) {
          if (wrongCount++ == 0) first << " (" << r << "," << col << ") written " << count[i] << " times;";
        } else if (least != want || greatest != want) {
          if (wrongValue++ == 0)
            first << " (" << r << "," << col << ") written from 0x" << std::hex << least << " to 0x" << greatest
                  << " want 0x" << want << std::dec << ";";
        }
      }
    if (wrongCount || wrongValue)
      Note(s, k, std::to_string(wrongCount) + " elements not written exactly " + std::to_string(replicas) + " times, " +
                     std::to_string(wrongValue) +
                     " with the wrong value:" + first.str());
  }
  return s.str();
}

// ---------------------------------------------------------------------------
const char* Name(ElemOp op) {
  switch (op) {
    case ElemOp::Scalar: return "scalar";
    case ElemOp::Mat: return "mat";
    case ElemOp::RowCol: return "rowcol";
    case ElemOp::Struct: return "struct";
    case ElemOp::Multi: return "multi";
    case ElemOp::Globals: return "globals";
    case ElemOp::SideEffects: return "side";
  }
  return "?";
}

namespace {
// What perelem.comp's OP 6 element function stores besides its result, in the parts that
// do not depend on the order of its calls: per element (r, c) of matrix m, the shared
// word Bits(x) ^ 0xA5A5A5A5 and the buffer word Bits(x) * 3 + r * 7 + c; per matrix, one
// call per element and invocation that holds it. "" when all match.
std::string SideEffectsMismatch(const std::vector<Matrix>& x, const std::vector<uint32_t>& shared,
                                const std::vector<uint32_t>& stores, const std::vector<uint32_t>& calls,
                                uint32_t replicas) {
  std::ostringstream s;
  for (size_t m = 0; m < x.size(); ++m) {
    const Matrix& xm = x[m];
    const size_t elems = size_t(xm.rows) * xm.cols;
    size_t badShared = 0, badStores = 0;
    std::ostringstream first;
    for (uint32_t r = 0; r < xm.rows; ++r)
      for (uint32_t col = 0; col < xm.cols; ++col) {
        const size_t i = m * elems + size_t(r) * xm.cols + col;
        const uint32_t bits = Bits(xm.type, xm.at(r, col));
        if (shared[i] != (bits ^ 0xA5A5A5A5u) && badShared++ == 0)
          first << " shared (" << r << "," << col << ") 0x" << std::hex << shared[i] << " want 0x" << (bits ^ 0xA5A5A5A5u)
                << std::dec << ";";
        if (stores[i] != bits * 3u + r * 7u + col && badStores++ == 0)
          first << " stored (" << r << "," << col << ") " << stores[i] << " want " << bits * 3u + r * 7u + col << ";";
      }
    if (calls[m] != elems * replicas)
      first << " element function called " << calls[m] << " times, want " << elems * replicas << ";";
    if (badShared || badStores || calls[m] != elems * replicas)
      Note(s, m, std::to_string(badShared) + " shared-memory and " + std::to_string(badStores) +
                     " buffer side effects wrong:" + first.str());
  }
  return s.str();
}
}  // namespace

std::string PerElemCase::Name() const {
  return std::string(nv ? "perelem_nv_" : "perelem_") + exec::Name(op) + "_" + exec::Name(use) + "_" + exec::Name(type) + "_" +
         (specDims ? std::string("spec") : DimsName(rows, cols));
}


std::string Run(const Env& env, const PerElemCase& c, const std::string& targetEnv, const Grid& grid) {
  const size_t n = grid.matrices();
  // Floats: exact small values, so any evaluation order or fusion gives the same bits.
  const Range range = IsFloat(c.type) ? Range{-8, 8, 0.5} : FullRange(c.type);
  const std::vector<Matrix> x = RandomMatrices(n, c.type, c.rows, c.cols, 11, range.lo, range.hi, range.step);
  const std::vector<Matrix> y = RandomMatrices(n, c.type, c.rows, c.cols, 13, range.lo, range.hi, range.step);
  const uint32_t k = 3, add = 5;  // push constants
  std::vector<Bytes> buffers = {Pack(x), Pack(y), Bytes(Pack(x).size())};
  const size_t elems = size_t(c.rows) * c.cols;
  if (c.op == ElemOp::SideEffects)  // the shared-memory copy, the stores, the call counts
    for (size_t words : {n * elems, n * elems, n}) buffers.push_back(cmtest::ToBytes(std::vector<uint32_t>(words, 0)));
  cmtest::ComputeJob job;
  job.spirv = LoadShader(c.Name(), targetEnv);
  SpecializeDims(job, c.specDims, c.rows, c.cols);
  job.pushConstants = cmtest::ToBytes(std::vector<uint32_t>{k, add});
  if (std::string e = Dispatch(env, job, grid, buffers); !e.empty()) return e;

  const std::vector<Matrix> got = Unpack(buffers[2], c.type, c.rows, c.cols, n);
  std::ostringstream s;
  const T t = c.type;
  // bfloat16 and fp8 functions compute in float (exact for these data) and round once at
  // the end; the others round each product into their type.
  auto times = [&](double v, double factor) { return EncodedFormat(t) ? v * factor : Wrap(t, v * factor); };
  for (size_t m = 0; m < n; ++m) {
    const Matrix& ym = y[m];
    Matrix want;
    switch (c.op) {
      case ElemOp::Scalar:  // x + ET(2)
        want = PerElement(x[m], [&](uint32_t, uint32_t, double v) { return v + 2; });
        break;
      case ElemOp::Mat:      // x - y
      case ElemOp::Globals:  // x - Y[...] read by the function itself
        want = PerElement(x[m], [&](uint32_t r, uint32_t col, double v) { return v - ym.at(r, col); });
        break;
      case ElemOp::RowCol:  // x + ET(row * 3 + col)
        want = PerElement(x[m], [&](uint32_t r, uint32_t col, double v) { return v + Wrap(t, r * 3.0 + col); });
        break;
      case ElemOp::Struct:  // x * ET(k) + ET(add)
        want = PerElement(x[m], [&](uint32_t, uint32_t, double v) { return times(v, k) + add; });
        break;
      case ElemOp::Multi:  // x * ET(k) + y
        want = PerElement(x[m], [&](uint32_t r, uint32_t col, double v) { return times(v, k) + ym.at(r, col); });
        break;
      case ElemOp::SideEffects:  // x + ET(c)
        want = PerElement(x[m], [&](uint32_t, uint32_t col, double v) { return v + Wrap(t, col); });
        break;
    }
    Note(s, m, m < got.size() ? Compare(got[m], want) : "no output");
  }
  if (c.op == ElemOp::SideEffects)
    s << SideEffectsMismatch(x, cmtest::FromBytes<uint32_t>(buffers[3]), cmtest::FromBytes<uint32_t>(buffers[4]),
                             cmtest::FromBytes<uint32_t>(buffers[5]), env.Replicas(c.use, c.type, c.rows, c.cols));
  return s.str();
}

// ---------------------------------------------------------------------------
std::string ReduceCase::Name() const {
  std::string name = std::string("reduce_") + MaskName(mask) + "_" + exec::Name(type) + "_" +
                     (specDims ? std::string("spec") : DimsName(rows, cols) + "_" + DimsName(resultRows, resultCols));
  if (!suffix.empty()) name += "_" + suffix;
  return name;
}

std::string Run(const Env& env, const ReduceCase& c, const std::string& targetEnv, const Grid& grid) {
  const size_t n = grid.matrices();
  // Sums stay exact in every order: f16 holds integers up to 2048 exactly and a
  // 16x16 whole-matrix sum of |x| <= 4 stays below 1024. 32-bit integers wrap,
  // which is associative, so they get the full range (that also exercises
  // unsigned compares for min/max).
  Range range = FullRange(c.type);
  if (c.type == T::F16) range = {-4, 4, 1};
  if (c.type == T::F32) range = {-64, 64, 0.5};
  const std::vector<Matrix> in = RandomMatrices(n, c.type, c.rows, c.cols, 17, range.lo, range.hi, range.step);
  std::vector<Bytes> buffers = {Pack(in), Bytes(n * c.resultRows * c.resultCols * Size(c.type)),
                                cmtest::ToBytes(std::vector<uint32_t>(2, 0))};
  cmtest::ComputeJob job;
  job.spirv = LoadShader(c.Name(), targetEnv);
  job.specialization.push_back({4, static_cast<uint32_t>(c.combine)});
  SpecializeDims(job, c.specDims, c.rows, c.cols);
  if (std::string e = Dispatch(env, job, grid, buffers); !e.empty()) return e;

  const std::vector<Matrix> got = Unpack(buffers[1], c.type, c.resultRows, c.resultCols, n);
  const std::vector<uint32_t> errors = cmtest::FromBytes<uint32_t>(buffers[2]);
  std::ostringstream s;
  if (errors[1]) s << " " << errors[1] << " application shared-memory words damaged;";
  for (size_t m = 0; m < n; ++m)
    Note(s, m,
         m < got.size() ? Compare(got[m], Reduce(in[m], c.mask, c.combine, c.resultRows, c.resultCols)) : "no output");
  return s.str();
}

// ---------------------------------------------------------------------------
std::string ConvertCase::Name() const {
  std::string name = std::string("convert_") + exec::Name(use) + "_" + exec::Name(type) + "_" +
                     (specDims ? std::string("spec") : DimsName(rows, cols)) + "_to_" + exec::Name(use2) + "_" +
                     exec::Name(type2);
  if (viaAcc) name += "_viaacc";
  if (transpose) name += "_t";
  if (saturate) name += "_sat";
  if (nearLimit) return name + "_nearlimit";
  return appShared ? name + "_shared" : name;
}

namespace {
// Source data that converts without undefined behaviour (float -> int in range)
// and, for float -> float and int -> float, exactly (so the rounding mode does
// not matter). Integer -> integer uses the whole source range: truncation and
// sign/zero extension are defined.
Range ConvertRange(T from, T to) {
  if (IsFloat(from) && !IsFloat(to)) {
    switch (to) {
      case T::U8: return {0, 200, 0.25};
      case T::S8: return {-100, 100, 0.25};
      case T::U32: return {0, 1000, 0.25};
      default: return {-1000, 1000, 0.25};
    }
  }
  if (IsFloat(from) && IsFloat(to)) return {-500, 500, 0.25};  // 11 significant bits: exact in f16
  if (to == T::F16) return from == T::U32 || from == T::U8 ? Range{0, 2048, 1} : Range{-2048, 2048, 1};
  return FullRange(from);
}

std::mt19937 Generator(uint32_t seed, size_t matrix) { return std::mt19937(seed * 2654435761u + 101 * static_cast<uint32_t>(matrix)); }

// Every bit pattern of a bfloat16 or fp8 type equally likely: zeros, subnormals,
// normals, infinities and NaNs.
std::vector<Matrix> EncodedMatrices(size_t count, T t, uint32_t rows, uint32_t cols, uint32_t seed) {
  std::vector<Matrix> out;
  for (size_t i = 0; i < count; ++i) {
    std::mt19937 rng = Generator(seed, i);
    Matrix m(t, rows, cols);
    for (double& x : m.v) {
      const uint32_t bits = rng();
      std::byte raw[2];
      std::memcpy(raw, &bits, 2);
      x = Load(t, raw);
    }
    out.push_back(std::move(m));
  }
  return out;
}

// binary32 values that the conversion into the bfloat16 or fp8 type `to` rounds every
// way: exponents from below its subnormals to past its largest finite value (binary32's
// own subnormals for bfloat16), significands that are exact in `to`, exactly halfway
// between two of its values (ties to even) or anything; the first elements are the
// special cases (zeros, infinities, a NaN, the largest finite value, the overflow tie).
std::vector<Matrix> RoundingMatrices(size_t count, T to, uint32_t rows, uint32_t cols, uint32_t seed) {
  const coopmat::IeeeFormat& format = *EncodedFormat(to);
  const int bias = (1 << (format.exponentBits - 1)) - 1;
  const int lowest = std::max(1 - bias - static_cast<int>(format.mantissaBits) - 2, -149);
  const int highest = std::min(bias + 2, 127);
  const uint32_t dropped = 23 - format.mantissaBits;  // binary32 significand bits `to` lacks
  // The largest finite value (E4M3's all-ones exponent holds normals; only S.1111.111 is NaN), in binary32.
  const uint64_t largestEncoded = format.finiteOnly ? (uint64_t{1} << (format.Width() - 1)) - 2
                                                    : (((uint64_t{1} << format.exponentBits) - 1) << format.mantissaBits) - 1;
  const uint32_t largest = static_cast<uint32_t>(
      coopmat::ConvertFloat(largestEncoded, format, coopmat::kBinary32, coopmat::FloatRounding::NearestEven).bits);
  const uint32_t tie = largest + (1u << (dropped - 1));  // halfway to the next, which is past the range
  auto value = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return static_cast<double>(f);
  };
  std::vector<Matrix> out;
  for (size_t i = 0; i < count; ++i) {
    std::mt19937 rng = Generator(seed, i);
    Matrix m(T::F32, rows, cols);
    const std::vector<uint32_t> special = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                           largest,     tie,         tie | 0x80000000u, tie + 1,  (tie + 1) | 0x80000000u};
    for (size_t k = 0; k < m.v.size(); ++k) {
      if (k < special.size()) {
        m.v[k] = value(special[k]);
        continue;
      }
      const int exponent = lowest + static_cast<int>(rng() % static_cast<uint32_t>(highest - lowest + 1));
      uint32_t significand = rng() & 0x7fffffu;
      switch (rng() % 3) {
        case 0: significand &= ~((1u << dropped) - 1); break;                            // exact in `to` (if normal there)
        case 1: significand = (significand & ~((1u << dropped) - 1)) | (1u << (dropped - 1)); break;  // a tie
        default: break;
      }
      const uint32_t sign = (rng() & 1) << 31;
      const uint32_t bits = exponent < -126 ? sign | ((0x800000u | significand) >> (-126 - exponent))  // binary32 subnormal
                                            : sign | (static_cast<uint32_t>(exponent + 127) << 23) | significand;
      m.v[k] = value(bits);
    }
    out.push_back(std::move(m));
  }
  return out;
}
}  // namespace

std::string Run(const Env& env, const ConvertCase& c, const std::string& targetEnv, const Grid& grid) {
  const size_t n = grid.matrices();
  const Range range = ConvertRange(c.type, c.type2);
  const std::vector<Matrix> in =
      EncodedFormat(c.type)                         ? EncodedMatrices(n, c.type, c.rows, c.cols, 23)
      : EncodedFormat(c.type2) && c.type == T::F32  ? RoundingMatrices(n, c.type2, c.rows, c.cols, 23)
                                                    : RandomMatrices(n, c.type, c.rows, c.cols, 23, range.lo, range.hi, range.step);
  std::vector<Bytes> buffers = {Pack(in), Bytes(n * c.rows * c.cols * Size(c.type2)),
                                cmtest::ToBytes(std::vector<uint32_t>(2, 0))};
  cmtest::ComputeJob job;
  job.path = c.path;
  job.spirv = LoadShader(c.Name(), targetEnv);
  SpecializeDims(job, c.specDims, c.rows, c.cols);
  if (std::string e = Dispatch(env, job, grid, buffers); !e.empty()) return e;

  const uint32_t outRows = c.transpose ? c.cols : c.rows, outCols = c.transpose ? c.rows : c.cols;
  const std::vector<Matrix> got = Unpack(buffers[1], c.type2, outRows, outCols, n);
  const std::vector<uint32_t> errors = cmtest::FromBytes<uint32_t>(buffers[2]);
  std::ostringstream s;
  if (errors[1]) s << " " << errors[1] << " application shared-memory words damaged;";
  for (size_t m = 0; m < n; ++m)
    Note(s, m, m < got.size() ? Compare(got[m], Convert(in[m], c.type2, c.transpose, c.saturate)) : "no output");
  return s.str();
}

// ---------------------------------------------------------------------------
std::string MulAddCase::Name() const {
  return "muladd_" + mode + "_" + exec::Name(a) + "_" + exec::Name(c) + "_" + std::to_string(m) + "x" +
         std::to_string(n) + "x" + std::to_string(k);
}

std::string Run(const Env& env, const MulAddCase& c, const std::string& targetEnv, const Grid& grid) {
  const size_t count = grid.matrices();
  // Small values: every product and sum is exact in the accumulator type.
  const Range ab = IsFloat(c.a) ? Range{-2, 2, 0.5} : (c.a == T::U8 ? Range{0, 15, 1} : Range{-8, 8, 1});
  const Range cr = IsFloat(c.c) ? Range{-16, 16, 0.5} : (c.c == T::U32 ? Range{0, 1000, 1} : Range{-1000, 1000, 1});
  // The A source: the A matrix itself (khr) or an accumulator-typed matrix that
  // converts into it; for s32 -> s8 the values go beyond s8 to check the wrap.
  const bool fromAcc = c.mode != "khr";
  const T srcType = fromAcc ? c.c : c.a;
  const Range srcRange = fromAcc && !IsFloat(c.c) ? Range{-300, 300, 1} : ab;
  const uint32_t srcRows = c.mode == "transposed" ? c.k : c.m, srcCols = c.mode == "transposed" ? c.m : c.k;
  const std::vector<Matrix> src = RandomMatrices(count, srcType, srcRows, srcCols, 31, srcRange.lo, srcRange.hi,
                                                 srcRange.step);
  const std::vector<Matrix> b = RandomMatrices(count, c.a, c.k, c.n, 37, ab.lo, ab.hi, ab.step);
  const std::vector<Matrix> acc = RandomMatrices(count, c.c, c.m, c.n, 41, cr.lo, cr.hi, cr.step);
  std::vector<Bytes> buffers = {Pack(src), Pack(b), Pack(acc), Bytes(count * c.m * c.n * Size(c.c))};
  cmtest::ComputeJob job;
  job.spirv = LoadShader(c.Name(), targetEnv);
  if (std::string e = Dispatch(env, job, grid, buffers); !e.empty()) return e;

  const std::vector<Matrix> got = Unpack(buffers[3], c.c, c.m, c.n, count);
  std::ostringstream s;
  for (size_t i = 0; i < count; ++i) {
    const Matrix a = c.mode == "khr" ? src[i] : Convert(src[i], c.a, c.mode == "transposed");
    Note(s, i, i < got.size() ? Compare(got[i], MulAdd(a, b[i], acc[i])) : "no output");
  }
  return s.str();
}

// ---------------------------------------------------------------------------
namespace {
std::string ShapeClass(const Env& env, Use use, T t, uint32_t rows, uint32_t cols, bool specDims = false) {
  if (specDims) return "spec";
  const std::optional<Dims> tile = env.Shape(use, t);
  return tile && tile->rows == rows && tile->cols == cols ? "tile" : "flex";
}
}  // namespace

std::string Cell(const Env& env, const GetCoordCase& c) {
  return std::string("getcoord ") + Name(c.use) + " " + Name(c.type) + " " +
         ShapeClass(env, c.use, c.type, c.rows, c.cols, c.specDims) + (c.columnMajor ? " colmajor" : "") +
         (c.suffix.empty() ? "" : " " + c.suffix);
}

std::string Cell(const Env& env, const PerElemCase& c) {
  return std::string(c.nv ? "perelem_nv " : "perelem ") + Name(c.op) + " " + Name(c.use) + " " + Name(c.type) + " " +
         ShapeClass(env, c.use, c.type, c.rows, c.cols);
}

std::string Cell(const Env& env, const ReduceCase& c) {
  // A result of other dimensions than the mask implies (changedim) is a class of its own.
  const bool resized = c.mask == k2x2 ? c.resultRows * 2 != c.rows || c.resultCols * 2 != c.cols
                                      : c.resultRows != c.rows || c.resultCols != c.cols;
  return std::string("reduce ") + MaskName(c.mask) + " " + Name(c.combine) + " acc " + Name(c.type) + " " +
         ShapeClass(env, Use::Acc, c.type, c.rows, c.cols, c.specDims) + (resized ? " resized" : "") +
         (c.suffix.empty() ? "" : " " + c.suffix);
}

std::string Cell(const Env& env, const ConvertCase& c) {
  std::string cell = std::string("convert ") + Name(c.use) + " " + Name(c.type) + " to " + Name(c.use2) + " " +
                     Name(c.type2) + " " + ShapeClass(env, c.use, c.type, c.rows, c.cols);
  if (c.transpose) cell += " transposed";
  if (c.viaAcc) cell += " viaacc";
  if (c.saturate) cell += " sat";
  if (c.appShared) cell += " shared";
  if (c.nearLimit) cell += " nearlimit";
  if (c.path == cmtest::ShaderPath::InlineStage) cell += " inline";
  if (c.path == cmtest::ShaderPath::ShaderObject) cell += " shaderobject";
  return cell;
}

std::string Cell(const Env& env, const MulAddCase& c) {
  const auto tile = env.MulAddShape(c.a, c.c);
  const bool listed = tile && (*tile)[0] == c.m && (*tile)[1] == c.n && (*tile)[2] == c.k;
  return "muladd " + c.mode + " " + Name(c.a) + " " + Name(c.c) + (listed ? " tile" : " flex");
}

}  // namespace exec
