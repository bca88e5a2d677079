#!/bin/sh
# lowering_matches_linux.sh LINUX_LOWER WINE WINDOWS_LOWER LINUX_BUILD WORK_DIR [JOBS]
#
# Every test module of the Linux build (its .spv files under tests/passes/shaders
# and shaders/), lowered by the Linux coopmat-lower and by coopmat-lower.exe under
# Wine with the same options: both succeed with byte-identical output, or both
# refuse. The option sets cover the portable path and the register paths of two
# driver families. Each side lowers through `coopmat-lower --batch`, JOBS processes
# of it: a Wine process start costs 60-150 ms, one per lowering took 4-8 minutes.
# (tests/passes/cli_test.sh shows that --batch lowers as single commands do.)
set -u
linux=$1 wine=$2 windows=$3 build=$4 work=$5 jobs=${6:-$(nproc)}
rm -rf "$work"
mkdir -p "$work/linux" "$work/windows"
modules=$(find "$build/tests/passes/shaders" "$build/shaders" -name '*.spv' 2>/dev/null | sort)
[ -n "$modules" ] || { echo "FAIL: no test modules under $build (build the Linux shader targets first)"; exit 1; }

options() {
  case $1 in
    portable) ;;
    lavapipe) echo "--builtin-layouts lavapipe:8 --subgroup-sizes 8 --matrix-properties 8x8x8:f16,f16,f16,f16" \
                   "--matrix-properties 8x8x8:f16,f16,f32,f32 --matrix-properties 8x8x8:u8,u8,u32,u32" \
                   "--matrix-properties 8x8x8:s8,s8,s32,s32" ;;
    radv) echo "--builtin-layouts radv-gfx11:32 --subgroup-sizes 32 --matrix-properties 16x16x16:f16,f16,f16,f16" \
               "--matrix-properties 16x16x16:f16,f16,f32,f32" ;;
  esac
}
# One lowering per line: MODULE -o SIDE/NAME.out OPTIONS (NAME: the module's path and the
# option set). awk, not a loop of subshells: thousands of those took 13 s.
printf '%s\n' "$modules" | awk -v lavapipe="$(options lavapipe)" -v radv="$(options radv)" '{
  name = $0; gsub("/", "_", name)
  print $0 " -o @SIDE@/" name ".portable.out"
  print $0 " -o @SIDE@/" name ".lavapipe.out " lavapipe
  print $0 " -o @SIDE@/" name ".radv.out " radv
}' >"$work/commands.txt"
lowerings=$(wc -l <"$work/commands.txt")
split -n "l/$jobs" "$work/commands.txt" "$work/part."

# One wineserver for the whole run: started per process, it exits between them and
# a process starting just then loses its connection.
wineserver=$(dirname "$(readlink -f "$(command -v "$wine")")")/../lib/x86_64-linux-gnu/wine/wineserver
[ -x "$wineserver" ] || wineserver=$(command -v wineserver || echo /usr/lib/x86_64-linux-gnu/wine/wineserver)
"$wine" cmd /c exit >/dev/null 2>&1  # makes the prefix on first use
"$wineserver" -w  # the server that made it has gone: the persistent one takes over
"$wineserver" -p
trap '"$wineserver" -k' EXIT

# run_side SIDE COMMAND...: every part as one batch, JOBS at once; SIDE/statuses.txt
# gets "NAME STATUS" per lowering the batch reported (Wine writes CRLF).
run_side() {
  side=$1; shift
  for part in "$work"/part.*; do
    sed "s|@SIDE@|$work/$side|" "$part" >"$work/$side/$(basename "$part")"
    (
      for _ in 1 2; do
        "$@" --batch "$work/$side/$(basename "$part")" >"$work/$side/$(basename "$part").out" 2>"$work/$side/$(basename "$part").err"
        # Wine itself failing to start the process (seen once in 2900 starts) is not an answer of the tool.
        grep -q '^wine client error' "$work/$side/$(basename "$part").err" || break
      done
    ) &
  done
  wait
  cat "$work/$side"/part.*.out | tr -d '\r' |
    sed -n 's|^exit \([0-9][0-9]*\): .* -o [^ ]*/\([^ /]*\)\.out.*$|\1 \2|p' >"$work/$side/statuses.txt"
  # What each output holds (one process for all: a cmp per lowering took seconds).
  (cd "$work/$side" && find . -maxdepth 1 -name '*.out' ! -name 'part.*' | sed 's|^\./||' | xargs -r sha256sum) |
    sed 's/\.out$//' >"$work/$side/hashes.txt"
}
start=$(date +%s)
run_side linux "$linux"
middle=$(date +%s)
run_side windows "$wine" "$windows"
end=$(date +%s)

# Every lowering of the list, with what each side said of it ("missing": the batch
# stopped before it, a crash) and whether both outputs hold the same bytes.
sed 's|^[^ ]* -o @SIDE@/\([^ ]*\)\.out.*$|\1|' "$work/commands.txt" |
  awk -v dir="$work" '
    FILENAME == dir "/linux/statuses.txt" { linux[$2] = $1; next }
    FILENAME == dir "/windows/statuses.txt" { windows[$2] = $1; next }
    FILENAME == dir "/linux/hashes.txt" { linux_hash[$2] = $1; next }
    FILENAME == dir "/windows/hashes.txt" { windows_hash[$2] = $1; next }
    {
      l = $1 in linux ? linux[$1] : "missing"; w = $1 in windows ? windows[$1] : "missing"
      if (l == "missing" || w == "missing") print "FAIL: " $1 ": no answer (Linux " l ", Windows " w ")"
      else if (l != 0 && w != 0) print "refused"
      else if (l == 0 && w == 0 && ($1 in linux_hash) && linux_hash[$1] == windows_hash[$1]) print "same"
      else print "FAIL: " $1 ": Linux exit " l ", Windows exit " w (l == 0 && w == 0 ? ", outputs differ" : "")
    }' "$work/linux/statuses.txt" "$work/windows/statuses.txt" "$work/linux/hashes.txt" "$work/windows/hashes.txt" - \
  >"$work/results.txt"
same=$(grep -c '^same$' "$work/results.txt")
refused=$(grep -c '^refused$' "$work/results.txt")
grep '^FAIL' "$work/results.txt" | head -n 20
differ=$(grep -c '^FAIL' "$work/results.txt")
[ "$differ" -eq 0 ] || echo "(each side's messages: $work/linux/part.*.err, $work/windows/part.*.err)"
echo "$((same + refused + differ)) of $lowerings lowerings ($(echo "$modules" | wc -l) modules x 3 option sets," \
     "$jobs batches a side: Linux $((middle - start)) s, Wine $((end - middle)) s):" \
     "$same byte-identical, $refused refused by both, $differ differ or unanswered" | tee "$work/summary.txt"
[ "$differ" -eq 0 ] && [ "$same" -gt 0 ] && [ "$((same + refused))" -eq "$lowerings" ]
