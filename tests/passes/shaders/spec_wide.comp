#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
// Specialization constants wider than 32 bits beside a narrow signed one, for
// coopmat-lower --specialize as the layer's dump_dir writes it (64-bit values and a
// double's bits as unsigned integers).
layout(local_size_x = 8) in;
layout(constant_id = 0) const uint ROWS = 8;
layout(constant_id = 3) const int64_t WIDE = 1;
layout(constant_id = 4) const int NEGATIVE = 1;
layout(constant_id = 5) const double REAL = 1.0;
layout(set = 0, binding = 0) buffer Data { float m[]; };
void main() {
  coopmat<float, gl_ScopeSubgroup, ROWS, 8, gl_MatrixUseAccumulator> c;
  coopMatLoad(c, m, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  for (uint i = 0; i < c.length(); ++i) {
    const uvec2 rc = coopMatGetCoordinateEXT(c, i);
    m[1024 + rc.x * 8 + rc.y] = c[i] + float(WIDE) + float(NEGATIVE) + float(REAL);
  }
}
