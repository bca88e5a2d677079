#version 450
// Scatters every element of a loaded matrix to its own coordinate: the output must
// equal the input. Uses GetCoordinate, an EXT-only capability, so the layer must lower it.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer In { float m[64]; } src;
layout(set = 0, binding = 1) buffer Out { float m[64]; } dst;
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> C;
  coopMatLoad(C, src.m, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  for (uint i = 0; i < C.length(); ++i) {
    uvec2 rc = coopMatGetCoordinateEXT(C, i);
    dst.m[rc.x * 8 + rc.y] = C[i];
  }
}
