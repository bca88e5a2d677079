#version 450
// Layout probe: loads a matrix whose element (r, c) holds r, and one whose element
// holds c, and writes what every invocation sees at every composite index. The
// layer fits a GF(2)-linear layout to the result. ELEM is the component type
// (one module per type; ELEM_BF16, ELEM_E4M3 and ELEM_E5M2 name the encoded
// floats); the shape and Use are specialization constants. CODE reads a code back:
// bf16 codes are small integers (exact up to 256), fp8 codes are bit patterns
// (E5M2 holds the integers exactly only up to 8).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_KHR_shader_subgroup_basic : require
#if defined(ELEM_BF16)
#extension GL_EXT_bfloat16 : require
#define ELEM bfloat16_t
#define CODE(x) uint(float(x))
#elif defined(ELEM_E4M3)
#extension GL_EXT_float_e4m3 : require
#define ELEM floate4m3_t
#define CODE(x) uint(floate4m3BitsToUintEXT(x))
#elif defined(ELEM_E5M2)
#extension GL_EXT_float_e5m2 : require
#define ELEM floate5m2_t
#define CODE(x) uint(floate5m2BitsToUintEXT(x))
#else
#define CODE(x) uint(x)
#endif

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
    observed[2 * (base + i)] = CODE(rows[i]);
    observed[2 * (base + i) + 1] = CODE(cols[i]);
  }
}
