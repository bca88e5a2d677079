"""What the execution suite says of its runs (exec_util.h's "exec tally:" lines), the fixed
seed of a lane's sample and its COOPMAT_EXEC_SAMPLE setting; shared by the lanes that run a sample of it (sampled_run.py here,
tests/virtual/exec_lane.py)."""
import re
import zlib


def lane_seed(lane):
    """The sample's seed for a lane name: the same every run, so CI draws the same sample."""
    return zlib.crc32(lane.encode()) & 0x7FFFFFFF


def sample_setting(fraction, seed, cells=False):
    """COOPMAT_EXEC_SAMPLE (exec_util.h) for a fraction and a seed; with cells, every cell
    (operation, use, types, shape class, combine op) a group offers executes once at least."""
    return f"{fraction}:{seed}" + (":cells" if cells else "")


def read_cells(out):
    """{cell: runs executed} from the suite's "exec tally: cell" lines (0: offered, none could run)."""
    return {cell: int(count) for cell, count in re.findall(r"^exec tally: cell (.*) ran (\d+)$", out, re.M)}


def read_tally(out):
    """(dispatches that ran or None when the suite printed no tally, [(count, reason) not run])."""
    ran = re.findall(r"^exec tally: ran (\d+)$", out, re.M)
    not_run = [(int(count), reason) for count, reason in re.findall(r"^exec tally: not run (\d+): (.*)$", out, re.M)]
    return (int(ran[-1]) if ran else None), not_run
