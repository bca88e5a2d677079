#pragma once

// The layer's names. The tests build the layer a second time under other names
// (tests/selftest: a driver that implements the extension itself, played by the layer's own
// lowering below the product layer), so each can be set by a compile definition.
#ifndef COOPMAT_LAYER_NAME
#define COOPMAT_LAYER_NAME "VK_LAYER_coopmat_maintenance1"
#endif
#ifndef COOPMAT_LAYER_LOG_PREFIX
#define COOPMAT_LAYER_LOG_PREFIX "coopmat-maintenance1"
#endif
#ifndef COOPMAT_LAYER_ENV_PREFIX
#define COOPMAT_LAYER_ENV_PREFIX "VK_COOPMAT_MAINTENANCE1_"
#endif
#ifndef COOPMAT_LAYER_FILE_PREFIX
#define COOPMAT_LAYER_FILE_PREFIX "coopmat_maintenance1."
#endif

namespace coopmat::layer {
inline constexpr const char* kLayerName = COOPMAT_LAYER_NAME;
inline constexpr const char* kLogPrefix = COOPMAT_LAYER_LOG_PREFIX;
// Settings in the environment (VK_COOPMAT_MAINTENANCE1_FORCE_ENABLE) and in vk_layer_settings.txt.
inline constexpr const char* kEnvPrefix = COOPMAT_LAYER_ENV_PREFIX;
inline constexpr const char* kFilePrefix = COOPMAT_LAYER_FILE_PREFIX;
}  // namespace coopmat::layer
