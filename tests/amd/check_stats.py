#!/usr/bin/env python3
"""The compile lanes: RADV (GFX11 navi31, GFX12 gfx1201) through Mesa's amdgpu noop
drm-shim, and NVK (Ampere 0x172, Turing 0x162: --gpu is the NOUVEAU_CHIPSET) through
its nouveau noop drm-shim, where ACO or NAK compiles for real and nothing executes.
On NVK the layer uses the built-in NVIDIA table (builtin_layouts=nvidia-mma), since
the probe reads nothing there.

  check_stats.py cases   --gpu G --opbench PATH --bounds FILE --expected-failures FILE
  check_stats.py modules --gpu G --opbench PATH --modules DIR
  check_stats.py budget  --gpu G --opbench PATH --modules DIR
  check_stats.py run     --gpu G [--also-icd ICD] -- COMMAND...   (any command on the shimmed
                         device; --also-icd lists a second driver, e.g. lvp_icd.json)

cases: runs `opbench --stats` (every opbench case and way at wave32, wave64 and the
driver's pick), requires every pipeline to be created, and applies the bounds
file's rules to the layer way. A rule a case does not meet yet fails the test
unless the expected-failures file lists it with a ceiling: the value measured when
it was listed (then XFAIL). A listed case that gets more than 5 % worse than its
ceiling fails; so does a listed rule that now holds (XPASS: remove its line) and a
listed entry this run did not measure (stale: remove or rename it).
modules: runs `opbench --stats --modules DIR` (the execution tests' modules)
through the layer and requires every pipeline to be created.
budget: the same for module pairs named *_app<bytes> that differ only in their own
shared memory; where the roomy one gets layer scratch, the tight one must get none.

Exit status 77 (ctest: skipped) when the shim or the driver's ICD is missing; with
--require (the build's COOPMAT_REQUIRE_LANES, which scripts/test always sets) that
fails instead: a lane that cannot run must not pass."""
import argparse
import csv
import io
import os
import re
import subprocess
import sys
import tempfile

SHIM_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]
ICD_DIR = "/usr/share/vulkan/icd.d"
SKIP = 77
CEILING_SLACK = 1.05  # an expected failure may move by 5 % before it fails (compiler noise)
LDS_LIMIT = 65536  # maxComputeSharedMemorySize of both shimmed RADV devices


def is_nvk(gpu):
    return gpu.startswith("0x")


def shim_path(name):
    for d in SHIM_DIRS:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None


def sizes(gpu):
    # wave32, wave64 and the driver's pick on RADV; NVK runs 32 only.
    return ["32", "0"] if is_nvk(gpu) else ["32", "64", "0"]


def missing(what, require):
    """A lane that cannot run here: fails under --require, else skipped (exit 77)."""
    print(f"{'FAIL' if require else 'skipped'}: no {what}")
    sys.exit(1 if require else SKIP)


def shim_environment(gpu, cache, require):
    shim_name = "libnouveau_noop_drm_shim.so" if is_nvk(gpu) else "libamdgpu_noop_drm_shim.so"
    icd = os.path.join(ICD_DIR, "nouveau_icd.json" if is_nvk(gpu) else "radeon_icd.json")
    shim = shim_path(shim_name)
    if not shim or not os.path.exists(icd):
        missing(f"{shim_name} or {icd} (Debian: mesa-drm-shim, mesa-vulkan-drivers)", require)
    env = dict(os.environ)
    # force_enable: the layer rows measure the layer even once RADV or NVK implement the
    # extension themselves (the layer would step aside and the rows measure the driver).
    # Mesa's shader cache in a folder of its own: tests run here point XDG_CACHE_HOME at
    # fresh folders and remove them while the instance's cache thread still writes there.
    # validate: every module the layer lowers in a lane goes through spirv-val (one that does
    # not validate is not created, which the checks count as a failure; test audit dbb465e §0.10).
    env.update({"LD_PRELOAD": shim, "VK_DRIVER_FILES": icd, "XDG_CACHE_HOME": cache,
                "MESA_SHADER_CACHE_DIR": os.path.join(cache, "mesa"),
                "VK_COOPMAT_MAINTENANCE1_FORCE_ENABLE": "true", "VK_COOPMAT_MAINTENANCE1_VALIDATE": "true"})
    if is_nvk(gpu):
        env.update({"NOUVEAU_CHIPSET": gpu, "VK_COOPMAT_MAINTENANCE1_BUILTIN_LAYOUTS": "nvidia-mma"})
    else:
        env["AMDGPU_GPU_ID"] = gpu
    return env


def run_opbench(gpu, opbench, extra, require):
    """opbench --stats on the shimmed driver with a fresh layout cache, one process per
    subgroup size (RADV keeps every shader of a device in its in-memory cache, and
    past about 500 the shim's memory runs out); returns (status, CSV rows)."""
    status, rows = 0, []
    for size in sizes(gpu):
        with tempfile.TemporaryDirectory(prefix="coopmat-amd-") as cache:
            env = shim_environment(gpu, cache, require)
            proc = subprocess.run([opbench, "--stats", "--sizes", size] + extra, env=env, capture_output=True,
                                  text=True)
        lines = proc.stderr.splitlines()
        sys.stderr.write("".join(l + "\n" for l in lines if not l.startswith("skipped ")))
        sys.stderr.write("".join(f"{l}\n" for l in skipped_by_reason(lines)))
        rows += list(csv.DictReader(io.StringIO(proc.stdout)))
        status = status or proc.returncode
    return status, rows


def skipped_by_reason(lines):
    """opbench's "skipped <module>: <reason>" lines (a type the driver does not list), one line
    per reason with its count and first module: hundreds of modules, a few reasons."""
    reasons = {}
    for line in lines:
        skipped = re.fullmatch(r"skipped (\S+): (.*)", line)
        if skipped:
            reasons.setdefault(skipped[2], []).append(skipped[1])
    return [f"skipped {len(names)} modules: {reason} (first {names[0]})" for reason, names in sorted(reasons.items())]


def creation_failures(rows, key):
    """Pipelines not created. An "unavailable" row (a case's NV variant the driver cannot
    build) is no failure here: the rules that compare with it say so."""
    return [f"{key(r)} at subgroup {r['requested_subgroup']}: {r['status']}" for r in rows
            if r["status"] not in ("ok", "unavailable")]


def read_bounds(path):
    rules = []
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        op, stat, factor, ref = [f.strip() for f in line.split("|")]
        rules.append((op, stat, float(factor), ref))
    return rules


def read_expected(path, gpu):
    """Entries 'gpu | op,shape,type | requested subgroup | statistic | reference | ceiling'
    for this gpu: {(case, subgroup, statistic, reference): ceiling}."""
    out = {}
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = tuple(f.strip() for f in line.split("|"))
        try:
            ceiling = float(fields[5]) if len(fields) == 6 else None
        except ValueError:
            ceiling = None
        if ceiling is None:
            raise SystemExit(f"{path}: bad line (6 fields, the last the measured value): {line}")
        if fields[0] == gpu:
            out[fields[1:5]] = ceiling
    return out


def report(failures, status, command):
    """Prints the failures (and a failed run with none of its own); the exit status."""
    if status != 0 and not failures:
        failures.append(f"{command} exited with {status}")
    for f in failures:
        print(f"FAIL {f}")
    return 1 if failures else 0


def check_cases(args):
    status, rows = run_opbench(args.gpu, args.opbench, [], args.require)
    def case(r):
        return f"{r['op']},{r['shape']},{r['type']}"
    failures = creation_failures(rows, lambda r: f"{case(r)} {r['way']}")
    by_key = {(case(r), r["way"], r["requested_subgroup"]): r for r in rows}
    # A case whose NV variant the driver could not build at all ("unavailable", at every size).
    unavailable = {(case(r), r["way"]) for r in rows if r["status"] == "unavailable"}
    available_ways = {r["way"] for r in rows if r["status"] == "ok"}
    without_reference = {}  # rule index -> cases compared with nothing
    rules = read_bounds(args.bounds)
    expected = read_expected(args.expected_failures, args.gpu)
    counts = {"pass": 0, "xfail": 0, "xpass": 0, "fail": 0}
    seen = set()
    failing = {}
    applied = [0] * len(rules)
    # A case the khr way measured must have layer rows (review 2 finding 8: a type or
    # way that vanished dropped its cases silently).
    measured = {(case(r), r["requested_subgroup"]) for r in rows if r["way"] == "khr"}
    served = {(case(r), r["requested_subgroup"]) for r in rows if r["way"] == "layer"}
    for c, size in sorted(measured - served):
        failures.append(f"{c} at requested subgroup {size}: measured by the khr way, no layer row")
    for r in rows:
        if r["way"] != "layer" or r["status"] != "ok":
            continue
        for index, (op, stat, factor, ref) in enumerate(rules):
            if op not in ("*", r["op"]):
                continue
            if r.get(stat, "") == "":
                # A statistic the compiler renamed or stopped reporting.
                failures.append(f"{case(r)} requested subgroup {r['requested_subgroup']}: no '{stat}' statistic")
                continue
            if ref == "-":
                bound = factor
            else:
                other = by_key.get((case(r), ref, r["requested_subgroup"]))
                if not other or other["status"] != "ok":
                    if (case(r), ref) in unavailable and ref in available_ways:
                        # The driver builds the reference way for other cases, not for this one.
                        failures.append(f"{case(r)} requested subgroup {r['requested_subgroup']}: its {ref} variant is "
                                        f"unavailable while other cases' are: the rule '{op} | {stat} | {ref}' cannot apply")
                    without_reference.setdefault(index, set()).add(case(r))
                    continue
                bound = factor * float(other[stat])
            value = float(r[stat])
            applied[index] += 1
            entry = (case(r), r["requested_subgroup"], stat, ref)
            seen.add(entry)
            held = value <= bound + 1e-9
            if not held:
                failing[entry] = value
            text = f"{args.gpu} {case(r)} {'driver pick' if r['requested_subgroup'] == '0' else 'wave' + r['requested_subgroup']}: {stat} {value:g} <= {bound:g}" + \
                   (f" ({factor:g}x {ref})" if ref != "-" else "")
            if entry in expected:
                counts["xpass" if held else "xfail"] += 1
                listed = os.path.basename(args.expected_failures)
                if held:
                    failures.append(f"XPASS {text}: remove it from {listed}")
                elif value > expected[entry] * CEILING_SLACK + 1e-9:
                    failures.append(f"expected failure got worse: {text}, listed at {expected[entry]:g} in {listed}")
            elif held:
                counts["pass"] += 1
            else:
                counts["fail"] += 1
                failures.append(f"bound not met: {text}")
    for e in sorted(set(expected) - seen):
        failures.append(f"stale expected failure (not measured in this run): {args.gpu} | {' | '.join(e)}")
    print(f"{args.gpu}: {len(rows)} pipelines; rules: {counts['pass']} pass, {counts['xfail']} expected failures, "
          f"{counts['xpass']} now pass (XPASS), {counts['fail']} fail")
    if args.list_failing:
        # Every rule not met, expected or not, in expected_failures.txt's format (the
        # measured value is the entry's ceiling).
        for entry, value in sorted(failing.items()):
            print(f"{args.gpu} | {' | '.join(entry)} | {value:g}")
    # Which cases each relative rule could not compare (they have no such variant), said
    # rather than skipped silently (test audit dbb465e §0.10).
    for index, cases in sorted(without_reference.items()):
        op, stat, factor, ref = rules[index]
        print(f"{args.gpu}: rule '{op} | {stat} | {factor:g} | {ref}': {len(cases)} cases have no {ref} variant "
              f"(first: {', '.join(sorted(cases)[:3])})")
    # Every rule must apply at least once: a rule whose statistic or reference way
    # vanished (a driver update, a missing NV lowering) would otherwise pass silently.
    for (op, stat, factor, ref), n in zip(rules, applied):
        if n == 0:
            failures.append(f"rule '{op} | {stat} | {factor:g} | {ref}' applied to no case")
    if not rows:
        failures.append("opbench --stats printed no rows")
    return report(failures, status, "opbench --stats")


def check_modules(args):
    status, rows = run_opbench(args.gpu, args.opbench, ["--modules", args.modules], args.require)
    failures = creation_failures(rows, lambda r: r["module"])
    print(f"{args.gpu}: {len(rows)} module pipelines through the layer, {len(failures)} not created")
    # The floor: the pipelines this lane made when it was set (lowered and validated), less
    # a tenth for modules added or retired since; a lane that lost a type falls below it.
    if len(rows) < max(args.min_rows, 1):
        failures.append(f"{len(rows)} module pipelines, below the lane's floor of {args.min_rows}")
    return report(failures, status, "opbench --stats --modules")


def check_budget(args):
    """Pairs of modules that differ only in their own shared memory (name suffix
    _app<bytes>): every pipeline must be created; where the roomy one's layer scratch
    (LDS above its own bytes) would not fit beside the tight one's own bytes in the
    device's 64 KiB, the tight one must take none (LDS equal to its own); and that
    must happen at least once per pair, or the check proved nothing."""
    status, rows = run_opbench(args.gpu, args.opbench, ["--modules", args.modules], args.require)
    failures = creation_failures(rows, lambda r: r["module"])
    by_pair = {}
    for r in rows:
        m = re.match(r"(.*)_app(\d+)\.", r["module"])
        if not m or r["status"] != "ok":
            continue
        by_pair.setdefault((m.group(1), r["requested_subgroup"]), {})[int(m.group(2))] = int(r["LDS size"])
    proved = {}
    for (name, size), lds in sorted(by_pair.items()):
        if len(lds) != 2:
            failures.append(f"{name} at requested subgroup {size}: not both of a pair measured ({sorted(lds)})")
            continue
        roomy, tight = sorted(lds)
        at = f"{name} at {'the driver pick' if size == '0' else 'wave' + size}"
        print(f"{args.gpu} {at}: LDS {lds[roomy]} with {roomy} bytes of its own, {lds[tight]} with {tight}")
        proved.setdefault(name, False)
        if tight + lds[roomy] - roomy > LDS_LIMIT:
            proved[name] = True
            if lds[tight] != tight:
                failures.append(f"{at}: {lds[tight] - tight} bytes of layer scratch next to {tight} of the module's own")
    for name, ok in sorted(proved.items()):
        if not ok:
            failures.append(f"{name}: the roomy module's scratch would fit beside the tight one's own at every size, "
                            "so the tight one proves nothing")
    if not by_pair:
        failures.append("no module pair measured")
    return report(failures, status, "opbench --stats --modules")


def run_command(args):
    command = args.command
    with tempfile.TemporaryDirectory(prefix="coopmat-amd-") as cache:
        env = shim_environment(args.gpu, cache, args.require)
        if args.also_icd:
            icd = os.path.join(ICD_DIR, args.also_icd)
            if not os.path.exists(icd):
                missing(icd, args.require)
            env["VK_DRIVER_FILES"] += ":" + icd
        return subprocess.run(command, env=env).returncode


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["cases", "modules", "budget", "run"])
    parser.add_argument("--gpu", required=True, help="AMDGPU_GPU_ID for the amdgpu drm-shim (navi31, gfx1201, ...) or NOUVEAU_CHIPSET for the nouveau one (0x172, 0x162)")
    parser.add_argument("--opbench")
    parser.add_argument("--bounds")
    parser.add_argument("--expected-failures")
    parser.add_argument("--modules")
    parser.add_argument("--min-rows", type=int, default=1, help="modules: the fewest module pipelines the lane may make")
    parser.add_argument("--also-icd", help="run: a second driver's ICD file (in the ICD folder) beside the shimmed one")
    parser.add_argument("--require", action="store_true",
                        help="a missing shim or ICD fails (exit 1) instead of skipping (exit 77)")
    parser.add_argument("--list-failing", action="store_true",
                        help="also print every rule not met in expected_failures.txt's format")
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:len(argv) - len(command) - (1 if command else 0)])
    args.command = command
    if args.mode == "run":
        return run_command(args)
    if args.mode == "budget":
        return check_budget(args)
    return check_cases(args) if args.mode == "cases" else check_modules(args)


if __name__ == "__main__":
    sys.exit(main())
