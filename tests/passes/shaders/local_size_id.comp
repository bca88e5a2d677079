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
// LocalSizeId workgroup size (spec constants via local_size_x_id under SPIR-V 1.6 uses LocalSizeId) and
// a shader that already uses shared memory.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;
layout(set = 0, binding = 0) buffer F32 { float f[]; };
shared float tile[8 * 64];
float sumF(const in float a, const in float b) { return a + b; }
void main() {
  tile[gl_LocalInvocationIndex] = float(gl_LocalInvocationIndex);
  barrier();
  coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, tile, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(m, m, gl_CooperativeMatrixReduceRowAndColumnEXT, sumF);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseB> b;
  coopMatTransposeEXT(b, m);
  coopMatStore(b, f, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
}
