#version 450
// A component-type conversion of an accumulator (or of USE) (ET -> ET2, R x C), KHR only.
// Binding 0: the input (ET, row-major), binding 1: the output (ET2, row-major).
#extension GL_GOOGLE_include_directive : require
#define KHR_ONLY
#include "common.glsl"
#ifndef USE
#define USE gl_MatrixUseAccumulator
#endif

layout(set = 0, binding = 0) readonly buffer In { ET src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { ET2 dst[]; };

void main() {
  const uint g = MatrixIndex();
  coopmat<ET, gl_ScopeSubgroup, R, C, USE> m;
  coopMatLoad(m, src, g * R * C, C, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<ET2, gl_ScopeSubgroup, R, C, USE> n = coopmat<ET2, gl_ScopeSubgroup, R, C, USE>(m);
  coopMatStore(n, dst, g * R * C, C, gl_CooperativeMatrixLayoutRowMajor);
}
