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
// Use changes without a component change: Acc->A, Acc->B, A->Acc, B->Acc (ConvertUse),
// plus signedness-only changes (u32 Acc -> s32 ... via ConvertUse on ints).
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer F16 { float16_t h[]; };
layout(set = 0, binding = 1) buffer U8 { uint8_t u8[]; };
layout(set = 0, binding = 2) buffer I32 { int i32[]; };
void main() {
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseAccumulator> acc;
  coopMatLoad(acc, h, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseA> a = coopmat<float16_t, SG, 8, 8, gl_MatrixUseA>(acc);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseB> b = coopmat<float16_t, SG, 8, 8, gl_MatrixUseB>(acc);
  coopMatStore(a, h, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(b, h, 128, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseAccumulator> fromA = coopmat<float16_t, SG, 8, 8, gl_MatrixUseAccumulator>(a);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseAccumulator> fromB = coopmat<float16_t, SG, 8, 8, gl_MatrixUseAccumulator>(b);
  coopMatStore(fromA, h, 192, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(fromB, h, 256, 8, gl_CooperativeMatrixLayoutRowMajor);
  // signedness-only: u8 B -> s8 A is not a legal pair; use Acc u32 <-> Acc-free A/B ints
  coopmat<uint8_t, SG, 8, 8, gl_MatrixUseA> ua;
  coopMatLoad(ua, u8, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<int8_t, SG, 8, 8, gl_MatrixUseAccumulator> sacc = coopmat<int8_t, SG, 8, 8, gl_MatrixUseAccumulator>(ua);
  coopmat<int8_t, SG, 8, 8, gl_MatrixUseB> sb = coopmat<int8_t, SG, 8, 8, gl_MatrixUseB>(sacc);
  coopMatStore(sb, u8, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<int, SG, 8, 8, gl_MatrixUseAccumulator> si;
  coopMatLoad(si, i32, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<uint, SG, 8, 8, gl_MatrixUseAccumulator> ui = coopmat<uint, SG, 8, 8, gl_MatrixUseAccumulator>(si);
  coopMatStore(ui, i32, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
}
