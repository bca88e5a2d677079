#!/bin/sh
# vulkaninfo_check.sh VULKANINFO listed|unlisted: vulkaninfo runs, sees the device (its
# VK_KHR_cooperative_matrix line), and lists VK_EXT_cooperative_matrix_maintenance1 among
# the device's extensions (one tab in; the per-layer lists are indented deeper) or not.
# A vulkaninfo that fails or sees no device fails both ways (test audit §0.10).
# layer-listed: the loader's list of the layer itself (from its manifest: vulkaninfo's
# "Layer-Device Extensions" under the layer, enabled or not) has the extension.
set -u
out=$("$1" 2>/dev/null) || { echo "FAIL: vulkaninfo exited non-zero"; exit 1; }
tab=$(printf '\t')
if [ "$2" = layer-listed ]; then
  section=$(printf '%s\n' "$out" | sed -n '/^VK_LAYER_coopmat_maintenance1 /,/^$/p')
  [ -n "$section" ] || { echo "FAIL: vulkaninfo lists no VK_LAYER_coopmat_maintenance1"; exit 1; }
  printf '%s\n' "$section" | grep -q "Layer-Device Extensions: count = 1" &&
    printf '%s\n' "$section" | grep -q "VK_EXT_cooperative_matrix_maintenance1 *: extension revision 1" &&
    { echo "ok: the layer's own list has it"; exit 0; }
  echo "FAIL: the layer's own list lacks it:"; printf '%s\n' "$section"; exit 1
fi
printf '%s\n' "$out" | grep -q "^${tab}VK_KHR_cooperative_matrix *: extension revision" ||
  { echo "FAIL: vulkaninfo lists no device with VK_KHR_cooperative_matrix"; exit 1; }
if printf '%s\n' "$out" | grep -q "^${tab}VK_EXT_cooperative_matrix_maintenance1 *: extension revision 1"; then
  [ "$2" = listed ] && { echo "ok: listed"; exit 0; }
  echo "FAIL: listed without the layer"; exit 1
fi
[ "$2" = unlisted ] && { echo "ok: not listed"; exit 0; }
echo "FAIL: not listed through the layer"; exit 1
