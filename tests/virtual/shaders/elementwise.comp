#version 450
// Element access and element-wise arithmetic on a matrix (ET, USE, R x C):
//   m[i] = m[i] * 2 + 1 for every i < length, then m = (m + m) * 3, then m = m - ET(5).
// Binding 0: the input (row-major), binding 1: the output (row-major), and
// binding 2: length() per invocation (uint).
#extension GL_GOOGLE_include_directive : require
#define KHR_ONLY
#include "common.glsl"

layout(set = 0, binding = 0) readonly buffer In { ET src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { ET dst[]; };
layout(set = 0, binding = 2) writeonly buffer Len { uint lengths[]; };

void main() {
  const uint g = MatrixIndex();
  coopmat<ET, gl_ScopeSubgroup, R, C, USE> m;
  coopMatLoad(m, src, g * R * C, C, gl_CooperativeMatrixLayoutRowMajor);
  for (int i = 0; i < m.length(); ++i) m[i] = m[i] * ET(2) + ET(1);
  m = (m + m) * ET(3);
  m = m - coopmat<ET, gl_ScopeSubgroup, R, C, USE>(ET(5));
  coopMatStore(m, dst, g * R * C, C, gl_CooperativeMatrixLayoutRowMajor);
  lengths[gl_GlobalInvocationID.x] = uint(m.length());
}
