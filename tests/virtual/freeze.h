// The pipeline's specialization applied and frozen by SPIRV-Tools' optimizer passes
// (set-spec-const-default-value, freeze-spec-const, fold-spec-const-op-composite), not
// by the product's own freezer, so that the virtual device evaluates what the product
// emits with code of its own.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "coopmat/lower.h"  // Specialization (plain data)

namespace coopmat::virt {

// The frozen module, or empty with `error` set.
std::vector<uint32_t> FreezeWithSpirvTools(std::span<const uint32_t> words, const Specialization& specialization,
                                           std::string& error);

}  // namespace coopmat::virt
