#version 450
// Load a matrix (ET, USE, R x C) and store it back transposed in memory: LOAD_row
// reads row-major with a padded stride C + 3 and writes column-major (stride R);
// LOAD_col reads column-major (stride R + 5) and writes row-major (stride C).
// Binding 0: the input, binding 1: the output (R * C elements per matrix), one
// matrix per subgroup. Exercises the layout's addressing and the subgroup built-ins.
#extension GL_GOOGLE_include_directive : require
#define KHR_ONLY
#include "common.glsl"

layout(set = 0, binding = 0) readonly buffer In { ET src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { ET dst[]; };

void main() {
  const uint g = MatrixIndex();
  coopmat<ET, gl_ScopeSubgroup, R, C, USE> m;
#if defined(LOAD_row)
  coopMatLoad(m, src, g * R * (C + 3), C + 3, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(m, dst, g * R * C, R, gl_CooperativeMatrixLayoutColumnMajor);
#else
  coopMatLoad(m, src, g * C * (R + 5), R + 5, gl_CooperativeMatrixLayoutColumnMajor);
  coopMatStore(m, dst, g * R * C, C, gl_CooperativeMatrixLayoutRowMajor);
#endif
}
