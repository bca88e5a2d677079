#!/usr/bin/env python3
"""A program through the product layer on the virtual device under one profile: the
execution suite (tests/exec) or a sample (samples/attention). Every dispatch must have been
rewritten by the virtual device (exec_util's Dispatch checks its log line), nothing refused,
the run must pass, and the product validates every module it rewrites (validate=true).

  exec_lane.py <profile.txt> <scratch dir> <fraction> <program> [args...]

For the execution suite (coopmat_exec_tests) the lane also reads the suite's tally
("exec tally:" lines, exec_util.h) and fails when it executed fewer cells (operation, use,
component types, shape class, combine op: tests/exec/cases.h) than the floor
lane_expectations.txt gives this profile and lowering, or when something did not run for a
reason neither that file nor the profile allows: "the device lists no ..." only where the
profile's `matrix` lines indeed list none. It runs every cell each CheckAll offers once at
least (a run the device can make) and `fraction` of the other runs (COOPMAT_EXEC_SAMPLE with
`cells`), drawn with a seed from the lane's name and the commit under test (source_commit:
$COOPMAT_SOURCE_COMMIT or the checkout's .git), so that successive commits repeat different
runs; it is printed, COOPMAT_VIRTUAL_SEED=<seed> draws it again, fraction 1 (or
COOPMAT_VIRTUAL_FRACTION=1, the campaign) runs everything. The lane's one-line tally goes to
<scratch>/lane-summary.txt, which scripts/test's summary prints. The environment must put the
product layer and the virtual device on the layer path and may set the lowering and
COOPMAT_VIRTUAL_DEFAULT_SUBGROUP_SIZE; COOPMAT_VIRTUAL_LANE_PART names a part of the suite run
as a lane of its own (its floors are `<lowering>/<part>`)."""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "exec"))
from exec_tally import (check_suite, lane_seed, lane_timeout, read_cells, read_tally, report_cells,  # noqa: E402
                        sample_setting, source_commit, write_summary_line)


def main():
    profile, scratch, fraction, binary, *args = sys.argv[1:]
    fraction = os.environ.get("COOPMAT_VIRTUAL_FRACTION") or fraction  # scripts/virtual-campaign: 1
    lowering = os.environ.get("VK_COOPMAT_MAINTENANCE1_LOWERING", "auto")
    default_size = os.environ.get("COOPMAT_VIRTUAL_DEFAULT_SUBGROUP_SIZE", "")
    part = os.environ.get("COOPMAT_VIRTUAL_LANE_PART", "")
    mode = f"{lowering}/{part}" if part else lowering
    name = next(l.split()[1] for l in open(profile) if l.startswith("name "))
    lane = f"{name}.{lowering}" + (f".{part}" if part else "") + (f".default{default_size}" if default_size else "")
    commit = source_commit()
    seed = os.environ.get("COOPMAT_VIRTUAL_SEED") or str(lane_seed(lane, commit))
    suite = os.path.basename(binary).startswith("coopmat_exec_tests")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    log = os.path.join(scratch, "virtual.log")
    # A cache of its own: the product layer probes the virtual device's layouts afresh.
    env = dict(os.environ, COOPMAT_VIRTUAL_PROFILE=profile, COOPMAT_VIRTUAL_LOG=log, XDG_CACHE_HOME=scratch,
               COOPMAT_EXEC_SAMPLE=sample_setting(fraction, seed, cells=True), VK_COOPMAT_MAINTENANCE1_VALIDATE="true")
    print(f"lane {lane}: every cell once and {fraction} of the other runs, seed {seed} (commit {commit or 'unknown'}; "
          f"COOPMAT_VIRTUAL_SEED={seed} draws it again)", flush=True)
    drawn = [l for l in open(profile) if l.startswith("# Drawn")]  # a random profile says how to draw it again
    print("".join(drawn), end="", flush=True)
    run = subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=lane_timeout())
    out = run.stdout + run.stderr
    lines = open(log).read().splitlines() if os.path.exists(log) else []
    rewritten = [l for l in lines if l.startswith("pipeline profile=")]
    # What the emulation found wrong while the work ran (fault_buffer.h): never in a correct program.
    faults = [l for l in lines if l.startswith("fault")]
    others = [l for l in lines if not l.startswith(("pipeline profile=", "fault"))]
    past_length = sum(int(m) for m in re.findall(r"past_length_accesses=(\d+)", "\n".join(rewritten)))
    totals = re.findall(r"^(test cases:.*|assertions:.*|All tests passed.*)$", out, re.M)
    problems = []
    if run.returncode != 0:
        problems.append(f"{os.path.basename(binary)} failed ({run.returncode})")
    if not rewritten:
        problems.append("the virtual device rewrote no pipeline: nothing ran on it")
    if faults:
        problems.append(f"the virtual device found {len(faults)} faults:\n  " + "\n  ".join(faults[:20]))
    if others:
        problems.append("the virtual device refused or failed pipelines:\n  " + "\n  ".join(others[:20]))
    ran, not_run, cells = None, [], {}
    if suite:
        ran, not_run = read_tally(out)
        cells = read_cells(out)
        problems += check_suite(profile, name, mode, ran, not_run, cells)
        write_summary_line(scratch, f"virtual lane {lane}", seed, ran, not_run, cells, totals, failed=bool(problems))
    if problems:
        # The report without the layers' info lines (the virtual device's are in its log).
        report = "\n".join(l for l in out.splitlines()
                           if not l.startswith(("coopmat-maintenance1: info:", "virtual device: pipeline ")))
        # Catch2's failed assertions first: a long report's tail alone can leave them out (the
        # campaign's radv-gfx11-wave64 lane once said "1 failed" and showed only warnings).
        failed = "\n".join(block for block in re.split(r"\n(?=-{20,}\n.*\n(?:.*\n)?-{20,}\n)", run.stdout)
                           if re.search(r"FAILED|unexpected exception|fatal error", block))
        sys.exit("\n".join(problems) + f"\n--- seed {seed}, log {log}; failed assertions:\n" + failed[-20000:] +
                 "\n--- output:\n" + report[-20000:])
    print("\n".join(totals))
    print(f"{len(rewritten)} pipelines rewritten by the virtual device, {past_length} element accesses past a "
          f"matrix's length (another subgroup size's code), 0 faults")
    if suite:
        print(f"{ran} dispatches ran; not run: {sum(c for c, _ in not_run)}")
        for count, reason in not_run:
            print(f"  {count}x {reason}")
        print("\n".join(report_cells(cells)))


if __name__ == "__main__":
    main()
