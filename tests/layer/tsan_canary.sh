#!/bin/sh
# scripts/test's proof that its ThreadSanitizer stage can fail (test audit dbb465e §0.12):
# the canary's deliberate race must be reported under the stage's own TSAN_OPTIONS
# (exit 66, "ThreadSanitizer: data race"), and the layer the concurrency test loads must
# be built with ThreadSanitizer (ignore_noninstrumented_modules=1 would hide its races).
#   tsan_canary.sh CANARY LAYER_LIBRARY      (TSAN_OPTIONS as the stage sets them)
canary=$1 layer=$2
out=$("$canary" 2>&1)
status=$?
if [ "$status" -ne 66 ] || ! printf '%s\n' "$out" | grep -q "ThreadSanitizer: data race"; then
  printf '%s\n' "$out" | tail -20
  echo "tsan canary: the deliberate race was not reported (exit $status): the stage cannot see races"
  exit 1
fi
if ! nm -D "$layer" | grep -q "__tsan_func_entry"; then
  echo "tsan canary: $layer is not built with ThreadSanitizer: its races would go unseen"
  exit 1
fi
echo "tsan canary: the deliberate race was reported (exit 66); $(basename "$layer") is instrumented"
