#!/usr/bin/env python3
"""How lowering time grows with the size of one block (review finding 18): N
PerElementOps, each after F lines of scalar arithmetic, all in main's one block,
lowered by coopmat-lower on the register path (lavapipe layouts) and the scratch
path. Run inside scripts/dev from the repo root after building coopmat-lower:

    python3 scripts/measure/lowering_scale.py [N [F]]      (default 2000 25)

Prints the module's instruction count and coopmat-lower's own lowering time."""
import os
import re
import subprocess
import sys
import tempfile

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
F = int(sys.argv[2]) if len(sys.argv) > 2 else 25
LOWER = "build/tools/coopmat-lower"

lines = ["#version 450", "#extension GL_KHR_cooperative_matrix : require",
         "#extension GL_KHR_memory_scope_semantics : require",
         "#extension GL_EXT_cooperative_matrix_maintenance1 : require", "layout(local_size_x = 8) in;",
         "layout(set = 0, binding = 0) buffer B { float data[]; };",
         "float f(const in uint r, const in uint c, const in float x) { return x * 0.5 + float(r + c); }",
         "void main() {", "  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> m;",
         "  coopMatLoad(m, data, 0, 8, gl_CooperativeMatrixLayoutRowMajor);",
         "  float a = data[100]; float b = data[101];"]
for k in range(N):
    lines += [f"  a = a * b + {k * F + j}.5; b = b * a - 1.25;" for j in range(F)]
    lines.append("  coopMatPerElementEXT(m, m, f);")
lines += ["  coopMatStore(m, data, 0, 8, gl_CooperativeMatrixLayoutRowMajor);", "  data[102] = a + b;", "}"]

with tempfile.TemporaryDirectory(dir="build") as tmp:
    source, spv = os.path.join(tmp, "scale.comp"), os.path.join(tmp, "scale.spv")
    open(source, "w").write("\n".join(lines) + "\n")
    subprocess.run(["glslangValidator", "-V", "--target-env", "vulkan1.3", source, "-o", spv], check=True,
                   capture_output=True)
    count = subprocess.run(["spirv-dis", spv], check=True, capture_output=True, text=True).stdout.count("\n")
    print(f"{N} PerElementOps, {count} instructions in the module")
    for name, extra in [("register path", ["--builtin-layouts", "lavapipe:8"]), ("scratch path", [])]:
        out = subprocess.run([LOWER, spv, "-o", os.path.join(tmp, "out.spv"), "--max-shared-memory", "65536", "--stats"]
                             + extra, check=True, capture_output=True, text=True).stdout
        us = float(re.search(r"([0-9.]+) us", out).group(1))
        print(f"{name}: {us / 1000:.1f} ms")
