#version 450
// A plain KHR cooperative-matrix kernel: the layer must pass it through untouched.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer Data { float16_t a[64]; float16_t b[64]; float c[64]; } data;
void main() {
  coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseA> A;
  coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseB> B;
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> C;
  coopMatLoad(A, data.a, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(B, data.b, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(C, data.c, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  C = coopMatMulAdd(A, B, C);
  coopMatStore(C, data.c, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
}
