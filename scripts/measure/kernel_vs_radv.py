#!/usr/bin/env python3
"""Whole kernels through the layer against RADV's own lowering of the same module.

kernel_vs_radv.py --build BUILD [--out DIR] [--gpus navi31,gfx1201] [--sizes 32,64]

Compiles the execution tests' real-class kernels (tests/exec/shaders/kernel_gla.comp
at f16/bf16 and D=32/64, kernel_trsv.comp) and, for each shimmed RADV device
(Mesa's amdgpu noop drm shim, as the AMD lane: tests/amd/check_stats.py) and each
required subgroup size, reads ACO's statistics of three compilations:

  layer    the EXT module through the layer, default lowering
  portable the EXT module through the layer with VK_COOPMAT_MAINTENANCE1_LOWERING=portable
  nv       the same module respelled NV (capability 5429 -> 5431, OpExtension
           SPV_EXT_cooperative_matrix_maintenance1 -> SPV_NV_cooperative_matrix2),
           which the layer hands down untouched, on RADV with radv_cooperative_matrix2_nv=true

--external NAME=PATH[:DEFINE,...] (repeatable) adds a kernel that is not in this repository
(llama.cpp's gated_delta_net_cm.comp, docs/performance.md): compiled at each size with
-DSUBGROUP_SIZE=<size> and the defines, kept at its own local size, and respelled NV whole
(it must use no GetCoordinate and no transpose), so its one module is measured all three ways.

GetCoordinate and the transpose have no NV spelling, so the comparison uses each
kernel's NV_COMPARABLE variant (shared/buffer round trips instead); the unmodified
kernels are measured through the layer too. Every module runs at four subgroups of
the required size (the local size fixed in the module: opbench's own spec constant
would be one subgroup, which folds gl_SubgroupID to 0). Prints a markdown table. Run
inside scripts/dev after building opbench and the layer.

--check (the AMD lane's amd.kernels) then asserts issue 32's bound: every unmodified kernel
of this repository through the default route costs at most 1.10x the instructions and
1.05x the inverse throughput of its own portable route and of its NV_COMPARABLE variant
through RADV's own lowering, on every device and size; a missing row fails. --require:
a missing shim fails instead of skipping (exit 77).
"""
import argparse
import csv
import io
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "amd"))
import check_stats  # noqa: E402  (the AMD lane's shim environment)

SHADERS = os.path.join(ROOT, "tests", "exec", "shaders")
EXT_NAME = "SPV_EXT_cooperative_matrix_maintenance1"
NV_NAME = "SPV_NV_cooperative_matrix2"
OP_EXTENSION, OP_CAPABILITY, OP_SPEC_CONSTANT, OP_DECORATE = 10, 17, 50, 71
DECORATION_SPEC_ID, UNUSED_SPEC_ID = 1, 1000
SUBGROUPS = 4  # subgroups per workgroup, as test_kernels.cpp runs the kernels (kSubgroups)
CONVERSIONS_EXT, CONVERSIONS_NV, GET_COORDINATE_EXT = 5429, 5431, 5438


def kernels():
    """(name, source, defines) of every kernel variant, as tests/exec/CMakeLists.txt builds them."""
    out = []
    for t, et in (("f16", "float16_t"), ("bf16", "bfloat16_t")):
        for d in (32, 64):
            defs = [f"ET={et}", f"D={d}", "NSG=4"] + (["ENCODED_TYPES"] if t == "bf16" else [])
            out.append((f"gla_{t}_d{d}", "kernel_gla.comp", defs))
    out.append(("trsv", "kernel_trsv.comp", []))
    return out


EXTERNAL = []  # (name, path, defines) from --external


def compile_glsl(source, defines, path):
    cmd = ["glslangValidator", "-V", "--quiet", "--target-env", "spirv1.6"] + [f"-D{d}" for d in defines]
    subprocess.run(cmd + ["-o", path, os.path.join(SHADERS, source)], check=True)


def spirv_string(text):
    data = text.encode() + b"\0"
    data += b"\0" * (-len(data) % 4)
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def respell_nv(words):
    """The EXT module spelled NV: same opcodes, NV conversions capability and extension."""
    out, pos = words[:5], 5
    while pos < len(words):
        count, op = words[pos] >> 16, words[pos] & 0xFFFF
        inst = words[pos:pos + count]
        if op == OP_CAPABILITY and inst[1] == GET_COORDINATE_EXT:
            raise ValueError("GetCoordinate has no NV spelling")
        if op == OP_CAPABILITY and inst[1] == CONVERSIONS_EXT:
            inst = [inst[0], CONVERSIONS_NV]
        if op == OP_EXTENSION and inst[1:] == spirv_string(EXT_NAME):
            body = spirv_string(NV_NAME)
            inst = [((len(body) + 1) << 16) | OP_EXTENSION] + body
        out += inst
        pos += count
    return out


def fix_local_size(words, local):
    """The module with a local size of `local` that opbench cannot override: opbench
    --modules sets spec constant 0 (the local size) to one subgroup, where
    gl_SubgroupID folds to 0 and every other subgroup's role would be compiled away."""
    out, pos, targets = words[:5], 5, set()  # glslang gives gl_WorkGroupSize.x a second one
    while pos < len(words):
        count, op = words[pos] >> 16, words[pos] & 0xFFFF
        inst = list(words[pos:pos + count])
        if op == OP_DECORATE and inst[2:] == [DECORATION_SPEC_ID, 0]:
            targets.add(inst[1])
            inst[3] = UNUSED_SPEC_ID
        if op == OP_SPEC_CONSTANT and inst[2] in targets:
            inst[3] = local
        out += inst
        pos += count
    if not targets:
        raise ValueError("no SpecId 0 (local size) in the module")
    return out


def read_words(path):
    with open(path, "rb") as f:
        data = f.read()
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def write_words(path, words):
    with open(path, "wb") as f:
        f.write(struct.pack(f"<{len(words)}I", *words))


def build_modules(out, size):
    """out/ext<size>: every kernel and its NV_COMPARABLE variant at SUBGROUPS subgroups of
    `size` lanes; out/nv<size>: the variants respelled NV."""
    ext, nv, src = (os.path.join(out, f"{d}{size}") for d in ("ext", "nv", "glsl"))
    for d in (ext, nv, src):
        os.makedirs(d, exist_ok=True)
    for name, source, defines in kernels():
        for variant, extra in ((name, []), (name + "_nvc", ["NV_COMPARABLE"])):
            compiled = os.path.join(src, f"{variant}.spv")
            compile_glsl(source, defines + extra, compiled)
            words = fix_local_size(read_words(compiled), SUBGROUPS * int(size))
            write_words(os.path.join(ext, f"{variant}.spv"), words)
            if extra:
                write_words(os.path.join(nv, f"{variant}.spv"), respell_nv(words))
    for name, path, defines in EXTERNAL:  # one module, NV-comparable as it is
        compiled = os.path.join(src, f"{name}.spv")
        compile_glsl(os.path.abspath(path), defines + [f"SUBGROUP_SIZE={size}"], compiled)
        words = read_words(compiled)
        write_words(os.path.join(ext, f"{name}_nvc.spv"), words)
        write_words(os.path.join(nv, f"{name}_nvc.spv"), respell_nv(words))
    return ext, nv


INSTR_BOUND, THROUGHPUT_BOUND = 1.10, 1.05  # issue 32: unmodified kernels against P and NV


def measure(opbench, gpu, sizes, modules, extra_env, require):
    """{(module, size): row} from one opbench --stats --modules run on the shimmed gpu; a
    missing shim fails with require, else skips (exit 77)."""
    with tempfile.TemporaryDirectory(prefix="coopmat-kvr-") as cache:
        env = check_stats.shim_environment(gpu, cache, require)
        env.update(extra_env)
        proc = subprocess.run([opbench, "--stats", "--sizes", sizes, "--modules", modules], env=env,
                              capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    rows = {}
    for r in csv.DictReader(io.StringIO(proc.stdout)):
        rows[(r["module"].removesuffix(".spv"), r["requested_subgroup"])] = r
    return rows


def stat(row, *names):
    """The first statistic whose column name contains one of names (ACO's spelling varies)."""
    if not row or row.get("status") != "ok":
        return None
    for key, value in row.items():
        if any(n.lower() in key.lower() for n in names):
            try:
                return float(value)
            except ValueError:
                return None
    return None


COLUMNS = [("instr", ("Instructions",)), ("inv.thr", ("Inverse Throughput",)), ("LDS", ("LDS",)),
           ("VGPRs", ("VGPRs",))]


def fmt(v):
    return "—" if v is None else f"{v:g}"


def ratio(a, b):
    return "—" if a is None or b in (None, 0) else f"{a / b:.2f}"


def table(results, gpus, sizes):
    print("| gpu | kernel | wave | way | " + " | ".join(c for c, _ in COLUMNS) + " | instr ÷ nv | inv.thr ÷ nv |")
    print("|" + "---|" * (6 + len(COLUMNS)))
    for gpu in gpus:
        for name, _, _ in kernels() + EXTERNAL:
            for size in sizes.split(","):
                for module in (name + "_nvc", name):
                    nv_row = results[gpu]["nv"].get((name + "_nvc", size))
                    for way in ("layer", "portable", "nv"):
                        if way == "nv" and module == name:
                            continue
                        row = results[gpu][way].get((module, size))
                        if row is None:
                            continue  # the device lists no such type (navi31: bf16)
                        values = [stat(row, *names) for _, names in COLUMNS]
                        nv_values = [stat(nv_row, *names) for _, names in COLUMNS[:2]]
                        same = module.endswith("_nvc")
                        ratios = [ratio(values[i], nv_values[i]) if same else "" for i in range(2)]
                        label = module if row.get("status") == "ok" else f"{module} ({row.get('status')})"
                        print(f"| {gpu} | {label} | {size} | {way} | " + " | ".join(fmt(v) for v in values) +
                              " | " + " | ".join(ratios) + " |")


def check(results, gpus, sizes):
    """Issue 32's bound on every unmodified kernel; returns the failures."""
    failures, checked = [], 0
    for gpu in gpus:
        for name, _, defines in kernels():
            if gpu == "navi31" and "ENCODED_TYPES" in defines:
                continue  # navi31 lists no bf16
            for size in sizes.split(","):
                at = f"{gpu} {name} wave{size}"
                layer = results[gpu]["layer"].get((name, size))
                refs = {"its portable route": results[gpu]["portable"].get((name, size)),
                        "RADV's NV lowering of its NV_COMPARABLE variant": results[gpu]["nv"].get((name + "_nvc", size))}
                missing = [f"{at}: no statistics for {what} ({row.get('status') if row else 'no row'})"
                           for what, row in [("the default route", layer)] + list(refs.items())
                           if stat(row, "Instructions") is None]
                if missing:
                    failures += missing
                    continue
                for what, row in refs.items():
                    for label, names, bound in (("instructions", ("Instructions",), INSTR_BOUND),
                                                ("inverse throughput", ("Inverse Throughput",), THROUGHPUT_BOUND)):
                        value, ref = stat(layer, *names), stat(row, *names)
                        checked += 1
                        if value is None or ref is None:
                            failures.append(f"{at}: no {label} statistic for the default route or {what}")
                        elif value > bound * ref:
                            failures.append(f"{at}: {label} {value:g} > {bound:g} x {ref:g} of {what}")
    print(f"kernel bounds: {checked} comparisons, {len(failures)} failed")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=os.path.join(ROOT, "build-tmp", "kernel_vs_radv"))
    parser.add_argument("--gpus", default="navi31,gfx1201")
    parser.add_argument("--sizes", default="32,64")
    parser.add_argument("--external", action="append", default=[], metavar="NAME=PATH[:DEFINE,...]")
    parser.add_argument("--check", action="store_true", help="assert issue 32's bound (exit 1 past it)")
    parser.add_argument("--require", action="store_true", help="a missing shim fails (with --check)")
    args = parser.parse_args()
    require = args.require or not args.check  # measuring by hand: a missing shim is an error
    for spec in args.external:
        name, rest = spec.split("=", 1)
        path, _, defines = rest.partition(":")
        EXTERNAL.append((name, path, [d for d in defines.split(",") if d]))
    opbench = os.path.join(args.build, "samples", "opbench", "opbench")
    os.environ["VK_ADD_LAYER_PATH"] = os.path.join(args.build, "layer")
    os.environ.setdefault("XDG_RUNTIME_DIR", args.build)
    os.environ.pop("VK_COOPMAT_MAINTENANCE1_LOWERING", None)
    gpus = args.gpus.split(",")
    results = {gpu: {"layer": {}, "portable": {}, "nv": {}} for gpu in gpus}
    for size in args.sizes.split(","):
        ext, nv = build_modules(args.out, size)
        for gpu in gpus:
            results[gpu]["layer"].update(measure(opbench, gpu, size, ext, {}, require))
            results[gpu]["portable"].update(
                measure(opbench, gpu, size, ext, {"VK_COOPMAT_MAINTENANCE1_LOWERING": "portable"}, require))
            results[gpu]["nv"].update(
                measure(opbench, gpu, size, nv, {"radv_cooperative_matrix2_nv": "true"}, require))
    table(results, gpus, args.sizes)
    if args.check:
        failures = check(results, gpus, args.sizes)
        for f in failures:
            print("FAILED: " + f)
        return 1 if failures else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
