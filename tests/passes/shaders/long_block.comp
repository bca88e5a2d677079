#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
// 100 steps in one long block, each a PerElementOp and a Row reduce between
// arithmetic, and an `if` whose merge (an OpPhi after spirv-opt -O) has the
// operations' block as its predecessor: review finding 18's shape (many operations
// in one block) with the phi retargeting the block rebuild needs.
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer B { float data[]; };
float elem(const in uint r, const in uint c, const in float x) { return x * 0.5 + float(r + c); }
float sum(const in float a, const in float b) { return a + b; }
#define STEP                                                           \
  a = a * b + 0.5;                                                     \
  b = b * a - 1.25;                                                    \
  coopMatPerElementEXT(m, m, elem);                                    \
  coopMatReduceEXT(s, m, gl_CooperativeMatrixReduceRowEXT, sum);       \
  if (a > b) a = b * 2.0;
#define STEP10 STEP STEP STEP STEP STEP STEP STEP STEP STEP STEP
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> m, s;
  coopMatLoad(m, data, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  float a = data[100], b = data[101];
  STEP10 STEP10 STEP10 STEP10 STEP10 STEP10 STEP10 STEP10 STEP10 STEP10
  coopMatStore(s, data, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(m, data, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  data[102] = a + b;
}
