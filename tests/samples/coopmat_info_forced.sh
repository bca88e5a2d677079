#!/bin/sh
# coopmat_info_forced.sh COOPMAT_INFO: with the layer forced on by the environment
# (VK_INSTANCE_LAYERS), coopmat-info's "without the layer" report is still the
# driver's own: lavapipe has no VK_EXT_cooperative_matrix_maintenance1, the layer
# adds it. (The test environment puts the build's layer on VK_ADD_LAYER_PATH.)
set -u
info=$1
ext=VK_EXT_cooperative_matrix_maintenance1
out=$(VK_INSTANCE_LAYERS=VK_LAYER_coopmat_maintenance1 "$info" 2>&1) || { echo "FAIL: coopmat-info exited non-zero"; echo "$out"; exit 1; }
without=$(printf '%s\n' "$out" | sed -n '/^== without the layer ==/,/^== with /p')
with=$(printf '%s\n' "$out" | sed -n '/^== with VK_LAYER_coopmat_maintenance1 ==/,$p')
[ -n "$without" ] && [ -n "$with" ] || { echo "FAIL: missing a section"; echo "$out"; exit 1; }
printf '%s\n' "$without" | grep -q "$ext: no" || { echo "FAIL: 'without the layer' does not say '$ext: no'"; echo "$without"; exit 1; }
printf '%s\n' "$with" | grep -q "$ext: yes" || { echo "FAIL: 'with the layer' does not say '$ext: yes'"; echo "$with"; exit 1; }
echo "coopmat-info: the layer forced by VK_INSTANCE_LAYERS stays out of the 'without the layer' report"
