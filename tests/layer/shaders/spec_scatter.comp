#version 450
// A GetCoordinate scatter of an A matrix converted from a loaded accumulator, its
// shapes specialization constants, so the layer lowers it per pipeline: the output
// equals the input when K == COLS. Any other K is refused by the layer (the
// conversion's shapes differ once specialized), so one module gives pipelines that
// run and pipelines that are refused.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 8) in;
layout(constant_id = 0) const uint ROWS = 8;
layout(constant_id = 1) const uint COLS = 8;
layout(constant_id = 2) const uint K = 8;
layout(set = 0, binding = 0) readonly buffer In { float m[]; } src;
layout(set = 0, binding = 1) writeonly buffer Out { float m[]; } dst;
void main() {
  coopmat<float, gl_ScopeSubgroup, ROWS, COLS, gl_MatrixUseAccumulator> c;
  coopMatLoad(c, src.m, 0, COLS, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, gl_ScopeSubgroup, ROWS, K, gl_MatrixUseA> a = coopmat<float16_t, gl_ScopeSubgroup, ROWS, K, gl_MatrixUseA>(c);
  for (uint i = 0; i < a.length(); ++i) {
    const uvec2 rc = coopMatGetCoordinateEXT(a, i);
    dst.m[rc.x * K + rc.y] = float(a[i]);
  }
}
