#!/bin/sh
# opbench_unlisted_skipped.sh OPBENCH CASE...
#
# opbench's cases whose types the driver does not list (bfloat16 and fp8 on lavapipe) are
# skipped, never compiled (a bfloat16 pipeline crashed lavapipe): opbench must pass and name
# every CASE skipped. A driver that lists the types fails this: the cases then belong in
# samples.opbench.check, which runs them.
opbench=$1
shift
filter=$(printf '%s\n' "$@" | paste -sd, -)
out=$("$opbench" --check-only --matrices 4 --filter "$filter" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: opbench exited $rc"; exit 1; }
for name in "$@"; do
  printf '%s\n' "$out" | grep -qxF "$name: skipped, the driver does not list its matrix types" ||
    { echo "FAIL: $name was not reported skipped"; exit 1; }
done
echo "every case reported skipped: $*"
