#!/bin/bash
# package_test.sh BUILD_DIR: installs the Debian package scripts/package made into
# BUILD_DIR/package into a fresh root — an overlay over this one (the toolchain root: Debian
# testing, whose lavapipe has KHR cooperative matrices), so the real root is never touched —
# and checks there, with no layer variables in the environment, that the layer is
# an implicit layer: vulkaninfo lists VK_EXT_cooperative_matrix_maintenance1, the
# attention sample runs its maintenance1 kernel with no layer variables set, and
# DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1=1 takes the extension away from an app that
# does not name the layer (vulkaninfo).
#
# Needs root (mount, chroot); exits 77 (skipped) without it.
set -euo pipefail
build=$(cd "$1" && pwd)
ext=VK_EXT_cooperative_matrix_maintenance1
manifest=/usr/share/vulkan/implicit_layer.d/VkLayer_coopmat_maintenance1.json

log() { printf 'package_test: %s\n' "$*"; }
[ "$(id -u)" = 0 ] || { log "skipped: needs root for the overlay root"; exit 77; }
[ ! -e "$manifest" ] || { log "this root already has $manifest installed; cannot test a fresh install"; exit 1; }

deb=$(ls "$build"/package/coopmat-maintenance1_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || { log "no Debian package in $build/package: run scripts/package first"; exit 1; }
log "installing $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
dpkg-deb --contents "$deb" | grep -q "\./usr/share/vulkan/implicit_layer.d/VkLayer_coopmat_maintenance1.json" ||
  { log "the package has no implicit-layer manifest"; exit 1; }

# The overlay lives in a scratch folder removed only after the namespace holding its
# mounts is gone, and with --one-file-system: a removal must never reach a mount.
# The fresh root gets its own few device nodes (in the overlay's upper layer), never
# a bind of the real /dev.
scratch=$(mktemp -d /tmp/coopmat-package.XXXXXX)
status=0
# (--propagation unchanged: inside the toolchain root "/" is no mount point, and scripts/dev's
# namespace is private already.)
unshare --mount --propagation unchanged -- bash -euo pipefail -c '
  deb=$1 ext=$2 scratch=$3
  log() { printf "package_test: %s\n" "$*"; }
  # mount(2) through Python: the toolchain root has no mount(8).
  sysmount() {  # sysmount SOURCE TARGET FSTYPE FLAGS DATA
    python3 -c "import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a = [x.encode() for x in sys.argv[1:4]] + [int(sys.argv[4]), sys.argv[5].encode()]
if libc.mount(*a) != 0: sys.exit(\"mount %s: %s\" % (sys.argv[2], os.strerror(ctypes.get_errno())))" "$@"
  }
  mkdir -p "$scratch/upper" "$scratch/work" "$scratch/root"
  # /tmp is a tmpfs: the upper layer and everything dpkg writes stay in memory.
  sysmount overlay "$scratch/root" overlay 0 "lowerdir=/,upperdir=$scratch/upper,workdir=$scratch/work"
  root=$scratch/root
  sysmount proc "$root/proc" proc 0 ""
  sysmount tmpfs "$root/tmp" tmpfs 0 ""
  sysmount tmpfs "$root/dev" tmpfs 0 "mode=755"
  for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9; do
    IFS=: read -r name major minor <<<"$node"
    mknod -m 666 "$root/dev/$name" c "$major" "$minor"
  done
  mkdir -p "$root/dev/shm" && chmod 1777 "$root/dev/shm"
  cp "$deb" "$root/tmp/"
  chroot "$root" dpkg -i "/tmp/$(basename "$deb")" >/dev/null
  log "installed into an overlay root"

  # A clean environment: no VK_ADD_LAYER_PATH, VK_INSTANCE_LAYERS or layer settings.
  run() {
    chroot "$root" env -i PATH=/usr/bin:/bin HOME=/tmp XDG_CACHE_HOME=/tmp/cache XDG_RUNTIME_DIR=/tmp \
      VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.json "$@"
  }
  failures=0
  check() {  # check WHAT CMD...
    local what=$1; shift
    if "$@"; then log "ok: $what"; else log "FAIL: $what"; failures=$((failures + 1)); fi
  }
  # vulkaninfo ran and saw the device (its KHR cooperative matrix line); then a device
  # extension line (one tab in), not the list in the Layers section. A vulkaninfo that
  # fails makes both checks fail.
  info() {
    run "$@" vulkaninfo >/tmp/vulkaninfo.txt 2>&1 &&
      grep -q "^$(printf "\t")VK_KHR_cooperative_matrix *: extension revision" /tmp/vulkaninfo.txt
  }
  listed() { info "$@" && grep -q "^$(printf "\t")$ext *: extension revision" /tmp/vulkaninfo.txt; }
  unlisted() { info "$@" && ! grep -q "^$(printf "\t")$ext *: extension revision" /tmp/vulkaninfo.txt; }
  # As a user runs it, with no layer variables (its --no-layer would switch implicit layers off).
  # The sample exits 0 when way 1 is merely unavailable: it ran only if its line is not "n/a".
  attention() {
    run "$@" /usr/libexec/coopmat-maintenance1/attention/attention --check-only --ways layer --seq 32 --dim 32 \
      >/tmp/attention.txt 2>&1 && ! grep -q "maintenance1 *n/a" /tmp/attention.txt
  }
  off=DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1=1

  check "vulkaninfo lists $ext (implicit layer)" listed
  [ $failures -eq 0 ] || head -n 20 /tmp/vulkaninfo.txt
  check "attention runs its maintenance1 kernel without enabling the layer" attention
  check "coopmat-lower runs from /usr/bin" run coopmat-lower --help
  # The shipped self-test as a user runs it: every case of the shapes lavapipe lists, both
  # lowerings (its NV flexible shapes too run in the main suite, selftest.lavapipe: with LLVM
  # optimizations on, as here, they took two minutes).
  selftest() {
    run coopmat-selftest --shapes listed >/tmp/selftest.txt 2>&1 &&
      grep -Eq "^[1-9][0-9]* passed, 0 failed, 0 skipped$" /tmp/selftest.txt
  }
  check "coopmat-selftest from /usr/bin passes on lavapipe" selftest
  [ $failures -eq 0 ] || tail -n 20 /tmp/selftest.txt
  # The variable stops the implicit activation; an app that names the layer (the sample
  # does when the loader lists it) still gets it, as the loader specifies.
  check "$off: vulkaninfo no longer lists $ext" unlisted "$off"
  [ $failures -eq 0 ] || tail -n 5 /tmp/attention.txt
  exit $failures
' package-test "$deb" "$ext" "$scratch" || status=$?
rm -rf --one-file-system "$scratch"
exit $status
