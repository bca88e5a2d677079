#!/usr/bin/env python3
"""Where a conversion's exchanges stop paying: LowerOptions::roundTripCost from the AMD lane.

round_trip_costs.py [--build BUILD] [--gpus navi31,gfx1201] [--sizes 32,64] [--check] [--require]

Every 16x16 conversion and transpose of opbench (cases.txt), through the layer on the shimmed
RADV devices (Mesa's amdgpu noop drm-shim, as tests/amd/check_stats.py), at each subgroup
size. Per move it reads:
  - the exchange plan's cost and the round-trip cost the layer compared it with, from the
    layer's explain file of the pipeline (dump_dir, default settings: "exchanges costing
    about N instructions per lane, at most / more than the Workgroup round trip's M");
  - ACO's statistics of the move in registers (lowering=registers) and through the round
    trip (the default route's where it took it, else lowering=portable's): instructions,
    inverse throughput, waves per SIMD.
A route's cost is its inverse throughput, scaled up where it runs fewer waves per SIMD than
the other (occupancy). One setting serves GFX11 and GFX12 (passes/costs.cpp), so per subgroup
size the script takes every threshold a plan cost can fall on and sums, over the measured
moves, what the route it picks costs beyond the cheaper one (the regret, in cycles); the
thresholds with the least regret are the range it prints with the moves. --check (the AMD
lane's amd.round_trip_costs) fails where the layer's threshold (read from its explain files)
lies outside that range or a size measured no move. Whole kernels weigh in too (the GLA
chunk at D = 32 on navi31 wave32, passes/costs.cpp): amd.kernels asserts those.
--require: a missing shim fails instead of skipping (exit 77). Run inside scripts/dev after
building opbench and the layer.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import kernel_vs_radv  # noqa: E402  (its measure and stat: opbench --stats on the shimmed device)
from kernel_vs_radv import stat  # noqa: E402

# ACO's and NAK's names: instructions, the static cost estimate, occupancy.
STATISTICS = [("Instructions", "Instruction count"), ("Inverse Throughput", "Static cycle count"),
              ("Subgroups per SIMD", "Max warps/SM")]
EXPLAINED = re.compile(r"exchanges costing about (\d+) instructions per lane, (at most|more than) "
                       r"the Workgroup round trip's (\d+)")


def moves(shader_dir):
    """{module name: path} of opbench's 16x16 conversions and transposes (the layer way)."""
    out = {}
    for name in sorted(os.listdir(shader_dir)):
        if re.match(r"(convert|transpose)_.*16x16.*_layer\.spv$", name):
            out[name.removesuffix(".spv")] = os.path.join(shader_dir, name)
    return out


def measure(opbench, gpu, size, modules, lowering, require):
    """{module: stats row} of one opbench --stats --modules run at `size` (kernel_vs_radv's);
    with lowering None (the default route) also {module: (plan cost, round-trip cost, taken)}
    from the explain files the layer dumps."""
    with tempfile.TemporaryDirectory(prefix="coopmat-rtc-") as dumps:
        extra = {"VK_COOPMAT_MAINTENANCE1_LOWERING": lowering} if lowering else {"VK_COOPMAT_MAINTENANCE1_DUMP_DIR": dumps}
        measured = kernel_vs_radv.measure(opbench, gpu, size, modules, extra, require)
        rows = {module: row for (module, _), row in measured.items()}
        return rows, (None if lowering else explained(dumps, modules))


def explained(dumps, modules):
    """{module: (plan cost, round-trip cost, taken)} from the pipelines' explain files; a module's
    dump is found by its original words."""
    names = {}
    for name in os.listdir(modules):
        with open(os.path.join(modules, name), "rb") as f:
            names[f.read()] = name.removesuffix(".spv")
    out = {}
    entries = os.listdir(dumps) if os.path.isdir(dumps) else []
    for entry in entries:
        if not entry.endswith(".original.spv"):
            continue
        digest = entry.removesuffix(".original.spv")
        with open(os.path.join(dumps, entry), "rb") as f:
            name = names.get(f.read())
        for text in entries:
            if name and text.startswith(digest + ".pipeline-") and text.endswith(".txt") and ".specialization." not in text:
                with open(os.path.join(dumps, text)) as f:
                    found = EXPLAINED.search(f.read())
                if found:
                    out[name] = (int(found.group(1)), int(found.group(3)), found.group(2) == "at most")
    return out


def cost(throughput, waves, other_waves):
    """Inverse throughput, scaled up by the occupancy a route gives up against the other."""
    return throughput * max(waves, other_waves) / waves


def least_regret(cases):
    """(regret, lowest, highest): the thresholds whose routing costs least beyond each move's
    cheaper way. A threshold T sends plans costing at most T to registers."""
    candidates = sorted({0} | {c["plan"] for c in cases} | {c["plan"] - 1 for c in cases if c["plan"] > 0})
    def regret(threshold):
        return sum((c["registers"] if c["plan"] <= threshold else c["round trip"]) - min(c["registers"], c["round trip"])
                   for c in cases)
    best = min(regret(t) for t in candidates)
    chosen = [t for t in candidates if regret(t) == best]
    # Past the largest candidate every plan takes registers: the range is open there.
    high = chosen[-1] if chosen[-1] < max(candidates) else 1 << 30
    return best, chosen[0], high


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--gpus", default="navi31,gfx1201")
    parser.add_argument("--sizes", default="32,64")
    parser.add_argument("--check", action="store_true", help="fail where the layer's threshold misroutes a move")
    parser.add_argument("--require", action="store_true", help="a missing shim fails (with --check)")
    args = parser.parse_args()
    require = args.require or not args.check
    opbench = os.path.join(args.build, "samples", "opbench", "opbench")
    os.environ["VK_ADD_LAYER_PATH"] = os.path.join(args.build, "layer")
    os.environ.setdefault("XDG_RUNTIME_DIR", args.build)
    os.environ.pop("VK_COOPMAT_MAINTENANCE1_LOWERING", None)
    failures = []
    with tempfile.TemporaryDirectory(prefix="coopmat-rtc-modules-") as modules:
        for name, path in moves(os.path.join(os.path.dirname(opbench), "shaders")).items():
            shutil.copy(path, os.path.join(modules, name + ".spv"))
        print("| subgroup | gpu | move | plan cost | round trip's cost (layer) | registers | round trip | cheaper |")
        print("|---|---|---|---|---|---|---|---|")
        for size in args.sizes.split(","):
            cases, applied = [], set()
            for gpu in args.gpus.split(","):
                default, costs = measure(opbench, gpu, size, modules, None, require)
                registers, _ = measure(opbench, gpu, size, modules, "registers", require)
                portable, _ = measure(opbench, gpu, size, modules, "portable", require)
                for name, (plan, threshold, taken) in sorted(costs.items()):
                    # The round trip as the default route makes it where it took it (its scratch
                    # order follows the layouts, which lowering=portable does not use).
                    r, p = registers.get(name), portable.get(name) if taken else default.get(name)
                    figures = [stat(row, *n) for row in (r, p) for n in STATISTICS]
                    if None in figures:
                        failures.append(f"{gpu} wave{size} {name}: no statistics in registers or through the round trip")
                        continue
                    ri, rt, rw, pi, pt, pw = figures
                    case = {"plan": plan, "registers": cost(rt, rw, pw), "round trip": cost(pt, pw, rw)}
                    cases.append(case)
                    applied.add(threshold)
                    move = name.removesuffix("_layer")
                    cheaper = "registers" if case["registers"] < case["round trip"] else (
                        "round trip" if case["round trip"] < case["registers"] else "either")
                    print(f"| {size} | {gpu} | {move} | {plan} | {threshold} | {ri:g} / {rt:g} / {rw:g} | "
                          f"{pi:g} / {pt:g} / {pw:g} | {cheaper} |")
            if not cases:
                failures.append(f"wave{size}: no move with exchanges measured")
                continue
            regret, low, high = least_regret(cases)
            print(f"\nsubgroup size {size}: {len(cases)} moves with exchanges; the layer's threshold "
                  f"{', '.join(map(str, sorted(applied)))}; least regret {regret:g} cycles for thresholds {low} to "
                  + (str(high) if high < 1 << 30 else "any higher") + "\n")
            if len(applied) != 1 or not low <= next(iter(applied)) <= high:
                failures.append(f"wave{size}: the layer's round-trip cost {sorted(applied)} is not in {low}..{high}")
    for failure in failures:
        print("FAILED: " + failure)
    return 1 if args.check and failures else 0


if __name__ == "__main__":
    sys.exit(main())
