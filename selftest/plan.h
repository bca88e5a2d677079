// What the self-test runs on a device: the execution suite's cases (tests/exec/cases.h) at
// every shape and component type the device lists, one planned case per run.
#pragma once

#include "cases.h"

#include <functional>
#include <string>
#include <vector>

namespace selftest {

// A matrix the device lists: its use, component type and shape (each once).
struct ListedMatrix {
  exec::Use use;
  exec::T type;
  uint32_t rows, cols;
  bool operator==(const ListedMatrix&) const = default;
};
// The subgroup-scope configurations' A, B and accumulator (C and result) matrices whose
// component types the cases have (the others are counted by UnknownTypes).
std::vector<ListedMatrix> ListedMatrices(const std::vector<VkCooperativeMatrixPropertiesKHR>& configurations);
// Shapes beyond the KHR list that NV flexible dimensions allow (VK_NV_cooperative_matrix2):
// for each flexible configuration, every (use, type) at twice its granularity in rows, in
// columns and in both, up to maxDimension, where `listed` does not have it already.
std::vector<ListedMatrix> FlexibleMatrices(const std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV>& configurations,
                                           uint32_t maxDimension, const std::vector<ListedMatrix>& listed);
// Configurations with a component type the cases do not have, as "A s16 16x16" etc.
std::vector<std::string> UnknownTypes(const std::vector<VkCooperativeMatrixPropertiesKHR>& configurations);

struct PlannedCase {
  std::string operation;  // the table's row: "GetCoordinate", "Reduce row", "ConvertUse Acc -> A (T)", ...
  std::string matrix;     // the table's column: the source matrix, "acc f32 16x16"
  std::string name;       // the suite's case name, with the combine op for reductions
  std::string feature;    // the layer's disabled_features word that turns the operation off
  std::function<std::string(const exec::Env&)> run;  // "" when every output matched the reference
};
// Every case the listed matrices allow: GetCoordinate and PerElementOp (coordinates, two
// extra operands) of each; Reduce (row, column, both, 2x2 where the quarter-size accumulator
// is listed, each with sum, min and max) of each arithmetic accumulator; ConvertUse from each
// accumulator into each A and B of its shape (transposed where the transposed shape is
// listed) and back.
std::vector<PlannedCase> Plan(const std::vector<ListedMatrix>& matrices);
// The GLA chunk (tests/exec/kernels.h) at D = 32 where the device lists its 16x16x16 MulAdds:
// f16 and bf16 into f32, bf16 into bf16.
// With flexible dimensions, where a flexible configuration of those types has granularities
// that divide 16 (lavapipe's).
std::vector<PlannedCase> PlanKernels(const std::vector<VkCooperativeMatrixPropertiesKHR>& configurations,
                                     const std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV>& flexible,
                                     uint32_t maxFlexibleDimension);

}  // namespace selftest
