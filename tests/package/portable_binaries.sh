#!/bin/sh
# portable_binaries.sh FILE...: the binaries the packages ship run on Debian 13 and
# Ubuntu 24.04, not only on the Debian testing they are built on. Each may need only
# glibc (libc, libm, the dynamic linker) and the Vulkan loader, and no glibc symbol
# version newer than GLIBC_2.38, what the README promises (Fedora 39; Ubuntu 24.04 has
# 2.39, Debian 13 2.41): libstdc++
# and libgcc are linked in (COOPMAT_STATIC_CXX_RUNTIME), so no GLIBCXX_, CXXABI_ or GCC_
# version may appear. Each is hardened with full RELRO (-z relro -z now: BIND_NOW and a
# GNU_RELRO segment), as the top CMakeLists.txt links them. Prints, per file, what it
# needs; exits 1 on any violation.
set -eu
ceiling=2.38
allowed=" libc.so.6 libm.so.6 ld-linux-x86-64.so.2 libvulkan.so.1 "
status=0
for file in "$@"; do
  needed=$(readelf -d "$file" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
  versions=$(objdump -T "$file" | grep -oE '\((GLIBC|GLIBCXX|CXXABI|GCC)_[0-9.]+\)' | tr -d '()' | sort -u)
  newest=$(printf '%s\n' "$versions" | sed -n 's/^GLIBC_//p' | sort -V | tail -n 1)
  printf '%s: needs %sGLIBC_%s\n' "$(basename "$file")" "$needed" "$newest"
  for lib in $needed; do
    case $allowed in *" $lib "*) ;; *) echo "  FAIL: needs $lib"; status=1 ;; esac
  done
  readelf -d "$file" | grep -q BIND_NOW || { echo "  FAIL: not linked with -z now (no BIND_NOW)"; status=1; }
  readelf -lW "$file" | grep -q GNU_RELRO || { echo "  FAIL: not linked with -z relro (no GNU_RELRO)"; status=1; }
  runtime=$(printf '%s\n' "$versions" | grep -E '^(GLIBCXX|CXXABI|GCC)_' | tr '\n' ' ' || true)
  [ -z "$runtime" ] || { echo "  FAIL: uses the shared C++ runtime: $runtime"; status=1; }
  if [ "$(printf '%s\n%s\n' "$newest" "$ceiling" | sort -V | tail -n 1)" != "$ceiling" ]; then
    echo "  FAIL: needs GLIBC_$newest, newer than GLIBC_$ceiling:"
    objdump -T "$file" | grep -E "GLIBC_$newest" | sed 's/^/    /' | head -n 5
    status=1
  fi
done
exit $status
