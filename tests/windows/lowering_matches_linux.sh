#!/bin/sh
# lowering_matches_linux.sh LINUX_LOWER WINE WINDOWS_LOWER LINUX_BUILD WORK_DIR [JOBS]
#
# Every test module of the Linux build (its .spv files under tests/passes/shaders
# and shaders/), lowered by the Linux coopmat-lower and by coopmat-lower.exe under
# Wine with the same options: both succeed with byte-identical output, or both
# refuse. The option sets cover the portable path and the register paths of two
# driver families.
set -u
if [ "${1:-}" = --one ]; then
  # One lowering (a job of the loop below): prints same, refused or a FAIL line.
  shift
  linux=$1 wine=$2 windows=$3 work=$4 module=$5 set=$6
  case $set in
    portable) options="" ;;
    lavapipe) options="--builtin-layouts lavapipe:8 --subgroup-sizes 8
      --matrix-properties 8x8x8:f16,f16,f16,f16 --matrix-properties 8x8x8:f16,f16,f32,f32
      --matrix-properties 8x8x8:u8,u8,u32,u32 --matrix-properties 8x8x8:s8,s8,s32,s32" ;;
    radv) options="--builtin-layouts radv-gfx11:32 --subgroup-sizes 32
      --matrix-properties 16x16x16:f16,f16,f16,f16 --matrix-properties 16x16x16:f16,f16,f32,f32" ;;
  esac
  name=$(echo "$module" | tr / _).$set
  # shellcheck disable=SC2086
  "$linux" "$module" -o "$work/linux/$name.spv" $options >/dev/null 2>"$work/linux/$name.err"
  linux_rc=$?
  for attempt in 1 2; do
    # shellcheck disable=SC2086
    "$wine" "$windows" "$module" -o "$work/windows/$name.spv" $options >/dev/null 2>"$work/windows/$name.err"
    windows_rc=$?
    # Wine itself failing to start the process (seen once in 2900 starts) is not an answer of the tool.
    grep -q '^wine client error' "$work/windows/$name.err" || break
  done
  if [ $linux_rc -ne 0 ] && [ $windows_rc -ne 0 ]; then
    echo refused
  elif [ $linux_rc -eq 0 ] && [ $windows_rc -eq 0 ] && cmp -s "$work/linux/$name.spv" "$work/windows/$name.spv"; then
    echo same
  else
    echo "FAIL: $module ($set): Linux exit $linux_rc, Windows exit $windows_rc: $(head -c 300 "$work/windows/$name.err")"
  fi
  exit 0
fi

linux=$1 wine=$2 windows=$3 build=$4 work=$5 jobs=${6:-$(nproc)}
rm -rf "$work"
mkdir -p "$work/linux" "$work/windows"
modules=$(find "$build/tests/passes/shaders" "$build/shaders" -name '*.spv' 2>/dev/null | sort)
[ -n "$modules" ] || { echo "FAIL: no test modules under $build (build the Linux shader targets first)"; exit 1; }

# One wineserver for the whole run: started per process, it exits between them and
# a process starting just then loses its connection.
wineserver=$(dirname "$(readlink -f "$(command -v "$wine")")")/../lib/x86_64-linux-gnu/wine/wineserver
[ -x "$wineserver" ] || wineserver=$(command -v wineserver || echo /usr/lib/x86_64-linux-gnu/wine/wineserver)
"$wine" cmd /c exit >/dev/null 2>&1  # makes the prefix on first use
"$wineserver" -w  # the server that made it has gone: the persistent one takes over
"$wineserver" -p
trap '"$wineserver" -k' EXIT

for module in $modules; do
  for set in portable lavapipe radv; do printf '%s %s\n' "$module" "$set"; done
done | xargs -P "$jobs" -L 1 sh "$0" --one "$linux" "$wine" "$windows" "$work" >"$work/results.txt"
same=$(grep -c '^same$' "$work/results.txt")
refused=$(grep -c '^refused$' "$work/results.txt")
grep '^FAIL' "$work/results.txt"
differ=$(grep -c '^FAIL' "$work/results.txt")
echo "$((same + refused + differ)) lowerings ($(echo "$modules" | wc -l) modules x 3 option sets):" \
     "$same byte-identical, $refused refused by both, $differ differ"
[ "$differ" -eq 0 ] && [ "$same" -gt 0 ]
