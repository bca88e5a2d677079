"""What the execution suite says of its runs (exec_util.h's "exec tally:" lines), the seed of a
lane's sample and its COOPMAT_EXEC_SAMPLE setting; shared by the lanes that run a sample of it
(sampled_run.py here, with a seed fixed per lane; tests/virtual/exec_lane.py, per lane and commit)."""
import os
import re
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
