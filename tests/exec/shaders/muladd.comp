#version 450
// D = A * B + C with coopMatMulAdd: A is M x K (AT), B is K x N (AT), C and D are
// M x N (CT). Bindings: 0 A source, 1 B (BT, by default AT; row-major K x N), 2 C (CT, row-major),
// 3 D output (CT, row-major).
//   KHR_ONLY:        plain KHR; A is loaded directly (AT, row-major M x K). Checks the harness.
//   A_FROM_ACC:      A is loaded as an accumulator (CT, M x K) and converted with a
//                    constructor (Acc -> A, cmm1 conversion).
//   A_TRANSPOSED:    A is loaded as an accumulator (CT, K x M) and coopMatTransposeEXT'd.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// B's component type: AT unless a variant mixes them (u8 x s8, e4m3 x e5m2).
#ifndef BT
#define BT AT
#endif

layout(set = 0, binding = 0) readonly buffer InA { ET src_a[]; };
layout(set = 0, binding = 1) readonly buffer InB { BT src_b[]; };
layout(set = 0, binding = 2) readonly buffer InC { CT src_c[]; };
layout(set = 0, binding = 3) writeonly buffer Out { CT dst[]; };

void main() {
  const uint g = MatrixIndex();
  coopmat<AT, gl_ScopeSubgroup, M, K, gl_MatrixUseA> a;
#if defined(A_FROM_ACC)
  coopmat<ET, gl_ScopeSubgroup, M, K, gl_MatrixUseAccumulator> acc;
  coopMatLoad(acc, src_a, g * M * K, K, gl_CooperativeMatrixLayoutRowMajor);
  a = coopmat<AT, gl_ScopeSubgroup, M, K, gl_MatrixUseA>(acc);
#elif defined(A_TRANSPOSED)
  coopmat<ET, gl_ScopeSubgroup, K, M, gl_MatrixUseAccumulator> acc;
  coopMatLoad(acc, src_a, g * M * K, M, gl_CooperativeMatrixLayoutRowMajor);
  coopMatTransposeEXT(a, acc);
#else
  coopMatLoad(a, src_a, g * M * K, K, gl_CooperativeMatrixLayoutRowMajor);
#endif
  coopmat<BT, gl_ScopeSubgroup, K, N, gl_MatrixUseB> b;
  coopmat<CT, gl_ScopeSubgroup, M, N, gl_MatrixUseAccumulator> c;
  coopMatLoad(b, src_b, g * K * N, N, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(c, src_c, g * M * N, N, gl_CooperativeMatrixLayoutRowMajor);
  c = coopMatMulAdd(a, b, c);
  coopMatStore(c, dst, g * M * N, N, gl_CooperativeMatrixLayoutRowMajor);
}
