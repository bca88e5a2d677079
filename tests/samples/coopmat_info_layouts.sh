#!/bin/sh
# coopmat_info_layouts.sh COOPMAT_INFO COOPMAT_LOWER SHADER WORKDIR: on lavapipe,
# coopmat-info shows the layouts the layer's probe found for every type the driver
# lists (the layer enables what its probe needs, whatever coopmat-info's device
# enables), each with where it came from, and --layouts writes them in the text form
# coopmat-lower reads: lowering a module with them takes the register path.
set -u
info=$1 lower=$2 shader=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
out=$(XDG_CACHE_HOME="$work/cache" "$info" --layer-only --layouts "$work/layouts.txt" 2>&1) ||
  { echo "FAIL: coopmat-info exited non-zero"; echo "$out"; exit 1; }
fail() { echo "FAIL: $1"; echo "$out"; exit 1; }
# lavapipe lists f16, u8 and s8 inputs with f16, f32, u32 and s32 accumulators: 10 keys.
printf '%s\n' "$out" | grep -q "register layouts the layer uses, per type and subgroup size: 10, portable: 0" ||
  fail "not 10 layouts and no portable type"
[ "$(printf '%s\n' "$out" | grep -c '        from: probed$')" = 10 ] || fail "not every layout says 'from: probed'"
for key in "type=f16 use=A" "type=u8 use=B" "type=s32 use=Acc"; do
  grep -q "^layout $key rows=8 cols=8 subgroup=8 " "$work/layouts.txt" || fail "--layouts file lacks $key"
done
# A second run reads the layer's cache and says so.
out=$(XDG_CACHE_HOME="$work/cache" "$info" --layer-only 2>&1) || fail "second run exited non-zero"
[ "$(printf '%s\n' "$out" | grep -c '        from: probed (cached)$')" = 10 ] || fail "the second run does not say 'probed (cached)'"
# The file is what coopmat-lower takes: every operation of the shader in registers.
explain=$("$lower" "$shader" -o "$work/out.spv" --layouts "$work/layouts.txt" --explain 2>&1) ||
  { echo "FAIL: coopmat-lower refused the layouts"; echo "$explain"; exit 1; }
printf '%s\n' "$explain" | grep -q "register path" || { echo "FAIL: no register path with the probed layouts"; echo "$explain"; exit 1; }
if printf '%s\n' "$explain" | grep -q "portable path"; then echo "FAIL: a portable operation"; echo "$explain"; exit 1; fi
# The layout lines come at log level info: a lower level from the environment or
# vk_layer_settings.txt (which take precedence over the API) must not empty the report.
out=$(XDG_CACHE_HOME="$work/cache" VK_COOPMAT_MAINTENANCE1_LOG_LEVEL=warning "$info" --layer-only 2>&1) ||
  fail "run with log level warning exited non-zero"
printf '%s\n' "$out" | grep -q "per type and subgroup size: 10, portable: 0" || fail "log level warning emptied the report"
# Where the layer uses no layout, the report says why instead of "0, portable: 0" alone.
out=$(XDG_CACHE_HOME="$work/cache" VK_COOPMAT_MAINTENANCE1_LOWERING=portable "$info" --layer-only 2>&1) ||
  fail "run with lowering=portable exited non-zero"
printf '%s\n' "$out" | grep -q "none reported: every operation takes the portable path (the layer's settings: .*lowering=portable" ||
  fail "lowering=portable: no reason for the empty report"
# The layer's warnings reach the report (the tool silences the layer's stderr copies of its
# lines, which once hid them): at device creation and at instance creation. Its stderr has
# none of the layer's lines, the settings line included.
out=$(XDG_CACHE_HOME="$work/cache" VK_COOPMAT_MAINTENANCE1_LAYOUT_PROBE=false \
  VK_COOPMAT_MAINTENANCE1_LAYOUTS_FILE="$work/missing.txt" "$info" --layer-only 2>"$work/stderr.txt") ||
  fail "run with an unreadable layouts_file exited non-zero"
printf '%s\n' "$out" | grep -q "^    warning: layouts_file $work/missing.txt: cannot be read" ||
  fail "the device-time warning about layouts_file is not in the report"
if grep -q "coopmat-maintenance1:" "$work/stderr.txt"; then fail "the layer's lines on stderr: $(cat "$work/stderr.txt")"; fi
out=$(XDG_CACHE_HOME="$work/cache" VK_COOPMAT_MAINTENANCE1_LAYOUTS_FILE="$work/missing.txt" "$info" --layer-only 2>&1) ||
  fail "run with layouts_file and the probe exited non-zero"
printf '%s\n' "$out" | grep -q "^  warning: layouts_file '$work/missing.txt' is read only with layout_probe=false" ||
  fail "the instance-time warning about layouts_file is not in the report"
# Options that would do nothing, a file that cannot be written, --help.
"$info" --no-layer --layer-only >/dev/null 2>&1; [ $? -eq 2 ] || fail "--no-layer --layer-only: not exit 2"
"$info" --no-layer --layouts "$work/none.txt" >/dev/null 2>&1; [ $? -eq 2 ] || fail "--no-layer --layouts: not exit 2"
XDG_CACHE_HOME="$work/cache" "$info" --layer-only --layouts "$work/missing/layouts.txt" >/dev/null 2>&1
[ $? -eq 1 ] || fail "an unwritable --layouts file: not exit 1"
"$info" --help | grep -q "^usage: coopmat-info" || fail "--help prints no usage on stdout"
echo "coopmat-info: 10 probed layouts, cached on the second run, and coopmat-lower lowers with them in registers"
