#!/bin/sh
# glsl_roundtrip.sh COOPMAT_LOWER GLSL_BATCH IN_DIR OUT_DIR MODE [ENVS]
#
# For every execution-test module IN_DIR/exec/<name>.<env>.spv: lower it with
# coopmat-lower (MODE portable: no register layouts; MODE register: lavapipe's
# built-in layouts and matrix properties), turn the result into Vulkan GLSL
# (--glsl, SPIRV-Cross) and compile that GLSL back with glslang (GLSL_BATCH: the build's
# glsl-batch, one process per core for all modules) for the same SPIR-V version into
# OUT_DIR/exec/<name>.<env>.spv. The execution tests then run those modules (which need
# no lowering any more) against the same CPU reference.
# ENVS (comma-separated, e.g. spirv1.3): only the modules of those target environments.
# A module with nothing to lower (KHR or NV only) is copied as it is.
set -u

# One module (run in parallel by the main part below): prints "glsl <file> <env>" (its GLSL
# is written, to be compiled), "copied" or "FAIL ...".
if [ "$1" = --one ]; then
  lower=$2 out=$3 mode=$4 spv=$5
  case $mode in
    portable) options="" ;;
    register) options="--builtin-layouts lavapipe:8 --flexible-dimensions
                       --matrix-properties 8x8x8:f16,f16,f16,f16 --matrix-properties 8x8x8:f16,f16,f32,f32
                       --matrix-properties 8x8x8:u8,u8,u32,u32 --matrix-properties 8x8x8:s8,s8,s32,s32" ;;
  esac
  file=$(basename "$spv")
  env=$(printf '%s' "$file" | sed -n 's/.*\.\(spirv1\.[0-9]\)\.spv$/\1/p')
  work="$out/work/${file%.spv}"
  # shellcheck disable=SC2086
  "$lower" "$spv" --explain --glsl "$work.glsl" $options >"$work.txt" 2>"$work.err"
  rc=$?
  if grep -q '^0 operations lowered' "$work.txt"; then
    cp "$spv" "$out/exec/$file" && echo copied
  elif [ $rc -ne 0 ]; then
    echo "FAIL $file: coopmat-lower: $(cat "$work.err")"
  else
    echo "glsl $file $env"
  fi
  exit 0
fi

lower=$1 glsl_batch=$2 in=$3 out=$4 mode=$5 envs=${6:-spirv1.3,spirv1.6}
case $mode in
  portable | register) ;;
  *) echo "glsl_roundtrip.sh: mode must be portable or register" >&2; exit 2 ;;
esac
rm -rf "$out"
mkdir -p "$out/exec" "$out/work"
# Left out: bfloat16 and fp8 modules (kernel_gla_bf16acc_* too: bfloat16 accumulators). The
# round trip's runs are on lavapipe, which has neither type, and SPIRV-Cross writes the
# lowering's bitcasts of their vectors (packed scratch words) as plain vectors, which glslang
# rejects.
envs_pattern="\.($(printf '%s' "$envs" | sed 's/\./\\./g; s/,/|/g'))\.spv\$"
ls "$in"/exec/*.spv | grep -v -E '_(bf16|e4m3|e5m2)(acc)?[_.]' | grep -E "$envs_pattern" |
  xargs -P "$(nproc)" -n 1 sh "$0" --one "$lower" "$out" "$mode" >"$out/results.txt"
# The GLSL back to SPIR-V: a jobs list per core (glsl-batch's format: output, target
# environment, no validation, source), each list one process.
tab=$(printf '\t')
grep '^glsl ' "$out/results.txt" | while read -r _ file env; do
  printf '%s\t%s\t-\t%s\n' "$out/exec/$file" "$env" "$out/work/${file%.spv}.glsl"
done >"$out/jobs.txt"
split -n "r/$(nproc)" -d "$out/jobs.txt" "$out/jobs."
for jobs in "$out"/jobs.[0-9]*; do
  "$glsl_batch" --keep-going "$jobs" >"$jobs.log" 2>&1 &
done
wait
while IFS="$tab" read -r module _ _ glsl; do
  if [ -f "$module" ]; then
    echo roundtrip
  else
    echo "FAIL $(basename "$module"): glslang rejects the GLSL ($glsl): $(cat "$out"/jobs.*.log | grep -F -A 5 "$glsl" | head -n 6)"
  fi
done <"$out/jobs.txt" >>"$out/results.txt"
grep '^FAIL' "$out/results.txt"
roundtrips=$(grep -c '^roundtrip' "$out/results.txt")
failures=$(grep -c '^FAIL' "$out/results.txt")
echo "$roundtrips modules round-tripped through GLSL ($mode, $envs), $(grep -c '^copied' "$out/results.txt") copied (nothing to lower), $failures failures"
[ "$roundtrips" -gt 0 ] && [ "$failures" -eq 0 ]
