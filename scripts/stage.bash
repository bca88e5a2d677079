# Sourced by scripts/test, outside and inside the toolchain root: every stage runs with a
# time limit and leaves one line in $STAGE_LOG for the final summary.

# run_stage NAME LIMIT_SECONDS COMMAND...: COMMAND (an executable, not a function) with
# LIMIT_SECONDS to finish; past it, its whole process group is stopped (SIGTERM, then
# SIGKILL 30 s later) and the stage fails. Appends "NAME: passed|FAILED|TIMED OUT, T s"
# to $STAGE_LOG; returns the command's status.
run_stage() {
  local name=$1 limit=$2 start=$SECONDS code=0 result=passed
  shift 2
  timeout --kill-after=30 "$limit" "$@" || code=$?
  if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
    result="TIMED OUT (limit $limit s)"
  elif [ "$code" -ne 0 ]; then
    result="FAILED (exit $code)"
  fi
  echo "stage $name: $result, $((SECONDS - start)) s" | tee -a "$STAGE_LOG" >&2
  return "$code"
}

# note_stage NAME TEXT: a stage that did not run, with why, in the summary.
note_stage() {
  echo "stage $1: $2" | tee -a "$STAGE_LOG" >&2
}

# skipped_tests CTEST_LOG: the tests ctest did not run ("N - name (Skipped)"), one a line.
skipped_tests() {
  [ -f "$1" ] || return 0
  sed -n '/^The following tests did not run:/,/^$/p' "$1" | sed -n 's/^[[:space:]]*[0-9][0-9]* - //p'
}
