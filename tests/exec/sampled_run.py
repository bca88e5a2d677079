#!/usr/bin/env python3
"""The execution suite on a sample of its runs, with a floor: COOPMAT_EXEC_SAMPLE (exec_util.h)
set to `fraction` and a seed fixed per lane, so that CI runs the same sample every time. Fails
when the suite fails, prints no tally, or ran fewer dispatches than FLOOR_SHARE (90%) of the whole
suite's `full_runs` times the fraction (a sample that runs nearly nothing is not a pass).

  sampled_run.py <lane name> <fraction> <full runs> <program> [args...]
"""
import os
import re
import subprocess
import sys

from exec_tally import lane_seed, read_tally, sample_setting

FLOOR_SHARE = 0.9  # of the dispatches the fraction should draw


def main():
    lane, fraction, full_runs, program, *args = sys.argv[1:]
    fraction = float(fraction)
    seed = lane_seed(lane)
    floor = int(FLOOR_SHARE * fraction * int(full_runs))
    env = dict(os.environ, COOPMAT_EXEC_SAMPLE=sample_setting(fraction, seed))
    print(f"lane {lane}: sample {fraction} with seed {seed}, floor {floor} dispatches", flush=True)
    run = subprocess.run([program, *args], env=env, capture_output=True, text=True)
    out = run.stdout + run.stderr
    ran, _ = read_tally(out)
    problems = []
    if run.returncode != 0:
        problems.append(f"{os.path.basename(program)} failed ({run.returncode})")
    if ran is None:
        problems.append("the suite printed no tally (it stopped before its end)")
    elif ran < floor:
        problems.append(f"ran {ran} dispatches, below the floor of {floor}")
    # The layer's info lines (its layouts, every pipeline) would bury a failure's report.
    shown = "\n".join(l for l in out.splitlines() if ": info: " not in l)
    print(shown[-20000:] if problems else "\n".join(l for l in out.splitlines() if l.startswith("exec tally:")))
    for line in re.findall(r"^(test cases:.*|All tests passed.*)$", out, re.M):
        print(line)
    if problems:
        sys.exit(f"lane {lane}: " + "; ".join(problems))
    print(f"lane {lane}: ran {ran} dispatches (floor {floor})")


if __name__ == "__main__":
    main()
