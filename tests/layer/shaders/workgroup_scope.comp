#version 450
// GetCoordinate on a workgroup-scope matrix: the layer lowers subgroup scope only,
// so it must refuse this module with a message, never pass it down or crash.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) buffer Data { float m[256]; uint coords[]; } data;
void main() {
  coopmat<float, gl_ScopeWorkgroup, 16, 16, gl_MatrixUseAccumulator> C;
  coopMatLoad(C, data.m, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  for (uint i = 0; i < C.length(); ++i) {
    uvec2 rc = coopMatGetCoordinateEXT(C, i);
    data.coords[2 * (gl_LocalInvocationIndex * C.length() + i)] = rc.x;
  }
}
