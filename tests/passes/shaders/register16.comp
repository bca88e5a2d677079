#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#ifdef VULKAN_MM
#extension GL_KHR_memory_scope_semantics : require
#define SG gl_ScopeSubgroup
#else
#define SG 3
#endif
// Every operation on 16x16 types (the shapes of the AMD built-in layouts):
// GetCoordinate, PerElementOp, Reduce Row/Column/Row|Column, ConvertUse Acc<->A/B,
// transposes, and a type-changing conversion.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer F32 { float f[]; };
layout(set = 0, binding = 1) buffer F16 { float16_t h[]; };
layout(set = 0, binding = 2) buffer U32 { uint u[]; };
float sumF(const in float a, const in float b) { return a + b; }
float16_t maxH(const in float16_t a, const in float16_t b) { return max(a, b); }
float scaleRow(const in uint row, const in uint col, const in float x) { return x * float(row + 1) + float(col); }
void main() {
  coopmat<float, SG, 16, 16, gl_MatrixUseAccumulator> acc;
  coopMatLoad(acc, f, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  for (uint i = 0; i < acc.length(); ++i) { uvec2 rc = coopMatGetCoordinateEXT(acc, i); u[gl_LocalInvocationIndex * 64 + i] = rc.x * 16 + rc.y; }
  coopMatPerElementEXT(acc, acc, scaleRow);
  coopmat<float, SG, 16, 16, gl_MatrixUseAccumulator> r;
  coopMatReduceEXT(r, acc, gl_CooperativeMatrixReduceRowEXT, sumF);
  coopMatStore(r, f, 256, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(r, acc, gl_CooperativeMatrixReduceColumnEXT, sumF);
  coopMatStore(r, f, 512, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(r, acc, gl_CooperativeMatrixReduceRowAndColumnEXT, sumF);
  coopMatStore(r, f, 768, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 16, 16, gl_MatrixUseAccumulator> hacc;
  coopMatLoad(hacc, h, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(hacc, hacc, gl_CooperativeMatrixReduceRowEXT, maxH);
  coopmat<float16_t, SG, 16, 16, gl_MatrixUseA> a = coopmat<float16_t, SG, 16, 16, gl_MatrixUseA>(hacc);
  coopmat<float16_t, SG, 16, 16, gl_MatrixUseB> b = coopmat<float16_t, SG, 16, 16, gl_MatrixUseB>(hacc);
  for (uint i = 0; i < a.length(); ++i) { uvec2 rc = coopMatGetCoordinateEXT(a, i); u[4096 + gl_LocalInvocationIndex * 64 + i] = rc.x * 16 + rc.y; }
  coopMatStore(a, h, 256, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(b, h, 512, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 16, 16, gl_MatrixUseA> at;
  coopMatTransposeEXT(at, hacc);
  coopmat<float16_t, SG, 16, 16, gl_MatrixUseB> bt;
  coopMatTransposeEXT(bt, hacc);
  coopMatStore(at, h, 768, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(bt, h, 1024, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 16, 16, gl_MatrixUseAccumulator> back = coopmat<float16_t, SG, 16, 16, gl_MatrixUseAccumulator>(a);
  coopMatStore(back, h, 1280, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 16, 16, gl_MatrixUseA> fromF32 = coopmat<float16_t, SG, 16, 16, gl_MatrixUseA>(acc);
  coopMatStore(fromF32, h, 1536, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, SG, 16, 16, gl_MatrixUseAccumulator> fromB = coopmat<float, SG, 16, 16, gl_MatrixUseAccumulator>(b);
  coopMatStore(fromB, f, 1024, 16, gl_CooperativeMatrixLayoutRowMajor);
}
