#version 450
// Where the elements sit: loads a matrix (ET, USE, R x C, row-major) and writes
// element e of invocation L of subgroup g to out[(g * gl_SubgroupSize + L) * length + e],
// so that the test can check each against the (row, col) the profile's layout gives.
#extension GL_GOOGLE_include_directive : require
#define KHR_ONLY
#include "common.glsl"

layout(set = 0, binding = 0) readonly buffer In { ET src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { ET dst[]; };

void main() {
  const uint g = MatrixIndex();
  coopmat<ET, gl_ScopeSubgroup, R, C, USE> m;
  coopMatLoad(m, src, g * R * C, C, gl_CooperativeMatrixLayoutRowMajor);
  const uint first = (g * gl_SubgroupSize + gl_SubgroupInvocationID) * uint(m.length());
  for (int e = 0; e < m.length(); ++e) dst[first + uint(e)] = m[e];
}
