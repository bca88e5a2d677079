#!/bin/sh
# The native lane: the execution suite against a driver's own
# VK_EXT_cooperative_matrix_maintenance1, without the layer (the same cases, the same
# CPU references). Mesa 26.3 has it for lavapipe; the toolchain root's Mesa may not:
# then there is nothing to compare with and the lane says so (exit 77, skipped).
#   native_lane.sh <launcher> <exec test binary>
set -eu
launcher=$1 tests=$2
# The driver alone: without the layer path, vulkaninfo lists no layer's extensions.
driver_info() { "$launcher" env -u VK_ADD_LAYER_PATH -u VK_INSTANCE_LAYERS vulkaninfo "$@" 2>/dev/null; }
driver_info >/dev/null || { echo "native lane: vulkaninfo does not run"; exit 1; }
if ! driver_info | grep -q "VK_EXT_cooperative_matrix_maintenance1"; then
  echo "native lane: the driver lists no VK_EXT_cooperative_matrix_maintenance1 ($(driver_info --summary | grep -m1 driverInfo | sed 's/^[[:space:]]*//')); not run"
  exit 77
fi
# Left out: the harness (lavapipe's NV ops), and what is about the layer itself: its register
# code, validation below it, its shared-memory budget, its refusals ([layer-only]).
COOPMAT_EXEC_NATIVE=1 exec "$launcher" "$tests" "[exec]~[harness]~[register]~[validation]~[budget]~[layer-only]"
