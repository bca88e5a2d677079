#version 450
// coopMatGetCoordinateEXT round trip: every invocation scatters each element m[i]
// it holds to out[row][col] of its subgroup's matrix and counts the write. Where a
// layout holds an element in several invocations, every replica must name the same
// coordinate for the same value: the output keeps the least and the greatest bits written.
// Bindings: 0 input (ET, row-major R x C per matrix, or column-major with stride R
// when spec constant 3 is 1), 1 output bits (uint): the least at [k], the greatest at
// [elements + k], 2 write counts (uint), 3 errors: [0] coordinates out of range, [1]
// damaged canary words, [2] the number of elements (of every matrix).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 3) const int LAYOUT = gl_CooperativeMatrixLayoutRowMajor;

layout(set = 0, binding = 0) readonly buffer In { ET src[]; };
layout(set = 0, binding = 1) buffer Out { uint dst[]; };
layout(set = 0, binding = 2) buffer Count { uint cnt[]; };
layout(set = 0, binding = 3) buffer Errors { uint errors[]; };

#ifdef APP_SHARED
shared ET stage[4 * R * C];  // up to four subgroups per workgroup
#endif

void main() {
  const uint base = MatrixIndex() * R * C;
  const uint stride = LAYOUT == gl_CooperativeMatrixLayoutRowMajor ? C : R;
  coopmat<ET, gl_ScopeSubgroup, R, C, USE> m;
#ifdef APP_SHARED
  CanaryWrite();
  const uint local = gl_SubgroupID * R * C;
  for (uint i = gl_SubgroupInvocationID; i < R * C; i += gl_SubgroupSize) stage[local + i] = src[base + i];
  barrier();
  coopMatLoad(m, stage, local, stride, LAYOUT);
#else
  coopMatLoad(m, src, base, stride, LAYOUT);
#endif
  for (uint i = 0; i < m.length(); ++i) {
    const uvec2 rc = coopMatGetCoordinateEXT(m, i);
    if (rc.x < R && rc.y < C) {
      const uint k = base + rc.x * C + rc.y;
      atomicMin(dst[k], Bits(m[i]));
      atomicMax(dst[errors[2] + k], Bits(m[i]));
      atomicAdd(cnt[k], 1u);
    } else {
      atomicAdd(errors[0], 1u);
    }
  }
#ifdef APP_SHARED
  atomicAdd(errors[1], CanaryCheck());
#endif
}
