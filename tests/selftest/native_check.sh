#!/bin/sh
# coopmat-selftest on a driver that implements the extension itself, played on lavapipe by a
# second build of the layer below the product layer (VK_LAYER_COOPMAT_TEST_native_ext, its
# settings VK_COOPMAT_TEST_NATIVE_EXT_*): the product layer must step aside for the native
# pass and lower with force_enable for the others, and the tool must compare the two.
#  1. both implementations right: every pass passes, a native one among them;
#  2. the "driver" wrong (its accumulator layouts with two index bits swapped): the native
#     pass fails, the layer's pass, and the report says force_enable works around it.
#   native_check.sh <check_selftest.py> <coopmat-info> <coopmat-selftest> <layer dir> <test layer dir> <scratch dir>
set -eu
check=$1 info=$2 selftest=$3 layer=$4 native=$5 scratch=$6
rm -rf "$scratch" && mkdir -p "$scratch"
export XDG_CACHE_HOME="$scratch/cache"
VK_ADD_LAYER_PATH=$layer VK_INSTANCE_LAYERS=VK_LAYER_coopmat_maintenance1 \
  "$info" --layer-only --layouts "$scratch/probed.txt" >"$scratch/info.txt" 2>&1
sh "$(dirname "$0")/../support/wrong_layouts.sh" "$scratch/probed.txt" "$scratch/wrong.txt"
# The suite's environment forces the product layer on (force_enable); the native pass needs
# it to step aside.
unset VK_COOPMAT_MAINTENANCE1_FORCE_ENABLE
export VK_ADD_LAYER_PATH="$layer:$native"
export VK_INSTANCE_LAYERS=VK_LAYER_coopmat_maintenance1:VK_LAYER_COOPMAT_TEST_native_ext
args="--shapes listed"
echo "== the driver's implementation and the layer's, both right =="
# shellcheck disable=SC2086
python3 "$check" --pass --native --matrices 10 -- "$selftest" $args
echo "== the driver's implementation wrong (accumulator layouts with two index bits swapped) =="
status=0
# shellcheck disable=SC2086
VK_COOPMAT_TEST_NATIVE_EXT_LAYOUT_PROBE=false VK_COOPMAT_TEST_NATIVE_EXT_LAYOUTS_FILE="$scratch/wrong.txt" \
  python3 "$check" --fail --native --only-failing native -- "$selftest" $args > "$scratch/wrong-run.txt" 2>&1 || status=$?
cat "$scratch/wrong-run.txt"
[ "$status" = 0 ] || exit "$status"
grep -q "workaround for .*: VK_COOPMAT_MAINTENANCE1_FORCE_ENABLE=1 (the driver's own implementation failed" \
  "$scratch/wrong-run.txt" || { echo "native_check: no force_enable workaround in the report"; exit 1; }
