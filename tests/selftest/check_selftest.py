#!/usr/bin/env python3
"""Runs coopmat-selftest and checks what it reported, from its --json output and its exit
status, against facts the tool does not compute: the matrices the device lists (a virtual
device's profile file, or a count) and the operations every such device must have run.

  check_selftest.py --pass (--profile FILE | --matrices N) [--operations A,B | --only PREFIX] [--virtual-log LOG] -- <coopmat-selftest> [args...]
  check_selftest.py --fail [--virtual-log LOG] [--only-failing LOWERING] -- <coopmat-selftest> [args...]
  (either form) [--native]

--pass: exit status 0, nothing failed or skipped, on every device and pass a GetCoordinate
case of each matrix (use, type, shape) the profile lists (or of exactly N matrices) and at
least one case of every operation the profile's matrices allow (operations_of; with
--matrices, every operation an A, a B and an arithmetic accumulator of one shape allow;
--operations: those named, for a run with --filter; --only PREFIX: those of the profile's
whose name starts with PREFIX, for a run with --filter PREFIX, and no GetCoordinate check).
--fail: exit status 1, failures counted and shown as FAIL in the table (the tool can fail).
--only-failing LOWERING (with --fail): every failure is in passes of that lowering (each has
some, and a FAIL line says so) and every other pass passed whole.
--native: the driver has the extension itself (tests/selftest: a test layer plays it), so every
device says so and ran a lowering=native pass beside the layer's.
--virtual-log: the virtual device's log (COOPMAT_VIRTUAL_LOG), removed first; with --pass a
`fault` line there fails the check (the tool hides stderr, where the virtual device also
writes it)."""
import json
import os
import subprocess
import sys
import tempfile

# The operations every device with an A, a B and an arithmetic accumulator of one shape runs.
ALWAYS = ["GetCoordinate", "PerElementOp (row, col)", "PerElementOp (2 operands)", "Reduce row", "Reduce col",
          "Reduce rowcol", "ConvertUse Acc -> A", "ConvertUse Acc -> B", "ConvertUse A -> Acc", "ConvertUse B -> Acc"]


ARITHMETIC = {"f16", "f32", "u8", "s8", "u32", "s32"}
INTEGER = {"u8", "s8", "u32", "s32"}
ENCODED = {"bf16", "e4m3", "e5m2"}


def operations_of(matrices):
    """The operations a device listing `matrices` ("use type RxC") must run, by the extension's
    rules as the self-test applies them: GetCoordinate and PerElementOp on any matrix, Reduce
    on an arithmetic accumulator, ConvertUse between an accumulator and an A or B of one shape
    (types GLSL converts between: not integers and bfloat16/fp8)."""
    parsed = [m.split() for m in matrices]
    out = {"GetCoordinate", "PerElementOp (row, col)", "PerElementOp (2 operands)"}
    if any(use == "acc" and t in ARITHMETIC for use, t, _ in parsed):
        out |= {"Reduce row", "Reduce col", "Reduce rowcol"}
    for use, t, shape in parsed:
        if use != "acc":
            continue
        for use2, t2, shape2 in parsed:
            convertible = not ({t, t2} & INTEGER and {t, t2} & ENCODED)
            if use2 != "acc" and shape2 == shape and convertible:
                out |= {f"ConvertUse Acc -> {use2.upper()}", f"ConvertUse {use2.upper()} -> Acc"}
    return sorted(out)


def profile_matrices(path):
    """Every (use, type, rows x cols) a virtual device's profile lists (its `matrix` lines:
    M N K A B C Result), as the tool names them."""
    out = set()
    for line in open(path):
        words = line.split()
        if words[:1] != ["matrix"]:
            continue
        m, n, k = (int(w) for w in words[1:4])
        a, b, c, r = words[4:8]
        out |= {f"a {a} {m}x{k}", f"b {b} {k}x{n}", f"acc {c} {m}x{n}", f"acc {r} {m}x{n}"}
    return out


def main(argv):
    if "--" not in argv:
        sys.exit(__doc__)
    options, command = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    want_pass = "--pass" in options
    expected = None
    if "--profile" in options:
        expected = profile_matrices(options[options.index("--profile") + 1])
    count = int(options[options.index("--matrices") + 1]) if "--matrices" in options else None
    required = options[options.index("--operations") + 1].split(",") if "--operations" in options else \
        operations_of(expected) if expected is not None else ALWAYS
    only = options[options.index("--only") + 1] if "--only" in options else None
    if only is not None:
        required = [op for op in required if op.startswith(only)]
        if not required:
            sys.exit(f"check_selftest: the profile allows no operation starting with '{only}'")
    only_failing = options[options.index("--only-failing") + 1] if "--only-failing" in options else None
    native = "--native" in options
    log = options[options.index("--virtual-log") + 1] if "--virtual-log" in options else None
    if log and os.path.exists(log):
        os.remove(log)
    with tempfile.TemporaryDirectory() as scratch:
        report_path = os.path.join(scratch, "report.json")
        run = subprocess.run(command + ["--json", report_path], capture_output=True, text=True)
        print(run.stdout, end="")
        print(run.stderr, end="", file=sys.stderr)
        report = json.load(open(report_path))
    problems = []
    summary = f"{report['passed']} passed, {report['failed']} failed, {report['skipped']} skipped"
    if summary not in run.stdout.splitlines():
        problems.append(f"the closing line '{summary}' is missing")
    if want_pass:
        if run.returncode != 0 or report["failed"] or report["skipped"] or not report["passed"]:
            problems.append(f"exit status {run.returncode}, {summary}: expected a clean pass")
        if not report["devices"]:
            problems.append("no device was tested")
        for device in report["devices"]:
            if not device["passes"]:
                problems.append(f"device {device['name']}: no pass ran ({device['problem']})")
            for p in device["passes"]:
                where = f"device {device['name']}, subgroup size {p['subgroupSize']}, lowering={p['lowering']}"
                ran = {c["operation"] for c in p["cases"] if c["result"] == "pass"}
                for operation in required:
                    if operation not in ran:
                        problems.append(f"{where}: no {operation} case passed")
                coords = {c["matrix"] for c in p["cases"] if c["operation"] == "GetCoordinate" and c["result"] == "pass"}
                if only is None and expected is not None and not expected <= coords:  # (more: NV flexible dimensions' shapes)
                    problems.append(f"{where}: no GetCoordinate case passed on {sorted(expected - coords)}, which the profile lists")
                if only is None and count is not None and len(coords) != count:
                    problems.append(f"{where}: GetCoordinate ran on {len(coords)} matrices, the device lists {count}")
    else:
        if run.returncode != 1 or not report["failed"] or "FAIL" not in run.stdout:
            problems.append(f"exit status {run.returncode}, {summary}: expected failures shown as FAIL and exit status 1")
    for device in report["devices"]:
        lowerings = {p["lowering"] for p in device["passes"]}
        if native and (not device.get("driverHasExtension") or "native" not in lowerings):
            problems.append(f"device {device['name']}: no lowering=native pass (the driver's own implementation): "
                            f"{sorted(lowerings)}")
        if not native and device.get("driverHasExtension"):
            problems.append(f"device {device['name']}: says the driver has the extension itself")
        if native and "native" in lowerings and len(lowerings) < 2:
            problems.append(f"device {device['name']}: only the native pass ran, nothing to compare it with")
        for p in device["passes"] if only_failing is not None else []:
            failed = [c for c in p["cases"] if c["result"] == "fail"]
            where = f"device {device['name']}, subgroup size {p['subgroupSize']}, lowering={p['lowering']}"
            if p["lowering"] != only_failing and (failed or p["problem"] or not p["cases"]):
                problems.append(f"{where}: expected to pass whole ({len(failed)} failed, problem '{p['problem']}')")
            if p["lowering"] == only_failing and not failed:
                problems.append(f"{where}: expected failures, none")
    if only_failing is not None and f"lowering={only_failing})" not in run.stdout:
        problems.append(f"no FAIL line of lowering={only_failing} in the output")
    if log:
        if not os.path.exists(log):
            problems.append(f"the virtual device wrote no log ({log}): did it run?")
        elif want_pass:  # wrong layouts (--fail) make replicas disagree: faults are expected there
            problems += [f"virtual device: {line.strip()}" for line in open(log) if line.startswith("fault")]
    for problem in problems:
        print(f"check_selftest: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
