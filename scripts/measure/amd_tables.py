#!/usr/bin/env python3
"""The AMD tables of docs/performance.md from ACO's statistics (opbench --stats on
RADV through Mesa's amdgpu noop drm-shim). Run inside scripts/dev from the repo root
after building opbench and the layer:

    python3 scripts/measure/amd_tables.py > /tmp/amd.md

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


def measure(gpu, size, opbench):
    with tempfile.TemporaryDirectory(prefix="coopmat-amd-tables-") as cache:
        env = dict(os.environ, LD_PRELOAD=SHIM, AMDGPU_GPU_ID=gpu, VK_DRIVER_FILES=ICD, XDG_CACHE_HOME=cache,
                   VK_ADD_LAYER_PATH=os.path.abspath("build/layer"))
        out = subprocess.run([opbench, "--stats", "--sizes", size, "--filter", "16x16"], env=env, capture_output=True,
                             text=True, check=False).stdout
    return list(csv.DictReader(io.StringIO(out)))


def cell(row):
    if not row or row.get("status") != "ok":
        return "—"
    return " / ".join(row.get(k, "?") for k in ("Instructions", "Inverse Throughput", "LDS size", "VGPRs"))


def main():
    opbench = sys.argv[1] if len(sys.argv) > 1 else "build/samples/opbench/opbench"
    for gpu in ("navi31", "gfx1201"):
        for size, label in SIZES:
            rows = measure(gpu, size, opbench)
            cases = {}
            ran = set()
            for r in rows:
                key = (r["op"], r["type"])
                cases.setdefault(key, {})[r["way"]] = r
                if r["way"] == "layer" and r.get("subgroup"):
                    ran.add(r["subgroup"])
            suffix = f" (ran at wave{'/'.join(sorted(ran))})" if size == "0" and ran else ""
            print(f"**{gpu}, {label}{suffix}** — instructions / inverse throughput / LDS bytes / VGPRs\n")
            print("| case (16x16) | layer (default settings) | RADV NV | KHR workaround |")
            print("|---|---|---|---|")
            for (op, typ), ways in cases.items():
                print(f"| {op} {typ} | " + " | ".join(cell(ways.get(w)) for w in WAYS) + " |")
            print()


if __name__ == "__main__":
    main()
