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
// writes row*100+col for every element it holds.
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer Out { uint o[]; };
void main() {
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseA> a = coopmat<float16_t, SG, 8, 8, gl_MatrixUseA>(1.0);
  coopmat<uint8_t, SG, 8, 8, gl_MatrixUseB> b = coopmat<uint8_t, SG, 8, 8, gl_MatrixUseB>(uint8_t(1));
  coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> c = coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator>(0.0);
  coopmat<int, SG, 8, 8, gl_MatrixUseAccumulator> d = coopmat<int, SG, 8, 8, gl_MatrixUseAccumulator>(0);
  uint base = gl_LocalInvocationIndex * 256;
  for (uint i = 0; i < a.length(); ++i) { uvec2 rc = coopMatGetCoordinateEXT(a, i); o[base + i] = rc.x * 100 + rc.y; }
  for (uint i = 0; i < b.length(); ++i) { uvec2 rc = coopMatGetCoordinateEXT(b, i); o[base + 64 + i] = rc.x * 100 + rc.y; }
  for (uint i = 0; i < c.length(); ++i) { uvec2 rc = coopMatGetCoordinateEXT(c, i); o[base + 128 + i] = rc.x * 100 + rc.y; }
  for (int i = 0; i < d.length(); ++i) { uvec2 rc = coopMatGetCoordinateEXT(d, uint(i)); o[base + 192 + i] = rc.x * 100 + rc.y; }
}
