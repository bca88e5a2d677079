#pragma once

namespace coopmat::layer {
inline constexpr const char* kLayerName = "VK_LAYER_coopmat_maintenance1";
inline constexpr const char* kLogPrefix = "coopmat-maintenance1";
}  // namespace coopmat::layer
