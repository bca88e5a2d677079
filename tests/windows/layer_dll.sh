#!/bin/sh
# layer_dll.sh OBJDUMP LAYER.dll MANIFEST.json...: the DLL exports exactly the
# loader's four entry points, imports system DLLs only, and each manifest is JSON
# for Windows whose library_path (backslash: the Windows loader reads a path
# without one as a bare name to search for) names the DLL beside it.
set -u
objdump=$1 dll=$2; shift 2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

exports=$("$objdump" -p "$dll" | sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | awk '/\[ *[0-9]+\]/ {print $NF}' | sort | tr '\n' ' ')
expected="vkGetDeviceProcAddr vkGetInstanceProcAddr vkNegotiateLoaderLayerInterfaceVersion vk_layerGetPhysicalDeviceProcAddr "
[ "$exports" = "$expected" ] || fail "exports: '$exports', expected '$expected'"

imports=$("$objdump" -p "$dll" | awk '/DLL Name:/ {print tolower($3)}' | sort -u | tr '\n' ' ')
for name in $imports; do
  case $name in
    kernel32.dll | advapi32.dll | msvcrt.dll | ucrtbase.dll | api-ms-win-*) ;;
    *) fail "imports $name: a DLL a Windows machine does not have" ;;
  esac
done

for manifest in "$@"; do
  python3 - "$manifest" "$(basename "$dll")" <<'PY' || fail "$manifest"
import json, sys
layer = json.load(open(sys.argv[1]))["layer"]
assert layer["platforms"] == ["WINDOWS"], layer["platforms"]
assert layer["library_path"] == ".\\" + sys.argv[2], layer["library_path"]
PY
done
echo "exports: $exports; imports: $imports"
[ $failures -eq 0 ]
