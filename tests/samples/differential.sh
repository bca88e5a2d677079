#!/bin/sh
# Draws COUNT executable modules (tests/fuzz/generate_modules.py --exec) with a seed made
# from the commit under test ($COOPMAT_DIFFERENTIAL_SEED repeats a draw) and runs them under
# every lowering (coopmat_differential).
#   differential.sh PYTHON SOURCE_DIR RUNNER WORK_DIR COUNT [--wrong-layouts INFO | --virtual PROFILE LAYER_PATH |
#                   --overridden]
# --wrong-layouts: the proof that the stage can fail. The register path is given lavapipe's
# layouts (coopmat-info INFO) with two index bits of every accumulator swapped; the
# portable path, which needs no layout, then disagrees with it, and the run must say so for
# every module under both other lowerings. So that every module can show it, the draw is of the
# accumulators the device lists (at other shapes and types no layout is known, and every lowering
# runs the portable code) and each module ends with a getCoordinate that always runs.
# --overridden: the other proof. A lowering exported in the environment overrides the one
# each run asks for (the three would be one); the runner must refuse to compare then.
# --virtual: on the virtual device (tests/virtual) under PROFILE, the product layer above it
# (LAYER_PATH holds both), 16x16 shapes with f16 A and B in workgroups of 64, with the
# accumulator types PROFILE lists for them (f16, f32: then each conversion to A or B also
# converts the component type); a fault or a pipeline the virtual device refused fails the run.
python=$1 source=$2 runner=$3 work=$4 count=$5 mode=${6:-}
seed=${COOPMAT_DIFFERENTIAL_SEED:-$("$python" -c "
import sys; sys.path.insert(0, '$source/tests/exec')
from exec_tally import lane_seed, source_commit
print(lane_seed('differential:$mode:$(basename "${7:-}")', source_commit()) or 1)")}
echo "differential: generator seed $seed (COOPMAT_DIFFERENTIAL_SEED=$seed draws the same modules)"
rm -rf "$work" && mkdir -p "$work" || exit 1
draw="--exec"
if [ "$mode" = --virtual ]; then
  accumulators=
  grep -q "^matrix 16 16 16 f16 f16 f16 f16$" "$7" && accumulators=float16_t
  grep -q "^matrix 16 16 16 f16 f16 f32 f32$" "$7" && accumulators=${accumulators:+$accumulators,}float
  [ -n "$accumulators" ] || { echo "differential: $7 lists no 16x16x16 product of f16 A and B"; exit 1; }
  draw="--exec --scalars $accumulators --operands float16_t --shapes 16x16 --local 64 --without reduce2x2"
fi
if [ "$mode" = --wrong-layouts ]; then
  XDG_CACHE_HOME=$work "$7" --layouts "$work/probed.txt" >/dev/null || exit 1
  listed() { sed -n "s/^layout type=\([^ ]*\) use=Acc rows=\([0-9]*\) cols=\([0-9]*\) .*/$1/p" "$work/probed.txt" | sort -u; }
  scalars=$(listed '\1' | sed 's/^f32$/float/; s/^f16$/float16_t/; s/^s32$/int/; s/^u32$/uint/' |
            grep -x -E 'float|float16_t|int|uint' | paste -sd, -)
  shapes=$(listed '\2x\3' | paste -sd, -)
  [ -n "$scalars" ] && [ -n "$shapes" ] || { echo "differential: $work/probed.txt lists no accumulator to draw"; exit 1; }
  draw="--exec --scalars $scalars --shapes $shapes --last getCoordinate"
  echo "differential: drawing the accumulators the device lists: $scalars at $shapes"
fi
# shellcheck disable=SC2086
"$python" "$source/tests/fuzz/generate_modules.py" $draw "$work/modules" "$count" "$seed" || exit 1
case $mode in
  "") exec "$runner" "$work/modules" ;;
  --virtual)
    log=$work/virtual.log
    VK_ADD_LAYER_PATH=$8 VK_INSTANCE_LAYERS=VK_LAYER_coopmat_maintenance1:VK_LAYER_COOPMAT_TEST_virtual_device \
      COOPMAT_VIRTUAL_PROFILE=$7 COOPMAT_VIRTUAL_LOG=$log XDG_CACHE_HOME=$work "$runner" "$work/modules"
    status=$?
    rewritten=$(grep -c "^pipeline profile=" "$log" 2>/dev/null)
    if grep -v "^pipeline profile=" "$log" 2>/dev/null | grep -q .; then
      grep -v "^pipeline profile=" "$log" | head -20
      echo "differential: the virtual device found faults or refused pipelines"
      exit 1
    fi
    [ "${rewritten:-0}" -gt 0 ] || { echo "differential: the virtual device rewrote no pipeline"; exit 1; }
    echo "differential: $rewritten pipelines rewritten by the virtual device ($(basename "$7")), 0 faults"
    exit $status ;;
  --wrong-layouts) ;;
  --overridden)
    VK_COOPMAT_MAINTENANCE1_LOWERING=portable "$runner" "$work/modules" > "$work/out.txt" 2>&1
    status=$?
    tail -3 "$work/out.txt"
    if [ "$status" -ne 1 ] || ! grep -q "^differential: the layer does not run lowering=auto .*VK_COOPMAT_MAINTENANCE1_LOWERING" "$work/out.txt"; then
      echo "differential: with the lowering overridden in the environment the runner compared anyway (exit $status)"
      exit 1
    fi
    echo "differential: an overridden lowering refused"
    exit 0 ;;
  *) echo "differential.sh: unknown mode $mode"; exit 2 ;;
esac
sh "$source/tests/support/wrong_layouts.sh" "$work/probed.txt" "$work/wrong.txt" || exit 1
# The runner's lines apart from the layer's (in one file they interleave mid-line).
VK_COOPMAT_MAINTENANCE1_LAYOUT_PROBE=false VK_COOPMAT_MAINTENANCE1_LAYOUTS_FILE=$work/wrong.txt \
  "$runner" "$work/modules" > "$work/out.txt" 2> "$work/layer.txt"
status=$?
tail -3 "$work/out.txt"
modules=$(find "$work/modules" -name 'exec-*' | wc -l)
for lowering in registers auto; do
  differing=$(grep -c "^FAILED .*: lowering=portable and lowering=$lowering differ at" "$work/out.txt")
  if [ "$status" -ne 1 ] || [ "$differing" -ne "$modules" ]; then
    echo "differential: with wrong accumulator layouts lowering=$lowering differed from lowering=portable in" \
         "$differing of $modules modules (exit $status): the stage does not see wrong layouts"
    exit 1
  fi
done
echo "differential: wrong layouts detected in all $modules modules under lowering=registers and lowering=auto"
