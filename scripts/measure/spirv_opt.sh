#!/bin/bash
# scripts/dev scripts/measure/spirv_opt.sh BUILD_DIR [MODULE...]
#
# The SPIRV-Tools optimizer on lowered modules (docs/design.md, "The SPIRV-Tools
# optimizer"): each exec-test module is lowered by coopmat-lower twice (portable:
# no layouts; register: lavapipe's layouts), then passed through spirv-opt -O, -Os
# and a DCE-only pass list. Per variant: words, lavapipe pipeline compile time
# (Mesa's cache off, fastest of 5) and, through the amdgpu noop drm-shim, RADV GFX11
# (navi31) ACO instruction count (RADV has 16x16 matrices only: smaller shapes
# compile to nothing there). Prints a table; writes nothing in the tree.
set -euo pipefail
build=$(cd "$1" && pwd); shift
modules=("$@")
if [ ${#modules[@]} -eq 0 ]; then
  modules=(getcoord_acc_f32_16x16 reduce_row_f32_16x16_16x16 reduce_2x2_f32_16x16_8x8 reduce_rowcol_f16_16x16_16x16
           convert_a_f16_16x16_to_acc_f32_shared convert_acc_f32_16x32_to_b_f16_t combo_16x32)
fi
work=$(mktemp -d /tmp/spirv-opt.XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/pipeline_stats" "$(dirname "$0")/pipeline_stats.c" -lvulkan
lavapipe=(env MESA_SHADER_CACHE_DISABLE=true VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.json)
radv=(env MESA_SHADER_CACHE_DISABLE=true LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libamdgpu_noop_drm_shim.so
      AMDGPU_GPU_ID=navi31 VK_DRIVER_FILES=/usr/share/vulkan/icd.d/radeon_icd.json)
dce=(--eliminate-dead-code-aggressive --eliminate-dead-functions --eliminate-dead-variables --eliminate-dead-const)
variants=(lowered O Os dce)

files=()
for m in "${modules[@]}"; do
  in=$build/shaders/exec/$m.spirv1.6.spv
  for lowering in portable register; do
    options=()
    [ $lowering = register ] && options=(--builtin-layouts lavapipe:8 --flexible-dimensions
                                          --matrix-properties 8x8x8:f16,f16,f32,f32 --matrix-properties 8x8x8:f16,f16,f16,f16)
    base=$work/$m.$lowering
    "$build/tools/coopmat-lower" "$in" -o "$base.lowered.spv" "${options[@]}" >/dev/null
    spirv-opt -O "$base.lowered.spv" -o "$base.O.spv"
    spirv-opt -Os "$base.lowered.spv" -o "$base.Os.spv"
    spirv-opt "${dce[@]}" "$base.lowered.spv" -o "$base.dce.spv"
    for v in "${variants[@]}"; do
      spirv-val --target-env vulkan1.3 "$base.$v.spv"
      files+=("$base.$v.spv")
    done
  done
done
for run in 1 2 3 4 5; do "${lavapipe[@]}" "$work/pipeline_stats" "${files[@]}" >"$work/lvp.$run"; done
"${radv[@]}" "$work/pipeline_stats" "${files[@]}" >"$work/radv" 2>/dev/null || true

printf '%-46s %-8s %7s %9s %9s\n' module.lowering variant words lvp_ms radv_instr
for f in "${files[@]}"; do
  name=$(basename "$f" .spv)
  words=$(( $(stat -c %s "$f") / 4 ))
  ms=$(for run in 1 2 3 4 5; do grep "^$f " "$work/lvp.$run" | cut -d' ' -f2; done | sort -n | head -n 1)
  instr=$(grep "^$f " "$work/radv" | cut -d' ' -f3 || echo -)
  printf '%-46s %-8s %7s %9s %9s\n' "${name%.*}" "${name##*.}" "$words" "$ms" "${instr:--}"
done
