#version 450
// A conversion from TM x TN to TM x TK, shapes from specialization constants (as
// published kernels tile): valid only once specialized with TN == TK.
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 8) in;
layout(constant_id = 3) const uint TM = 8;
layout(constant_id = 4) const uint TN = 16;
layout(constant_id = 5) const uint TK = 16;
layout(set = 0, binding = 0) buffer F32 { float f[]; };
layout(set = 0, binding = 1) buffer F16 { float16_t h[]; };
void main() {
  coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, f, 0, TN, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA> a = coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA>(m);
  coopMatStore(a, h, 0, TK, gl_CooperativeMatrixLayoutRowMajor);
}
