#!/bin/sh
# coopmat-selftest never reports less than it was asked to check as a pass (review of
# 2026-12-07): bad arguments are found before anything runs (exit 2 with a message), a run
# of no case is exit 2, a layer setting overridden by the environment or vk_layer_settings.txt
# fails its pass and names the variable, a missing temporary folder fails with a message
# instead of an abort, a layouts table with nothing for the device fails, and a kept
# --dump-dir gives the same routes again.
#   arguments_check.sh <coopmat-selftest> <scratch dir>
set -u
selftest=$1 scratch=$2
rm -rf "$scratch" && mkdir -p "$scratch"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
few="--shapes listed --filter getcoord_acc_f32"

# expect STATUS FRAGMENT NAME ARGS...: the exit status, and FRAGMENT in its output.
expect() {
  status=$1 fragment=$2 name=$3; shift 3
  "$selftest" "$@" >"$scratch/out.txt" 2>&1
  rc=$?
  [ "$rc" -eq "$status" ] || fail "$name: exit $rc, not $status: $(head -c 600 "$scratch/out.txt")"
  grep -qF -- "$fragment" "$scratch/out.txt" || fail "$name: no '$fragment' in: $(head -c 600 "$scratch/out.txt")"
}

: >"$scratch/a-file"
good="layout type=f32 use=Acc rows=8 cols=8 subgroup=8 length=8 lane=c0,c1,c2 index=r0,r1,r2"
printf '%s\n%s\n' "$good" "layout type=f32 use=Acc rows=8 cols=8 subgroup=8 length=8 lane=r0,r1,r2 index=c0,c1,c2" \
  >"$scratch/ambiguous.txt"
expect 2 "--device needs a device index" device-text --device abc
expect 2 "--device needs a device index" device-negative --device -1
expect 2 "--device needs a device index" device-empty --device ""
expect 2 "--device needs a device index" device-wraps --device 4294967296
expect 2 "no family 'bogus'" builtin-family --builtin-layouts bogus
expect 2 "cannot be read" layouts-missing --layouts "$scratch/missing.txt"
expect 2 "cannot be read" layouts-folder --layouts "$scratch"
expect 2 "a second, different layout" layouts-ambiguous --layouts "$scratch/ambiguous.txt"
expect 2 "cannot be made a folder" dump-dir --dump-dir "$scratch/a-file/sub"
expect 2 "cannot be written" json --json "$scratch/missing/report.json"
# shellcheck disable=SC2086
expect 2 "matches none" filter-none --shapes listed --filter no-such-case

# Settings the tool sets that the environment or the settings file override.
# shellcheck disable=SC2086
VK_COOPMAT_MAINTENANCE1_LOWERING=portable expect 1 "VK_COOPMAT_MAINTENANCE1_LOWERING or vk_layer_settings.txt" \
  environment $few
# ...but where only the portable route is asked for, the layer's lowering=portable (the report's
# workaround, set for the user's applications) is what is checked: the pass runs.
# shellcheck disable=SC2086
VK_COOPMAT_MAINTENANCE1_LOWERING=portable expect 0 "routes: 1 portable (the layer's lowering=portable setting)" \
  environment-portable-only $few --lowering portable
echo "coopmat_maintenance1.lowering = portable" >"$scratch/vk_layer_settings.txt"
# shellcheck disable=SC2086
VK_LAYER_SETTINGS_PATH="$scratch/vk_layer_settings.txt" expect 1 "the layer's lowering is 'portable', not the 'auto'" \
  settings-file $few
# shellcheck disable=SC2086
TMPDIR="$scratch/missing" expect 1 "no temporary folder" tmpdir $few
# A table with no layout for lavapipe's subgroup size 8 would check nothing.
# shellcheck disable=SC2086
expect 1 "took no layout from the built-in cdna-mfma table" empty-table $few --builtin-layouts cdna-mfma

# The same routes through a kept --dump-dir, run after run.
# shellcheck disable=SC2086
expect 0 "routes: 1 registers" routes $few --lowering auto
for run in 1 2; do
  # shellcheck disable=SC2086
  expect 0 "routes: 1 registers" "kept dump-dir, run $run" $few --lowering auto --dump-dir "$scratch/dumps"
done

[ $failures -eq 0 ] && echo "all selftest argument checks passed"
exit $failures
