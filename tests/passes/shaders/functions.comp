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
// Maintenance1 operations inside called functions. GetCoordinate is not tangled,
// so coordOf may run in non-uniform control flow: it must not learn the layout
// (barriers, matrix loads) itself. helper holds tangled operations and is called
// from uniform control flow; the u8 B matrix needs split (low/high) tables.
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer F32 { float f[]; };
layout(set = 0, binding = 1) buffer Out { uint o[]; };
uvec2 coordOf(coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> m, uint i) { return coopMatGetCoordinateEXT(m, i); }
uvec2 bigCoordOf(coopmat<uint8_t, SG, 8, 512, gl_MatrixUseB> m, uint i) { return coopMatGetCoordinateEXT(m, i); }
float addRow(const in uint r, const in uint c, const in float x) { return x + float(r); }
float sumF(const in float a, const in float b) { return a + b; }
void helper(inout coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> m) {
  coopMatPerElementEXT(m, m, addRow);
  coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> r;
  coopMatReduceEXT(r, m, gl_CooperativeMatrixReduceRowEXT, sumF);
  m = r;
}
void main() {
  coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, f, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<uint8_t, SG, 8, 512, gl_MatrixUseB> big = coopmat<uint8_t, SG, 8, 512, gl_MatrixUseB>(uint8_t(0));
  if (gl_LocalInvocationID.x < 3) {
    for (uint i = 0; i < m.length(); ++i) {
      uvec2 rc = coordOf(m, i);
      o[gl_LocalInvocationID.x * 64 + i] = rc.x * 1000 + rc.y;
    }
    uvec2 rc = bigCoordOf(big, gl_LocalInvocationID.x);
    o[1024 + gl_LocalInvocationID.x] = rc.x * 1000 + rc.y;
  }
  helper(m);
  coopMatStore(m, f, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
}
