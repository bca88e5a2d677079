#!/bin/sh
# make_glsl450.sh SPIRV_DIS SPIRV_AS IN OUT: the same module declaring the GLSL450
# memory model instead of the Vulkan one (glslang never emits that for coopmats).
set -eu
"$1" --raw-id "$3" |
  sed -e 's/OpMemoryModel Logical Vulkan/OpMemoryModel Logical GLSL450/' \
      -e '/OpCapability VulkanMemoryModel/d' -e '/SPV_KHR_vulkan_memory_model/d' |
  "$2" --target-env spv1.3 -o "$4" -
