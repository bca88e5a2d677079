#!/usr/bin/env python3
"""Structure-aware generator of valid maintenance1 modules for the lower target.

Writes GLSL compute shaders drawn from a small grammar (component type, matrix
shape, workgroup size, a sequence of 1-6 EXT operations, each possibly inside a
loop, a do-while or a branch; about a third with specialization-constant shapes,
workgroup size and offsets), compiles each with glslangValidator for SPIR-V 1.3
or 1.6, and keeps the module and its spirv-opt -O variant when spirv-val accepts
them. The outputs are libFuzzer seeds (and a corpus to replay): valid input, so
the lower target's property "valid in, valid out" applies to every one.

  generate_modules.py [--exec] [--scalars T,...] [--operands T] [--shapes RxC,...] [--local N]
                      [--without OP,...] [--last OP] OUT_DIR COUNT [SEED]

--exec: for running, not only lowering (tests/samples/differential.cpp): the result goes to
d[8192...], apart from the input tile at d[0...] that every subgroup of the workgroup reads,
so that no subgroup can read another's result, and the modules are named
exec-NNNNN.<scalar>.<env>.spv so that the runner knows the buffer's element type.
--scalars, --shapes, --local, --without OP,...: draw only these, or not these operations (a
device that lists only 16x16 f16 A, B and accumulators, whose subgroups are 32 or 64 lanes:
--scalars float16_t --shapes 16x16 --local 64 --without reduce2x2, whose result is 8x8).
--operands T: the A and B matrices the Use conversions and transposes make are of T, not of
the accumulator's scalar type (a relaxed Op*Convert: Use and component type at once), as on
a device that lists f16 A and B with f32 accumulators only (CDNA3: --scalars float --operands
float16_t). Those go to o[1024...] and o[2560...] (--exec: o[] is compared bit for bit).
--last OP: every module ends with OP, outside any branch or loop, so that it always runs (the
differential stage's wrong layouts: a getCoordinate that runs shows them in every module).
"""
import os
import random
import subprocess
import sys
import tempfile

HEADER = """#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
{constants}layout(local_size_x = {local}{localId}) in;
layout(set = 0, binding = 0) buffer Data {{ {scalar} d[]; }};
layout(set = 0, binding = 1) buffer Out {{ uint o[]; }};
layout(push_constant) uniform PC {{ {scalar} s; uint n; }} pc;
{scalar} add(const in {scalar} a, const in {scalar} b) {{ return a + b; }}
{scalar} biggest(const in {scalar} a, const in {scalar} b) {{ return max(a, b); }}
{scalar} shift(const in uint row, const in uint col, const in {scalar} x, const in {scalar} k) {{
  return x * k + {scalar}(row) - {scalar}(col);
}}
{scalar} mix2(const in uint row, const in uint col, const in {scalar} x, const in {scalar} y) {{ return x + y; }}
#define MAT(R, C, USE) coopmat<{scalar}, gl_ScopeSubgroup, R, C, USE>
#define OPERAND(R, C, USE) coopmat<{operand}, gl_ScopeSubgroup, R, C, USE>
void main() {{
  MAT({rows}, {cols}, gl_MatrixUseAccumulator) m;
  coopMatLoad(m, d, 0, {cols}, gl_CooperativeMatrixLayoutRowMajor);
  uint outBase = {outBase};
"""

# Specialization-constant shapes (the pipeline fixes the tile size), with derived
# shapes and offsets as OpSpecConstantOp: what the layer freezes at pipeline time.
SPEC_CONSTANTS = """layout(constant_id = 0) const uint TM = {rows};
layout(constant_id = 1) const uint TN = {cols};
layout(constant_id = 3) const int SK = {sk};
layout(constant_id = 4) const bool FLAG = {flag};
const uint TM2 = TM / 2;
const uint TN2 = TN / 2;
const uint OFF = uint(SK * 2 + 7) % (TM + 1u) + (TN << 1);
const bool BIG = TM >= TN;
"""

SCALARS = ["float", "float16_t", "int", "uint"]
OPS = ["perElement", "perElementMatrix", "reduce", "reduce2x2", "convertA", "convertB", "transpose", "getCoordinate"]
SHAPES = [(8, 8), (16, 16), (8, 16), (16, 8)]
BYTES = {"float": 4, "float16_t": 2, "int": 4, "uint": 4}


def op(rng, rows, cols, k, halves, executable=False, without=(), operand_bytes=0, order_free=False, kind=None):
    """One operation on `m` (an Accumulator rows x cols); keeps m's type. rows and
    cols are numbers or specialization constants' names, halves their halves. Operation k
    stores a Use conversion or transpose to a region of its own: an A and a B matrix (or an
    accumulator's transpose) put an element in different invocations, so two of them stored
    to one place race (no order between invocations without a barrier; the virtual device
    runs its chunks in shuffled order and shows it).
    operand_bytes: the size of the A and B component type where it is not m's; those
    matrices are then stored to o[] (a uint array: the virtual device emulates stores of
    16-bit components through 32-bit integers only) instead of d[].
    order_free: reductions combine with max only, whose result no order of the combines
    changes (--exec with f16: the lowerings' sums round differently, and where they
    cancel the difference is not small against the result).
    kind: this operation, not a drawn one."""
    kind = kind or rng.choice([k for k in OPS if k not in without])
    if kind == "perElement":
        return f"  coopMatPerElementEXT(m, m, shift, pc.s);\n"
    if kind == "perElementMatrix":
        return f"  {{ MAT({rows}, {cols}, gl_MatrixUseAccumulator) t = m; coopMatPerElementEXT(m, m, mix2, t); }}\n"
    if kind == "reduce":
        mode = rng.choice(["Row", "Column", "RowAndColumn"])
        fn = rng.choice(["add", "biggest"])
        if order_free:
            fn = "biggest"
        return (f"  {{ MAT({rows}, {cols}, gl_MatrixUseAccumulator) r{k};"
                f" coopMatReduceEXT(r{k}, m, gl_CooperativeMatrixReduce{mode}EXT, {fn}); m = r{k}; }}\n")
    if kind == "reduce2x2":
        return (f"  {{ MAT({halves[0]}, {halves[1]}, gl_MatrixUseAccumulator) r{k};"
                f" coopMatReduceEXT(r{k}, m, gl_CooperativeMatrixReduce2x2EXT, add);"
                f" coopMatStore(r{k}, d, 1024, {halves[1]}, gl_CooperativeMatrixLayoutRowMajor); }}\n")
    if kind in ("convertA", "convertB"):
        use = "gl_MatrixUseA" if kind == "convertA" else "gl_MatrixUseB"
        store = f"o, {1024 + 256 * k}, ({cols}) * {operand_bytes} / 4" if operand_bytes else f"d, {2048 + 256 * k}, {cols}"
        return (f"  {{ OPERAND({rows}, {cols}, {use}) a{k} = OPERAND({rows}, {cols}, {use})(m);"
                f" coopMatStore(a{k}, {store}, gl_CooperativeMatrixLayoutRowMajor); }}\n")
    if kind == "transpose":
        store = f"o, {2560 + 256 * k}, ({rows}) * {operand_bytes} / 4" if operand_bytes else f"d, {4096 + 256 * k}, {rows}"
        return (f"  {{ OPERAND({cols}, {rows}, gl_MatrixUseB) t{k}; coopMatTransposeEXT(t{k}, m);"
                f" coopMatStore(t{k}, {store}, gl_CooperativeMatrixLayoutRowMajor); }}\n")
    # Run (--exec): each invocation writes its own words, not one word from every lane.
    slot = "outBase + gl_LocalInvocationIndex * m.length() + i" if executable else "outBase + i"
    return ("  for (uint i = 0; i < m.length(); ++i) { uvec2 rc = coopMatGetCoordinateEXT(m, i);"
            f" o[{slot}] = rc.x * 100 + rc.y; }}\n")


def wrap(rng, body, k, spec):
    """Puts an operation into structured control flow, or not."""
    form = rng.choice(["plain", "plain", "for", "doWhile", "if", "forBreak"] + (["specIf"] if spec else []))
    if form == "specIf":
        return f"  if (FLAG && BIG) {{\n  {body}  }}\n"
    if form == "for":
        return f"  for (uint i{k} = 0; i{k} < pc.n; ++i{k}) {{\n  {body}  }}\n"
    if form == "doWhile":
        return f"  {{ uint i{k} = 0; do {{\n  {body}    ++i{k};\n  }} while (i{k} < pc.n); }}\n"
    if form == "if":
        return f"  if (pc.n > {k}u) {{\n  {body}  }}\n"
    if form == "forBreak":
        return f"  for (uint i{k} = 0;; ++i{k}) {{\n  {body}    if (i{k} >= pc.n) break;\n  }}\n"
    return body


def shader(rng, executable=False, scalars=SCALARS, shapes=SHAPES, locals_=(8, 16, 32, 64), without=(), operand=None,
           last=None):
    scalar = rng.choice(scalars)
    operand_bytes = BYTES[operand] if operand and operand != scalar else 0
    rows, cols = rng.choice(shapes)
    spec = rng.random() < 0.35
    constants, local_id, out_base, halves = "", "", "0", (rows // 2, cols // 2)
    if spec:
        constants = SPEC_CONSTANTS.format(rows=rows, cols=cols, sk=rng.randint(-8, 8), flag=rng.choice(["true", "false"]))
        local_id = ", local_size_x_id = 2" if rng.random() < 0.5 else ""
        out_base = rng.choice(["0", "OFF"])
        rows, cols, halves = "TM", "TN", ("TM2", "TN2")
    text = HEADER.format(constants=constants, local=rng.choice(locals_), localId=local_id, scalar=scalar,
                         operand=operand or scalar, rows=rows, cols=cols, outBase=out_base)
    order_free = executable and scalar == "float16_t"
    count = rng.randint(1, 6)
    for k in range(count):
        text += wrap(rng, op(rng, rows, cols, k, halves, executable, without, operand_bytes, order_free), k, spec)
    if last:
        text += op(rng, rows, cols, count, halves, executable, without, operand_bytes, order_free, last)
    result = 8192 if executable else 0  # --exec: apart from the input tile
    text += f"  coopMatStore(m, d, {result}, {cols}, gl_CooperativeMatrixLayoutRowMajor);\n}}\n"
    return text, scalar


def run(command):
    return subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def main():
    args = sys.argv[1:]
    executable, scalars, shapes, locals_, without, operand, last = False, SCALARS, SHAPES, (8, 16, 32, 64), set(), None, None
    while args and args[0].startswith("--"):
        flag = args.pop(0)
        if flag == "--exec":
            executable = True
        elif flag == "--scalars":
            scalars = args.pop(0).split(",")
        elif flag == "--operands":
            operand = args.pop(0)
        elif flag == "--shapes":
            shapes = [tuple(int(x) for x in s.split("x")) for s in args.pop(0).split(",")]
        elif flag == "--without":
            without.update(args.pop(0).split(","))
        elif flag == "--local":
            locals_ = (int(args.pop(0)),)
        elif flag == "--last":
            last = args.pop(0)
            if last not in OPS:
                sys.exit(f"generate_modules.py: --last {last}: not one of {', '.join(OPS)}")
        else:
            sys.exit(f"generate_modules.py: unknown option {flag}")
    out_dir, count = args[0], int(args[1])
    rng = random.Random(int(args[2]) if len(args) > 2 else 1)
    os.makedirs(out_dir, exist_ok=True)
    kept = rejected = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(count):
            source = os.path.join(tmp, "g.comp")
            text, scalar = shader(rng, executable, scalars, shapes, locals_, without, operand, last)
            with open(source, "w") as f:
                f.write(text)
            env = rng.choice(["spirv1.3", "spirv1.6"])
            name = f"exec-{i:05d}.{scalar}.{env}.spv" if executable else f"gen-{i:05d}.{env}.spv"
            module = os.path.join(out_dir, name)
            vulkan = "vulkan1.1" if env == "spirv1.3" else "vulkan1.3"
            if not run(["glslangValidator", "-V", "--quiet", "--target-env", env, source, "-o", module]) or \
               not run(["spirv-val", "--target-env", vulkan, module]):
                rejected += 1
                if os.path.exists(module):
                    os.remove(module)
                continue
            kept += 1
            optimized = module + ".O"
            if not run(["spirv-opt", "-O", module, "-o", optimized]) or \
               not run(["spirv-val", "--target-env", vulkan, optimized]):
                if os.path.exists(optimized):
                    os.remove(optimized)
    print(f"generated {kept} valid modules (+ spirv-opt -O variants), {rejected} drawn shaders rejected by glslang/spirv-val")


if __name__ == "__main__":
    main()
