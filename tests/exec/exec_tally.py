"""What the execution suite says of its runs (exec_util.h's "exec tally:" lines), the seed of a
lane's sample and its COOPMAT_EXEC_SAMPLE setting; shared by the lanes that run a sample of it
(sampled_run.py here, with a seed fixed per lane; tests/virtual/exec_lane.py, per lane and commit)."""
import os
import re
import sys
import zlib


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
