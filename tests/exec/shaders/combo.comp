#version 450
// Several maintenance1 operations in one module, in the places real shaders put
// them: a loop (two matrices per subgroup), a uniform branch on a push constant,
// and a helper function that takes and returns matrices.
// Per matrix j of this subgroup, from an f32 accumulator X (R x C, row-major):
//   binding 1: coopMatReduceEXT row sum of X (only when pc.doReduce != 0; else untouched)
//   binding 2: coopMatTransposeEXT(X) as B f16 (C x R, row-major)
//   binding 3: coopMatPerElementEXT(X, x + row * 3 + col)
//   binding 4: the elements of the transposed B scattered with coopMatGetCoordinateEXT (f16 bits)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(set = 0, binding = 0) readonly buffer In { float src[]; };
layout(set = 0, binding = 1) buffer OutReduce { float outReduce[]; };
layout(set = 0, binding = 2) writeonly buffer OutT { float16_t outT[]; };
layout(set = 0, binding = 3) writeonly buffer OutP { float outP[]; };
layout(set = 0, binding = 4) writeonly buffer OutCoord { uint outCoord[]; };
layout(push_constant) uniform Push { uint doReduce; } pc;

float add(const in float a, const in float b) { return a + b; }
float rowCol(const in uint32_t r, const in uint32_t c, const in float x) { return x + float(r * 3 + c); }

coopmat<float, gl_ScopeSubgroup, R, C, gl_MatrixUseAccumulator> RowSums(
    in coopmat<float, gl_ScopeSubgroup, R, C, gl_MatrixUseAccumulator> m) {
  coopmat<float, gl_ScopeSubgroup, R, C, gl_MatrixUseAccumulator> r;
  coopMatReduceEXT(r, m, gl_CooperativeMatrixReduceRowEXT, add);
  return r;
}

void main() {
  for (uint j = 0; j < 2; ++j) {
    const uint base = (MatrixIndex() * 2 + j) * R * C;
    coopmat<float, gl_ScopeSubgroup, R, C, gl_MatrixUseAccumulator> x;
    coopMatLoad(x, src, base, C, gl_CooperativeMatrixLayoutRowMajor);
    if (pc.doReduce != 0) {
      coopMatStore(RowSums(x), outReduce, base, C, gl_CooperativeMatrixLayoutRowMajor);
    }
    coopmat<float16_t, gl_ScopeSubgroup, C, R, gl_MatrixUseB> t;
    coopMatTransposeEXT(t, x);
    coopMatStore(t, outT, base, R, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<float, gl_ScopeSubgroup, R, C, gl_MatrixUseAccumulator> p;
    coopMatPerElementEXT(p, x, rowCol);
    coopMatStore(p, outP, base, C, gl_CooperativeMatrixLayoutRowMajor);
    for (uint i = 0; i < t.length(); ++i) {
      const uvec2 rc = coopMatGetCoordinateEXT(t, i);
      if (rc.x < C && rc.y < R) outCoord[base + rc.x * R + rc.y] = Bits(t[i]);
    }
  }
}
