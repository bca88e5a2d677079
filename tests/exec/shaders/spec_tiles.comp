#version 450
// The flash-attention pattern whose tile sizes are specialization constants (as in
// published kernels): TM, TN, TK and WARP in SpecIds 3-6, the workgroup size in
// SpecId 0, subgroups found with gl_SubgroupID. Per subgroup g:
//   S = Q K               Q: TM x TK (A, f16), K: TK x TN (B, f16), S: TM x TN (Acc, f32)
//   S' = mask/scale(S)    per element, reading Workgroup globals
//   M = rowmax(S')        Reduce Row
//   P = exp2(S' - M)      per element with a matrix operand
//   L = rowsum(P)         Reduce Row
//   O = f16(P) V          P converted Accumulator TM x TN -> A TM x TK (TN == TK only
//                         once specialized), V: TK x TN (B, f16)
//   lse[row] = L          scattered with GetCoordinate
// Bindings: 0 Q, 1 K, 2 V (f16), 3 O (f32, TM x TN), 4 L (f32, TM per subgroup),
// 5 params {scale, causal offset}, 6 errors: [0] subgroups whose size was not WARP.
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_KHR_shader_subgroup_basic : require

layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint TM = 8;
layout(constant_id = 4) const uint TN = 8;
layout(constant_id = 5) const uint TK = 8;
layout(constant_id = 6) const uint WARP = 8;

layout(set = 0, binding = 0) readonly buffer Q { float16_t q[]; };
layout(set = 0, binding = 1) readonly buffer K { float16_t k[]; };
layout(set = 0, binding = 2) readonly buffer V { float16_t v[]; };
layout(set = 0, binding = 3) writeonly buffer O { float o[]; };
layout(set = 0, binding = 4) writeonly buffer L { float lse[]; };
layout(set = 0, binding = 5) readonly buffer Params { float scaleIn; uint offsetIn; };
layout(set = 0, binding = 6) buffer Errors { uint errors[]; };

shared float gScale;
shared uint gOffset;

float MaskScale(const in uint row, const in uint col, const in float x) { return col > row + gOffset ? -64.0 : x * gScale; }
float ExpMinus(const in uint row, const in uint col, const in float x, const in float m) { return exp2(x - m); }
float MaxF(const in float a, const in float b) { return max(a, b); }
float AddF(const in float a, const in float b) { return a + b; }

void main() {
  if (gl_LocalInvocationIndex == 0) {
    gScale = scaleIn;
    gOffset = offsetIn;
  }
  barrier();
  if (gl_SubgroupSize != WARP && subgroupElect()) atomicAdd(errors[0], 1);
  const uint g = gl_WorkGroupID.x * (gl_WorkGroupSize.x / WARP) + gl_SubgroupID;

  coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA> qa;
  coopmat<float16_t, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB> kb;
  coopmat<float16_t, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB> vb;
  coopMatLoad(qa, q, g * TM * TK, TK, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(kb, k, g * TK * TN, TN, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(vb, v, g * TK * TN, TN, gl_CooperativeMatrixLayoutRowMajor);

  coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> s =
      coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>(0.0);
  s = coopMatMulAdd(qa, kb, s);
  coopMatPerElementEXT(s, s, MaskScale);

  coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> rowMax;
  coopMatReduceEXT(rowMax, s, gl_CooperativeMatrixReduceRowEXT, MaxF);
  coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> p;
  coopMatPerElementEXT(p, s, ExpMinus, rowMax);
  coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> rowSum;
  coopMatReduceEXT(rowSum, p, gl_CooperativeMatrixReduceRowEXT, AddF);

  coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA> pa =
      coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA>(p);
  coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> result =
      coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>(0.0);
  result = coopMatMulAdd(pa, vb, result);
  coopMatStore(result, o, g * TM * TN, TN, gl_CooperativeMatrixLayoutRowMajor);

  for (uint i = 0; i < rowSum.length(); ++i) {
    const uvec2 rc = coopMatGetCoordinateEXT(rowSum, i);
    if (rc.y == 0) lse[g * TM + rc.x] = rowSum[i];
  }
}
