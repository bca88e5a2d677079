#!/bin/sh
# attention_dump_roundtrip.sh ATTENTION GLSLANG WORK_DIR
#
# Runs the attention sample through the layer with dump_dir set, finds the dump
# of its maintenance1 kernel, checks every file a user is told about is there,
# compiles the dumped GLSL back with glslang, and runs the sample again with that
# module in place of its own: it must pass the same CPU-reference check. Then the
# kernel with specialization-constant tiles: every GLSL dumped for it (the module's
# and the pipeline's lowering) compiles back too (its WARP shares a constant_id
# with local_size_x_id, which SPIR-V spells as several constants of one SpecId).
set -u
attention=$1 glslang=$2 work=$3
shaders=$(dirname "$attention")/shaders
kernel=attention_ext_d32
args="--check-only --ways layer --seq 32 --dim 32"
fail() { echo "FAIL: $*"; exit 1; }

rm -rf "$work"
mkdir -p "$work/dump"
# shellcheck disable=SC2086
VK_COOPMAT_MAINTENANCE1_DUMP_DIR="$work/dump" "$attention" $args || fail "attention with dump_dir set"

dump=
for original in "$work"/dump/*.original.spv; do
  cmp -s "$original" "$shaders/$kernel.spv" && dump=${original%.original.spv}
done
[ -n "$dump" ] || fail "no dump of $kernel.spv in $work/dump: $(ls "$work/dump")"
for suffix in .original.spvasm .lowered.spv .lowered.glsl .txt; do
  [ -s "$dump$suffix" ] || fail "dump_dir lacks $(basename "$dump$suffix")"
done
grep -q 'OpCooperativeMatrixReduceEXT' "$dump.original.spvasm" || fail "the disassembly does not show the EXT reduction"
grep -q '^OpCooperativeMatrixReduceEXT %[0-9]* .*: \(register\|portable\) path' "$dump.txt" ||
  fail "the explain file lists no reduction: $(cat "$dump.txt")"

mkdir -p "$work/shaders"
cp "$shaders"/*.spv "$work/shaders/"
"$glslang" -V --quiet -S comp --target-env vulkan1.3 -o "$work/shaders/$kernel.spv" "$dump.lowered.glsl" ||
  fail "glslang rejects $dump.lowered.glsl"
cmp -s "$work/shaders/$kernel.spv" "$shaders/$kernel.spv" && fail "the round trip left the module unchanged"
# shellcheck disable=SC2086
COOPMAT_SAMPLE_SHADER_DIR="$work/shaders" "$attention" $args || fail "attention with the kernel compiled from the dumped GLSL"
echo "attention: the dumped GLSL of $kernel compiles back and passes the sample's check"

mkdir -p "$work/dump_spec"
# shellcheck disable=SC2086
VK_COOPMAT_MAINTENANCE1_DUMP_DIR="$work/dump_spec" "$attention" --check-only --ways spec --seq 32 --dim 32 ||
  fail "attention --ways spec with dump_dir set"
glsl_count=0
for glsl in "$work"/dump_spec/*.glsl; do
  [ -e "$glsl" ] || break
  "$glslang" -V --quiet -S comp --target-env vulkan1.3 -o "$glsl.spv" "$glsl" || fail "glslang rejects $glsl"
  glsl_count=$((glsl_count + 1))
done
# The module's own lowering and the pipeline's.
[ "$glsl_count" -ge 2 ] || fail "expected at least 2 GLSL files for the spec-tiles kernel, found $glsl_count: $(ls "$work/dump_spec")"
echo "attention: all $glsl_count GLSL files dumped for the spec-tiles kernel compile back"
