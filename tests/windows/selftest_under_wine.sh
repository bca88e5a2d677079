#!/bin/sh
# coopmat-selftest.exe under Wine, through the Windows layer DLL: the stand-in loader
# (test_loader.cpp, as vulkan-1.dll beside the tool) chains the DLL its manifest names above
# Wine's Vulkan driver, lavapipe underneath. Every case of the shapes lavapipe lists must
# pass on both routes (check_selftest.py reads the tool's JSON), and the loader must have
# put the layer there: its layout probe ran on Windows (the report's layout lines). Then
# the proof that this run can fail: the probed layouts with two index bits of every
# accumulator swapped (the layer's layouts_file, --layouts) must fail GetCoordinate.
#   selftest_under_wine.sh <wine> <check_selftest.py> <coopmat-selftest.exe> <test vulkan-1.dll> <layer manifest> <scratch>
set -eu
wine=$1 check=$2 selftest=$3 loader=$4 manifest=$5 scratch=$6
rm -rf "$scratch" && mkdir -p "$scratch"
cp "$selftest" "$loader" "$scratch/"
# The stand-in, not Wine's own vulkan-1.dll; the manifest as a Windows path.
export WINEDLLOVERRIDES="vulkan-1=n;${WINEDLLOVERRIDES:-}"
COOPMAT_TEST_LOADER_LAYER=$("$wine" winepath -w "$manifest" 2>/dev/null)
export COOPMAT_TEST_LOADER_LAYER
[ -n "$COOPMAT_TEST_LOADER_LAYER" ] || { echo "selftest_under_wine: winepath gave no Windows path for $manifest"; exit 1; }
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$scratch}"
# Lavapipe only, as in the Linux lanes (Wine's driver runs on the host's loader).
[ -n "${VK_DRIVER_FILES:-}" ] || [ ! -f /usr/share/vulkan/icd.d/lvp_icd.json ] ||
  export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.json
status=0
python3 "$check" --pass --matrices 10 -- "$wine" "$scratch/$(basename "$selftest")" --shapes listed \
  > "$scratch/out.txt" 2>&1 || status=$?
cat "$scratch/out.txt"
[ "$status" = 0 ] || exit "$status"
grep -q "layout: .*# probed" "$scratch/out.txt" ||
  { echo "selftest_under_wine: no probed layout line: the layer did not probe on Windows"; exit 1; }
sed -n 's/^  layout: \(layout .*\)  # probed.*/\1/p' "$scratch/out.txt" > "$scratch/probed.txt"
sh "$(dirname "$0")/../support/wrong_layouts.sh" "$scratch/probed.txt" "$scratch/wrong.txt"
status=0
python3 "$check" --fail -- "$wine" "$scratch/$(basename "$selftest")" --shapes listed --lowering auto \
  --filter GetCoordinate --layouts "$("$wine" winepath -w "$scratch/wrong.txt" 2>/dev/null)" > "$scratch/wrong-out.txt" 2>&1 || status=$?
cat "$scratch/wrong-out.txt"
[ "$status" = 0 ] || exit "$status"
