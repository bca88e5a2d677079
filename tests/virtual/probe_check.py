#!/usr/bin/env python3
"""The product layer's layout probe, run on the virtual device, must find exactly the
profile's layouts: every layout coopmat-info reports as probed is the profile's line
for that key, and every type of every matrix configuration the profile lists, at
every subgroup size it runs, was probed.

  probe_check.py <profile.txt> <coopmat-info> <scratch dir>
The environment must put the product layer and the virtual device on the layer path."""
import os
import shutil
import subprocess
import sys

TYPE_NAMES = {"f16", "f32", "u8", "s8", "u32", "s32", "bf16", "e4m3", "e5m2", "f64", "s16", "u16", "s64", "u64"}


def key_of(line):
    fields = dict(f.split("=", 1) for f in line.split()[1:])
    return (fields["type"], fields["use"], fields["rows"], fields["cols"], fields["subgroup"])


def main():
    profile_path, info, scratch = sys.argv[1:4]
    layouts, sizes, configs = {}, [], []
    for line in open(profile_path):
        line = line.strip()
        if line.startswith("layout "):
            layouts[key_of(line)] = line
        elif line.startswith("subgroup_sizes "):
            sizes = line.split()[1:]
        elif line.startswith("matrix "):
            configs.append(line.split()[1:8])
    wanted = set()
    for m, n, k, a, b, c, r in configs:
        for size in sizes:
            wanted |= {(a, "A", m, k, size), (b, "B", k, n, size), (c, "Acc", m, n, size), (r, "Acc", m, n, size)}

    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    env = dict(os.environ, XDG_CACHE_HOME=scratch, COOPMAT_VIRTUAL_PROFILE=profile_path,
               COOPMAT_VIRTUAL_LOG=os.path.join(scratch, "virtual.log"),
               VK_INSTANCE_LAYERS="VK_LAYER_coopmat_maintenance1:VK_LAYER_COOPMAT_TEST_virtual_device")
    run = subprocess.run([info], env=env, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        sys.exit(f"coopmat-info failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    lines = [l.strip() for l in run.stdout.splitlines()]
    probed = {}
    for i, line in enumerate(lines[:-1]):
        if line.startswith("layout ") and lines[i + 1] == "from: probed":
            probed[key_of(line)] = line
    problems = []
    for key, line in sorted(probed.items()):
        if layouts.get(key) != line:
            problems.append(f"probed {line}\n   profile {layouts.get(key, '(none)')}")
    for key in sorted(wanted - probed.keys()):
        problems.append(f"not probed: {' '.join(key)} (profile: {layouts.get(key, '(none)')})")
    log = open(os.path.join(scratch, "virtual.log")).read() if os.path.exists(os.path.join(scratch, "virtual.log")) else ""
    if "pipeline profile=" not in log:
        problems.append("the virtual device rewrote no pipeline: the probe did not run on it")
    faults = [l for l in log.splitlines() if l.startswith("fault")]  # fault_buffer.h: never in a correct program
    if faults:
        problems.append("the virtual device found faults in the probe's pipelines:\n  " + "\n  ".join(faults[:20]))
    if problems:
        sys.exit("\n".join(problems) + "\n--- coopmat-info:\n" + run.stdout)
    print(f"{len(probed)} layouts probed, all equal to the profile's; {log.count('pipeline profile=')} pipelines rewritten")


if __name__ == "__main__":
    main()
