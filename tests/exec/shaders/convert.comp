#version 450
// Use/type conversions. Source: coopmat<ET, R, C, USE>; destination ET2 / USE2.
//   default:    constructor  coopmat<ET2, R, C, USE2>(m)            (ConvertUse or Op*Convert)
//   TRANSPOSE:  coopMatTransposeEXT into coopmat<ET2, C, R, USE2>   (+ CooperativeMatrixTransposeEXT)
//   VIA_ACC:    A <-> B, which no one operation does: first into coopmat<float, R, C, Accumulator>,
//               then as above from there (bfloat16 and fp8 kernels change A into B this way)
//   SATURATE:   saturatedConvertEXT (fp8: SaturatedToLargestFloat8NormalConversionEXT)
// Bindings: 0 input (ET, row-major R x C per matrix), 1 output (ET2, row-major
// R x C, or C x R when transposed), 2 errors: [1] damaged canary words (APP_SHARED).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(set = 0, binding = 0) readonly buffer In { ET src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { ET2 dst[]; };
layout(set = 0, binding = 2) buffer Errors { uint errors[]; };

void main() {
  const uint base = MatrixIndex() * R * C;
  coopmat<ET, gl_ScopeSubgroup, R, C, USE> m;
  coopMatLoad(m, src, base, C, gl_CooperativeMatrixLayoutRowMajor);
#ifdef APP_SHARED
  CanaryWrite();
#endif
#ifdef VIA_ACC
  coopmat<float, gl_ScopeSubgroup, R, C, gl_MatrixUseAccumulator> source = coopmat<float, gl_ScopeSubgroup, R, C, gl_MatrixUseAccumulator>(m);
#else
#define source m  // the loaded matrix itself
#endif
#ifdef TRANSPOSE
  coopmat<ET2, gl_ScopeSubgroup, C, R, USE2> res;
  coopMatTransposeEXT(res, source);
  coopMatStore(res, dst, base, R, gl_CooperativeMatrixLayoutRowMajor);
#elif defined(SATURATE)
  coopmat<ET2, gl_ScopeSubgroup, R, C, USE2> res;
  saturatedConvertEXT(res, source);
  coopMatStore(res, dst, base, C, gl_CooperativeMatrixLayoutRowMajor);
#else
  coopmat<ET2, gl_ScopeSubgroup, R, C, USE2> res = coopmat<ET2, gl_ScopeSubgroup, R, C, USE2>(source);
  coopMatStore(res, dst, base, C, gl_CooperativeMatrixLayoutRowMajor);
#endif
#ifdef APP_SHARED
  atomicAdd(errors[1], CanaryCheck());
#endif
}
