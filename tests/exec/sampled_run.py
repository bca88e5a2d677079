#!/usr/bin/env python3
"""The execution suite on lavapipe on a sample of its runs, as a lane with a floor: the GLSL round
trip's runs of round-tripped modules, the portable lowering with LLVM's optimizations on. Of each
CheckAll's runs, `fraction` are drawn and every group executes one at least (COOPMAT_EXEC_SAMPLE,
exec_util.h), with a seed fixed per lane, so that CI runs the same sample every time and the
floor, lane_expectations.txt's `floor <name> <mode>`, is the sample's whole dispatch count,
without a margin. (Every cell once, as the virtual lanes draw, would take 2.5 times the
dispatches: a round trip's 294 cells made 337.) Fails when the suite fails or prints no tally,
ran fewer dispatches than that floor, or did not run something for a reason neither that file
nor lavapipe's profile (tests/virtual/profiles/lavapipe.txt: the types lavapipe lists) allows.
Prints the reasons runs did not run, and writes the lane's one-line tally to
<scratch>/lane-summary.txt, which scripts/test's summary prints.

  sampled_run.py <name> <mode> <fraction> <scratch dir> <program> [args...]
"""
import os
import re
import shutil
import subprocess
import sys

from exec_tally import (check_suite, lane_seed, lane_timeout, read_cells, read_tally, report_cells, sample_setting,
                         write_summary_line)

LAVAPIPE_PROFILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "virtual", "profiles", "lavapipe.txt")


def main():
    name, mode, fraction, scratch, program, *args = sys.argv[1:]
    lane = f"{name}.{mode}"
    seed = lane_seed(lane)
    setting = sample_setting(fraction, seed)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    print(f"lane {lane}: {fraction} of the runs, one of each group at least, seed {seed} "
          f"(COOPMAT_EXEC_SAMPLE={setting})", flush=True)
    run = subprocess.run([program, *args], env=dict(os.environ, COOPMAT_EXEC_SAMPLE=setting), capture_output=True,
                         text=True, timeout=lane_timeout())
    out = run.stdout + run.stderr
    ran, not_run = read_tally(out)
    cells = read_cells(out)
    totals = re.findall(r"^(test cases:.*|All tests passed.*)$", out, re.M)
    problems = []
    if run.returncode != 0:
        problems.append(f"{os.path.basename(program)} failed ({run.returncode})")
    problems += check_suite(LAVAPIPE_PROFILE, name, mode, ran, not_run, cells)
    write_summary_line(scratch, f"lavapipe lane {lane}", seed, ran, not_run, cells, totals, failed=bool(problems))
    if problems:
        # The layer's info lines (its layouts, every pipeline) would bury a failure's report.
        report = "\n".join(l for l in out.splitlines() if ": info: " not in l)
        sys.exit("\n".join(problems) + f"\n--- seed {seed}; output:\n" + report[-30000:])
    print("\n".join(totals))
    print(f"{ran} dispatches ran; not run: {sum(c for c, _ in not_run)}")
    for count, reason in not_run:
        print(f"  {count}x {reason}")
    print("\n".join(report_cells(cells)))


if __name__ == "__main__":
    main()
