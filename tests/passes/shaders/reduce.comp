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
// GetCoordinate on A (f16), B (u8) and Accumulator (f32, s32): each invocation
// Reduce Row, Column, Row|Column, 2x2 with sum, min and max, including changed result dims.
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer F32 { float f[]; };
layout(set = 0, binding = 1) buffer I32 { int i32[]; };
layout(set = 0, binding = 2) buffer F16 { float16_t h[]; };
float sumF(const in float a, const in float b) { return a + b; }
float maxF(const in float a, const in float b) { return max(a, b); }
int minI(const in int a, const in int b) { return min(a, b); }
float16_t sumH(const in float16_t a, const in float16_t b) { return a + b; }
void main() {
  coopmat<float, SG, 16, 16, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, f, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, SG, 16, 16, gl_MatrixUseAccumulator> r;
  coopMatReduceEXT(r, m, gl_CooperativeMatrixReduceRowEXT, sumF);
  coopMatStore(r, f, 256, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(r, m, gl_CooperativeMatrixReduceColumnEXT, maxF);
  coopMatStore(r, f, 512, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> q;
  coopMatReduceEXT(q, m, gl_CooperativeMatrixReduce2x2EXT, sumF);
  coopMatStore(q, f, 768, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(q, m, gl_CooperativeMatrixReduceRowAndColumnEXT, sumF);
  coopMatStore(q, f, 832, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, SG, 16, 8, gl_MatrixUseAccumulator> rowNarrow;
  coopMatReduceEXT(rowNarrow, m, gl_CooperativeMatrixReduceRowEXT, sumF);
  coopMatStore(rowNarrow, f, 896, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, SG, 8, 16, gl_MatrixUseAccumulator> colNarrow;
  coopMatReduceEXT(colNarrow, m, gl_CooperativeMatrixReduceColumnEXT, maxF);
  coopMatStore(colNarrow, f, 1024, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<int, SG, 8, 8, gl_MatrixUseAccumulator> im;
  coopMatLoad(im, i32, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(im, im, gl_CooperativeMatrixReduceRowEXT, minI);
  coopMatStore(im, i32, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseAccumulator> hm;
  coopMatLoad(hm, h, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(hm, hm, gl_CooperativeMatrixReduceColumnEXT, sumH);
  coopMatStore(hm, h, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
}
