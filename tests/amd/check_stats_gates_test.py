#!/usr/bin/env python3
"""The compile lanes' gates bite: check_stats.py's `cases` mode over a stand-in opbench
(no shim, no driver) with one case that meets its rule and one that does not. The run
passes only when the miss is listed within 5 % of its ceiling; an unlisted miss, a
listed miss past its ceiling, a listed rule that now holds (XPASS), a stale entry and a
line without a ceiling each fail it.

  check_stats_gates_test.py WORK_DIR"""
import argparse
import contextlib
import io
import os
import stat
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_stats  # noqa: E402

GPU = "0x172"  # NVK: two subgroup sizes per run (32 and the driver's pick)
STAT = "Instruction count"
# Per requested subgroup size: the khr way and the layer way of two cases.
OPBENCH = """#!/usr/bin/env python3
import sys
size = sys.argv[sys.argv.index("--sizes") + 1]
print("op,shape,type,way,requested_subgroup,status,Instruction count")
print(f"meets,16x16,acc:f32,khr,{size},ok,100")
print(f"meets,16x16,acc:f32,layer,{size},ok,90")
print(f"misses,16x16,acc:f32,khr,{size},ok,100")
print(f"misses,16x16,acc:f32,layer,{size},ok,120")
"""
MISS_32 = f"{GPU} | misses,16x16,acc:f32 | 32 | {STAT} | khr"
MISS_0 = f"{GPU} | misses,16x16,acc:f32 | 0 | {STAT} | khr"

# name: (expected-failures lines, whether the run must pass)
CASES = {
    "both misses listed at their value": ([f"{MISS_32} | 120", f"{MISS_0} | 120"], True),
    "within 5 % of the ceiling": ([f"{MISS_32} | 115", f"{MISS_0} | 120"], True),
    "a miss not listed": ([f"{MISS_32} | 120"], False),
    "worse than its ceiling by more than 5 %": ([f"{MISS_32} | 110", f"{MISS_0} | 120"], False),
    "a listed rule that now holds (XPASS)": ([f"{MISS_32} | 120", f"{MISS_0} | 120",
                                              f"{GPU} | meets,16x16,acc:f32 | 32 | {STAT} | khr | 90"], False),
    "a stale entry": ([f"{MISS_32} | 120", f"{MISS_0} | 120",
                       f"{GPU} | gone,16x16,acc:f32 | 32 | {STAT} | khr | 90"], False),
}


def run_cases(work, lines):
    """check_stats.py cases with the stand-in opbench and these expected failures: its status."""
    expected = os.path.join(work, "expected_failures.txt")
    with open(expected, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    args = argparse.Namespace(gpu=GPU, opbench=os.path.join(work, "opbench"), bounds=os.path.join(work, "bounds.txt"),
                              expected_failures=expected, list_failing=False, require=True)
    output = io.StringIO()
    try:
        with contextlib.redirect_stdout(output):
            status = check_stats.check_cases(args)
    except SystemExit as e:  # a malformed list
        status = 2
        output.write(f"exit: {e}\n")
    return status, output.getvalue()


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    opbench = os.path.join(work, "opbench")
    with open(opbench, "w") as f:
        f.write(OPBENCH)
    os.chmod(opbench, os.stat(opbench).st_mode | stat.S_IEXEC)
    with open(os.path.join(work, "bounds.txt"), "w") as f:
        f.write(f"* | {STAT} | 1.0 | khr\n")
    # No shim: the stand-in opbench runs in this environment.
    check_stats.shim_environment = lambda gpu, cache, require: dict(os.environ)
    failures = 0
    cases = dict(CASES)
    cases["a line without a ceiling"] = ([MISS_32, f"{MISS_0} | 120"], False)
    for name, (lines, must_pass) in cases.items():
        status, output = run_cases(work, lines)
        if (status == 0) != must_pass:
            failures += 1
            print(f"FAIL {name}: exit {status}, expected {'success' if must_pass else 'failure'}\n{output}")
        else:
            print(f"ok   {name}: exit {status}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
