#!/bin/sh
# coopmat-selftest --layouts FILE (the layer's layouts_file setting) on the device the
# environment gives (tests/virtual: the virtual device's RDNA3 wave32 profile): the layouts
# coopmat-info --layouts writes from the probe must pass, those it writes from another
# family's table (radv-gfx12: no replicas) must fail. GetCoordinate, the listed shapes.
#   layouts_file_check.sh <check_selftest.py> <coopmat-info> <coopmat-selftest> <scratch dir>
set -eu
check=$1 info=$2 selftest=$3 scratch=$4
mkdir -p "$scratch"
"$info" --layer-only --layouts "$scratch/probed.txt" >"$scratch/info-probed.txt" 2>&1
VK_COOPMAT_MAINTENANCE1_LAYOUT_PROBE=false VK_COOPMAT_MAINTENANCE1_BUILTIN_LAYOUTS=radv-gfx12 \
  "$info" --layer-only --layouts "$scratch/gfx12.txt" >"$scratch/info-gfx12.txt" 2>&1
for file in probed gfx12; do
  [ -s "$scratch/$file.txt" ] || { echo "layouts_file_check: coopmat-info wrote no $file layouts"; exit 1; }
done
if cmp -s "$scratch/probed.txt" "$scratch/gfx12.txt"; then
  echo "layouts_file_check: the two layout files are the same: the check would prove nothing"
  exit 1
fi
args="--lowering auto --shapes listed --filter GetCoordinate"
# shellcheck disable=SC2086
python3 "$check" --pass --matrices 10 --operations GetCoordinate -- "$selftest" $args --layouts "$scratch/probed.txt"
# shellcheck disable=SC2086
python3 "$check" --fail -- "$selftest" $args --layouts "$scratch/gfx12.txt"
