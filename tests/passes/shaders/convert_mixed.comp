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
// Conversions that change component type and Use whose register intermediates
// (an Accumulator of the narrow type, or an A/B of the wide type) lavapipe lacks:
// without a supported intermediate they convert the scalars in the scratch.
// No 8x8 f16 Accumulator is declared here, so Acc f32 -> A f16 needs a new type too.
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer U8 { uint8_t u8[]; };
layout(set = 0, binding = 1) buffer I8 { int8_t i8[]; };
layout(set = 0, binding = 2) buffer U32 { uint u32[]; };
layout(set = 0, binding = 3) buffer I32 { int i32[]; };
layout(set = 0, binding = 4) buffer F32 { float f[]; };
layout(set = 0, binding = 5) buffer F16 { float16_t h[]; };
void main() {
  coopmat<uint8_t, SG, 8, 8, gl_MatrixUseB> ub;
  coopMatLoad(ub, u8, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<uint, SG, 8, 8, gl_MatrixUseAccumulator> uacc = coopmat<uint, SG, 8, 8, gl_MatrixUseAccumulator>(ub);
  coopMatStore(uacc, u32, 0, 8, gl_CooperativeMatrixLayoutRowMajor);

  coopmat<int8_t, SG, 8, 8, gl_MatrixUseA> sa;
  coopMatLoad(sa, i8, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<int, SG, 8, 8, gl_MatrixUseAccumulator> sacc = coopmat<int, SG, 8, 8, gl_MatrixUseAccumulator>(sa);
  coopMatStore(sacc, i32, 0, 8, gl_CooperativeMatrixLayoutRowMajor);

  coopmat<int8_t, SG, 8, 8, gl_MatrixUseA> back = coopmat<int8_t, SG, 8, 8, gl_MatrixUseA>(sacc);
  coopMatStore(back, i8, 64, 8, gl_CooperativeMatrixLayoutRowMajor);

  coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> facc;
  coopMatLoad(facc, f, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseA> ha = coopmat<float16_t, SG, 8, 8, gl_MatrixUseA>(facc);
  coopMatStore(ha, h, 0, 8, gl_CooperativeMatrixLayoutRowMajor);

  coopmat<uint8_t, SG, 8, 8, gl_MatrixUseB> tb;
  coopMatTransposeEXT(tb, uacc);
  coopMatStore(tb, u8, 64, 8, gl_CooperativeMatrixLayoutRowMajor);

  coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> fromU8 = coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator>(ub);
  coopMatStore(fromU8, f, 64, 8, gl_CooperativeMatrixLayoutRowMajor);

  // A flexible-dimension shape: its f16 Accumulator intermediate exists only with flexible dimensions.
  coopmat<float, SG, 16, 32, gl_MatrixUseAccumulator> big;
  coopMatLoad(big, f, 128, 32, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 16, 32, gl_MatrixUseA> bigA = coopmat<float16_t, SG, 16, 32, gl_MatrixUseA>(big);
  coopMatStore(bigA, h, 64, 32, gl_CooperativeMatrixLayoutRowMajor);
}
