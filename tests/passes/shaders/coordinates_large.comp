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
// Coordinates beyond what narrow component types hold exactly: an 8-bit matrix
// with 512 rows and an f16 matrix with 4096 columns (split into low/high parts),
// an f32 matrix (never split), and a PerElementOp sharing the f32 tables.
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer Out { uint o[]; };
float addRow(const in uint row, const in uint col, const in float x) { return x + float(row); }
void main() {
  coopmat<uint8_t, SG, 512, 8, gl_MatrixUseB> b = coopmat<uint8_t, SG, 512, 8, gl_MatrixUseB>(uint8_t(0));
  coopmat<float16_t, SG, 8, 4096, gl_MatrixUseA> a = coopmat<float16_t, SG, 8, 4096, gl_MatrixUseA>(0.0);
  coopmat<float, SG, 16, 16, gl_MatrixUseAccumulator> c = coopmat<float, SG, 16, 16, gl_MatrixUseAccumulator>(0.0);
  uint i = gl_LocalInvocationIndex;
  uvec2 rb = coopMatGetCoordinateEXT(b, i);
  uvec2 ra = coopMatGetCoordinateEXT(a, i);
  uvec2 rc = coopMatGetCoordinateEXT(c, i);
  uvec2 rd = coopMatGetCoordinateEXT(c, i + 1);
  coopMatPerElementEXT(c, c, addRow);
  o[i] = rb.x + ra.y + rc.x + rd.y + uint(c[0]);
}
