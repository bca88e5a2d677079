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
// 16x16 8-bit integer conversions RADV has no intermediate matrix for (no 8-bit
// Accumulator, no 32-bit A or B): they convert the scalars in the scratch.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer U8 { uint8_t u8[]; };
layout(set = 0, binding = 1) buffer I8 { int8_t i8[]; };
layout(set = 0, binding = 2) buffer U32 { uint u32[]; };
layout(set = 0, binding = 3) buffer I32 { int i32[]; };
void main() {
  coopmat<int, SG, 16, 16, gl_MatrixUseAccumulator> acc;
  coopMatLoad(acc, i32, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<int8_t, SG, 16, 16, gl_MatrixUseB> b = coopmat<int8_t, SG, 16, 16, gl_MatrixUseB>(acc);
  coopMatStore(b, i8, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<int8_t, SG, 16, 16, gl_MatrixUseB> t;
  coopMatTransposeEXT(t, acc);
  coopMatStore(t, i8, 256, 16, gl_CooperativeMatrixLayoutRowMajor);

  coopmat<uint8_t, SG, 16, 16, gl_MatrixUseA> a;
  coopMatLoad(a, u8, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<uint, SG, 16, 16, gl_MatrixUseAccumulator> wide = coopmat<uint, SG, 16, 16, gl_MatrixUseAccumulator>(a);
  coopMatStore(wide, u32, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
}
