#!/usr/bin/env python3
"""The execution suite (tests/exec) through the product layer on the virtual device under
one profile: every dispatch must have been rewritten by the virtual device (exec_util's
Dispatch checks its log line), the run must pass, and it must have run pipelines.

  exec_lane.py <profile.txt> <scratch dir> <fraction> <coopmat_exec_tests> [catch args...]

Each run checks a sample of the suite's runs (COOPMAT_EXEC_SAMPLE: `fraction` of them,
at least one per CheckAll) drawn with a seed it prints; COOPMAT_VIRTUAL_SEED=<seed>
draws the same sample again, fraction 1 runs everything (COOPMAT_VIRTUAL_FRACTION overrides
the argument). The environment must put the
product layer and the virtual device on the layer path (and may set the lowering)."""
import os
import random
import re
import shutil
import subprocess
import sys


def main():
    profile, scratch, fraction, binary, *catch_args = sys.argv[1:]
    fraction = os.environ.get("COOPMAT_VIRTUAL_FRACTION") or fraction  # scripts/virtual-campaign: 1
    seed = os.environ.get("COOPMAT_VIRTUAL_SEED") or str(random.randrange(1, 2**31))
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    log = os.path.join(scratch, "virtual.log")
    # A cache of its own: the product layer probes the virtual device's layouts afresh.
    env = dict(os.environ, COOPMAT_VIRTUAL_PROFILE=profile, COOPMAT_VIRTUAL_LOG=log, XDG_CACHE_HOME=scratch,
               COOPMAT_EXEC_SAMPLE=f"{fraction}:{seed}")
    lowering = os.environ.get("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto")
    print(f"profile {os.path.basename(profile)}, lowering={lowering}, sample {fraction} with seed {seed} "
          f"(COOPMAT_VIRTUAL_SEED={seed} draws it again)", flush=True)
    drawn = [l for l in open(profile) if l.startswith("# Drawn")]  # a random profile says how to draw it again
    print("".join(drawn), end="", flush=True)
    run = subprocess.run([binary, *catch_args], env=env, capture_output=True, text=True, timeout=1800)
    out = run.stdout + run.stderr
    lines = open(log).read().splitlines() if os.path.exists(log) else []
    rewritten = [l for l in lines if l.startswith("pipeline profile=")]
    others = [l for l in lines if not l.startswith("pipeline profile=")]
    # Catch2 wraps a warning's message over indented lines; a blank line ends it.
    not_run = sorted(set(" ".join(m.split()) for m in re.findall(r"^\s*(not run: .*?)\n\s*\n", out, re.M | re.S)))
    totals = re.findall(r"^(test cases:.*|assertions:.*|All tests passed.*)$", out, re.M)
    problems = []
    if run.returncode != 0:
        problems.append(f"coopmat_exec_tests failed ({run.returncode})")
    if not rewritten:
        problems.append("the virtual device rewrote no pipeline: nothing ran on it")
    if others:
        problems.append("the virtual device refused or failed pipelines:\n  " + "\n  ".join(others[:20]))
    if problems:
        # Catch's report without the layers' info lines (the virtual device's are in its log).
        report = "\n".join(l for l in out.splitlines()
                           if not l.startswith(("coopmat-maintenance1: info:", "virtual device: pipeline ")))
        sys.exit("\n".join(problems) + f"\n--- seed {seed}, log {log}; output:\n" + report[-30000:])
    print("\n".join(totals))
    print(f"{len(rewritten)} pipelines rewritten by the virtual device")
    for line in not_run:
        print(line)


if __name__ == "__main__":
    main()
