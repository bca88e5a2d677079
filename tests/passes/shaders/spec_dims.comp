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
// Matrix dimensions and the workgroup size come from specialization constants.
layout(local_size_x_id = 0, local_size_y = 1) in;
layout(constant_id = 1) const uint ROWS = 8;
layout(constant_id = 2) const uint COLS = 8;
layout(set = 0, binding = 0) buffer F32 { float f[]; };
layout(set = 0, binding = 1) buffer Out { uint o[]; };
float sumF(const in float a, const in float b) { return a + b; }
float twice(const in uint row, const in uint col, const in float x) { return 2.0 * x; }
void main() {
  coopmat<float, SG, ROWS, COLS, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, f, 0, COLS, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, SG, ROWS, COLS, gl_MatrixUseAccumulator> r;
  coopMatReduceEXT(r, m, gl_CooperativeMatrixReduceRowEXT, sumF);
  coopMatPerElementEXT(r, r, twice);
  coopMatStore(r, f, 1024, COLS, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, ROWS, COLS, gl_MatrixUseA> a = coopmat<float16_t, SG, ROWS, COLS, gl_MatrixUseA>(m);
  for (uint i = 0; i < a.length(); ++i) { uvec2 rc = coopMatGetCoordinateEXT(a, i); o[gl_LocalInvocationIndex * 1024 + i] = rc.x * 1000 + rc.y; }
  coopmat<uint8_t, SG, ROWS, COLS, gl_MatrixUseB> b = coopmat<uint8_t, SG, ROWS, COLS, gl_MatrixUseB>(uint8_t(0));
  for (uint i = 0; i < b.length(); ++i) { uvec2 rc = coopMatGetCoordinateEXT(b, i); o[gl_LocalInvocationIndex * 1024 + 512 + i] = rc.x * 1000 + rc.y; }
}
