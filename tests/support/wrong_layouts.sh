#!/bin/sh
# wrong_layouts.sh IN OUT: the layouts of IN (the text form coopmat-info --layouts writes)
# with two index bits of every accumulator swapped, into OUT: layouts that are wrong in a
# known way, for the checks that must fail with them (the differential stage, the self-test's
# native comparison, the Windows run). Fails when IN has no accumulator of that form, so such a
# check cannot pass for lack of a wrong layout.
in=$1 out=$2
sed '/use=Acc/s/index=r0,r1,/index=r1,r0,/' "$in" > "$out" || exit 1
if cmp -s "$in" "$out"; then
  echo "wrong_layouts: no accumulator layout of the form index=r0,r1,... to swap in $in"
  exit 1
fi
