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
// Reductions whose shapes are specialization constants the lowering cannot
// compare: a Row reduction whose result rows are another constant (the
// application promises they are equal) and a 2x2 reduction to ROWS/2 x COLS/2
// (odd values would be invalid). The lowering accepts them and clamps its reads.
layout(local_size_x = 8) in;
layout(constant_id = 1) const uint ROWS = 16;
layout(constant_id = 2) const uint COLS = 16;
layout(constant_id = 3) const uint RESULT_ROWS = 16;
const uint HALF_ROWS = ROWS / 2;
const uint HALF_COLS = COLS / 2;
layout(set = 0, binding = 0) buffer F32 { float f[]; };
float sumF(const in float a, const in float b) { return a + b; }
void main() {
  coopmat<float, SG, ROWS, COLS, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, f, 0, COLS, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, SG, RESULT_ROWS, 8, gl_MatrixUseAccumulator> r;
  coopMatReduceEXT(r, m, gl_CooperativeMatrixReduceRowEXT, sumF);
  coopMatStore(r, f, 1024, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, SG, HALF_ROWS, HALF_COLS, gl_MatrixUseAccumulator> q;
  coopMatReduceEXT(q, m, gl_CooperativeMatrixReduce2x2EXT, sumF);
  coopMatStore(q, f, 2048, HALF_COLS, gl_CooperativeMatrixLayoutRowMajor);
}
