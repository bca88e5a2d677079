#include "plan.h"

#include "kernels.h"

#include <algorithm>
#include <optional>

namespace selftest {

using exec::T;
using exec::Use;

namespace {

// The self-test's modules are SPIR-V 1.6 (selftest/CMakeLists.txt); two subgroups in each of
// two workgroups, so matrices of neighbouring subgroups and workgroups differ.
constexpr const char* kTargetEnv = "spirv1.6";
const exec::Grid kGrid{2, 2};

bool IsInteger(T t) { return t == T::U8 || t == T::S8 || t == T::U32 || t == T::S32; }
bool IsArithmetic(T t) { return !exec::EncodedFormat(t); }  // GLSL computes in f16, f32 and integers only

std::string MatrixName(const ListedMatrix& m) {
  return std::string(exec::Name(m.use)) + " " + exec::Name(m.type) + " " + std::to_string(m.rows) + "x" +
         std::to_string(m.cols);
}

std::string UseTitle(Use use) { return use == Use::A ? "A" : use == Use::B ? "B" : "Acc"; }

template <typename Case>
std::function<std::string(const exec::Env&)> Runner(const Case& c) {
  return [c](const exec::Env& env) { return exec::Run(env, c, kTargetEnv, kGrid); };
}

bool Listed(const std::vector<ListedMatrix>& matrices, Use use, T t, uint32_t rows, uint32_t cols) {
  return std::find(matrices.begin(), matrices.end(), ListedMatrix{use, t, rows, cols}) != matrices.end();
}

void PlanGetCoordinate(const ListedMatrix& m, std::vector<PlannedCase>& out) {
  const exec::GetCoordCase c{m.use, m.type, m.rows, m.cols, "", /*specDims=*/true};
  out.push_back({"GetCoordinate", MatrixName(m), c.Name(), "get_coordinate", Runner(c)});
}

void PlanPerElement(const ListedMatrix& m, std::vector<PlannedCase>& out) {
  for (auto [op, title] : {std::pair{exec::ElemOp::RowCol, "PerElementOp (row, col)"},
                           std::pair{exec::ElemOp::Multi, "PerElementOp (2 operands)"}}) {
    exec::PerElemCase c{op, m.use, m.type, m.rows, m.cols};
    c.specDims = true;
    out.push_back({title, MatrixName(m), c.Name(), "per_element_operations", Runner(c)});
  }
}

void PlanReduce(const ListedMatrix& m, const std::vector<ListedMatrix>& matrices, std::vector<PlannedCase>& out) {
  if (m.use != Use::Acc || !IsArithmetic(m.type)) return;
  for (int mask : {exec::kRow, exec::kColumn, exec::kRowColumn, exec::k2x2}) {
    const bool quarter = mask == exec::k2x2;
    const uint32_t rows = quarter ? m.rows / 2 : m.rows, cols = quarter ? m.cols / 2 : m.cols;
    if (quarter && !Listed(matrices, Use::Acc, m.type, rows, cols)) continue;
    for (exec::Combine combine : {exec::Combine::Sum, exec::Combine::Min, exec::Combine::Max}) {
      const exec::ReduceCase c{mask, combine, m.type, m.rows, m.cols, rows, cols, "", /*specDims=*/true};
      out.push_back({std::string("Reduce ") + exec::MaskName(mask), MatrixName(m),
                     std::string("reduce_") + exec::MaskName(mask) + "_" + exec::Name(combine) + "_" + exec::Name(m.type) + "_spec",
                     "reductions", Runner(c)});
    }
  }
}

// GLSL converts between integers and the encoded floats in neither direction (no modules).
bool Convertible(T from, T to) {
  return !((IsInteger(from) && exec::EncodedFormat(to)) || (exec::EncodedFormat(from) && IsInteger(to)));
}

void PlanConvert(const ListedMatrix& m, const std::vector<ListedMatrix>& matrices, std::vector<PlannedCase>& out) {
  auto add = [&](Use use2, T t2, bool transpose) {
    exec::ConvertCase c{m.use, m.type, m.rows, m.cols, use2, t2, transpose};
    c.specDims = true;
    const std::string title = "ConvertUse " + UseTitle(m.use) + " -> " + UseTitle(use2) + (transpose ? " (transposed)" : "");
    out.push_back({title, MatrixName(m), c.Name() + " (" + exec::Name(t2) + ")", "conversions", Runner(c)});
  };
  for (const ListedMatrix& to : matrices) {
    if (!Convertible(m.type, to.type)) continue;
    if (m.use == Use::Acc && to.use != Use::Acc) {
      if (to.rows == m.rows && to.cols == m.cols) add(to.use, to.type, false);
      if (to.rows == m.cols && to.cols == m.rows) add(to.use, to.type, true);
    }
    if (m.use != Use::Acc && to.use == Use::Acc && to.rows == m.rows && to.cols == m.cols) add(Use::Acc, to.type, false);
  }
}

// Calls add(use, component type, rows, cols) for a configuration's A (M x K), B (K x N), C and
// result (M x N), given its sizes (or a flexible one's granularities).
template <typename Configuration, typename Add>
void EachMatrix(const Configuration& p, uint32_t m, uint32_t n, uint32_t k, Add add) {
  add(Use::A, p.AType, m, k);
  add(Use::B, p.BType, k, n);
  add(Use::Acc, p.CType, m, n);
  add(Use::Acc, p.ResultType, m, n);
}

}  // namespace

std::vector<ListedMatrix> ListedMatrices(const std::vector<VkCooperativeMatrixPropertiesKHR>& configurations) {
  std::vector<ListedMatrix> out;
  auto add = [&](Use use, uint32_t component, uint32_t rows, uint32_t cols) {
    const std::optional<T> t = exec::TestType(component);
    if (!t) return;
    const ListedMatrix m{use, *t, rows, cols};
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  };
  for (const VkCooperativeMatrixPropertiesKHR& p : configurations)
    if (p.scope == VK_SCOPE_SUBGROUP_KHR) EachMatrix(p, p.MSize, p.NSize, p.KSize, add);
  return out;
}

std::vector<ListedMatrix> FlexibleMatrices(const std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV>& configurations,
                                           uint32_t maxDimension, const std::vector<ListedMatrix>& listed) {
  std::vector<ListedMatrix> out;
  auto add = [&](Use use, uint32_t component, uint32_t rowGranularity, uint32_t colGranularity) {
    const std::optional<T> t = exec::TestType(component);
    if (!t) return;
    for (auto [rowFactor, colFactor] : {std::pair{2u, 1u}, std::pair{1u, 2u}, std::pair{2u, 2u}}) {
      const ListedMatrix m{use, *t, rowGranularity * rowFactor, colGranularity * colFactor};
      if (m.rows > maxDimension || m.cols > maxDimension) continue;
      if (std::find(listed.begin(), listed.end(), m) == listed.end() && std::find(out.begin(), out.end(), m) == out.end())
        out.push_back(m);
    }
  };
  for (const VkCooperativeMatrixFlexibleDimensionsPropertiesNV& p : configurations)
    if (p.scope == VK_SCOPE_SUBGROUP_KHR) EachMatrix(p, p.MGranularity, p.NGranularity, p.KGranularity, add);
  return out;
}

std::vector<std::string> UnknownTypes(const std::vector<VkCooperativeMatrixPropertiesKHR>& configurations) {
  std::vector<std::string> out;
  auto note = [&](Use use, uint32_t component, uint32_t rows, uint32_t cols) {
    if (exec::TestType(component)) return;
    const std::string text = UseTitle(use) + " component type " + std::to_string(component) + " " + std::to_string(rows) +
                             "x" + std::to_string(cols);
    if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(text);
  };
  for (const VkCooperativeMatrixPropertiesKHR& p : configurations)
    if (p.scope == VK_SCOPE_SUBGROUP_KHR) EachMatrix(p, p.MSize, p.NSize, p.KSize, note);
  return out;
}

std::vector<PlannedCase> Plan(const std::vector<ListedMatrix>& matrices) {
  std::vector<PlannedCase> out;
  for (const ListedMatrix& m : matrices) {
    PlanGetCoordinate(m, out);
    PlanPerElement(m, out);
    PlanReduce(m, matrices, out);
    PlanConvert(m, matrices, out);
  }
  return out;
}

std::vector<PlannedCase> PlanKernels(const std::vector<VkCooperativeMatrixPropertiesKHR>& configurations,
                                     const std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV>& flexible,
                                     uint32_t maxFlexibleDimension) {
  const uint32_t tile = exec::kKernelTile;
  auto types = [](T a, T c, const auto& p) {
    return p.scope == VK_SCOPE_SUBGROUP_KHR && exec::TestType(p.AType) == a && exec::TestType(p.BType) == a &&
           exec::TestType(p.CType) == c && exec::TestType(p.ResultType) == c;
  };
  auto listed = [&](T a, T c) {
    return std::any_of(configurations.begin(), configurations.end(),
                       [&](const VkCooperativeMatrixPropertiesKHR& p) {
                         return types(a, c, p) && p.MSize == tile && p.NSize == tile && p.KSize == tile;
                       }) ||
           (maxFlexibleDimension >= tile &&
            std::any_of(flexible.begin(), flexible.end(), [&](const VkCooperativeMatrixFlexibleDimensionsPropertiesNV& p) {
              return types(a, c, p) && tile % p.MGranularity == 0 && tile % p.NGranularity == 0 && tile % p.KGranularity == 0;
            }));
  };
  constexpr uint32_t kDim = 32;
  std::vector<PlannedCase> out;
  for (T type : {T::F16, T::BF16}) {
    if (!listed(type, T::F32)) continue;
    const exec::GlaCase c{type, kDim};
    out.push_back({"Kernel: GLA chunk", std::string("a ") + exec::Name(type) + " 16x16", c.Name(), "conversions",
                   [c](const exec::Env& env) {
                     std::string log;
                     return exec::Run(env, c, kTargetEnv, log);
                   }});
  }
  if (listed(T::BF16, T::BF16))
    out.push_back({"Kernel: GLA chunk", "acc bf16 16x16", "kernel_gla_bf16acc_d32", "conversions", [](const exec::Env& env) {
                     std::string log;
                     return exec::RunGlaBf16Acc(env, kDim, kTargetEnv, log);
                   }});
  return out;
}

}  // namespace selftest
