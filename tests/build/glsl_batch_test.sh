#!/bin/sh
# glsl_batch_test.sh GLSL_BATCH GLSLANG_VALIDATOR SOURCE_DIR WORK_DIR
#
# The build's shader compiler (tools/build/glsl_batch.cpp) against glslangValidator: the
# same bytes for variants like the build's (defines, an include folder, both kinds of
# target environment), outputs in folders not made yet, and a compile error, a module the
# validator rejects and a bad jobs line each fail with a message and leave no output.
set -u
batch=$1 glslang=$2 src=$3 work=$4
failures=0
fail() { printf 'FAIL: %s\n' "$*"; failures=$((failures + 1)); }
rm -rf "$work"
mkdir -p "$work"
tab=$(printf '\t')

# name env validate source defines-and-includes... : one job, and the same with glslangValidator.
n=0
same() {
  name=$1 env=$2 validate=$3 source=$4; shift 4
  n=$((n + 1))
  "$glslang" -V --quiet --target-env "$env" "$@" -o "$work/$name.reference.spv" "$source" ||
    fail "$name: glslangValidator failed"
  line="$work/$name.spv$tab$env$tab$validate$tab$source"
  for arg in "$@"; do line="$line$tab$arg"; done
  printf '%s\n' "$line" >>"$work/same.txt"
}
same getcoord spirv1.3 vulkan1.1 "$src/tests/exec/shaders/getcoord.comp" -DET=float16_t -DUSE=gl_MatrixUseA -DR=16 -DC=32
same perelem spirv1.6 vulkan1.3 "$src/tests/exec/shaders/perelem.comp" -DET=float -DUSE=gl_MatrixUseAccumulator -DR=8 -DC=8 -DOP=3
same virtual spirv1.6 vulkan1.3 "$src/tests/virtual/shaders/elements.comp" "-I$src/tests/exec/shaders" -DET=float16_t \
  -DUSE=gl_MatrixUseB -DR=16 -DC=16
same attention vulkan1.3 vulkan1.3 "$src/samples/attention/shaders/attention.comp" -DHEAD_DIM=32 -DK_TRANSPOSE
"$batch" "$work/same.txt" || fail "glsl-batch failed on the jobs glslangValidator compiles ($?)"
for reference in "$work"/*.reference.spv; do
  name=$(basename "$reference" .reference.spv)
  cmp -s "$reference" "$work/$name.spv" || fail "$name: glsl-batch's module differs from glslangValidator's"
done
[ "$(ls "$work"/*.reference.spv | wc -l)" -eq $n ] || fail "not every reference module was made"

# Failures: each exits 1 with a message and writes nothing for its job.
printf '#version 450\nlayout(local_size_x = 1) in;\nvoid main() { no_such_function(); }\n' >"$work/bad.comp"
printf '#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n' >"$work/good.comp"
check_failure() {  # what expected-message jobs-file [options]
  what=$1 message=$2 jobs=$3; shift 3
  "$batch" "$@" "$jobs" >"$work/out.txt" 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "$what: exit $rc, not 1"
  grep -q "$message" "$work/out.txt" || fail "$what: no '$message' in: $(cat "$work/out.txt")"
}
printf '%s\n' "$work/bad.spv${tab}spirv1.3$tab-$tab$work/bad.comp" "$work/after.spv${tab}spirv1.3$tab-$tab$work/good.comp" >"$work/bad.txt"
check_failure "a compile error" "no_such_function" "$work/bad.txt"
[ ! -e "$work/bad.spv" ] || fail "a compile error left an output"
[ ! -e "$work/after.spv" ] || fail "the job after a failure ran without --keep-going"
check_failure "a compile error, --keep-going" "no_such_function" "$work/bad.txt" --keep-going
[ -s "$work/after.spv" ] || fail "--keep-going did not compile the job after a failure"
printf '%s\n' "$work/val.spv${tab}spirv1.6${tab}vulkan1.0$tab$work/good.comp" >"$work/val.txt"
check_failure "a module the validator rejects" "spirv-val (vulkan1.0) rejects the module" "$work/val.txt"
[ ! -e "$work/val.spv" ] || fail "a rejected module was written"
# An output folder that does not exist yet is made (Ninja makes it first; Make does not).
printf '%s\n' "$work/new/folder/good.spv${tab}spirv1.3${tab}vulkan1.1$tab$work/good.comp" >"$work/folder.txt"
"$batch" "$work/folder.txt" && [ -s "$work/new/folder/good.spv" ] && [ ! -e "$work/new/folder/good.spv.tmp" ] ||
  fail "an output in a folder not made yet was not written whole"
printf '%s\n' "$work/x.spv${tab}spirv1.3$tab-$tab$work/good.comp$tab-O" >"$work/arg.txt"
"$batch" "$work/arg.txt" >"$work/out.txt" 2>&1
[ $? -eq 2 ] && grep -q "unknown argument '-O'" "$work/out.txt" || fail "a bad jobs line: $(cat "$work/out.txt")"

[ $failures -eq 0 ] && echo "glsl-batch: $n modules as glslangValidator makes them; compile, validation and jobs-file errors fail"
exit $failures
