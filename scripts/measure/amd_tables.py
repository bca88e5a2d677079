#!/usr/bin/env python3
"""The AMD tables of docs/performance.md from ACO's statistics (opbench --stats on
RADV through Mesa's amdgpu noop drm-shim). Run inside scripts/dev from the repo root
after building opbench and the layer:

    python3 scripts/measure/amd_tables.py > /tmp/amd.md
    python3 scripts/measure/amd_tables.py --nvk > /tmp/nvk.md   # the NVK lane's tables

One opbench process per GPU and subgroup size (the shim runs out of memory past
about 500 pipelines on one device). Prints, per GPU and size, a table of
instructions / inverse throughput / LDS bytes / VGPRs for the layer, RADV's own NV
lowering and the KHR store-to-shared workaround."""
import csv
import io
import os
import subprocess
import sys
import tempfile

SHIM = "/usr/lib/x86_64-linux-gnu/libamdgpu_noop_drm_shim.so"
ICD = "/usr/share/vulkan/icd.d/radeon_icd.json"
SIZES = [("32", "wave32"), ("64", "wave64"), ("0", "driver's pick")]
WAYS = ["layer", "nv", "khr"]


NVK_SHIM = "/usr/lib/x86_64-linux-gnu/libnouveau_noop_drm_shim.so"
NVK_ICD = "/usr/share/vulkan/icd.d/nouveau_icd.json"
AMD_STATS = ("Instructions", "Inverse Throughput", "LDS size", "VGPRs")
NAK_STATS = ("Instruction count", "Static cycle count", "Number of GPRs", "SLM size")


def measure(gpu, size, opbench, shape_filter="16x16"):
    with tempfile.TemporaryDirectory(prefix="coopmat-lane-tables-") as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache, VK_ADD_LAYER_PATH=os.path.abspath("build/layer"))
        if gpu.startswith("0x"):  # NVK: the NVIDIA table, since the probe reads nothing on the shim
            env.update(LD_PRELOAD=NVK_SHIM, NOUVEAU_CHIPSET=gpu, VK_DRIVER_FILES=NVK_ICD,
                       VK_COOPMAT_MAINTENANCE1_BUILTIN_LAYOUTS="nvidia-mma")
        else:
            env.update(LD_PRELOAD=SHIM, AMDGPU_GPU_ID=gpu, VK_DRIVER_FILES=ICD)
        out = subprocess.run([opbench, "--stats", "--sizes", size, "--filter", shape_filter], env=env, capture_output=True,
                             text=True, check=False).stdout
    return list(csv.DictReader(io.StringIO(out)))


def cell(row, stats=AMD_STATS):
    if not row or row.get("status") != "ok":
        return "—"
    return " / ".join(row.get(k, "?") for k in stats)


def nvk_tables(opbench):
    for chip, name in (("0x172", "Ampere (0x172)"), ("0x162", "Turing (0x162)")):
        cases = {}
        for r in measure(chip, "32", opbench, "x"):
            cases.setdefault((r["op"], r["shape"], r["type"]), {})[r["way"]] = r
        print(f"**NVK {name}** — instructions / static cycles / GPRs / SLM bytes (NAK)\n")
        print("| case | layer (default settings) | KHR workaround |")
        print("|---|---|---|")
        for (op, shape, typ), ways in cases.items():
            print(f"| {op} {shape} {typ} | " + " | ".join(cell(ways.get(w), NAK_STATS) for w in ("layer", "khr")) + " |")
        print()


def main():
    args = [a for a in sys.argv[1:] if a != "--nvk"]
    opbench = args[0] if args else "build/samples/opbench/opbench"
    if "--nvk" in sys.argv[1:]:
        nvk_tables(opbench)
        return
    for gpu in ("navi31", "gfx1201"):
        for size, label in SIZES:
            # 16x16, the shape RADV lists, and the 2x2 reduce's 32x32 source (NV flexible dimensions).
            rows = measure(gpu, size, opbench, "16x16,32x32")
            cases = {}
            ran = set()
            for r in rows:
                key = (r["op"], r["type"] if r["shape"] == "16x16" else f"{r['type']} {r['shape']}")
                cases.setdefault(key, {})[r["way"]] = r
                if r["way"] == "layer" and r.get("subgroup"):
                    ran.add(r["subgroup"])
            suffix = f" (ran at wave{'/'.join(sorted(ran))})" if size == "0" and ran else ""
            print(f"**{gpu}, {label}{suffix}** — instructions / inverse throughput / LDS bytes / VGPRs\n")
            print("| case (16x16 unless named) | layer (default settings) | RADV NV | KHR workaround |")
            print("|---|---|---|---|")
            for (op, typ), ways in cases.items():
                print(f"| {op} {typ} | " + " | ".join(cell(ways.get(w)) for w in WAYS) + " |")
            print()


if __name__ == "__main__":
    main()
