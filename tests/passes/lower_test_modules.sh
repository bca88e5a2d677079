#!/bin/sh
# lower_test_modules.sh LOWER MODULE_DIR PROFILE_DIR WORK_DIR JOBS PROFILE...
#
# Every test module under MODULE_DIR (the execution suite's, compiled in the main
# build) lowered by LOWER (scripts/test: the AddressSanitizer/UBSan coopmat-lower)
# with the portable path, the pipeline-time path (--pending) and the register
# layouts, subgroup sizes, matrix properties and shared memory of each PROFILE
# (tests/virtual/profiles/PROFILE.txt). A module may be refused (exit 1); a crash,
# a sanitizer report (it aborts the batch) or a lowering left unanswered fails.
set -u
lower=$1 modules_dir=$2 profiles=$3 work=$4 jobs=$5
shift 5
rm -rf "$work" && mkdir -p "$work/out"
modules=$(find "$modules_dir" -name '*.spv' | sort)
[ -n "$modules" ] || { echo "FAIL: no modules under $modules_dir (build coopmat_exec_shaders first)"; exit 1; }

# profile_options NAME: the command-line options that describe the profile's device.
profile_options() {
  file=$profiles/$1.txt
  [ -f "$file" ] || { echo "FAIL: no profile $file" >&2; return 1; }
  grep '^layout ' "$file" >"$work/$1.layouts"
  awk -v layouts="$work/$1.layouts" '
    $1 == "subgroup_sizes" { sizes = $2; for (i = 3; i <= NF; ++i) sizes = sizes "," $i }
    $1 == "shared_memory" { shared = $2 }
    $1 == "flexible_max_dimension" { flexible = " --flexible-dimensions " $2 }
    $1 == "matrix" { matrices = matrices " --matrix-properties " $2 "x" $3 "x" $4 ":" $5 "," $6 "," $7 "," $8 }
    END { printf "--layouts %s --subgroup-sizes %s --max-shared-memory %s%s%s\n", layouts, sizes, shared, flexible, matrices }' "$file"
}

# One lowering per line (MODULE -o OUT OPTIONS), as coopmat-lower --batch reads them.
: >"$work/commands.txt"
add_option_set() {
  name=$1 options=$2
  printf '%s\n' "$modules" | awk -v name="$name" -v options="$options" -v out="$work/out" \
    '{ file = $0; gsub("/", "_", file); print $0 " -o " out "/" file "." name " " options }' >>"$work/commands.txt"
}
add_option_set portable ""
add_option_set pending "--pending"
for profile in "$@"; do
  options=$(profile_options "$profile") || exit 1
  add_option_set "$profile" "$options"
done
lowerings=$(wc -l <"$work/commands.txt")
split -n "l/$jobs" "$work/commands.txt" "$work/part."

start=$(date +%s)
status=0
pids=
for part in "$work"/part.*; do
  "$lower" --batch "$part" >"$part.out" 2>"$part.err" &
  pids="$pids $!"
done
# A batch's status: 0 or 1 (a refused module); anything else is a crash or a sanitizer abort.
for pid in $pids; do
  wait "$pid" || { code=$?; [ "$code" -eq 1 ] || { echo "FAIL: a batch ended with status $code"; status=1; }; }
done
end=$(date +%s)
answered=$(cat "$work"/part.*.out | grep -c '^exit [01]: ')
lowered=$(cat "$work"/part.*.out | grep -c '^exit 0: ')
if grep -l -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$work"/part.*.err >/dev/null; then
  grep -h -A 20 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$work"/part.*.err | head -n 60
  status=1
fi
echo "$answered of $lowerings lowerings answered ($(echo "$modules" | wc -l) modules x $((2 + $#)) option sets," \
     "$jobs batches, $((end - start)) s): $lowered lowered, $((answered - lowered)) refused"
[ "$answered" -eq "$lowerings" ] || { echo "FAIL: $((lowerings - answered)) lowerings unanswered (see $work/part.*.err)"; status=1; }
[ "$lowered" -gt 0 ] || { echo "FAIL: no module lowered"; status=1; }
exit $status
