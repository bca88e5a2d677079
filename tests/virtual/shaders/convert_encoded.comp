#version 450
// Scalar conversions of bfloat16 or fp8 (ET): binding 0 holds binary32 values; each
// invocation converts some of them (rounding, NaN, overflow, subnormals) and writes
// ET(x) to binding 1, float(ET(x)) to 2, ET(float16_t(x)) to 3 and float16_t(ET(x)) to 4.
#extension GL_GOOGLE_include_directive : require
#define KHR_ONLY
#include "common.glsl"

layout(set = 0, binding = 0) readonly buffer In { float src[]; };
layout(set = 0, binding = 1) writeonly buffer ToEncoded { ET toEncoded[]; };
layout(set = 0, binding = 2) writeonly buffer ToFloat { float toFloat[]; };
layout(set = 0, binding = 3) writeonly buffer FromHalf { ET fromHalf[]; };
layout(set = 0, binding = 4) writeonly buffer ToHalf { float16_t toHalf[]; };

void main() {
  const uint total = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < src.length(); i += total) {
    const ET e = ET(src[i]);
    toEncoded[i] = e;
    toFloat[i] = float(e);
    fromHalf[i] = ET(float16_t(src[i]));
    toHalf[i] = float16_t(e);
  }
}
