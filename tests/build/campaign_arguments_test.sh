#!/bin/sh
# scripts/virtual-campaign refuses what it does not understand before it reconfigures build/
# or starts hours of work: --help prints its usage, a bad option, part or ROUNDS is exit 2.
#   campaign_arguments_test.sh <scripts/virtual-campaign>
set -u
campaign=$1
failures=0
out=$(bash "$campaign" --help 2>&1); rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: --help: exit $rc"; failures=$((failures + 1)); }
printf '%s\n' "$out" | grep -q "scripts/virtual-campaign \[--part PART\] \[ROUNDS\]" ||
  { echo "FAIL: --help prints no usage: $out"; failures=$((failures + 1)); }
for args in "-x" "--part" "--part bogus" "abc" "0" "--part random 3 4"; do
  # shellcheck disable=SC2086
  out=$(bash "$campaign" $args 2>&1); rc=$?
  [ "$rc" -eq 2 ] || { echo "FAIL: '$args': exit $rc, not 2: $out"; failures=$((failures + 1)); }
  printf '%s\n' "$out" | grep -q "^virtual campaign: " || { echo "FAIL: '$args': no message: $out"; failures=$((failures + 1)); }
done
[ $failures -eq 0 ] && echo "virtual-campaign: --help and 6 bad command lines refused"
exit $failures
