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
// Review 130c39d finding 1: a 2x2 reduce 32x32 -> 16x16 (in registers on RADV) beside
// one Acc f32 -> A f16 conversion (a scratch round trip where the costs say so), 128
// invocations and 1 KiB of the module's own shared memory. The per-size switch's
// default must not size the scratch slices for the 32x32 source.
layout(local_size_x = 128) in;
layout(set = 0, binding = 0) buffer F32 { float f[]; };
layout(set = 0, binding = 1) buffer F16 { float16_t h[]; };
shared float own[256];
float sumF(const in float a, const in float b) { return a + b; }
void main() {
  own[gl_LocalInvocationIndex] = float(gl_LocalInvocationIndex);
  barrier();
  coopmat<float, SG, 32, 32, gl_MatrixUseAccumulator> big;
  coopMatLoad(big, f, 0, 32, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, SG, 16, 16, gl_MatrixUseAccumulator> quarter;
  coopMatReduceEXT(quarter, big, gl_CooperativeMatrixReduce2x2EXT, sumF);
  coopMatStore(quarter, f, 1024, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 16, 16, gl_MatrixUseA> a = coopmat<float16_t, SG, 16, 16, gl_MatrixUseA>(quarter);
  coopMatStore(a, h, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  f[2048 + gl_LocalInvocationIndex] = own[255 - gl_LocalInvocationIndex];
}
