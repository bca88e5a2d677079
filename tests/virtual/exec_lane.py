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
from exec_tally import lane_seed, read_cells, read_tally, sample_setting, source_commit  # noqa: E402


def read_expectations(profile_name, lowering):
    """This lane's floors ({"cells": fewest cells executed, "floor": fewest dispatches}, either or
    both) and the reasons it may give for not running something."""
    floors, allowed = {}, []
    for number, line in enumerate(open(os.path.join(HERE, "lane_expectations.txt")), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        kind, rest = line.split(None, 1)
        if kind in ("cells", "floor"):
            profile, mode, count = rest.split()
            if re.fullmatch(profile, profile_name) and mode == lowering:
                floors[kind] = int(count)
        elif kind == "allow":
            profile, reason = rest.split(None, 1)
            if re.fullmatch(profile, profile_name):
                allowed.append((re.compile(reason), number))
        else:
            sys.exit(f"lane_expectations.txt:{number}: unknown line kind '{kind}'")
    return floors, allowed


def profile_matrices(profile):
    """The profile's matrices as the suite sees them: {(use, type): the first shape a `matrix`
    line lists it at} (Env::Shape takes the first), and the (A/B type, C type) MulAdds."""
    shapes, muladds = {}, set()
    for line in open(profile):
        words = line.split()
        if words[:1] != ["matrix"]:
            continue
        m, n, k = (int(w) for w in words[1:4])
        a, b, c, r = words[4:8]
        for key, shape in ((("a", a), (m, k)), (("b", b), (k, n)), (("acc", c), (m, n)), (("acc", r), (m, n))):
            shapes.setdefault(key, shape)
        if a == b and c == r:
            muladds.add((a, c))
    return shapes, muladds


def profile_lacks(matrices, reason):
    """Whether `reason` says the device lists no matrix or MulAdd (or not at the shape the suite
    takes, its first) that the profile file (its profile_matrices) indeed does not (None: not
    such a reason). Only a profile's real gaps are allowed, so a type the profile has cannot
    vanish from its lane."""
    shapes, muladds = matrices
    listed = re.fullmatch(r"the device lists no (a|b|acc) (\S+) matrix", reason)
    if listed:
        return (listed[1], listed[2]) not in shapes
    converted = re.fullmatch(r"the device lists no (a|b|acc) (\S+) (\d+)x(\d+) matrix to convert (a|b|acc) \S+ into", reason)
    if converted:
        return shapes.get((converted[1], converted[2])) != (int(converted[3]), int(converted[4]))
    muladd = re.fullmatch(r"the device lists no MulAdd of (\S+) into (\S+)", reason)
    if muladd:
        return (muladd[1], muladd[2]) not in muladds
    accumulator = re.fullmatch(r"muladd_\w+ needs a (\d+)x(\d+) (\S+) accumulator, which the device does not list", reason)
    if accumulator:
        return shapes.get(("acc", accumulator[3])) != (int(accumulator[1]), int(accumulator[2]))
    return None


def report_cells(cells):
    """Per operation: cells executed / offered and the runs they made; then the cells none of
    whose runs the device could make."""
    by_op = {}
    for cell, runs in cells.items():
        op = by_op.setdefault(cell.split()[0], [0, 0, 0])
        op[0] += runs > 0
        op[1] += 1
        op[2] += runs
    lines = [f"cells executed: {sum(r > 0 for r in cells.values())} of {len(cells)} offered ("
             + ", ".join(f"{op} {e}/{o} in {r} runs" for op, (e, o, r) in sorted(by_op.items())) + ")"]
    lines += [f"  not executable here: {cell}" for cell, runs in sorted(cells.items()) if runs == 0]
    return lines


def check_suite(profile, name, mode, ran, not_run, cells):
    """What is wrong with the suite's tally: too few cells executed for this lane's floor, or
    something not run for a reason neither lane_expectations.txt nor the profile's own gaps allow."""
    problems = []
    floors, allowed = read_expectations(name, mode)
    executed = sum(runs > 0 for runs in cells.values())
    if ran is None:
        problems.append("the suite printed no tally (it stopped before its end)")
    elif not floors:
        problems.append(f"lane_expectations.txt has no floor for {name} {mode} (this run: {executed} cells, "
                        f"{ran} dispatches)")
    if ran is not None and executed < floors.get("cells", 0):
        problems.append(f"the suite executed {executed} cells, below this lane's floor of {floors['cells']}:\n  "
                        + "\n  ".join(report_cells(cells)))
    if ran is not None and ran < floors.get("floor", 0):
        problems.append(f"the suite ran {ran} dispatches, below this lane's floor of {floors['floor']}")
    matrices = profile_matrices(profile)
    for count, reason in not_run:
        lacks = profile_lacks(matrices, reason)
        if lacks is False:
            problems.append(f"not run although the profile lists it: {reason} ({count}x)")
        elif lacks is None and not any(pattern.search(reason) for pattern, _ in allowed):
            problems.append(f"not run for a reason lane_expectations.txt does not allow {name}: {reason} ({count}x)")
    return problems


def write_summary_line(scratch, lane, seed, ran, not_run, cells, totals, failed):
    """One line for scripts/test's summary (it prints every lane's lane-summary.txt), failed or not."""
    # Catch prints "test cases: ..." when some were skipped or failed, else "All tests passed (...)".
    cases = " ".join(next((t for t in totals if t.startswith(("test cases:", "All tests passed"))), "test cases: ?").split())
    executed = sum(runs > 0 for runs in cells.values())
    line = (f"virtual lane {lane}{' FAILED' if failed else ''} (seed {seed}): {executed} of {len(cells)} cells executed, "
            f"{ran} dispatches, {sum(c for c, _ in not_run)} runs not run; {cases}")
    with open(os.path.join(scratch, "lane-summary.txt"), "w") as f:
        f.write(line + "\n")


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
    run = subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=840)
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
        write_summary_line(scratch, lane, seed, ran, not_run, cells, totals, failed=bool(problems))
    if problems:
        # The report without the layers' info lines (the virtual device's are in its log).
        report = "\n".join(l for l in out.splitlines()
                           if not l.startswith(("coopmat-maintenance1: info:", "virtual device: pipeline ")))
        sys.exit("\n".join(problems) + f"\n--- seed {seed}, log {log}; output:\n" + report[-30000:])
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
