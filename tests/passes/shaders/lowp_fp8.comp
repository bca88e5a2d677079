#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_EXT_float_e4m3 : require
#extension GL_EXT_float_e5m2 : require
#extension GL_KHR_memory_scope_semantics : require
// fp8 (SPV_EXT_float8) 16x16 matrices: GetCoordinate and PerElementOp on the A/B
// types RADV lists (E4M3/E5M2 inputs), relaxed conversions from an f32 accumulator
// (quantisation, plain and transposed), and, on E5M2 accumulators the spec allows,
// ConvertUse and Reduce. No Int8, Int16 or Float16 capability.
#define SG gl_ScopeSubgroup
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer F32 { float f[]; };
layout(set = 0, binding = 1) buffer E4 { floate4m3_t e4[]; };
layout(set = 0, binding = 2) buffer E5 { floate5m2_t e5[]; };
layout(set = 0, binding = 3) buffer U32 { uint u[]; };
floate4m3_t negate(const in uint row, const in uint col, const in floate4m3_t x) { return floate4m3_t(-float(x)); }
floate5m2_t halve(const in uint row, const in uint col, const in floate5m2_t x) { return floate5m2_t(float(x) * 0.5); }
floate5m2_t addE5(const in floate5m2_t x, const in floate5m2_t y) { return floate5m2_t(float(x) + float(y)); }
void main() {
  coopmat<floate4m3_t, SG, 16, 16, gl_MatrixUseA> a;
  coopMatLoad(a, e4, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  uint sum = 0;
  for (int i = 0; i < a.length(); ++i) { uvec2 rc = coopMatGetCoordinateEXT(a, i); sum += rc.x * 16 + rc.y; }
  u[gl_LocalInvocationIndex] = sum;
  coopMatPerElementEXT(a, a, negate);
  coopMatStore(a, e4, 256, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<floate5m2_t, SG, 16, 16, gl_MatrixUseB> bm;
  coopMatLoad(bm, e5, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatPerElementEXT(bm, bm, halve);
  coopMatStore(bm, e5, 256, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, SG, 16, 16, gl_MatrixUseAccumulator> acc;
  coopMatLoad(acc, f, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<floate4m3_t, SG, 16, 16, gl_MatrixUseA> qa = coopmat<floate4m3_t, SG, 16, 16, gl_MatrixUseA>(acc);
  coopMatStore(qa, e4, 512, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<floate5m2_t, SG, 16, 16, gl_MatrixUseB> qb;
  coopMatTransposeEXT(qb, acc);
  coopMatStore(qb, e5, 512, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<floate5m2_t, SG, 16, 16, gl_MatrixUseAccumulator> c5;
  coopMatLoad(c5, e5, 768, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<floate5m2_t, SG, 16, 16, gl_MatrixUseA> c5a = coopmat<floate5m2_t, SG, 16, 16, gl_MatrixUseA>(c5);
  coopMatStore(c5a, e5, 1024, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(c5, c5, gl_CooperativeMatrixReduceRowEXT, addE5);
  coopMatStore(c5, e5, 1280, 16, gl_CooperativeMatrixLayoutRowMajor);
}
