#!/bin/sh
# cli_test.sh COOPMAT_LOWER SHADER_DIR WORK_DIR: coopmat-lower succeeds on a good
# module and fails cleanly (non-zero exit, "coopmat-lower:" message, no crash)
# on every class of bad input.
set -u
tool=$1 shaders=$2 work=$3
mkdir -p "$work"
good="$shaders/reduce.spirv1.3.spv"
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_error NAME FILE MESSAGE-FRAGMENT [ARGS...]
expect_error() {
  name=$1 file=$2 fragment=$3; shift 3
  "$tool" "$file" -o "$work/out.spv" "$@" 2>"$work/err.txt" >/dev/null
  rc=$?
  if [ $rc -eq 0 ]; then fail "$name: exit 0"; return; fi
  if [ $rc -ge 128 ]; then fail "$name: crashed with status $rc"; return; fi
  grep -q "^coopmat-lower: " "$work/err.txt" || fail "$name: no coopmat-lower: prefix: $(cat "$work/err.txt")"
  grep -q "$fragment" "$work/err.txt" || fail "$name: message lacks '$fragment': $(cat "$work/err.txt")"
}

# Good input: exit 0, a valid output, one --stats line.
"$tool" "$good" -o "$work/good.spv" --validate --stats >"$work/stats.txt" 2>"$work/err.txt" || fail "good module: $(cat "$work/err.txt")"
[ "$(wc -l <"$work/stats.txt")" -eq 1 ] || fail "--stats printed $(wc -l <"$work/stats.txt") lines"
grep -q "^ops lowered 8 .*words in [0-9]*, words out [0-9]*, .* us, scratch 1024 bytes per subgroup" "$work/stats.txt" ||
  fail "unexpected --stats line: $(cat "$work/stats.txt")"
[ -s "$work/good.spv" ] || fail "no output written"

# Malformed inputs, one per class.
: >"$work/empty.spv"
expect_error empty "$work/empty.spv" "shorter than the 5-word"
head -c 12 "$good" >"$work/short.spv"
expect_error short-header "$work/short.spv" "shorter than the 5-word"
head -c 202 "$good" >"$work/odd.spv"
expect_error not-word-aligned "$work/odd.spv" "not a multiple of 4"
head -c 400 "$good" >"$work/truncated.spv"
expect_error truncated "$work/truncated.spv" "runs past the end"
printf 'this is not SPIR-V at all!!!' >"$work/text.spv"
expect_error bad-magic "$work/text.spv" "bad magic"
{ head -c 20 "$good"; printf '\000\000\000\000'; tail -c +25 "$good"; } >"$work/zero.spv"
expect_error word-count-zero "$work/zero.spv" "word count 0"
{ head -c 20 "$good"; printf '\377\377\001\000'; tail -c +25 "$good"; } >"$work/opcode.spv"
expect_error unknown-opcode "$work/opcode.spv" "unknown opcode"
{ head -c 12 "$good"; printf '\005\000\000\000'; tail -c +17 "$good"; } >"$work/bound.spv"
expect_error id-past-bound "$work/bound.spv" "outside the id bound"
expect_error missing-file "$work/does-not-exist.spv" "cannot open"
expect_error bad-option "$good" "unknown option" --frobnicate
expect_error bad-subgroup "$good" "min-subgroup-size" --min-subgroup-size zero
expect_error shared-limit "$good" "512 bytes of shared memory" --max-shared-memory 512

expect_error bad-properties "$good" "matrix-properties" --matrix-properties 8x8:f16,f16,f32,f32
expect_error bad-component "$good" "matrix-properties" --matrix-properties 8x8x8:f16,f16,f32,q7
# The encoded floats by the layout text's names (RADV GFX12's list).
"$tool" "$good" -o "$work/encoded.spv" --matrix-properties 16x16x16:bf16,bf16,f32,f32 \
  --matrix-properties 16x16x16:e4m3,e4m3,f32,f32 --matrix-properties 16x16x16:e5m2,e5m2,f32,f32 2>"$work/err.txt" ||
  fail "bf16/fp8 matrix properties: $(cat "$work/err.txt")"

# --matrix-properties: lavapipe's list lets Acc f32 -> A f16 convert through an f16
# Accumulator; without it the f16 Accumulator type never appears.
mixed="$shaders/convert_mixed.spirv1.3.spv"
lavapipe="--matrix-properties 8x8x8:f16,f16,f16,f16 --matrix-properties 8x8x8:f16,f16,f32,f32
          --matrix-properties 8x8x8:u8,u8,u32,u32 --matrix-properties 8x8x8:s8,s8,s32,s32"
# shellcheck disable=SC2086
"$tool" "$mixed" -o "$work/mixed_lvp.spv" --validate $lavapipe 2>"$work/err.txt" || fail "lavapipe list: $(cat "$work/err.txt")"
"$tool" "$mixed" -o "$work/mixed_none.spv" --validate 2>"$work/err.txt" || fail "no list: $(cat "$work/err.txt")"
# shellcheck disable=SC2086
"$tool" "$mixed" -o "$work/mixed_flex.spv" --validate $lavapipe --flexible-dimensions 1024 2>"$work/err.txt" ||
  fail "flexible: $(cat "$work/err.txt")"
[ "$(wc -c <"$work/mixed_lvp.spv")" -ne "$(wc -c <"$work/mixed_none.spv")" ] || fail "--matrix-properties changed nothing"
[ "$(wc -c <"$work/mixed_flex.spv")" -ne "$(wc -c <"$work/mixed_lvp.spv")" ] || fail "--flexible-dimensions changed nothing"

# --batch: each line lowers as that command alone does (byte for byte), a refused
# line does not stop the others, one "exit STATUS: LINE" each, exit 1 for a failure.
# shellcheck disable=SC2086
{ echo "$mixed -o $work/batch_lvp.spv --validate" $lavapipe
  echo "$work/does-not-exist.spv -o $work/batch_missing.spv"
  echo
  echo "$mixed -o $work/batch_none.spv --validate"; } >"$work/batch.txt"
"$tool" --batch "$work/batch.txt" >"$work/batch.out" 2>"$work/err.txt"
rc=$?
[ $rc -eq 1 ] || fail "--batch with a refused line: exit $rc"
grep -q "^coopmat-lower: cannot open $work/does-not-exist.spv" "$work/err.txt" || fail "--batch: no message: $(cat "$work/err.txt")"
[ "$(sed 's/: .*//' "$work/batch.out" | tr '\n' ' ')" = "exit 0 exit 1 exit 0 " ] || fail "--batch printed: $(cat "$work/batch.out")"
cmp -s "$work/batch_lvp.spv" "$work/mixed_lvp.spv" || fail "--batch lowered with the lavapipe list differently"
cmp -s "$work/batch_none.spv" "$work/mixed_none.spv" || fail "--batch lowered the second line with the first line's options"
echo "$good -o $work/batch_good.spv" >"$work/batch_ok.txt"
"$tool" --batch "$work/batch_ok.txt" >/dev/null 2>"$work/err.txt" || fail "--batch of one good line: $(cat "$work/err.txt")"
: >"$work/batch_empty.txt"
echo "--batch $work/batch_ok.txt" >"$work/batch_nested.txt"
for bad in "batch_empty.txt:has no commands" "batch_nested.txt:--batch LIST stands alone"; do
  "$tool" --batch "$work/${bad%%:*}" >/dev/null 2>"$work/err.txt" && fail "--batch ${bad%%:*}: exit 0"
  grep -q "^coopmat-lower: .*${bad#*:}" "$work/err.txt" || fail "--batch ${bad%%:*}: $(cat "$work/err.txt")"
done

# --specialize takes what dump_dir's .specialization.txt writes: values of any width
# as unsigned integers (2^40 for an int64, a double's bits), and negative integers.
# The frozen constants must carry them whole: OpConstant (opcode 43) words in the output.
wide="$shaders/spec_wide.spirv1.6.spv"
"$tool" "$wide" -o "$work/wide.spv" --validate --specialize 0=8 --specialize 3=1099511627776 --specialize 4=-5 \
  --specialize 5=4612811918334230528 2>"$work/err.txt" || fail "--specialize of 64-bit values: $(cat "$work/err.txt")"
words=$(od -An -tx4 -v "$work/wide.spv" | tr -s ' \n' ' ')
for constant in "0005002b [0-9a-f]* [0-9a-f]* 00000000 00000100 " "0004002b [0-9a-f]* [0-9a-f]* fffffffb " \
                "0005002b [0-9a-f]* [0-9a-f]* 00000000 40040000 "; do
  echo "$words" | grep -q " $constant" || fail "--specialize: no constant '$constant' in the output"
done
expect_error bad-specialize "$wide" "bad value 1.5x" --specialize 5=1.5x
expect_error too-wide-specialize "$wide" "bad value 18446744073709551616" --specialize 3=18446744073709551616

# Each value as its constant's type reads it (review of 2026-12-07: values were cut to the
# constant's width, and a decimal was a 32-bit float whatever the constant): a decimal for
# the double REAL (SpecId 5) is that double; too wide a value, or a decimal for an
# integer, is refused; a SpecId the module lacks is said and changes nothing.
"$tool" "$wide" -o "$work/wide_real.spv" --validate --specialize 5=1.5 2>"$work/err.txt" ||
  fail "--specialize 5=1.5: $(cat "$work/err.txt")"
od -An -tx4 -v "$work/wide_real.spv" | tr -s ' \n' ' ' | grep -q " 0005002b [0-9a-f]* [0-9a-f]* 00000000 3ff80000 " ||
  fail "--specialize 5=1.5 did not freeze the double 1.5"
expect_usage() {
  name=$1 fragment=$2; shift 2
  "$tool" "$@" >"$work/out.txt" 2>"$work/err.txt"
  rc=$?
  [ $rc -eq 2 ] || fail "$name: exit $rc, not 2"
  grep -q "^coopmat-lower: .*$fragment" "$work/err.txt" || fail "$name: no '$fragment': $(cat "$work/err.txt")"
  grep -q "^usage: coopmat-lower" "$work/err.txt" || fail "$name: no usage after the message"
}
expect_usage int-too-wide "does not fit its 32-bit integer" "$wide" -o "$work/x.spv" --specialize 4=4294967296
expect_usage int-too-negative "does not fit its 32-bit signed integer" "$wide" -o "$work/x.spv" --specialize 4=-2147483649
expect_usage decimal-for-int "is an integer: a value with a '.'" "$wide" -o "$work/x.spv" --specialize 3=2.5
expect_usage two-values "given two values" "$wide" -o "$work/x.spv" --specialize 0=8 --specialize 0=16
"$tool" "$wide" -o "$work/wide_99.spv" --specialize 99=5 2>"$work/err.txt" || fail "--specialize 99=5: $(cat "$work/err.txt")"
grep -q "^coopmat-lower: .*no specialization constant has SpecId 99" "$work/err.txt" || fail "--specialize 99: not said"

# Command-line mistakes say what is wrong, then the usage, exit 2; --help is on stdout.
expect_usage no-output-file "-o needs a file" "$good" -o
expect_usage nothing-to-write "nothing to write" "$good" --stats
expect_usage second-input "a second input" "$good" "$good" -o "$work/x.spv"
expect_usage same-outputs "name the same file" "$good" -o "$work/x.out" --glsl "$work/x.out"
expect_usage batch-alone "--batch needs a LIST" --batch
expect_usage subgroup-size "power of two" "$good" -o "$work/x.spv" --subgroup-sizes 32,7
expect_usage builtin-size "has no layouts at subgroup size 16" "$good" -o "$work/x.spv" --builtin-layouts radv-gfx11:16
# Standard output carries --explain's, --stats' and --batch's text: a module written there
# too would come out mixed with it, so that is refused; alone, or with /dev/null, it is not.
expect_usage explain-to-stdout "/dev/stdout is standard output, where --explain writes" "$good" -o /dev/stdout --explain
"$tool" "$good" -o "$work/same.spv" --stats >"$work/same.spv" 2>"$work/err.txt"
rc=$?
[ $rc -eq 2 ] || fail "-o naming the file standard output goes to, with --stats: exit $rc"
grep -q "same.spv is standard output, where --stats writes" "$work/err.txt" || fail "-o the stdout file: $(cat "$work/err.txt")"
"$tool" "$good" -o "$work/plain.spv" 2>"$work/err.txt" || fail "-o plain.spv: $(cat "$work/err.txt")"
"$tool" "$good" -o /dev/stdout 2>"$work/err.txt" | cat >"$work/stdout.spv" || fail "-o /dev/stdout into a pipe: $(cat "$work/err.txt")"
cmp -s "$work/stdout.spv" "$work/plain.spv" || fail "-o /dev/stdout into a pipe wrote other bytes than -o FILE"
# A descriptor named as a file is written in place, whatever it is open on (renaming over
# /dev/stdout replaced it, as root, with a regular file). Tried as /proc/self/fd/1, where a
# regression fails to create its partial file instead; through any other link, the file
# it leads to is replaced and the link kept.
rm -f "$work/stdout.spv" "$work/link.spv" "$work/link-target.spv"
"$tool" "$good" -o /proc/self/fd/1 >"$work/stdout.spv" 2>"$work/err.txt" || fail "-o /proc/self/fd/1 into a file: $(cat "$work/err.txt")"
cmp -s "$work/stdout.spv" "$work/plain.spv" || fail "-o /proc/self/fd/1 into a file wrote other bytes than -o FILE"
ls "$work"/*.coopmat-lower-partial /proc/self/fd/*.coopmat-lower-partial 2>/dev/null && fail "a partial file was left"
echo old >"$work/link-target.spv"
ln -s link-target.spv "$work/link.spv"
"$tool" "$good" -o "$work/link.spv" 2>"$work/err.txt" || fail "-o a link: $(cat "$work/err.txt")"
[ -L "$work/link.spv" ] || fail "-o a link replaced the link"
cmp -s "$work/link-target.spv" "$work/plain.spv" || fail "-o a link did not write the file it leads to"
"$tool" "$good" -o /dev/null --explain >/dev/null 2>"$work/err.txt" || fail "-o /dev/null --explain >/dev/null: $(cat "$work/err.txt")"
{ echo "--help"; echo "$good -o /dev/stdout"; echo "$good -o $work/batch_after_help.spv"; } >"$work/batch_help.txt"
"$tool" --batch "$work/batch_help.txt" >"$work/batch.out" 2>"$work/err.txt"
[ "$(sed 's/: .*//' "$work/batch.out" | tr '\n' ' ')" = "exit 2 exit 2 exit 0 " ] || fail "--batch with --help and -o /dev/stdout: $(cat "$work/batch.out")"
grep -q "^coopmat-lower: --help in a --batch line lowers nothing" "$work/err.txt" || fail "--batch --help: $(cat "$work/err.txt")"
grep -q "where --batch writes each line's status" "$work/err.txt" || fail "--batch -o /dev/stdout: $(cat "$work/err.txt")"
"$tool" --help >"$work/help.txt" 2>/dev/null || fail "--help: not exit 0"
grep -q "^usage: coopmat-lower" "$work/help.txt" || fail "--help: no usage on stdout"
# --flexible-dimensions takes a following argument as its maximum only when it is a number.
cp "$good" "$work/1.spv"
(cd "$work" && "$tool" --flexible-dimensions 1.spv -o flex1.spv) 2>"$work/err.txt" ||
  fail "--flexible-dimensions 1.spv: $(cat "$work/err.txt")"

# Folders where files belong are refused, not an abort; a batch goes on past one.
mkdir -p "$work/a-folder.spv"
expect_error folder-input "$work/a-folder.spv" "it is a folder"
expect_error folder-layouts "$good" "cannot be read" --layouts "$work/a-folder.spv"
{ echo "$work/a-folder.spv -o $work/batch_folder.spv"; echo "$good -o $work/batch_after.spv"; } >"$work/batch_folder.txt"
"$tool" --batch "$work/batch_folder.txt" >"$work/batch.out" 2>"$work/err.txt"
[ "$(sed 's/: .*//' "$work/batch.out" | tr '\n' ' ')" = "exit 1 exit 0 " ] || fail "--batch past a folder: $(cat "$work/batch.out" "$work/err.txt")"

# Layouts from two sources that disagree on a key are refused (the first used to win);
# a file with a UTF-8 byte order mark reads as without.
acc="layout type=f32 use=Acc rows=8 cols=8 subgroup=8 length=8"
echo "$acc lane=c0,c1,c2 index=r0,r1,r2" >"$work/layouts_a.txt"
echo "$acc lane=r0,r1,r2 index=c0,c1,c2" >"$work/layouts_b.txt"
expect_error layouts-conflict "$good" "a second, different layout for .*(the first from $work/layouts_a.txt)" \
  --layouts "$work/layouts_a.txt" --layouts "$work/layouts_b.txt"
"$tool" "$good" -o "$work/x.spv" --layouts "$work/layouts_a.txt" --layouts "$work/layouts_a.txt" 2>"$work/err.txt" ||
  fail "the same layouts twice: $(cat "$work/err.txt")"
{ printf '\357\273\277'; cat "$work/layouts_a.txt"; } >"$work/layouts_bom.txt"
"$tool" "$good" -o "$work/x.spv" --layouts "$work/layouts_bom.txt" 2>"$work/err.txt" ||
  fail "a layouts file with a byte order mark: $(cat "$work/err.txt")"

# A command that fails leaves its outputs as they were: -o is written only once --glsl is
# made too, each through a temporary file renamed into place.
cp "$good" "$work/keep.spv"
"$tool" "$work/keep.spv" -o "$work/keep.spv" --glsl "$work/no-such-folder/x.glsl" 2>/dev/null && fail "--glsl to a missing folder: exit 0"
cmp -s "$work/keep.spv" "$good" || fail "a failed command replaced its -o file"
ls "$work"/*.coopmat-lower-partial >/dev/null 2>&1 && fail "a temporary file was left behind"

# A shape specialized to 0 is refused by name (lavapipe crashes on such a matrix).
expect_error zero-dimension "$wide" "has 0 \(Rows\|Columns\)" --specialize 0=0

# A device is written as it is (no temporary file beside /dev/null).
"$tool" "$good" -o /dev/null --stats >/dev/null 2>"$work/err.txt" || fail "-o /dev/null: $(cat "$work/err.txt")"
expect_error output-folder "$good" "it is a folder" --glsl "$work/a-folder.spv"

# An input that does not validate is named as such under --validate, not blamed on the lowering.
expect_error invalid-input "$shaders/convert_type.glsl450.spv" "the input module does not validate" --validate

[ $failures -eq 0 ] && echo "all CLI checks passed"
exit $failures
