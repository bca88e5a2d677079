#version 450
// Layout probe: loads a matrix whose element (r, c) holds r, and one whose element
// holds c, and writes what every invocation sees at every composite index. The
// layer fits a GF(2)-linear layout to the result. ELEM is the component type
// (one module per type); the shape and Use are specialization constants.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_KHR_shader_subgroup_basic : require

layout(constant_id = 0) const uint ROWS = 8;
layout(constant_id = 1) const uint COLS = 8;
layout(constant_id = 2) const int USE = gl_MatrixUseAccumulator;
layout(local_size_x_id = 3) in;

layout(set = 0, binding = 0) readonly buffer RowCodes { ELEM rowCodes[]; };
layout(set = 0, binding = 1) readonly buffer ColCodes { ELEM colCodes[]; };
layout(set = 0, binding = 2) writeonly buffer Observed { uint observed[]; };

void main() {
  coopmat<ELEM, gl_ScopeSubgroup, ROWS, COLS, USE> rows, cols;
  coopMatLoad(rows, rowCodes, 0, COLS, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(cols, colCodes, 0, COLS, gl_CooperativeMatrixLayoutRowMajor);
  const uint length = rows.length();
  const uint base = gl_SubgroupInvocationID * length;
  for (uint i = 0; i < length; ++i) {
    observed[2 * (base + i)] = uint(rows[i]);
    observed[2 * (base + i) + 1] = uint(cols[i]);
  }
}
