#version 450
// Copies of one element that disagree (docs/design.md, "Faults"): the invocations below
// LOW zero their copies of the matrix (ET, USE, R x C), the others keep theirs, then it
// is stored. Where the layout gives an element to invocations on both sides of LOW the
// copies disagree, which a real device may store or multiply either way: the virtual
// device must store poison there and report a fault. LOW = the subgroup size (every copy
// zeroed) is the control: copies agree, no fault.
// Binding 0: the input (row-major), binding 1: the output (row-major).
#extension GL_GOOGLE_include_directive : require
#define KHR_ONLY
#include "common.glsl"

layout(constant_id = 1) const uint LOW = 16;
layout(set = 0, binding = 0) readonly buffer In { ET src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { ET dst[]; };

void main() {
  const uint g = MatrixIndex();
  coopmat<ET, gl_ScopeSubgroup, R, C, USE> m;
  coopMatLoad(m, src, g * R * C, C, gl_CooperativeMatrixLayoutRowMajor);
  const bool zero = gl_SubgroupInvocationID < LOW;
  for (int i = 0; i < m.length(); ++i) m[i] = zero ? ET(0) : m[i];
  coopMatStore(m, dst, g * R * C, C, gl_CooperativeMatrixLayoutRowMajor);
}
