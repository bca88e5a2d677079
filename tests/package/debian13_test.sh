#!/bin/bash
# debian13_test.sh BUILD_DIR: the packages of BUILD_DIR/package (scripts/package) on a
# Debian 13 system, as its users install them. Runs as root inside a throwaway Debian 13
# root that has a user's Vulkan stack and no toolchain (scripts/debian13 makes and enters
# it: tests/package/debian13-packages.txt): Debian 13's loader (1.4.309, older than the
# extension) and Mesa 25.0's lavapipe, which has no cooperative matrices.
#   - apt installs the package, resolving its Depends against what the system has;
#   - vulkaninfo lists the layer with no loader error, coopmat-info reports, and on
#     lavapipe the layer steps aside (no extension, no message);
#   - coopmat-lower validates (SPIRV-Tools) and writes GLSL (SPIRV-Cross), both linked in;
#   - on the virtual device (tests/virtual from BUILD_DIR: lavapipe made to look like a
#     KHR-only RADV GFX11 whose matrix operations it lowers itself) an application gets
#     vkGetPhysicalDeviceCooperativeMatrixProperties2EXT from the layer through this loader,
#     which does not know it (tests/package/loader_check.cpp), and the attention sample runs
#     its maintenance1 kernel, with validation and a dump (disassembly, GLSL);
#   - apt remove leaves nothing registered; an upgrade over an older version leaves no
#     cache of the older build that could be served, and ages out others' unused ones;
#   - the tarball, unpacked as the README says into /usr/local and, by a user, into
#     ~/.local, is found and loaded, and its uninstall command leaves nothing.
# Prints one "ok:" or "FAIL:" line per check and a summary line (also written to
# BUILD_DIR/package/debian13.txt); exits 1 when a check failed.
set -uo pipefail
build=$(cd "$1" && pwd)
deb=$(ls "$build"/package/coopmat-maintenance1_*.deb 2>/dev/null | head -n 1)
tarball=$(ls "$build"/package/coopmat-maintenance1-*-linux-*.tar.gz 2>/dev/null | head -n 1)
summary=$build/package/debian13.txt
ext=VK_EXT_cooperative_matrix_maintenance1
layer=VK_LAYER_coopmat_maintenance1
tab=$(printf '\t')
export DEBIAN_FRONTEND=noninteractive

passed=0 failed=0
log() { printf 'debian13: %s\n' "$*"; }
check() {  # check WHAT CMD...: one check, shown with the output it left in /tmp/out.txt when it fails
  local what=$1; shift
  if "$@"; then
    log "ok: $what"; passed=$((passed + 1))
  else
    log "FAIL: $what"; failed=$((failed + 1))
    [ -s /tmp/out.txt ] && tail -n 15 /tmp/out.txt | sed 's/^/    /'
  fi
  : >/tmp/out.txt
}
system() {  # "Debian 13.8" (the point release), else the name os-release gives
  if grep -q '^ID=debian' /etc/os-release; then echo "Debian $(cat /etc/debian_version)"; else sed -n 's/^PRETTY_NAME=//p' /etc/os-release | tr -d '"'; fi
}
finish() {
  local line
  line="$passed checks passed, $failed failed ($(system),"
  line="$line libvulkan1 $(dpkg-query -W -f='${Version}' libvulkan1), Mesa $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers))"
  log "$line"
  echo "$line" >"$summary"
  [ "$failed" -eq 0 ]
  exit $?
}

[ -n "$deb" ] && [ -n "$tarball" ] || { log "FAIL: no package in $build/package (run scripts/package)"; failed=1; finish; }
[ "$(id -u)" = 0 ] || { log "FAIL: must run as root inside the Debian 13 root (scripts/debian13)"; failed=1; finish; }
log "$(system); $(basename "$deb"), $(basename "$tarball")"
: >/tmp/out.txt

# The test-only pieces from the build folder, where a user can read them.
mkdir -p /opt/coopmat-test
cp -r "$build/tests/virtual/layer" /opt/coopmat-test/virtual
cp "$build/tests/package/coopmat_loader_check" "$(dirname "${BASH_SOURCE[0]}")/../virtual/profiles/radv-gfx11-wave64.txt" /opt/coopmat-test/
chmod -R a+rX /opt/coopmat-test

# An application as a user starts it: nothing of the layer's in the environment.
home=/root
# (A hang fails after 5 minutes: loaders before 1.4.345 hung an app whose layer messaged
# under the loader's lock, layer/messengers.h.)
app() {  # app [VAR=VALUE...] CMD...
  timeout 300 env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" XDG_RUNTIME_DIR=/tmp XDG_CACHE_HOME="$home/.cache" "$@"
}
# ... and on the virtual device: the test layer below the installed one.
virtual=(VK_ADD_LAYER_PATH=/opt/coopmat-test/virtual VK_INSTANCE_LAYERS=VK_LAYER_COOPMAT_TEST_virtual_device
         COOPMAT_VIRTUAL_PROFILE=/opt/coopmat-test/radv-gfx11-wave64.txt)

# vulkaninfo with the loader's errors and warnings on; /tmp/vulkaninfo.{txt,err}.
vulkaninfo_run() {
  app VK_LOADER_DEBUG=error,warn "$@" vulkaninfo >/tmp/vulkaninfo.txt 2>/tmp/vulkaninfo.err || { cp /tmp/vulkaninfo.err /tmp/out.txt; false; }
}
layer_listed() { grep -q "^$layer (" /tmp/vulkaninfo.txt; }
# A device extension line (one tab in), not the layer's own list.
device_lists() { grep -q "^$tab$1 *: extension revision" /tmp/vulkaninfo.txt; }
# Loader messages other than the one VK_INSTANCE_LAYERS always causes; the layer's errors and warnings.
quiet() {
  ! grep -E "ERROR|WARNING|coopmat-maintenance1: (error|warning)" /tmp/vulkaninfo.err | grep -v "env var 'VK_INSTANCE_LAYERS' defined" >/tmp/out.txt
}
registered() { grep -rls coopmat /usr/share/vulkan /usr/local/share/vulkan /etc/vulkan "$home/.local/share/vulkan" >/tmp/out.txt; }

# --- The system: a user's, not the toolchain.
toolchain() { command -v cc || command -v c++ || command -v cmake || command -v dpkg-shlibdeps; }
check "the root has no toolchain (no compiler, cmake or dpkg-dev)" eval '! toolchain >/tmp/out.txt'

# --- apt install ./package.deb
log "Depends: $(dpkg-deb -f "$deb" Depends)"
cp "$deb" /tmp/
installed_before=$(dpkg-query -W -f='${db:Status-Abbrev}\n' | grep -c '^ii')
check "apt-get install ./$(basename "$deb") (its Depends met by the system)" \
  eval 'cd /tmp && apt-get install -y "./$(basename "$deb")" >/tmp/out.txt 2>&1'
check "one package more, nothing pulled in" \
  test "$(dpkg-query -W -f='${db:Status-Abbrev}\n' | grep -c '^ii')" = $((installed_before + 1))

# --- lavapipe 25.0: no cooperative matrices, the layer steps aside.
check "vulkaninfo runs" vulkaninfo_run
check "vulkaninfo lists $layer (an implicit layer)" layer_listed
check "no loader error or warning, no layer message (vulkaninfo's stderr)" quiet
check "lavapipe without VK_KHR_cooperative_matrix: $ext not offered" \
  eval '! device_lists VK_KHR_cooperative_matrix && ! device_lists $ext'
check "coopmat-info reports" eval 'app coopmat-info >/tmp/coopmat-info.txt 2>&1'
check "coopmat-info: with the layer, lavapipe has no $ext" \
  eval 'sed -n "/^== with $layer/,\$p" /tmp/coopmat-info.txt | grep -q "$ext: no"'
check "coopmat-info: no layer error or warning" \
  eval '! grep -E "coopmat-maintenance1: (error|warning)" /tmp/coopmat-info.txt >/tmp/out.txt'

# --- coopmat-lower: spirv-val (SPIRV-Tools) and GLSL (SPIRV-Cross), linked in.
module=$(ls /usr/libexec/coopmat-maintenance1/attention/shaders/attention_ext_d32.spv)
check "coopmat-lower lowers an installed maintenance1 module, --validate, --glsl" \
  eval 'app coopmat-lower "$module" -o /tmp/lowered.spv --validate --glsl /tmp/lowered.glsl >/tmp/out.txt 2>&1 &&
        grep -q "^#version" /tmp/lowered.glsl'

# --- The virtual device: a KHR-only device under Debian 13's loader.
check "loader_check: Properties2 through loader $(dpkg-query -W -f='${Version}' libvulkan1), features, vkCreateDevice" \
  eval 'app "${virtual[@]}" /opt/coopmat-test/coopmat_loader_check --expect-loader-unaware >/tmp/out.txt 2>&1'
attention() {  # attention [VAR=VALUE...]: its maintenance1 kernel through the installed layer
  app "${virtual[@]}" "$@" /usr/libexec/coopmat-maintenance1/attention/attention --tile 16 --check-only --seq 48 --dim 32 \
    --heads 1 --ways layer >/tmp/out.txt 2>&1 && grep -Eq "^1\. maintenance1 +ok" /tmp/out.txt
}
# The packaged self-test above the virtual device (its GetCoordinate cases at wave64 on the
# register route: the whole run is the main suite's, tests/virtual's virtual.selftest.*).
check "coopmat-selftest from the package passes on the virtual device (GetCoordinate, wave64)" \
  eval 'app "${virtual[@]}" coopmat-selftest --lowering auto --filter GetCoordinate >/tmp/out.txt 2>&1 &&
        grep -Eq "^[1-9][0-9]* passed, 0 failed, 0 skipped$" /tmp/out.txt'
rm -rf /tmp/dump
check "attention runs its maintenance1 kernel on the virtual device (validate, dump_dir)" \
  attention VK_COOPMAT_MAINTENANCE1_VALIDATE=true VK_COOPMAT_MAINTENANCE1_DUMP_DIR=/tmp/dump
check "the dump has the original's disassembly and the lowered GLSL" \
  eval 'ls /tmp/dump/*.original.spvasm /tmp/dump/*.lowered.glsl >/tmp/out.txt 2>&1'
check "DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1=1 takes $ext away" \
  eval 'vulkaninfo_run "${virtual[@]}" DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1=1 &&
        device_lists VK_KHR_cooperative_matrix && ! device_lists $ext'

# --- apt remove: nothing stays registered.
check "apt-get remove" eval 'apt-get remove -y coopmat-maintenance1 >/tmp/out.txt 2>&1'
check "nothing registered: no manifest names the layer" eval '! registered'
check "vulkaninfo no longer lists $layer" eval 'vulkaninfo_run && ! layer_listed'

# --- An upgrade: the older version's caches are not served (cache identity = the build).
# The older version: this package as 0.0.1; its caches: a lowering and a layout file of
# another build identity.
rm -rf /tmp/old && dpkg-deb -R "$deb" /tmp/old && sed -i 's/^Version: .*/Version: 0.0.1/' /tmp/old/DEBIAN/control &&
  dpkg-deb -b /tmp/old /tmp/coopmat-maintenance1_0.0.1_amd64.deb >/dev/null
check "apt-get install of an older version (0.0.1)" \
  eval 'apt-get install -y /tmp/coopmat-maintenance1_0.0.1_amd64.deb >/tmp/out.txt 2>&1'
# (What this build cached above goes: a new build starts with nothing of its own.)
# Another build's lowering folder and layout file go once unused for 30 days (two builds in
# use in turn keep theirs: review 130c39d finding 7, dbb465e finding 6): one of each unused
# for 31 days, one of each used today.
cache=$home/.cache/coopmat-maintenance1
rm -rf "$cache"
mkdir -p "$cache/lowered/0000000000000000" "$cache/lowered/1111111111111111"
echo stale >"$cache/lowered/0000000000000000/entry"
echo recent >"$cache/lowered/1111111111111111/entry"
touch -d '31 days ago' "$cache/lowered/0000000000000000"
echo stale >"$cache/layouts-stale-0000000000000000.txt"
touch -d '31 days ago' "$cache/layouts-stale-0000000000000000.txt"
echo recent >"$cache/layouts-recent-1111111111111111.txt"
check "apt-get install over it upgrades" \
  eval 'apt-get install -y "/tmp/$(basename "$deb")" >/tmp/out.txt 2>&1 && grep -q "over (0.0.1)" /tmp/out.txt'
check "attention runs after the upgrade" attention
check "another build's layout file and lowering folder unused for 31 days are gone, recently used ones stay, this build's are there" \
  eval 'ls -R "$cache" >/tmp/out.txt; ! grep -q 0000000000000000 /tmp/out.txt && [ -d "$cache/lowered/1111111111111111" ] &&
        [ -f "$cache/layouts-recent-1111111111111111.txt" ] && ls "$cache"/layouts-*.txt | grep -qv -e stale -e recent'
check "apt-get purge leaves nothing registered" \
  eval 'apt-get purge -y coopmat-maintenance1 >/tmp/out.txt 2>&1 && ! registered'

# --- The tarball, as the README installs it: for everyone into /usr/local, for one user into ~/.local.
# The README's uninstall command: every file of the tarball, under the prefix it went to.
uninstall='tar -tzf "$0" | sed -n "s|^[^/]*/\(.*[^/]\)\$|\1|p" | (cd "$1" && xargs rm -f)'
tarball_found() {  # vulkaninfo finds the manifest and loads the library (the virtual device shows $ext)
  vulkaninfo_run && layer_listed && quiet && vulkaninfo_run "${virtual[@]}" && device_lists $ext && quiet
}
check "tarball into /usr/local: listed, loaded, serves $ext" \
  eval 'tar -xzf "$tarball" -C /usr/local --strip-components=1 && tarball_found'
check "its uninstall command leaves nothing" \
  eval 'sh -c "$uninstall" "$tarball" /usr/local && ! registered && ! ls /usr/local/lib/libVkLayer_coopmat_maintenance1.so 2>/dev/null'

home=/home/user
mkdir -p "$home" && chown 1000:1000 "$home"
as_user() { timeout 300 setpriv --reuid=1000 --regid=1000 --clear-groups env -i PATH="$home/.local/bin:/usr/bin:/bin" HOME="$home" "$@"; }
app() { as_user XDG_RUNTIME_DIR=/tmp "$@"; }
check "a user's tarball in ~/.local: listed, loaded, serves $ext" \
  eval 'as_user sh -c "mkdir -p ~/.local && tar -xzf \"\$0\" -C ~/.local --strip-components=1" "$tarball" >/tmp/out.txt 2>&1 &&
        tarball_found'
check "coopmat-lower from ~/.local/bin" eval 'app coopmat-lower --help >/tmp/out.txt 2>&1'
check "its uninstall command leaves nothing" \
  eval 'as_user sh -c "$uninstall" "$tarball" "$home/.local" && ! registered &&
        ! ls "$home/.local/lib/libVkLayer_coopmat_maintenance1.so" 2>/dev/null'

finish
