#version 450
// Uses an EXT-only capability (GetCoordinate): the layer must lower it.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer Data { float m[64]; uint coords[]; } data;
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> C;
  coopMatLoad(C, data.m, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  for (uint i = 0; i < C.length(); ++i) {
    uvec2 rc = coopMatGetCoordinateEXT(C, i);
    data.coords[2 * (gl_SubgroupInvocationID * C.length() + i)] = rc.x;
    data.coords[2 * (gl_SubgroupInvocationID * C.length() + i) + 1] = rc.y;
  }
}
