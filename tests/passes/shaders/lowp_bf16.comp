#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_EXT_bfloat16 : require
#extension GL_KHR_memory_scope_semantics : require
// bfloat16 (SPV_KHR_bfloat16) 16x16 accumulators through every maintenance1
// operation: GetCoordinate, ConvertUse and transposes (data moves), PerElementOp and
// Reduce (the app's functions do the arithmetic, here in f32). No Float16, Int8 or
// Int16 capability: the lowering must move bf16 elements without them.
#define SG gl_ScopeSubgroup
#define ACC coopmat<bfloat16_t, SG, 16, 16, gl_MatrixUseAccumulator>
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer B16 { bfloat16_t b[]; };
layout(set = 0, binding = 1) buffer U32 { uint u[]; };
bfloat16_t scaleByRow(const in uint row, const in uint col, const in bfloat16_t x) { return bfloat16_t(float(x) * float(row + 1)); }
bfloat16_t addB(const in bfloat16_t x, const in bfloat16_t y) { return bfloat16_t(float(x) + float(y)); }
bfloat16_t maxB(const in bfloat16_t x, const in bfloat16_t y) { return float(x) > float(y) ? x : y; }
void main() {
  ACC acc;
  coopMatLoad(acc, b, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  uint sum = 0;
  for (int i = 0; i < acc.length(); ++i) { uvec2 rc = coopMatGetCoordinateEXT(acc, i); sum += rc.x * 16 + rc.y; }
  u[gl_LocalInvocationIndex] = sum;
  coopmat<bfloat16_t, SG, 16, 16, gl_MatrixUseA> a = coopmat<bfloat16_t, SG, 16, 16, gl_MatrixUseA>(acc);
  coopMatStore(a, b, 256, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<bfloat16_t, SG, 16, 16, gl_MatrixUseB> tb;
  coopMatTransposeEXT(tb, acc);
  coopMatStore(tb, b, 512, 16, gl_CooperativeMatrixLayoutRowMajor);
  ACC p;
  coopMatPerElementEXT(p, acc, scaleByRow);
  coopMatStore(p, b, 768, 16, gl_CooperativeMatrixLayoutRowMajor);
  ACC r;
  coopMatReduceEXT(r, acc, gl_CooperativeMatrixReduceRowEXT, addB);
  coopMatStore(r, b, 1024, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(r, acc, gl_CooperativeMatrixReduceColumnEXT, maxB);
  coopMatStore(r, b, 1280, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(r, acc, gl_CooperativeMatrixReduceRowEXT | gl_CooperativeMatrixReduceColumnEXT, addB);
  coopMatStore(r, b, 1536, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<bfloat16_t, SG, 8, 8, gl_MatrixUseAccumulator> q;
  coopMatReduceEXT(q, acc, gl_CooperativeMatrixReduce2x2EXT, maxB);
  coopMatStore(q, b, 1792, 8, gl_CooperativeMatrixLayoutRowMajor);
}
