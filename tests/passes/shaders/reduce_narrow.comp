#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_KHR_memory_scope_semantics : require
// Reductions of 8- and 16-bit integer accumulators: the portable path packs
// several elements per scratch word (Row, Column, 2x2, Row|Column; in place and,
// for the wider Row result, in a second region).
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer U8 { uint8_t u8[]; };
layout(set = 0, binding = 1) buffer S8 { int8_t s8[]; };
layout(set = 0, binding = 2) buffer U16 { uint16_t u16[]; };
uint8_t sumU8(const in uint8_t a, const in uint8_t b) { return a + b; }
int8_t minS8(const in int8_t a, const in int8_t b) { return min(a, b); }
uint16_t maxU16(const in uint16_t a, const in uint16_t b) { return max(a, b); }
void main() {
  coopmat<uint8_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> a;
  coopMatLoad(a, u8, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<uint8_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> ar;
  coopMatReduceEXT(ar, a, gl_CooperativeMatrixReduceColumnEXT, sumU8);
  coopMatStore(ar, u8, 256, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<uint8_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> aq;
  coopMatReduceEXT(aq, a, gl_CooperativeMatrixReduce2x2EXT, sumU8);
  coopMatStore(aq, u8, 512, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(aq, a, gl_CooperativeMatrixReduceRowAndColumnEXT, sumU8);
  coopMatStore(aq, u8, 576, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<int8_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> b;
  coopMatLoad(b, s8, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(b, b, gl_CooperativeMatrixReduceRowEXT, minS8);
  coopMatStore(b, s8, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<int8_t, gl_ScopeSubgroup, 8, 16, gl_MatrixUseAccumulator> bw;
  coopMatReduceEXT(bw, b, gl_CooperativeMatrixReduceRowEXT, minS8);
  coopMatStore(bw, s8, 128, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<uint16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> c;
  coopMatLoad(c, u16, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<uint16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> cq;
  coopMatReduceEXT(cq, c, gl_CooperativeMatrixReduce2x2EXT, maxU16);
  coopMatStore(cq, u16, 256, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatReduceEXT(c, c, gl_CooperativeMatrixReduceColumnEXT, maxU16);
  coopMatStore(c, u16, 512, 16, gl_CooperativeMatrixLayoutRowMajor);
}
