"""What the execution suite says of its runs (exec_util.h's "exec tally:" lines), the seed of a
lane's sample and its COOPMAT_EXEC_SAMPLE setting, and the check of a lane's tally against its
floors and allowed reasons (lane_expectations.txt); shared by the lanes that run a sample of it
(sampled_run.py here, on lavapipe; tests/virtual/exec_lane.py, on the virtual device), each seeded
per lane and commit. `exec_tally.py suite-summary <dir>`: the lavapipe suite's line for
scripts/test's summary."""
import os
import re
import sys
import zlib

# The floors of every sampled exec lane and the reasons each may give for not running something.
LANE_EXPECTATIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "virtual", "lane_expectations.txt")


def source_commit():
    """The commit under test: $COOPMAT_SOURCE_COMMIT (scripts/test sets it from git on the host),
    else read from the checkout's .git (the toolchain root has no git), else None."""
    commit = os.environ.get("COOPMAT_SOURCE_COMMIT", "").strip()
    if commit:
        return commit
    git = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".git")
    try:
        if os.path.isfile(git):  # a worktree: "gitdir: <dir>"
            git = open(git).read().split(":", 1)[1].strip()
        head = open(os.path.join(git, "HEAD")).read().strip()
        if not head.startswith("ref: "):
            return head
        ref = head[5:]
        common = os.path.join(git, open(os.path.join(git, "commondir")).read().strip()) \
            if os.path.exists(os.path.join(git, "commondir")) else git
        for root in (git, common):
            if os.path.exists(os.path.join(root, ref)):
                return open(os.path.join(root, ref)).read().strip()
            if os.path.exists(os.path.join(root, "packed-refs")):
                for line in open(os.path.join(root, "packed-refs")):
                    if line.rstrip().endswith(" " + ref):
                        return line.split()[0]
    except OSError:
        pass
    return None


def lane_timeout():
    """Seconds a lane's program may run: 840 (under ctest's 900), or $COOPMAT_LANE_TIMEOUT
    (scripts/virtual-campaign: whole lanes with LLVM's optimizations on take longer)."""
    return int(os.environ.get("COOPMAT_LANE_TIMEOUT") or 840)


def lane_seed(lane, commit=None):
    """The sample's seed for a lane name, and with a commit for that commit too: a lane draws
    the same sample for one commit and another for the next, so CI's holes move."""
    return zlib.crc32((f"{commit}:{lane}" if commit else lane).encode()) & 0x7FFFFFFF


def sample_setting(fraction, seed, cells=False):
    """COOPMAT_EXEC_SAMPLE (exec_util.h) for a fraction and a seed; with cells, every cell
    (operation, use, types, shape class, combine op) a group offers executes once at least."""
    # An older build's cache may hold `<runs>:<groups>`: no CheckAll is drawn out any more.
    runs = float(str(fraction).partition(":")[0])
    return f"{runs}:{seed}" + (":cells" if cells else "")


def read_cells(out):
    """{cell: runs executed} from the suite's "exec tally: cell" lines (0: offered, none could run)."""
    return {cell: int(count) for cell, count in re.findall(r"^exec tally: cell (.*) ran (\d+)$", out, re.M)}


def read_tally(out):
    """(dispatches that ran or None when the suite printed no tally, [(count, reason) not run])."""
    ran = re.findall(r"^exec tally: ran (\d+)$", out, re.M)
    not_run = [(int(count), reason) for count, reason in re.findall(r"^exec tally: not run (\d+): (.*)$", out, re.M)]
    return (int(ran[-1]) if ran else None), not_run



def read_expectations(profile_name, lowering):
    """This lane's floors ({"cells": fewest cells executed, "floor": fewest dispatches}, either or
    both) and the reasons it may give for not running something."""
    floors, allowed = {}, []
    for number, line in enumerate(open(LANE_EXPECTATIONS), 1):
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


def write_summary_line(scratch, title, seed, ran, not_run, cells, totals, failed):
    """One line for scripts/test's summary (it prints every lane's lane-summary.txt), failed or not;
    title: which lane ("virtual lane <lane>", "lavapipe lane <lane>")."""
    # Catch prints "test cases: ..." when some were skipped or failed, else "All tests passed (...)".
    cases = " ".join(next((t for t in totals if t.startswith(("test cases:", "All tests passed"))), "test cases: ?").split())
    executed = sum(runs > 0 for runs in cells.values())
    line = (f"{title}{' FAILED' if failed else ''} (seed {seed}): {executed} of {len(cells)} cells executed, "
            f"{ran} dispatches, {sum(c for c, _ in not_run)} runs not run; {cases}")
    with open(os.path.join(scratch, "lane-summary.txt"), "w") as f:
        f.write(line + "\n")

def suite_summary(case_tally_dir):
    """One line per lowering for scripts/test's summary, from the lines each ctest case of the
    lavapipe suite wrote (main.cpp's COOPMAT_EXEC_CASE_TALLY): test cases that dispatched and
    their dispatches, runs not run, test cases skipped (dispatched nothing included), failed,
    and those that dispatch nothing by design ([cpu], [no-dispatch])."""
    lanes = {}
    names = sorted(os.listdir(case_tally_dir)) if os.path.isdir(case_tally_dir) else []
    for name in names:
        for line in open(os.path.join(case_tally_dir, name)):
            lowering, outcome, ran, not_run, _case = line.rstrip("\n").split("\t", 4)
            lane = lanes.setdefault(lowering, {"ran": 0, "not run": 0})
            lane[outcome] = lane.get(outcome, 0) + 1
            lane["ran"] += int(ran)
            lane["not run"] += int(not_run)
    if not lanes:
        return ["lavapipe suite: no case tally (no case of it ran)"]
    return [f"lavapipe suite {lowering}: {l.get('dispatched', 0)} test cases dispatched {l['ran']} runs, "
            f"{l['not run']} runs not run; {l.get('skipped', 0) + l.get('nothing', 0)} test cases skipped "
            f"({l.get('nothing', 0)} of them dispatched nothing), {l.get('failed', 0) + l.get('mistagged', 0)} failed, "
            f"{l.get('by-design', 0)} dispatch nothing by design ([cpu], [no-dispatch])"
            for lowering, l in sorted(lanes.items())]


if __name__ == "__main__":
    if sys.argv[1:2] != ["suite-summary"] or len(sys.argv) != 3:
        sys.exit("usage: exec_tally.py suite-summary <case tally dir>")
    print("\n".join(suite_summary(sys.argv[2])))
