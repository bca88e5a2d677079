#!/bin/sh
# Draws COUNT executable modules (tests/fuzz/generate_modules.py --exec) with a seed made
# from the commit under test ($COOPMAT_DIFFERENTIAL_SEED repeats a draw) and runs them under
# every lowering (coopmat_differential).
#   differential.sh PYTHON SOURCE_DIR RUNNER WORK_DIR COUNT [--wrong-layouts INFO]
# --wrong-layouts: the proof that the stage can fail. The register path is given lavapipe's
# layouts (coopmat-info INFO) with two index bits of every accumulator swapped; the
# portable path, which needs no layout, then disagrees with it, and the run must say so.
python=$1 source=$2 runner=$3 work=$4 count=$5 wrong=
[ "${6:-}" = --wrong-layouts ] && wrong=$7
seed=${COOPMAT_DIFFERENTIAL_SEED:-$("$python" -c "
import sys; sys.path.insert(0, '$source/tests/exec')
from exec_tally import lane_seed, source_commit
print(lane_seed('differential', source_commit()) or 1)")}
echo "differential: generator seed $seed (COOPMAT_DIFFERENTIAL_SEED=$seed draws the same modules)"
rm -rf "$work" && mkdir -p "$work" || exit 1
"$python" "$source/tests/fuzz/generate_modules.py" --exec "$work/modules" "$count" "$seed" || exit 1
[ -n "$wrong" ] || exec "$runner" "$work/modules"
XDG_CACHE_HOME=$work "$wrong" --layouts "$work/probed.txt" >/dev/null || exit 1
sed '/use=Acc/s/index=r0,r1,/index=r1,r0,/' "$work/probed.txt" > "$work/wrong.txt"
if cmp -s "$work/probed.txt" "$work/wrong.txt"; then
  echo "differential: no accumulator layout of the form index=r0,r1,... to swap in $work/probed.txt"
  exit 1
fi
VK_COOPMAT_MAINTENANCE1_LAYOUT_PROBE=false VK_COOPMAT_MAINTENANCE1_LAYOUTS_FILE=$work/wrong.txt \
  "$runner" "$work/modules" > "$work/out.txt" 2>&1
status=$?
tail -3 "$work/out.txt"
if [ "$status" -ne 1 ] || ! grep -q "lowering=portable and lowering=auto differ" "$work/out.txt"; then
  echo "differential: with wrong accumulator layouts the lowerings did not disagree (exit $status): the stage cannot fail"
  exit 1
fi
echo "differential: wrong layouts detected ($(grep -c "differ at" "$work/out.txt") module and lowering pairs differ)"
