#version 450
// coopMatReduceEXT on an R x C accumulator into an RR x RC accumulator.
// MASK: 1 row, 2 column, 3 row and column, 4 2x2 (gl_CooperativeMatrixReduce*EXT;
// a define because it must be a constant expression). The combine operation is spec constant 4:
// 0 sum, 1 min, 2 max. Bindings: 0 input (ET, row-major R x C per matrix),
// 1 output (ET, row-major RR x RC per matrix), 2 errors: [1] damaged canary words.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#ifdef NV_SPELLING  // the driver's own NV coopmat2 operations (sanity checks only)
#extension GL_NV_cooperative_matrix2 : require
#define coopMatReduceEXT coopMatReduceNV
#define coopMatPerElementEXT coopMatPerElementNV
#endif

layout(constant_id = 4) const int COMBINE = 0;

layout(set = 0, binding = 0) readonly buffer In { ET src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { ET dst[]; };
layout(set = 0, binding = 2) buffer Errors { uint errors[]; };

#ifdef APP_SHARED
shared ET stage[4 * R * C];  // up to four subgroups per workgroup
#endif

ET combine(const in ET a, const in ET b) {
  if (COMBINE == 1) return min(a, b);
  if (COMBINE == 2) return max(a, b);
  return a + b;
}

void main() {
  const uint index = MatrixIndex();
  coopmat<ET, gl_ScopeSubgroup, R, C, gl_MatrixUseAccumulator> m;
  coopmat<ET, gl_ScopeSubgroup, RR, RC, gl_MatrixUseAccumulator> res;
#ifdef APP_SHARED
  CanaryWrite();
  const uint local = gl_SubgroupID * R * C;
  for (uint i = gl_SubgroupInvocationID; i < R * C; i += gl_SubgroupSize) stage[local + i] = src[index * R * C + i];
  barrier();
  coopMatLoad(m, stage, local, C, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(res, m, MASK, combine);
  atomicAdd(errors[1], CanaryCheck());
  // Send the result through the application's shared memory as well.
  coopMatStore(res, stage, local, RC, gl_CooperativeMatrixLayoutRowMajor);
  barrier();
  for (uint i = gl_SubgroupInvocationID; i < RR * RC; i += gl_SubgroupSize) dst[index * RR * RC + i] = stage[local + i];
#else
  coopMatLoad(m, src, index * R * C, C, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(res, m, MASK, combine);
  coopMatStore(res, dst, index * RR * RC, RC, gl_CooperativeMatrixLayoutRowMajor);
#endif
}
