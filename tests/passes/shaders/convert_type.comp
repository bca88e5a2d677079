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
// Use and component type change together, and transposes to A and to B.
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer F32 { float f[]; };
layout(set = 0, binding = 1) buffer F16 { float16_t h[]; };
layout(set = 0, binding = 2) buffer I32 { int i32[]; };
layout(set = 0, binding = 3) buffer I8 { int8_t i8[]; };
void main() {
  coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> acc;
  coopMatLoad(acc, f, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseA> a = coopmat<float16_t, SG, 8, 8, gl_MatrixUseA>(acc);
  coopMatStore(a, h, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> back = coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator>(a);
  coopMatStore(back, f, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseB> tb;
  coopMatTransposeEXT(tb, acc);
  coopMatStore(tb, h, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseA> ta;
  coopMatTransposeEXT(ta, acc);
  coopMatStore(ta, h, 128, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseAccumulator> acch = coopmat<float16_t, SG, 8, 8, gl_MatrixUseAccumulator>(acc);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseB> tsame;
  coopMatTransposeEXT(tsame, acch);
  coopMatStore(tsame, h, 192, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<int, SG, 8, 8, gl_MatrixUseAccumulator> iacc;
  coopMatLoad(iacc, i32, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<int8_t, SG, 8, 8, gl_MatrixUseA> ia;
  coopMatTransposeEXT(ia, iacc);
  coopMatStore(ia, i8, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<uint8_t, SG, 8, 8, gl_MatrixUseB> ub = coopmat<uint8_t, SG, 8, 8, gl_MatrixUseB>(iacc);
  coopMatStore(ub, i8, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
}
