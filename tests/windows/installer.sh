#!/bin/sh
# installer.sh CPACK STRIP BUILD_DIR WINE WORK_DIR
#
# The NSIS installer (cmake/Packaging.cmake) in a fresh Wine prefix: a silent install
# for every user puts the DLL (the build's, stripped) and its manifest into
# Program Files and registers the manifest under HKLM's ImplicitLayers in the 64-bit
# view, with value 0; its silent uninstall removes the files, the folder and the
# value. Then the same for one user (/CURRENTUSER: %LOCALAPPDATA%\Programs, HKCU).
set -u
cpack=$1 strip=$2 build=$3 wine=$4 work=$5
failures=0
# printf, not echo: dash's echo reads the backslashes of Windows paths as escapes.
fail() { printf 'FAIL: %s\n' "$*"; failures=$((failures + 1)); }

rm -rf "$work"
mkdir -p "$work"
(cd "$build" && "$cpack" -G NSIS -B "$work/package" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; echo "FAIL: cpack -G NSIS"; exit 1; }
installer=$(ls "$work"/package/*.exe)
echo "built $(basename "$installer") ($(du -k "$installer" | cut -f1) KiB)"
# pe_header FILE: where FILE's PE header starts (e_lfanew, the word at offset 60).
pe_header() { od -An -tu4 -j60 -N4 "$1" | tr -d ' '; }
# pe_machine FILE: the PE header's Machine field (8664: x86-64), at its offset 4.
pe_machine() { od -An -tx2 -j$(($(pe_header "$1") + 4)) -N2 "$1" | tr -d ' '; }
# A 64-bit installer, as the DLL is (cmake/Packaging.cmake): no WOW64 needed to run it.
machine=$(pe_machine "$installer")
[ "$machine" = 8664 ] || fail "the installer is not an x86-64 program (machine $machine)"
"$strip" -o "$work/stripped.dll" "$build/layer/VkLayer_coopmat_maintenance1.dll"  # what CPACK_STRIP_FILES installs

# same_but_stamp A B: the same PE file but for the time strip ran: the COFF header's
# TimeDateStamp and the optional header's CheckSum, at the PE header + 8 and + 88.
same_but_stamp() {
  [ "$(wc -c <"$1")" -eq "$(wc -c <"$2")" ] || return 1
  pe=$(($(pe_header "$1") + 1))  # cmp -l counts from 1
  cmp -l "$1" "$2" | awk -v pe=$pe '($1 < pe + 8 || $1 > pe + 11) && ($1 < pe + 88 || $1 > pe + 91) { other = 1 } END { exit other }'
}

export WINEPREFIX="$work/prefix"
wineserver=$(dirname "$(readlink -f "$(command -v "$wine")")")/../lib/x86_64-linux-gnu/wine/wineserver
[ -x "$wineserver" ] || wineserver=$(command -v wineserver || echo /usr/lib/x86_64-linux-gnu/wine/wineserver)
"$wine" cmd /c exit >/dev/null 2>&1  # makes the prefix
trap '"$wineserver" -k 2>/dev/null' EXIT
layers='SOFTWARE\Khronos\Vulkan\ImplicitLayers'

# registered HIVE VIEW NAME: the value NAME under HIVE's ImplicitLayers in registry VIEW (32 or 64), as "reg query" prints it.
registered() {
  "$wine" reg query "$1\\$layers" /v "$3" "/reg:$2" 2>/dev/null | tr -d '\r' | grep -F "$3"
}

# check_round FOLDER_OF_C HIVE OTHER_HIVE [INSTALLER OPTIONS...]: one install and uninstall.
check_round() {
  folder=$1 hive=$2 other=$3; shift 3
  what="install${1:+ $1}"
  "$wine" "$installer" /S "$@" >"$work/install.log" 2>&1 || fail "$what: exit $? $(cat "$work/install.log")"
  "$wineserver" -w
  # shellcheck disable=SC1003
  unix=$WINEPREFIX/drive_c/$(printf %s "$folder" | tr '\\' /)
  for file in VkLayer_coopmat_maintenance1.dll VkLayer_coopmat_maintenance1.json coopmat-lower.exe coopmat-selftest.exe; do
    [ -f "$unix/bin/$file" ] || fail "$what: no $folder\\bin\\$file"
  done
  same_but_stamp "$unix/bin/VkLayer_coopmat_maintenance1.dll" "$work/stripped.dll" ||
    fail "$what: the installed DLL is not the build's, stripped"
  cmp -s "$unix/bin/VkLayer_coopmat_maintenance1.json" "$build/layer/implicit/VkLayer_coopmat_maintenance1.json" ||
    fail "$what: the installed manifest is not the build's implicit-layer manifest"
  manifest="C:\\$folder\\bin\\VkLayer_coopmat_maintenance1.json"
  value=$(registered "$hive" 64 "$manifest")
  printf '%s: %s: %s\n' "$what" "$hive" "$value"
  printf '%s\n' "$value" | grep -Eq "REG_DWORD[[:space:]]+0x0$" || fail "$what: $hive\\$layers has no value 0 named $manifest"
  # (HKCU's SOFTWARE has one view for both.)
  [ "$hive" = HKCU ] || [ -z "$(registered "$hive" 32 "$manifest")" ] || fail "$what: registered in the 32-bit view (WOW6432Node)"
  [ -z "$(registered "$other" 64 "$manifest")" ] || fail "$what: registered under $other too"
  uninstall_entry="$hive\\Software\\Microsoft\\Windows\\CurrentVersion\\Uninstall\\coopmat-maintenance1"
  "$wine" reg query "$uninstall_entry" /reg:64 >/dev/null 2>&1 || fail "$what: no uninstall entry in the 64-bit view"
  [ "$(pe_machine "$unix/Uninstall.exe")" = 8664 ] || fail "$what: the uninstaller is not an x86-64 program"

  "$wine" "C:\\$folder\\Uninstall.exe" /S >"$work/uninstall.log" 2>&1 || fail "un$what: exit $? $(cat "$work/uninstall.log")"
  "$wineserver" -w  # the uninstaller runs from a copy of itself and returns at once
  [ ! -e "$unix" ] || fail "un$what: left $(cd "$unix" && find . | tr '\n' ' ')"
  [ -z "$(registered "$hive" 64 "$manifest")" ] || fail "un$what: $hive\\$layers still names $manifest"
  for view in 64 32; do
    "$wine" reg query "$uninstall_entry" /reg:$view >/dev/null 2>&1 && fail "un$what: its uninstall entry is left ($view-bit view)"
  done
}

# The checks can fail: a value that is not there is not found.
[ -z "$(registered HKLM 64 'C:\no\such.json')" ] || fail "reg query found a value that does not exist"

check_round 'Program Files\coopmat-maintenance1' HKLM HKCU
user=$(id -un)  # Wine's user folder has the Unix user's name
check_round "users\\$user\\AppData\\Local\\Programs\\coopmat-maintenance1" HKCU HKLM /CURRENTUSER

[ $failures -eq 0 ] && echo "installer: installed, registered and removed for every user and for one"
exit $failures
